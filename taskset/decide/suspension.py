"""Suspend and resume: what the suspension rows of the replica machine do, and the
TaskSet's ``Suspended`` condition.

``spec.suspend`` is read live (``TaskSetRef.suspended``). While it is true, a replica with a live Pod
deletes it (``P-suspend``, by name and UID even when the cache does not show it, since its silence
proves nothing; ``P10-suspended`` when someone else was quicker) and marks itself ``suspended``: once
the Pod is gone it goes back to ``AttemptPending`` with the same replica attempt (``P13-suspended``),
counting neither a failure nor a retry, and creates nothing until the TaskSet resumes
(``P1-suspended``). The mark lives in the replica's status, not in the spec, because a resume may come
before the Pod is gone: the replica must still know its Pod's end is not an outcome. A Pod that exited
before the suspension reached it keeps its outcome (P5 comes first).

Timers do not pause (docs/user-manual.md, "Shared clusters"): retry delays run on from their
``transitionTime`` and the retry they lead to is taken while suspended (it was earned by a real failure)
but creates nothing; the cache creation timeouts apply only to an object awaited, and a suspended
replica's awaited Pod is deleted instead.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from taskset.api.constants import (
    ConditionReason,
    ConditionStatus,
    ConditionType,
    EventReason,
    ReplicaPhase,
    TaskSetPhase,
)
from taskset.api.status import ReplicaStatus
from taskset.decide.context import PassContext, Row
from taskset.decide.owned_sync import admission_of, attempt_of
from taskset.decide.plan import DeleteOwned, Event
from taskset.decide.upkeep import STALE_OBJECT
from taskset.observed.views import PodView

_RUNNING = (TaskSetPhase.ATTEMPT_PREPARING, TaskSetPhase.ATTEMPT_RUNNING)
# Replica phases with a live Pod of this replica attempt: the ones P-suspend and P10-suspended leave.
_LIVE = (
    ReplicaPhase.ATTEMPT_CREATION_REQUESTED,
    ReplicaPhase.ATTEMPT_PREPARING,
    ReplicaPhase.ATTEMPT_ASSIGNED,
    ReplicaPhase.ATTEMPT_RUNNING,
)
# Replica phases without a Pod of this replica attempt.
_PODLESS = (ReplicaPhase.ATTEMPT_PENDING, ReplicaPhase.ATTEMPT_RETRY_PENDING, ReplicaPhase.COMPLETED)

# The replica's phaseMessage while it waits for the resume.
SUSPENDED_HOLD = "Suspended: no Pod is created until the TaskSet resumes"
SUSPENDED_CONDITION = (
    "spec.suspend is true: running Pods are deleted without counting a failure or a retry, and no Pod "
    "is created until it is false"
)
RESUMED_CONDITION = "spec.suspend is false again: the attempt recreates the Pods it still needs"


class AtReplica(Protocol):
    """What a suspension row reads of its scope: the replica (the replica machine's ``ReplicaAt``)."""

    @property
    def replica(self) -> ReplicaStatus: ...


At = TypeVar("At", bound=AtReplica)


def _mark(ctx: PassContext, at: AtReplica) -> bool:
    """Mark the replica: its Pod goes away because of the suspension, so its end counts nothing."""
    at.replica.suspended = True
    return True


def _back_to_pending(ctx: PassContext, at: AtReplica) -> bool:
    """Forget the deleted Pod and clear the mark; the replica attempt (and its retry count) stays."""
    replica = at.replica
    replica.clear_pod()
    replica.suspended = False
    return True


def _hold(ctx: PassContext, at: AtReplica) -> None:
    """Say in the replica's phaseMessage that it waits for the resume (the Suspended condition and
    event say it once for the TaskSet)."""
    at.replica.phase_message = SUSPENDED_HOLD


def replica_rows(scope: type[At]) -> dict[str, Row[At]]:
    """The replica machine's suspension rows, for its scope type ``scope``."""
    return {
        "P1-suspended": Row(wait=_hold),
        "P-suspend": Row(effect=_mark, message="Suspended: the Pod is being deleted, counting nothing"),
        "P10-suspended": Row(effect=_mark, message="Suspended: the Pod is being deleted"),
        "P13-suspended": Row(effect=_back_to_pending, message=SUSPENDED_HOLD),
    }


def suspended(ctx: PassContext) -> bool:
    """Whether the attempt's Pods are to stop now, counting nothing: ``spec.suspend``, or an integration
    whose admission asks it (``Admission.suspended``: Kueue evicted the attempt's Workload). Once per pass."""
    if ctx.suspension is None:
        reason = None
        attempt = attempt_of(ctx) if ctx.status.phase in _RUNNING else None
        if attempt is not None:
            reason = admission_of(ctx, attempt).suspended
        ctx.suspension = (ctx.ref.suspended or reason is not None, reason)
    return ctx.suspension[0]


def ended_by_suspension(ctx: PassContext, replica: ReplicaStatus, pod: PodView | None) -> bool:
    """Whether the replica's Pod (``pod``, its own, or None) ends because of the suspension, so that
    its end is no outcome and matches no failure rule: the replica is marked, or this pass marks it
    (suspended, with a live Pod that has not exited: P-suspend deletes it, P10-suspended sees it go).
    A Pod that exited before the suspension reached it keeps its outcome (P5 comes first)."""
    if replica.suspended:
        return True
    return suspended(ctx) and replica.phase in _LIVE and (pod is None or not pod.terminal)


def retire_stale(ctx: PassContext) -> None:
    """Delete, once the attempt has no Pod left, the objects an admission wants made anew
    (``Admission.stale``): an evicted Workload goes, and the next pass asks for a new one, which
    Kueue queues again. Only the controller's own, by UID."""
    attempt = attempt_of(ctx) if ctx.status.phase in _RUNNING else None
    if attempt is None or any(
        replica.phase not in _PODLESS for role in ctx.status.roles for replica in role.replicas
    ):
        return
    admission = admission_of(ctx, attempt)
    # An object whose withdrawal this status counts as a preemption is its only evidence: deleted only
    # once the count is persisted (as an advancing delete is), or a lost status write would lose it.
    counted = admission.preempted is not None
    for integration, kind, name in admission.stale():
        seen = ctx.observed.owned.get((kind.key, name))
        owners = (ctx.status.control_unit_uid, ctx.ref.uid)  # an attempt's object, or the TaskSet's
        if seen is None or seen.deleting or not seen.controller_uid or seen.controller_uid not in owners:
            continue
        ctx.plan.intents.append(DeleteOwned(name, seen.uid, counted, kind, integration, row=STALE_OBJECT))


def report_suspension(ctx: PassContext) -> None:
    """Keep the ``Suspended`` condition in step with ``spec.suspend``, with one event per change: True
    while suspended, False (reason ``Resumed``) once resumed. A completed TaskSet's is left as it was."""
    status = ctx.status
    if status.phase == TaskSetPhase.COMPLETED:
        return
    current = status.condition(ConditionType.SUSPENDED)
    was_suspended = current is not None and current.status == ConditionStatus.TRUE
    if ctx.ref.suspended == was_suspended:
        return
    if ctx.ref.suspended:
        status_, reason, message, event = (
            ConditionStatus.TRUE,
            ConditionReason.SUSPENDED,
            SUSPENDED_CONDITION,
            EventReason.TASKSET_SUSPENDED,
        )
    else:
        status_, reason, message, event = (
            ConditionStatus.FALSE,
            ConditionReason.RESUMED,
            RESUMED_CONDITION,
            EventReason.TASKSET_RESUMED,
        )
    status.set_condition(ConditionType.SUSPENDED, status_, str(reason), message, ctx.stamp)
    ctx.plan.events.append(Event(event, f"TaskSet:{ctx.ref.name}"))
