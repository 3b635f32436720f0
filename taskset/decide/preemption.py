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
"""

from __future__ import annotations

from typing import Final

from taskset.api.constants import (
    MAX_RETRY_COUNT,
    ConditionStatus,
    ConditionType,
    FailureAction,
)
from taskset.api.status import QUOTED_MAX, ReplicaStatus, clip
from taskset.decide.context import PassContext

PREEMPTION_RULE: Final = "builtin-preemption"
# DisruptionTarget reasons that mean a preemption: kube-scheduler's, for a Pod and (1.36,
# WorkloadAwarePreemption) for a pod group alike.
PREEMPTION_DISRUPTIONS: Final = frozenset({"PreemptionByScheduler"})
# The Pod reason the kubelet writes when it preempts a Pod to admit a critical one.
PREEMPTION_POD_REASONS: Final = frozenset({"Preempting"})
# The Preempted condition's reason once the budget is spent (else the preemption's own reason).
BUDGET_EXCEEDED: Final = "PreemptionBudgetExceeded"


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
    status = ctx.status
    status.preempt_count = min(status.preempt_count + 1, MAX_RETRY_COUNT)
    count = status.preempt_count
    budget = ctx.plan.spec.max_preemptions if ctx.plan.spec is not None else None
    name = replica.pod_name or f"{replica.name}-{replica.index}"
    times = "1 time" if count == 1 else f"{count} times"
    if budget is not None and count > budget:
        said = f"preempted {times}, more than spec.retryPolicy.maxPreemptions ({budget}); last: {why}"
        action, condition_reason = FailureAction.FAIL_TASKSET, BUDGET_EXCEEDED
    else:
        limit = "" if budget is None else f" of at most {budget}"
        said = f"preempted {times}{limit}; last: {why}"
        action, condition_reason = FailureAction.RETRY_NOT_COUNTED, reason or "Preempted"
    message = clip(f"{replica.name}/{replica.index} (Pod {name}) {said}", QUOTED_MAX)
    status.set_condition(ConditionType.PREEMPTED, ConditionStatus.TRUE, condition_reason, message, ctx.stamp)
    return action, said
