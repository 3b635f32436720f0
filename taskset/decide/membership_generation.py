"""The live membership's generation (``taskset.integrations.membership``).

The status records the generation and the digest of the content it stands for. Twice a pass (once the
attempt's spec, scaled, is known, and once the machines moved), while the attempt is Preparing or
Running, the content is computed from the TaskSet; when its digest differs from the recorded one, the
generation goes up by one. So it moves on every scale, replica retry and new attempt, only then, and
never back (it lives in the status, across attempts). The ConfigMap then follows it
(``taskset.decide.owned_sync.update_owned``), written only once the status that allocated the
generation is persisted (``taskset.decide.plan.publishes_status``): a pass whose status write is lost
published nothing, so the next one allocates from what was.

A content too large for a ConfigMap (``CONFIG_MAP_DATA_MAX``) is not published: no generation is
allocated to it, the ConfigMap keeps the last one, ``status.membership.refused`` says why and a Warning
event says so once per refused content. Nothing then announces a generation the ConfigMap does not show.

Each scale taken in the pass is then announced: its ``lastScale`` gets the generation that shows it, and
a ``TaskRoleScaled`` event says from, to, who asked and that generation (or that the membership could
not show it, and why).
"""

from __future__ import annotations

from dataclasses import replace

from taskset.api.constants import EventReason, TaskSetPhase
from taskset.api.elastic_status import MembershipStatus
from taskset.decide.context import PassContext
from taskset.decide.owned_sync import attempt_of
from taskset.decide.plan import Event
from taskset.integrations.membership import (
    CONFIG_MAP_DATA_MAX,
    content_digest,
    data_size,
    is_elastic,
    membership_content,
    membership_data,
    membership_name,
)

_LIVE = (TaskSetPhase.ATTEMPT_PREPARING, TaskSetPhase.ATTEMPT_RUNNING)


def note_membership(ctx: PassContext) -> None:
    """Move the generation on when the membership's content changed and fits (see the module
    docstring)."""
    attempt = attempt_of(ctx) if ctx.status.phase in _LIVE else None
    if attempt is None or not is_elastic(attempt):
        return
    content = membership_content(attempt)
    digest = content_digest(content)
    recorded = ctx.status.membership
    name = membership_name(ctx.ref.name)
    if recorded is not None and recorded.digest == digest:
        if recorded.refused:  # back to the content it shows
            ctx.status.membership = replace(recorded, refused="")
        return
    generation = (recorded.generation if recorded is not None else 0) + 1
    size = data_size(membership_data(content, generation))
    if size > CONFIG_MAP_DATA_MAX:
        _refuse(ctx, recorded, name, size)
        return
    ctx.status.membership = MembershipStatus(name, generation, digest)


def _refuse(ctx: PassContext, recorded: MembershipStatus | None, name: str, size: int) -> None:
    """Keep the generation where it is and say why the content is not published, once per reason."""
    shown = recorded.generation if recorded is not None else 0
    reason = (
        f"ConfigMap {name} not updated: the membership would hold {size} bytes, above the "
        f"{CONFIG_MAP_DATA_MAX} a ConfigMap's data may hold; it still shows generation {shown}"
    )
    if recorded is not None and recorded.refused == reason:
        return
    ctx.status.membership = (
        MembershipStatus(name, 0, "", reason) if recorded is None else replace(recorded, refused=reason)
    )
    ctx.plan.events.append(Event(EventReason.OWNED_OBJECT_UPDATE_REFUSED, reason))


def announce_scales(ctx: PassContext) -> None:
    """One Normal event per scale taken in this pass, with the generation that shows it, or why none
    does."""
    membership = ctx.status.membership
    generation = membership.generation if membership is not None and not membership.refused else 0
    for role in ctx.scaled:
        scale = role.last_scale
        if scale is None:
            continue
        scale.generation = generation
        who = f" by {scale.by}" if scale.by else ""
        shown = f", membership generation {generation}" if generation else ""
        if membership is not None and membership.refused:
            shown = f", membership not updated (ConfigMap {membership.config_map} would be too large)"
        message = f"TaskRole:{role.name}, replicas {scale.before} -> {scale.after}{who}{shown}"
        ctx.plan.events.append(Event(EventReason.ROLE_SCALED, message))
    ctx.scaled.clear()
