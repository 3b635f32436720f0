"""The names the controller gives what it creates (spec 3.1, D1, D2): a replica's Pod keeps one name in
every attempt, an attempt's ControlUnit is named by its number, and every name is a DNS-1123 label or
built of them. Pure string functions, shared by parsing (the name-length rule) and every pass."""

from __future__ import annotations

import re
from typing import Final

from taskset.api.constants import CONTROL_UNIT_NAME_FORMAT, DNS1123_LABEL_MAX_LENGTH

_DNS1123_LABEL: Final = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def is_dns1123_label(value: str) -> bool:
    # fullmatch, not "^...$": Python's "$" also matches before a trailing newline.
    return len(value) <= DNS1123_LABEL_MAX_LENGTH and _DNS1123_LABEL.fullmatch(value) is not None


def pod_name(taskset: str, role: str, index: int) -> str:
    """The Pod of replica ``index``: the same name in every attempt (D1). ``POD_NAME_FORMAT`` written out:
    a pass names every replica's Pod, and formatting the constant took five times as long."""
    return f"{taskset}-{role}-{index}"


def control_unit_name(taskset: str, attempt: int) -> str:
    """The ControlUnit ConfigMap of TaskSet attempt ``attempt`` (spec 3.1)."""
    return CONTROL_UNIT_NAME_FORMAT.format(taskset=taskset, attempt=attempt)


def is_control_unit_name(taskset: str, name: str) -> bool:
    """Whether ``name`` is the ControlUnit name of some attempt of ``taskset``: what tells a TaskSet's
    ControlUnits apart from the other ConfigMaps it owns (an integration's never takes such a name)."""
    prefix, _, suffix = CONTROL_UNIT_NAME_FORMAT.format(taskset=taskset, attempt="\0").partition("\0")
    return re.fullmatch(f"{re.escape(prefix)}[0-9]+{re.escape(suffix)}", name) is not None


def longest_pod_name_length(taskset: str, role: str, replicas: int) -> int:
    """Length of ``{taskset}-{role}-{replicas-1}``, the longest Pod name of a role (D2)."""
    return len(pod_name(taskset, role, replicas - 1))
