"""Read-only views of a TaskSet as the API server returns it: the status as typed dataclasses, and the
Pods found for its replicas. Parsing tolerates missing keys (a TaskSet the controller has not seen yet
has no status at all) and values of the wrong type, so a view can always be built from what ``get``
returns.

Anyone who may create Pods in the namespace can plant one under a replica's name, with any labels and
annotations, so a Pod is taken for a replica's only when the controller's own record says so: its UID is
the one the status names (``replica_pod``). What a view says about attempts comes from the status, never
from a Pod's annotations."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from taskset_sdk.constants import (
    ANNOTATION_REPLICA_ATTEMPT_ID,
    ANNOTATION_TASKSET_ATTEMPT_ID,
    FINAL_STATES,
    FNV_OFFSET_BASIS,
    FNV_PRIME,
    SHARD_BUCKETS,
)

__all__ = [
    "AttemptView",
    "Condition",
    "EventView",
    "LogTarget",
    "PodView",
    "ReplicaView",
    "RoleView",
    "ShardOwner",
    "TaskSetView",
    "namespace_bucket",
    "replica_pod",
]


def _part(raw: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """A nested object of ``raw``; empty when absent, null or no object."""
    part = raw.get(key)
    return part if isinstance(part, Mapping) else {}


def _text(raw: Mapping[str, Any], key: str) -> str:
    """``raw[key]`` as a string; "" when absent or null (the status writes null for unset pointers)."""
    return str(raw.get(key) or "")


def _int(value: Any) -> int | None:
    """An integer, or None for anything else (a bool, a float, text that is no number, or one of more
    digits than Python converts)."""
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _count(value: Any) -> int:
    """A count or an index: 0 when absent, negative or not an integer."""
    return max(0, _int(value) or 0)


def _objects(value: Any) -> tuple[Mapping[str, Any], ...]:
    """The objects of a list; anything else (a list of junk, or no list) gives what objects it has."""
    if not isinstance(value, list):
        return ()
    return tuple(item for item in value if isinstance(item, Mapping))


@dataclass(frozen=True)
class Condition:
    type: str
    status: str
    reason: str
    message: str
    last_transition_time: str

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Condition:
        return cls(
            type=str(raw.get("type", "")),
            status=str(raw.get("status", "")),
            reason=_text(raw, "reason"),
            message=_text(raw, "message"),
            last_transition_time=_text(raw, "lastTransitionTime"),
        )


@dataclass(frozen=True)
class ReplicaView:
    """One replica's status (``status.roleStatus[i].replicaStatus[k]``)."""

    role: str
    index: int
    phase: str
    phase_message: str
    retries: int
    stopped: bool
    pod_name: str
    pod_uid: str
    pod_ip: str
    host_ip: str
    pod_reason: str
    container: str
    start_at: str
    finish_at: str
    transition_time: str
    exit_code: int | None
    reason: str
    exit_message: str

    @classmethod
    def parse(cls, role: str, raw: Mapping[str, Any]) -> ReplicaView:
        ended: Mapping[str, Any] = _part(raw, "terminatedInfo")
        return cls(
            role=role,
            index=_count(raw.get("index")),
            phase=_text(raw, "phase"),
            phase_message=_text(raw, "phaseMessage"),
            retries=_count(raw.get("totalRetriedCount")),
            stopped=bool(raw.get("stopped")),
            pod_name=_text(raw, "podName"),
            pod_uid=_text(raw, "podUID"),
            pod_ip=_text(raw, "podIP"),
            host_ip=_text(raw, "podHostIP"),
            pod_reason=_text(raw, "podReason"),
            container=_text(raw, "containerName"),
            start_at=_text(raw, "startAt"),
            finish_at=_text(raw, "finishAt"),
            transition_time=_text(raw, "transitionTime"),
            exit_code=_int(ended.get("exitCode")) if ended else None,
            reason=_text(ended, "reason"),
            exit_message=_text(ended, "exitMessage"),
        )

    @property
    def key(self) -> str:
        """``<role>-<index>``, as the controller's messages name a replica."""
        return f"{self.role}-{self.index}"


@dataclass(frozen=True)
class RoleView:
    name: str
    phase: str
    state: str
    state_message: str
    replicas: tuple[ReplicaView, ...]

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> RoleView:
        name = _text(raw, "name")
        return cls(
            name=name,
            phase=_text(raw, "phase"),
            state=_text(raw, "state"),
            state_message=_text(raw, "stateMessage"),
            replicas=tuple(ReplicaView.parse(name, r) for r in _objects(raw.get("replicaStatus"))),
        )


@dataclass(frozen=True)
class AttemptView:
    """One ended attempt of the TaskSet (``status.attemptHistory.attempts[i]``): why it ended,
    and for a failed one the replica, exit code and failure rule that ended it."""

    attempt: int
    start_at: str
    finish_at: str
    outcome: str  # Succeeded or Failed
    reason: str
    replica: str  # "<role>-<index>", or "" when no replica's failure ended it
    exit_code: int | None
    rule: str
    action: str
    counted: bool  # a TaskSet retry was charged for it (retryPolicy.maxRetryCount)

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> AttemptView:
        return cls(
            attempt=_int(raw.get("attempt")) or 0,
            start_at=_text(raw, "startAt"),
            finish_at=_text(raw, "finishAt"),
            outcome=_text(raw, "outcome"),
            reason=_text(raw, "reason"),
            replica=_text(raw, "replica"),
            exit_code=_int(raw.get("exitCode")),
            rule=_text(raw, "rule"),
            action=_text(raw, "action"),
            counted=raw.get("counted") is True,
        )


@dataclass(frozen=True)
class TaskSetView:
    """A TaskSet with its status parsed; ``raw`` keeps the object as the API server returned it."""

    namespace: str
    name: str
    uid: str
    created: str
    generation: int
    phase: str
    phase_message: str
    state: str
    state_message: str
    retries: int
    start_at: str
    finish_at: str
    roles: tuple[RoleView, ...]
    conditions: tuple[Condition, ...]
    raw: Mapping[str, Any]
    # The last ended attempts, oldest first, and how many older ones the status no longer lists.
    attempts: tuple[AttemptView, ...] = ()
    attempts_dropped: int = 0
    # The UID of the current attempt's ControlUnit, the owner of its Pods ("" between attempts).
    control_unit_uid: str = ""

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> TaskSetView:
        meta: Mapping[str, Any] = _part(raw, "metadata")
        status: Mapping[str, Any] = _part(raw, "status")
        history: Mapping[str, Any] = _part(status, "attemptHistory")
        return cls(
            namespace=_text(meta, "namespace"),
            name=_text(meta, "name"),
            uid=_text(meta, "uid"),
            created=_text(meta, "creationTimestamp"),
            generation=_count(meta.get("generation")),
            phase=_text(status, "phase"),
            phase_message=_text(status, "phaseMessage"),
            state=_text(status, "state"),
            state_message=_text(status, "stateMessage"),
            retries=_count(status.get("totalRetriedCount")),
            start_at=_text(status, "startAt"),
            finish_at=_text(status, "finishAt"),
            roles=tuple(RoleView.parse(r) for r in _objects(status.get("roleStatus"))),
            conditions=tuple(Condition.parse(c) for c in _objects(status.get("conditions"))),
            raw=raw,
            attempts=tuple(AttemptView.parse(a) for a in _objects(history.get("attempts"))),
            attempts_dropped=_count(history.get("dropped")),
            control_unit_uid=_text(status, "controlUnitUID"),
        )

    @property
    def finished(self) -> bool:
        """Succeeded or Failed: the TaskSet will not run again."""
        return self.state in FINAL_STATES

    @property
    def status(self) -> Mapping[str, Any]:
        return self.raw.get("status") or {}

    def condition(self, type_: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type_), None)

    def replica(self, role: str, index: int) -> ReplicaView | None:
        for view in self.roles:
            if view.name == role:
                return next((r for r in view.replicas if r.index == index), None)
        return None


@dataclass(frozen=True)
class PodView:
    """What the status does not say about a replica's current Pod: its node, phase and containers.
    The attempt numbers are the Pod's annotations, as anyone who made the Pod wrote them: shown, never
    relied on (the status's ``totalRetriedCount`` is the replica's attempt)."""

    name: str
    uid: str
    node: str
    phase: str
    created: str
    taskset_attempt: int | None
    replica_attempt: int | None
    containers: tuple[str, ...]
    controller_uid: str = ""  # the UID of the owner reference marked controller ("" without one)

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> PodView:
        meta: Mapping[str, Any] = _part(raw, "metadata")
        annotations: Mapping[str, str] = _part(meta, "annotations")
        spec: Mapping[str, Any] = _part(raw, "spec")
        return cls(
            name=_text(meta, "name"),
            uid=_text(meta, "uid"),
            node=_text(spec, "nodeName"),
            phase=_text(_part(raw, "status"), "phase"),
            created=_text(meta, "creationTimestamp"),
            taskset_attempt=_int(annotations.get(ANNOTATION_TASKSET_ATTEMPT_ID)),
            replica_attempt=_int(annotations.get(ANNOTATION_REPLICA_ATTEMPT_ID)),
            containers=tuple(_text(c, "name") for c in _objects(spec.get("containers"))),
            controller_uid=next(
                (_text(ref, "uid") for ref in _objects(meta.get("ownerReferences")) if ref.get("controller")),
                "",
            ),
        )


def replica_pod(view: TaskSetView, replica: ReplicaView, pods: Mapping[str, PodView]) -> PodView | None:
    """The replica's Pod among ``pods`` (by name), or None: the Pod must be the one the controller
    recorded, its UID the status's ``podUID`` and, while the attempt has a ControlUnit, its controller
    owner that ControlUnit. A Pod someone else made under the replica's name has another UID, whatever
    its labels and annotations say; one the replica has no record of is no Pod of the replica."""
    pod = pods.get(replica.pod_name) if replica.pod_name else None
    if pod is None or not replica.pod_uid or pod.uid != replica.pod_uid:
        return None
    if view.control_unit_uid and pod.controller_uid != view.control_unit_uid:
        return None
    return pod


@dataclass(frozen=True)
class EventView:
    """A Kubernetes Event recorded on the TaskSet (``kubectl describe`` shows the same)."""

    type: str
    reason: str
    message: str
    count: int
    first: str
    last: str
    order: int  # the resourceVersion: breaks ties between events of the same second

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> EventView:
        first = (
            raw.get("firstTimestamp")
            or raw.get("eventTime")
            or (raw.get("metadata") or {}).get("creationTimestamp")
        )
        return cls(
            type=_text(raw, "type"),
            reason=_text(raw, "reason"),
            message=_text(raw, "message"),
            count=_int(raw.get("count")) or 1,
            first=str(first or ""),
            last=str(raw.get("lastTimestamp") or first or ""),
            order=_int((raw.get("metadata") or {}).get("resourceVersion")) or 0,
        )


@dataclass(frozen=True)
class LogTarget:
    """Where a replica attempt's log is: the Pod (its name and UID), its container, and the attempt it
    runs."""

    pod: str
    container: str
    attempt: int | None
    uid: str = ""


def namespace_bucket(namespace: str) -> int:
    """The bucket of a sharded controller that ``namespace`` falls in: its 64-bit FNV-1a hash, scaled to
    ``SHARD_BUCKETS`` equal parts of the hash space."""
    h = FNV_OFFSET_BASIS
    for byte in namespace.encode("utf-8"):
        h = ((h ^ byte) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return (h * SHARD_BUCKETS) >> 64


@dataclass(frozen=True)
class ShardOwner:
    """The replica of a sharded controller that acts for a namespace: the holder of its bucket's Lease
    (``holder`` empty: nobody holds it now, or the controller is not sharded)."""

    namespace: str
    bucket: int
    lease: str  # <controller namespace>/<lease name>
    holder: str
    renewed: str  # the Lease's renewTime, RFC 3339, as written
