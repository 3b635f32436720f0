"""The live membership's generation (``taskset.integrations.membership``).

The status records the generation and the digest of the content it stands for. Twice a pass (once the
attempt's spec, scaled, is known, and once the machines moved), while the attempt is Preparing or
Running, the content is computed from the TaskSet; when its digest differs from the recorded one, the
generation goes up by one. So it moves on every scale, replica retry and new attempt, only then, and
never back (it lives in the status, across attempts). The ConfigMap then follows it
(``taskset.decide.owned_sync.update_owned``). Each scale taken in the pass is then announced: its
``lastScale`` gets the generation that shows it, and a ``TaskRoleScaled`` event says from, to, who asked
and that generation.
"""

from __future__ import annotations

from taskset.api.constants import EventReason, TaskSetPhase
from taskset.api.elastic_status import MembershipStatus
from taskset.decide.context import PassContext
from taskset.decide.owned_sync import attempt_of
from taskset.decide.plan import Event
from taskset.integrations.membership import content_digest, is_elastic, membership_content, membership_name

_LIVE = (TaskSetPhase.ATTEMPT_PREPARING, TaskSetPhase.ATTEMPT_RUNNING)


def note_membership(ctx: PassContext) -> None:
    """Move the generation on when the membership's content changed (see the module docstring)."""
    attempt = attempt_of(ctx) if ctx.status.phase in _LIVE else None
    if attempt is None or not is_elastic(attempt):
        return
    digest = content_digest(membership_content(attempt))
    recorded = ctx.status.membership
    if recorded is not None and recorded.digest == digest:
        return
    generation = (recorded.generation if recorded is not None else 0) + 1
    ctx.status.membership = MembershipStatus(membership_name(ctx.ref.name), generation, digest)


def announce_scales(ctx: PassContext) -> None:
    """One Normal event per scale taken in this pass, with the generation that shows it."""
    generation = ctx.status.membership.generation if ctx.status.membership is not None else 0
    for role in ctx.scaled:
        scale = role.last_scale
        if scale is None:
            continue
        scale.generation = generation
        who = f" by {scale.by}" if scale.by else ""
        shown = f", membership generation {generation}" if generation else ""
        message = f"TaskRole:{role.name}, replicas {scale.before} -> {scale.after}{who}{shown}"
        ctx.plan.events.append(Event(EventReason.ROLE_SCALED, message))
    ctx.scaled.clear()
