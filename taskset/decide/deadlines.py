"""Run bounds as pure reads of the pass: ``spec.activeDeadlineSeconds`` and
``spec.ttlSecondsAfterFinished``.

The deadline is measured from ``status.createdAt``, the first time the controller saw the TaskSet, so it
survives controller restarts and retries (the status is the memory) and covers every attempt and every
retry delay, as the Job's ``activeDeadlineSeconds`` does. The live spec's value is used: a user may
lengthen or shorten the bound of a running TaskSet.
"""

from __future__ import annotations

from taskset.api.constants import DEADLINE_EXCEEDED, MSG_DEADLINE_EXCEEDED
from taskset.api.spec import ParsedTaskSet
from taskset.api.status import AttemptResult, seconds_since
from taskset.decide.context import PassContext
from taskset.decide.plan import ActionResult, DeleteTaskSet, ResultKind
from taskset.decide.upkeep import EXPIRED_TASKSET


def active_deadline(ctx: PassContext) -> int | None:
    """The TaskSet's ``activeDeadlineSeconds``, from the live spec or else the attempt's."""
    if isinstance(ctx.live, ParsedTaskSet):
        return ctx.live.spec.active_deadline_seconds
    return ctx.plan.spec.active_deadline_seconds if ctx.plan.spec is not None else None


def deadline_remaining(ctx: PassContext) -> float | None:
    """Seconds until the deadline passes (<= 0: it has), or None when there is none."""
    deadline = active_deadline(ctx)
    if deadline is None:
        return None
    return deadline - seconds_since(ctx.status.created_at, ctx.now)


def deadline_exceeded(ctx: PassContext) -> bool:
    remaining = deadline_remaining(ctx)
    return remaining is not None and remaining <= 0


def requeue_for_deadline(ctx: PassContext) -> None:
    """A waiting TaskSet looks again when its deadline passes: no watch event would wake it then."""
    remaining = deadline_remaining(ctx)
    if remaining is not None and remaining > 0:
        ctx.plan.requeue(remaining)


def deadline_message(ctx: PassContext) -> str:
    """'DeadlineExceeded: the TaskSet ran longer than activeDeadlineSeconds (60s)'."""
    return MSG_DEADLINE_EXCEEDED.format(seconds=active_deadline(ctx))


def end_at_deadline(ctx: PassContext) -> None:
    """Record the deadline as the attempt's final outcome: no retry follows, whatever the policy."""
    ctx.status.attempt_result = AttemptResult(False, deadline_message(ctx), final=True)


def ended_by_deadline(result: AttemptResult | None) -> bool:
    """Whether the attempt's recorded outcome is the deadline's (the Failed condition's reason)."""
    return result is not None and not result.succeeded and result.reason.startswith(DEADLINE_EXCEEDED)


def expire_finished(ctx: PassContext) -> None:
    """A finished TaskSet whose ``ttlSecondsAfterFinished`` passed since ``status.finishAt`` is deleted
    (UID precondition); before that, a pass is requeued for the moment it passes. The TTL is read from
    the live spec, so a user may set or change it after the TaskSet finished, as for the Job."""
    live = ctx.live
    ttl = live.spec.ttl_seconds_after_finished if isinstance(live, ParsedTaskSet) else None
    if ttl is None or ctx.ref.deleting or not ctx.ref.uid:
        return
    remaining = ttl - seconds_since(ctx.status.finish_at, ctx.now)
    if remaining > 0:
        ctx.plan.requeue(remaining)
    else:
        ctx.plan.intents.append(DeleteTaskSet(ctx.ref.uid, row=EXPIRED_TASKSET))


def taskset_deleted(ctx: PassContext, intent: DeleteTaskSet, result: ActionResult) -> None:
    """The TTL's delete came back: gone or going is done; an error is tried again with backoff."""
    if result.kind == ResultKind.ERROR:
        ctx.plan.backoff = True
