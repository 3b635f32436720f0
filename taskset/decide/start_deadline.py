"""The per-replica start deadline: ``startDeadlineSeconds`` of a role, or the TaskSet's
default ``spec.startDeadlineSeconds``.

A replica whose Pod has not run within that many seconds of the Pod's creation is replaced, alone: row
``P-start-deadline`` of the replica machine records the Pod reason ``StartDeadlineExceeded`` and the
failure rule it matches (built in: ``builtin-start-deadline``, retried without counting) with why the Pod
waited, and the Pod is deleted as any ended attempt's is (P9). The clock is the Pod's
``metadata.creationTimestamp``, which the API server keeps: a restarted controller reads the same
moment, and a pass is requeued for it (no watch event would come when a Pod merely goes on waiting).

Only a replica whose Pod is Pending is watched (``AttemptPreparing``, ``AttemptAssigned``): one that was
seen Running once is past its start and is never replaced by it. A suspended TaskSet deletes its live
Pods, so the deadline pauses with it: the resumed attempt's new Pod has its own creation
time. Which deadline applies is the attempt's role, as every other role policy.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, TypeVar

from taskset.api.constants import POD_REASON_START_DEADLINE
from taskset.api.spec import Role
from taskset.api.status import ReplicaStatus, clip, seconds_since
from taskset.decide.context import PassContext, Row
from taskset.decide.failure_rules import AttemptEnd, note_failure
from taskset.decide.waiting import WAIT_MESSAGE_MAX, WAITING_PHASES
from taskset.observed.views import PodView


class AtPendingPod(Protocol):
    """What the start-deadline row reads of its scope (the replica machine's ``ReplicaAt``)."""

    @property
    def role(self) -> Role: ...

    @property
    def replica(self) -> ReplicaStatus: ...

    @property
    def pod(self) -> PodView | None: ...


At = TypeVar("At", bound=AtPendingPod)


def start_remaining(role: Role, replica: ReplicaStatus, pod: PodView | None, now: datetime) -> float | None:
    """Seconds left for the replica's Pod to run (<= 0: the deadline passed), or None when there is no
    deadline to watch: none is set, or the replica does not wait for its Pod to start."""
    deadline = role.start_deadline_seconds
    if deadline is None or pod is None or replica.phase not in WAITING_PHASES:
        return None
    if pod.running or pod.terminal:
        return None
    return deadline - seconds_since(pod.created_at or replica.transition_time, now)


def start_deadline_passed(role: Role, replica: ReplicaStatus, pod: PodView | None, now: datetime) -> bool:
    remaining = start_remaining(role, replica, pod, now)
    return remaining is not None and remaining <= 0


def requeue_for_start(ctx: PassContext, role: Role, replica: ReplicaStatus, pod: PodView | None) -> None:
    """A waiting replica looks again when its Pod's start deadline passes."""
    remaining = start_remaining(role, replica, pod, ctx.now)
    if remaining is not None and remaining > 0:
        ctx.plan.requeue(remaining)


def waiting_reason(pod: PodView) -> str:
    """Why the Pod has not run, in the scheduler's or the kubelet's words: ``Unschedulable`` (the
    PodScheduled condition's reason) and its message, a container's waiting reason (``ImagePullBackOff``,
    ``CreateContainerConfigError``, ...) and message, or what the Pod's conditions still say."""
    if pod.unschedulable_message:
        return f"Unschedulable: {pod.unschedulable_message}"
    waiting = pod.waiting
    if waiting is not None:
        said = f"container {waiting.container} waiting: {waiting.reason}"
        return f"{said}: {waiting.message}" if waiting.message else said
    if ("PodScheduled", "False") in pod.conditions or not pod.host_ip:
        return "not scheduled to a node"
    return f"phase {pod.phase} on node {pod.host_ip}"


def late_detail(role: Role, pod: PodView) -> str:
    """'Pod tj-w-0 did not run within startDeadlineSeconds (30s): Unschedulable: 0/3 nodes ...'."""
    text = f"Pod {pod.name} did not run within startDeadlineSeconds ({role.start_deadline_seconds}s)"
    return f"{text}: {waiting_reason(pod)}"


def _replace_late(ctx: PassContext, at: AtPendingPod) -> bool:
    """Record the Pod reason and the failure rule it matches (with why the Pod waited); P9 then
    deletes the Pod and the retry decision follows as for any failed attempt."""
    replica, pod = at.replica, at.pod
    assert pod is not None
    replica.pod_reason = POD_REASON_START_DEADLINE
    end = AttemptEnd(pod_reason=POD_REASON_START_DEADLINE)
    note_failure(ctx, at.role, replica, end, detail=late_detail(at.role, pod))
    return True


def _late_message(ctx: PassContext, at: AtPendingPod) -> str:
    """ "StartDeadlineExceeded: Pod tj-w-0 did not run within startDeadlineSeconds (30s): ..."."""
    pod = at.pod
    assert pod is not None
    return clip(f"{POD_REASON_START_DEADLINE}: {late_detail(at.role, pod)}", WAIT_MESSAGE_MAX)


def replaced_late(replica: ReplicaStatus) -> bool:
    """Whether the replica's attempt ended at its start deadline: its failure is already recorded, and
    the deleted Pod's last view must not be matched again."""
    return replica.pod_reason == POD_REASON_START_DEADLINE


def start_deadline_rows(scope: type[At]) -> dict[str, Row[At]]:
    """The replica machine's start-deadline row, for its scope type ``scope``."""
    return {"P-start-deadline": Row(effect=_replace_late, message=_late_message)}
