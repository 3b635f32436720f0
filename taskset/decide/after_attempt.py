"""Around an attempt's end, what the integrations want done with their objects
(``FinishesAttempts.after_attempt``: Kueue's Workloads).

Asked every pass once the TaskSet has an attempt: while it runs, only objects of earlier attempts are
deleted (a retried attempt's finished Workload, once the next one is there to hold the queue's place);
once the attempt's outcome is known (the ControlUnit going or gone, or the TaskSet completed), the
statuses it asks for are applied: Kueue's ``Finished`` condition, which frees the quota and keeps the
Workload as Kueue's record of the job until the TaskSet is deleted. Only the TaskSet's own objects
(controlled by it or by the attempt's ControlUnit), by UID; a status already applied is not asked again
because the integration sees it in the cache.
"""

from __future__ import annotations

from taskset.api.constants import TaskSetPhase
from taskset.decide.context import PassContext
from taskset.decide.owned_sync import attempt_of
from taskset.decide.plan import ActionResult, ApplyOwnedStatus, DeleteOwned, ResultKind
from taskset.decide.upkeep import ATTEMPT_END_STATUS, EARLIER_ATTEMPT_OBJECT

# Phases in which the attempt's outcome, once recorded, is final for this attempt.
_ENDED = (
    TaskSetPhase.ATTEMPT_DELETION_PENDING,
    TaskSetPhase.ATTEMPT_DELETION_REQUESTED,
    TaskSetPhase.ATTEMPT_COMPLETED,
    TaskSetPhase.COMPLETED,
)
_NOT_STARTED = (TaskSetPhase.VALIDATION, TaskSetPhase.ATTEMPT_PENDING)


def settle_after_attempt(ctx: PassContext) -> None:
    """Ask each integration what it wants done around the attempt's end, and plan it."""
    status = ctx.status
    attempt = attempt_of(ctx) if status.phase not in _NOT_STARTED or status.attempt_id > 0 else None
    if attempt is None:
        return
    outcome = status.attempt_result if status.phase in _ENDED else None
    owners = {uid for uid in (ctx.ref.uid, status.control_unit_uid) if uid}
    for integration, after in ctx.settings.framework.after_attempt(attempt, ctx.observed, outcome):
        for wanted in after.statuses:
            seen = ctx.observed.owned.get((wanted.kind.key, wanted.name))
            if seen is not None and seen.controller_uid in owners and not seen.deleting:
                body = wanted.body(seen.uid)
                for condition in body["status"].get("conditions") or ():
                    condition.setdefault("lastTransitionTime", ctx.stamp)  # hooks read no clock
                intent = ApplyOwnedStatus(
                    wanted.name, seen.uid, wanted.kind, integration, body, row=ATTEMPT_END_STATUS
                )
                ctx.plan.intents.append(intent)
        for kind, name in after.stale:
            seen = ctx.observed.owned.get((kind.key, name))
            if seen is not None and seen.controller_uid in owners and not seen.deleting:
                ctx.plan.intents.append(
                    DeleteOwned(name, seen.uid, False, kind, integration, row=EARLIER_ATTEMPT_OBJECT)
                )


def status_applied(ctx: PassContext, intent: ApplyOwnedStatus, result: ActionResult) -> None:
    """A status apply came back: a failure to reach the API server is retried with backoff; an object
    gone (or another in its place) needs nothing more, and the next pass sees what holds."""
    if result.kind == ResultKind.ERROR:
        ctx.plan.backoff = True
