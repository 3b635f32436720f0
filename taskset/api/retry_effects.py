"""Retries that learn from the failure: what a failure rule's ``nextAttempt`` asks of the replica's next
Pod, and what the replica's status keeps of it.

A rule may ask the next attempt to avoid the node(s) the failed attempts ran on (``avoidFailedNodes``:
a required node anti-affinity on ``kubernetes.io/hostname``) and, after a container was ``OOMKilled``, to
grow that container's memory request and limit by ``factor``, never past ``ceiling``. The user's template
is never edited: the change is the replica's ``nextAttempt`` in its status (``RetryEffect``), written in
the same status write as the failure it answers, so a restarted controller builds the same next Pod, and
applied to each later Pod of the replica as a decoration (``taskset.objects.decorations``).

Memory quantities are read as the API server reads them (``parse_quantity``: the binary and decimal
suffixes, an exponent) and written in whole mebibytes, rounded up (``format_mebibytes``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from taskset.api.compact import clip_bytes
from taskset.api.readers import as_text

Json = dict[str, Any]

# The nodes one replica avoids at most (the latest failures'): a replica that failed on every node of a
# small cluster must still be placeable somewhere once the oldest failures are forgotten.
MAX_AVOIDED_NODES: Final = 8
MAX_MEMORY_FACTOR: Final = 10
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
OOM_KILLED: Final = "OOMKilled"
NODE_NAME_MAX: Final = 253
EFFECT_REASON_MAX: Final = 256
# The most ``status.nextAttempt`` (the whole gang's, which never grows memory) adds to a status: its keys,
# an attempt of 7 digits, the nodes and the reason at their bounds in bytes (``to_json`` clips them so).
GANG_EFFECT_BYTES: Final = MAX_AVOIDED_NODES * (NODE_NAME_MAX + 1) + EFFECT_REASON_MAX + 100
QUANTITY_PATTERN: Final = r"^([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+|[kMGTPE]i?|m)?$"
_QUANTITY: Final = re.compile(QUANTITY_PATTERN)
_SUFFIXES: Final = {
    "": Decimal(1),
    "m": Decimal("0.001"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    **{f"{s}i": Decimal(2) ** (10 * (i + 1)) for i, s in enumerate("KMGTPE")},
}
MEBIBYTE: Final = 2**20


def parse_quantity(value: object) -> Decimal | None:
    """A memory quantity in bytes (``1Gi``, ``512M``, ``1e9``, ``1.5Gi``), or None if it is not one."""
    if isinstance(value, int) and not isinstance(value, bool):
        return Decimal(value) if value >= 0 else None
    if not isinstance(value, str) or _QUANTITY.fullmatch(value) is None:
        return None
    found = _QUANTITY.fullmatch(value)
    assert found is not None
    number, suffix = found.group(1), found.group(3) or ""
    try:
        if suffix[:1] in ("e", "E"):
            return Decimal(number) * Decimal(10) ** int(suffix[1:])
        return Decimal(number) * _SUFFIXES[suffix]
    except (InvalidOperation, KeyError, ValueError):
        return None


def format_mebibytes(amount: Decimal) -> str:
    """``amount`` bytes as whole mebibytes, rounded up (a grown limit is never below the factor)."""
    return f"{math.ceil(amount / MEBIBYTE)}Mi"


@dataclass(frozen=True)
class MemoryGrowth:
    """``nextAttempt.memory``: after an ``OOMKilled`` container, its memory times ``factor``, at most
    ``ceiling`` (bytes; ``ceiling_text`` as written)."""

    factor: Decimal
    ceiling: Decimal
    ceiling_text: str


@dataclass(frozen=True)
class NextAttempt:
    """What a failure rule changes in the replica's next attempt."""

    avoid_failed_nodes: bool = False
    memory: MemoryGrowth | None = None


@dataclass(frozen=True)
class ContainerMemory:
    """One container's memory in the replica's next Pods (None: as the template says)."""

    container: str
    request: str | None
    limit: str | None

    def to_json(self) -> Json:
        return {"container": self.container, "request": self.request, "limit": self.limit}


@dataclass(frozen=True)
class RetryEffect:
    """``replicaStatus[i].nextAttempt``: what the replica's next Pods change, after which attempt's
    failure (``after_attempt``, so that one failure is answered once) and why."""

    after_attempt: int
    avoid_nodes: tuple[str, ...] = ()
    memory: tuple[ContainerMemory, ...] = ()
    reason: str = ""

    def memory_of(self, container: str) -> ContainerMemory | None:
        return next((m for m in self.memory if m.container == container), None)

    def to_json(self) -> Json:
        return {
            "afterAttempt": self.after_attempt,
            "avoidNodes": [clip_bytes(node, NODE_NAME_MAX) for node in self.avoid_nodes],
            "memory": [m.to_json() for m in self.memory],
            "reason": clip_bytes(self.reason, EFFECT_REASON_MAX),
        }

    @classmethod
    def from_json(cls, raw: object) -> RetryEffect | None:
        if not isinstance(raw, Mapping) or not isinstance(raw.get("afterAttempt"), int):
            return None
        nodes = raw.get("avoidNodes")
        memory = raw.get("memory")
        return cls(
            after_attempt=raw["afterAttempt"],
            avoid_nodes=tuple(n for n in nodes if isinstance(n, str))[:MAX_AVOIDED_NODES]
            if isinstance(nodes, list)
            else (),
            memory=tuple(
                ContainerMemory(
                    as_text(m.get("container")),
                    m.get("request") if isinstance(m.get("request"), str) else None,
                    m.get("limit") if isinstance(m.get("limit"), str) else None,
                )
                for m in (memory if isinstance(memory, list) else [])
                if isinstance(m, Mapping)
            ),
            reason=as_text(raw.get("reason")),
        )


def template_memory(template: Mapping[str, Any], container: str) -> tuple[Decimal | None, Decimal | None]:
    """The (request, limit) of ``container`` in a Pod template, in bytes; None where it sets none."""
    spec = template.get("spec")
    containers = spec.get("containers") if isinstance(spec, Mapping) else None
    for item in containers if isinstance(containers, list) else []:
        if isinstance(item, Mapping) and item.get("name") == container:
            resources = item.get("resources")
            resources = resources if isinstance(resources, Mapping) else {}
            requests, limits = resources.get("requests"), resources.get("limits")
            request = requests.get("memory") if isinstance(requests, Mapping) else None
            limit = limits.get("memory") if isinstance(limits, Mapping) else None
            return parse_quantity(request), parse_quantity(limit)
    return None, None


def container_names(template: Mapping[str, Any]) -> tuple[str, ...]:
    spec = template.get("spec")
    containers = spec.get("containers") if isinstance(spec, Mapping) else None
    items = containers if isinstance(containers, list) else []
    return tuple(as_text(c.get("name")) for c in items if isinstance(c, Mapping))
