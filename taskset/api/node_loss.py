"""Lost nodes: ``spec.nodeLossPolicy`` as parsed, and the record of each recovery in
``status.nodeRecoveries``.

A Pod whose node stopped answering (its Ready condition ``Unknown``, the ``node.kubernetes.io/unreachable``
taint) cannot be confirmed stopped: no kubelet is there to say so, so the API server keeps it, deleted or
not, and the replica's next Pod waits, because a replica never runs twice at once. The policy says who
ends the wait:

* ``Wait`` (absent: today's behaviour): a person, or the node coming back. The ``NodeLost`` condition and
  the replicas' messages name the node and the replicas waiting on it.
* ``Recover``: the controller, once the node has been unreachable ``graceSeconds`` and the Pod is being
  deleted (the taint-eviction controller evicted it, or anyone deleted it), force-deletes it (grace period
  0, UID precondition), and the replica is replaced as after any deletion.
* ``OutOfService``: Kubernetes' own fence (non-graceful node shutdown): the controller waits until an
  operator taints the node ``node.kubernetes.io/out-of-service``, then does the same.

Each force deletion is recorded, bounded like the attempt history: the node, the replica, the Pod, since
when the node was lost and when the Pod was removed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, Final

from taskset.api.compact import clip_bytes
from taskset.api.failures import field_error
from taskset.api.readers import as_int, as_opt_text, as_text

Json = dict[str, Any]

FIELD: Final = "nodeLossPolicy"
STATUS_FIELD: Final = "nodeRecoveries"
DEFAULT_GRACE_SECONDS: Final = 60
MIN_GRACE_SECONDS: Final = 1
MAX_GRACE_SECONDS: Final = 86400  # a day: a node lost longer than that is not coming back
# The last recoveries listed; older ones are counted in ``dropped``. Few, since the status budget is
# nearly spent at the largest TaskSet (taskset.api.compact) and the events keep every one.
RECOVERIES_KEPT: Final = 3
NAME_BYTES: Final = 128  # a node's or Pod's name on the wire, quotes included (clipped beyond)
REPLICA_BYTES: Final = 128
UID_BYTES: Final = 40
TIME_BYTES: Final = 40


class NodeLossAction(StrEnum):
    WAIT = "Wait"
    RECOVER = "Recover"
    OUT_OF_SERVICE = "OutOfService"


@dataclass(frozen=True)
class NodeLossPolicy:
    action: NodeLossAction = NodeLossAction.WAIT
    grace_seconds: int = DEFAULT_GRACE_SECONDS  # Recover: how long the node must have been unreachable


def parse_node_loss_policy(raw: object, path: str = f"spec.{FIELD}") -> NodeLossPolicy:
    """``spec.nodeLossPolicy``; absent (or null) is ``Wait``. Raises ``FieldError`` naming the field."""
    if raw is None:
        return NodeLossPolicy()
    if not isinstance(raw, dict):
        raise field_error(path, "must be an object")
    unknown = sorted(set(raw) - {"action", "graceSeconds"})
    if unknown:
        raise field_error(f"{path}.{unknown[0]}", "is not a field of nodeLossPolicy (action, graceSeconds)")
    action = raw.get("action", str(NodeLossAction.WAIT))
    if not isinstance(action, str) or action not in tuple(NodeLossAction):
        raise field_error(f"{path}.action", "must be one of " + ", ".join(NodeLossAction))
    grace = raw.get("graceSeconds", DEFAULT_GRACE_SECONDS)
    if (
        isinstance(grace, bool)
        or not isinstance(grace, int)
        or not MIN_GRACE_SECONDS <= grace <= MAX_GRACE_SECONDS
    ):
        raise field_error(
            f"{path}.graceSeconds", f"must be an integer between {MIN_GRACE_SECONDS} and {MAX_GRACE_SECONDS}"
        )
    return NodeLossPolicy(NodeLossAction(action), grace)


@dataclass(frozen=True)
class NodeRecovery:
    """One Pod force-deleted because its node was lost."""

    node: str
    replica: str  # <role>-<index>
    pod: str
    pod_uid: str
    lost_at: str | None  # since when the node was unreachable, as its Ready condition or taint says
    recovered_at: str | None  # when the controller force-deleted the Pod
    action: NodeLossAction

    def to_json(self) -> Json:
        return {
            "node": clip_bytes(self.node, NAME_BYTES),
            "replica": clip_bytes(self.replica, REPLICA_BYTES),
            "pod": clip_bytes(self.pod, NAME_BYTES),
            "podUID": clip_bytes(self.pod_uid, UID_BYTES),
            "lostAt": None if self.lost_at is None else clip_bytes(self.lost_at, TIME_BYTES),
            "recoveredAt": None if self.recovered_at is None else clip_bytes(self.recovered_at, TIME_BYTES),
            "action": str(self.action),
        }

    @classmethod
    def from_json(cls, raw: object) -> NodeRecovery | None:
        if not isinstance(raw, dict) or not as_text(raw.get("podUID")):
            return None
        action = raw.get("action")
        return cls(
            node=as_text(raw.get("node")),
            replica=as_text(raw.get("replica")),
            pod=as_text(raw.get("pod")),
            pod_uid=as_text(raw.get("podUID")),
            lost_at=as_opt_text(raw.get("lostAt")),
            recovered_at=as_opt_text(raw.get("recoveredAt")),
            action=NodeLossAction(action) if action in tuple(NodeLossAction) else NodeLossAction.RECOVER,
        )


@dataclass(frozen=True)
class NodeRecoveries:
    """The listed recoveries, oldest first, and how many older ones are no longer listed."""

    recoveries: tuple[NodeRecovery, ...] = ()
    dropped: int = 0

    def __bool__(self) -> bool:
        return bool(self.recoveries or self.dropped)

    def to_json(self) -> Json:
        return {"recoveries": [r.to_json() for r in self.recoveries], "dropped": self.dropped}

    @classmethod
    def from_json(cls, raw: object) -> NodeRecoveries:
        if not isinstance(raw, dict):
            return cls()
        dropped = as_int(raw.get("dropped"))
        listed = cls(dropped=dropped if dropped is not None and dropped >= 0 else 0)
        items = raw.get("recoveries")
        for item in items if isinstance(items, list) else []:
            record = NodeRecovery.from_json(item)
            if record is not None:
                listed = with_recovery(listed, record)
        return listed

    def recorded(self, pod_uid: str) -> bool:
        return any(r.pod_uid == pod_uid for r in self.recoveries)


def with_recovery(listed: NodeRecoveries, record: NodeRecovery) -> NodeRecoveries:
    """``listed`` with ``record`` last, the oldest past the bound dropped; unchanged when the same Pod
    is listed already (a pass that runs again over a status holding it adds nothing)."""
    if listed.recorded(record.pod_uid):
        return listed
    recoveries = (*listed.recoveries, record)
    extra = max(0, len(recoveries) - RECOVERIES_KEPT)
    return replace(listed, recoveries=recoveries[extra:], dropped=listed.dropped + extra)


# The most ``status.nodeRecoveries`` adds to a status: every entry at its widest (its keys and the
# longest action take 90 bytes), the keys around them and a ``dropped`` of 10 digits.
NODE_RECOVERY_BYTES: Final = 2 * NAME_BYTES + REPLICA_BYTES + UID_BYTES + 2 * TIME_BYTES + 90
NODE_RECOVERIES_BYTES: Final = RECOVERIES_KEPT * (NODE_RECOVERY_BYTES + 1) + 60
