"""Stable network identity: one headless Service per TaskSet, and a hostname and
subdomain on every Pod, so ``{taskset}-{role}-{index}.<service>.<namespace>.svc`` names the replica's
current Pod in every attempt.

The Service belongs to the TaskSet (``Scope.TASKSET``): it keeps its name across attempts and goes with
the TaskSet. It selects the TaskSet's label and publishes addresses of Pods that are not ready, since a
replica must find its peers before any of them is ready (the rendezvous of every framework). Its ports
are those the roles' containers declare; a headless Service needs none, and DNS needs none either.
Which Service, and whether at all, is ``spec.network`` (``taskset.objects.network``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from taskset.api.constants import LABEL_TASKSET
from taskset.api.spec import CheckFailure, Role, TaskSetSpec
from taskset.integrations.base import Attempt, ChecksSpec, DecoratesPods, OwnsObjects
from taskset.objects.decorations import PodDecoration
from taskset.objects.network import SERVICES, check_network, replica_host, service_name
from taskset.objects.owned import OwnedObject, Scope
from taskset.objects.pods import PodIdentity

_PROTOCOLS: Final = ("TCP", "UDP", "SCTP")
_PORT_MAX: Final = 65535


class HeadlessService(ChecksSpec, OwnsObjects, DecoratesPods):
    name = "headless-service"
    kinds = (SERVICES,)

    def check(self, spec: Mapping[str, Any]) -> CheckFailure | None:
        return check_network(spec)

    def owned_objects(self, attempt: Attempt) -> Sequence[OwnedObject]:
        service = service_name(attempt.taskset, attempt.spec.raw)
        if service is None:
            return ()
        body = service_body(attempt.taskset, attempt.spec)
        return (OwnedObject(SERVICES, service, Scope.TASKSET, body, self.name, holds=False),)

    def decorate_pod(self, attempt: Attempt, role: Role, identity: PodIdentity) -> PodDecoration | None:
        service = service_name(attempt.taskset, attempt.spec.raw)
        if service is None:
            return None
        return PodDecoration(
            hostname=replica_host(identity.taskset, role.name, identity.index), subdomain=service
        )


def service_body(taskset: str, spec: TaskSetSpec) -> dict[str, Any]:
    """The Service's spec: headless, not-ready addresses published, the TaskSet's Pods selected."""
    body: dict[str, Any] = {
        "clusterIP": "None",
        "publishNotReadyAddresses": True,
        "selector": {LABEL_TASKSET: taskset},
    }
    ports = service_ports(spec)
    if ports:
        body["ports"] = ports
    return {"spec": body}


def service_ports(spec: TaskSetSpec) -> list[dict[str, Any]]:
    """Every (port, protocol) the roles' containers declare, once each, in the order first declared;
    named ``<protocol>-<port>`` (a Service's port names must be unique, the containers' need not be).
    Entries the API server would refuse in a Pod are left out here: the Pod's creation says why."""
    seen: dict[tuple[int, str], None] = {}
    for port, protocol in _declared_ports(spec):
        seen.setdefault((port, protocol), None)
    return [
        {"name": f"{protocol.lower()}-{port}", "port": port, "protocol": protocol, "targetPort": port}
        for port, protocol in seen
    ]


def _declared_ports(spec: TaskSetSpec) -> Iterator[tuple[int, str]]:
    for role in spec.roles:
        pod_spec = role.template.get("spec")
        containers = pod_spec.get("containers") if isinstance(pod_spec, Mapping) else None
        for container in containers if isinstance(containers, list) else ():
            ports = container.get("ports") if isinstance(container, Mapping) else None
            for entry in ports if isinstance(ports, list) else ():
                port = entry.get("containerPort") if isinstance(entry, Mapping) else None
                protocol = entry.get("protocol", "TCP") if isinstance(entry, Mapping) else None
                if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= _PORT_MAX:
                    continue
                if isinstance(protocol, str) and protocol in _PROTOCOLS:
                    yield port, protocol
