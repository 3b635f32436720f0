"""A TaskSet's network identity: whether its replicas get DNS names, under which Service, and what the
names are. Shared by every integration that speaks of peers (the headless Service, the peer lists, the
framework presets), which may not import one another, so it lives below them.

The spec's part (``spec.network``, named after JobSet's fields of the same meaning):

* ``enableDNSHostnames`` (default true): every Pod gets ``hostname: {taskset}-{role}-{index}`` and
  ``subdomain: <service>``, and the TaskSet owns a headless Service of that name, so
  ``{taskset}-{role}-{index}.<service>.<namespace>.svc`` resolves to the replica's current Pod;
* ``subdomain`` (default: the TaskSet's name): the Service's name, a DNS-1035 label.

A TaskSet whose own name is not a valid Service name (it starts with a digit, which a TaskSet's name
may and a Service's may not) and that names no ``subdomain`` has no network identity: the original's
YAML keeps working, unchanged, and a user who wants names sets ``subdomain``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from taskset.api.constants import DNS1123_LABEL_MAX_LENGTH
from taskset.api.names import pod_name
from taskset.api.spec import CheckFailure, spec_object
from taskset.objects.owned import ObjectKind

# The headless Service: what makes it one (no cluster IP), whose Pods it names (its selector), that
# their addresses are published before they are ready, and its ports. Each can be patched back.
SERVICES: Final = ObjectKind(
    group="",
    version="v1",
    plural="services",
    kind="Service",
    declared=(
        ("spec", "clusterIP"),
        ("spec", "selector"),
        ("spec", "publishNotReadyAddresses"),
        ("spec", "ports"),
    ),
)

NETWORK_FIELD: Final = "network"
ENABLE_FIELD: Final = "enableDNSHostnames"
SUBDOMAIN_FIELD: Final = "subdomain"

_DNS1035_LABEL: Final = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
DNS1035_PROBLEM: Final = (
    f"must be a DNS-1035 label (at most {DNS1123_LABEL_MAX_LENGTH} lower-case alphanumerics or '-', "
    "starting with a letter and ending alphanumeric)"
)


def is_dns1035_label(value: str) -> bool:
    return len(value) <= DNS1123_LABEL_MAX_LENGTH and _DNS1035_LABEL.fullmatch(value) is not None


def _network(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    raw = spec.get(NETWORK_FIELD)
    return raw if isinstance(raw, Mapping) else {}


def check_network(spec: Mapping[str, Any]) -> CheckFailure | None:
    """``spec.network`` is an object with a boolean switch and a Service name that can be one."""
    raw = spec_object(spec, NETWORK_FIELD)
    path = f"spec.{NETWORK_FIELD}"
    if raw is None or isinstance(raw, CheckFailure):
        return raw
    enable = raw.get(ENABLE_FIELD)
    if enable is not None and not isinstance(enable, bool):
        return CheckFailure(f"{path}.{ENABLE_FIELD}", f"{path}.{ENABLE_FIELD}: must be a boolean")
    subdomain = raw.get(SUBDOMAIN_FIELD)
    if subdomain is not None and (not isinstance(subdomain, str) or not is_dns1035_label(subdomain)):
        return CheckFailure(f"{path}.{SUBDOMAIN_FIELD}", f"{path}.{SUBDOMAIN_FIELD}: {DNS1035_PROBLEM}")
    return None


def service_name(taskset: str, spec: Mapping[str, Any]) -> str | None:
    """The headless Service the replicas' names live under, or None when they get no names (switched
    off, or a TaskSet name that cannot name a Service and no ``subdomain``). ``spec`` has passed
    ``check_network``; anything else reads as the default."""
    raw = _network(spec)
    if raw.get(ENABLE_FIELD) is False:
        return None
    chosen = raw.get(SUBDOMAIN_FIELD)
    name = chosen if isinstance(chosen, str) and chosen else taskset
    return name if is_dns1035_label(name) else None


def replica_host(taskset: str, role: str, index: int) -> str:
    """The replica's hostname: its Pod's name, a DNS label of at most 63 characters by D2's rule."""
    return pod_name(taskset, role, index)


def replica_fqdn(taskset: str, role: str, index: int, service: str, namespace: str) -> str:
    """The name that resolves to the replica's current Pod from anywhere in the cluster (without the
    cluster domain, which every Pod's resolver searches)."""
    return f"{replica_host(taskset, role, index)}.{service}.{namespace}.svc"
