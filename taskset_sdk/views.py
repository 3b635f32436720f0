"""Read-only views of a TaskSet as the API server returns it: the status as typed dataclasses, and the
Pods found for its replicas. Parsing tolerates missing keys (a TaskSet the controller has not seen yet
has no status at all), so a view can always be built from what ``get`` returns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from taskset_sdk.constants import (
    ANNOTATION_REPLICA_ATTEMPT_ID,
    ANNOTATION_TASKSET_ATTEMPT_ID,
    FINAL_STATES,
)

__all__ = [
    "AttemptView",
    "Condition",
    "EventView",
    "LogTarget",
    "PodView",
    "ReplicaView",
    "RoleView",
    "TaskSetView",
]


def _part(raw: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """A nested object of ``raw``; empty when absent or null."""
    part: Mapping[str, Any] = raw.get(key) or {}
    return part


def _text(raw: Mapping[str, Any], key: str) -> str:
    """``raw[key]`` as a string; "" when absent or null (the status writes null for unset pointers)."""
    return str(raw.get(key) or "")


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


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
            index=int(raw.get("index", 0)),
            phase=_text(raw, "phase"),
            phase_message=_text(raw, "phaseMessage"),
            retries=int(raw.get("totalRetriedCount") or 0),
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
            replicas=tuple(ReplicaView.parse(name, r) for r in raw.get("replicaStatus") or ()),
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
            generation=int(meta.get("generation") or 0),
            phase=_text(status, "phase"),
            phase_message=_text(status, "phaseMessage"),
            state=_text(status, "state"),
            state_message=_text(status, "stateMessage"),
            retries=int(status.get("totalRetriedCount") or 0),
            start_at=_text(status, "startAt"),
            finish_at=_text(status, "finishAt"),
            roles=tuple(RoleView.parse(r) for r in status.get("roleStatus") or ()),
            conditions=tuple(Condition.parse(c) for c in status.get("conditions") or ()),
            raw=raw,
            attempts=tuple(
                AttemptView.parse(a) for a in history.get("attempts") or () if isinstance(a, Mapping)
            ),
            attempts_dropped=_int(history.get("dropped")) or 0,
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
    """What the status does not say about a replica's current Pod: its node and attempt numbers."""

    name: str
    uid: str
    node: str
    phase: str
    created: str
    taskset_attempt: int | None
    replica_attempt: int | None
    containers: tuple[str, ...]

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> PodView:
        meta: Mapping[str, Any] = _part(raw, "metadata")
        annotations: Mapping[str, str] = _part(meta, "annotations")
        spec: Mapping[str, Any] = _part(raw, "spec")
        return cls(
            name=_text(meta, "name"),
            uid=_text(meta, "uid"),
            node=_text(spec, "nodeName"),
            phase=str((raw.get("status") or {}).get("phase") or ""),
            created=_text(meta, "creationTimestamp"),
            taskset_attempt=_int(annotations.get(ANNOTATION_TASKSET_ATTEMPT_ID)),
            replica_attempt=_int(annotations.get(ANNOTATION_REPLICA_ATTEMPT_ID)),
            containers=tuple(str(c.get("name", "")) for c in spec.get("containers") or ()),
        )


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
            count=int(raw.get("count") or 1),
            first=str(first or ""),
            last=str(raw.get("lastTimestamp") or first or ""),
            order=_int((raw.get("metadata") or {}).get("resourceVersion")) or 0,
        )


@dataclass(frozen=True)
class LogTarget:
    """Where a replica attempt's log is: the Pod, its container, and the attempt it runs."""

    pod: str
    container: str
    attempt: int | None
