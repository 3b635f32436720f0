"""Preemption as its own class of failure, with its own budget.

A replica's Pod ended by a preemption is the platform's doing, not the workload's: the scheduler
preempting it for a higher-priority Pod (or pod group) writes ``DisruptionTarget=True`` with reason
``PreemptionByScheduler`` before it deletes the Pod, and the kubelet making room for a critical Pod
fails it with the Pod reason ``Preempting``. The built-in rule ``builtin-preemption``
(``taskset.decide.failure_rules``) matches both, ahead of the other platform rules, and retries the
replica without counting it against ``maxRetryCount``, as before.

What is new is the budget: each preemption is counted once in ``status.preemptCount`` (the TaskSet's,
across its attempts) and said in the ``Preempted`` condition, naming the replica, its Pod and what the
Pod says preempted it. ``spec.retryPolicy.maxPreemptions`` bounds it: the preemption past it fails the
TaskSet (the rule's action becomes ``FailTaskSet``), with the preemption as the reason, so a TaskSet that
keeps losing its Pods to higher priorities ends rather than coming back forever. Absent, any number of
preemptions is retried (today's behaviour).

The count is charged when the failure record of the attempt is first written: that record and the count
go out in the same status write, and a later pass over the same attempt finds the record there and
charges nothing, so a restarted controller never counts a preemption twice.

An admitting system's preemption counts the same way, once per withdrawal rather than per Pod: Kueue
evicting the attempt's Workload with the reason ``Preempted`` (``Admission.preempted``) stops every Pod of
the attempt, counting no failure, and is one preemption of the TaskSet, said in the ``Preempted``
condition (reason ``EvictedByKueue``) with Kueue's words, which name the preemptor's Workload. The
eviction's key (the Workload's UID and the eviction's time) goes into ``status.countedEviction`` in the
same status write as the count. Past the budget the attempt ends with ``PreemptionBudgetExceeded`` as its
final outcome and the TaskSet fails; within it, the attempt waits for Kueue to admit it again.
"""

from __future__ import annotations

from typing import Final

from taskset.api.constants import (
    MAX_RETRY_COUNT,
    ConditionStatus,
    ConditionType,
    EventReason,
    FailureAction,
)
from taskset.api.counted_eviction import counted_eviction_key
from taskset.api.status import (
    MESSAGE_MAX,
    QUOTED_MAX,
    AttemptResult,
    ReplicaStatus,
    clip,
)
from taskset.decide.context import PassContext
from taskset.decide.plan import Event
from taskset.integrations.base import Preemption

PREEMPTION_RULE: Final = "builtin-preemption"
# DisruptionTarget reasons that mean a preemption: kube-scheduler's, for a Pod and (1.36,
# WorkloadAwarePreemption) for a pod group alike.
PREEMPTION_DISRUPTIONS: Final = frozenset({"PreemptionByScheduler"})
# The Pod reason the kubelet writes when it preempts a Pod to admit a critical one.
PREEMPTION_POD_REASONS: Final = frozenset({"Preempting"})
# The Preempted condition's reason once the budget is spent (else the preemption's own reason).
BUDGET_EXCEEDED: Final = "PreemptionBudgetExceeded"
# The Preempted condition's reason for an admission withdrawn by a preemption (Kueue's eviction).
KUEUE_PREEMPTION: Final = "EvictedByKueue"


def already_charged(replica: ReplicaStatus) -> bool:
    """Whether this attempt's preemption was counted (its record names the preemption rule)."""
    return replica.failure is not None and replica.failure.rule == PREEMPTION_RULE


def charge_preemption(
    ctx: PassContext, replica: ReplicaStatus, reason: str, why: str
) -> tuple[FailureAction, str]:
    """Count the preemption ``why`` describes (``reason``: the DisruptionTarget's or the Pod's), say it
    in the ``Preempted`` condition (``note_failure``'s ``ReplicaFailure`` event says it too) and return
    the action for the attempt: ``RetryNotCounted`` within the budget, ``FailTaskSet`` past it, with
    the words the status and the history keep."""
    name = replica.pod_name or f"{replica.name}-{replica.index}"
    exceeded, said = _charge(ctx, f"{replica.name}/{replica.index} (Pod {name})", reason, why)
    return (FailureAction.FAIL_TASKSET if exceeded else FailureAction.RETRY_NOT_COUNTED), said


def charge_admission_preemption(ctx: PassContext, preempted: Preemption | None) -> None:
    """An admission withdrawn by a preemption (``Admission.preempted``: Kueue evicted the attempt's
    Workload to admit another) is one preemption of the TaskSet, however many Pods it stops: counted
    once, by its key, which ``status.countedEviction`` keeps in the same status write as the count, so
    a later pass, or a restarted controller, that sees the same eviction counts nothing. Past the
    budget the attempt ends with the preemption as its final outcome: the TaskSet fails, no retry."""
    status = ctx.status
    if preempted is None or status.counted_eviction == counted_eviction_key(preempted.key):
        return
    status.counted_eviction = counted_eviction_key(preempted.key)
    exceeded, said = _charge(ctx, preempted.subject, KUEUE_PREEMPTION, preempted.said)
    said_of = clip(f"{preempted.subject} {said}", MESSAGE_MAX)
    ctx.plan.events.append(Event(EventReason.TASKSET_PREEMPTED, said_of))
    if exceeded and status.attempt_result is None:
        reason = clip(f"{BUDGET_EXCEEDED}: {preempted.subject} {said}", MESSAGE_MAX)
        status.attempt_result = AttemptResult(False, reason, final=True)


def _charge(ctx: PassContext, subject: str, reason: str, why: str) -> tuple[bool, str]:
    """Count one preemption of ``subject`` and say it in the ``Preempted`` condition: whether it is past
    the budget, and the words the status and the history keep."""
    status = ctx.status
    status.preempt_count = min(status.preempt_count + 1, MAX_RETRY_COUNT)
    count = status.preempt_count
    budget = ctx.plan.spec.max_preemptions if ctx.plan.spec is not None else None
    times = "1 time" if count == 1 else f"{count} times"
    exceeded = budget is not None and count > budget
    if exceeded:
        said = f"preempted {times}, more than spec.retryPolicy.maxPreemptions ({budget}); last: {why}"
        condition_reason = BUDGET_EXCEEDED
    else:
        limit = "" if budget is None else f" of at most {budget}"
        said = f"preempted {times}{limit}; last: {why}"
        condition_reason = reason or "Preempted"
    message = clip(f"{subject} {said}", QUOTED_MAX)
    status.set_condition(ConditionType.PREEMPTED, ConditionStatus.TRUE, condition_reason, message, ctx.stamp)
    return exceeded, said
