"""Retries that learn from the failure: the replica's next attempt as its failure rule's ``nextAttempt``
asks (``taskset.api.retry_effects``), decided purely from the failed attempt.

``next_effect`` is the pure rule: the node the attempt ran on joins the nodes the replica avoids (the
latest ``MAX_AVOIDED_NODES``), and each container the attempt lost to ``OOMKilled`` gets its memory
request and limit (the last attempt's, else the template's) times the factor, never past the ceiling.
``in_place_decoration`` maps the ``RestartInPlace`` rules onto the Pod API's container restart rules.
``learn`` keeps the result in the replica's status, once per failed attempt, in the pass that records
the failure; ``pod_decorations`` turns it into the decoration of each later Pod of the replica, after the
integrations' own, with the nodes the whole gang avoids after a failed TaskSet attempt
(``taskset.decide.gang_avoidance``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from taskset.api.constants import FailureAction
from taskset.api.failures import FailureRule, in_place_codes
from taskset.api.retry_effects import (
    EFFECT_REASON_MAX,
    MAX_AVOIDED_NODES,
    OOM_KILLED,
    ContainerMemory,
    MemoryGrowth,
    NextAttempt,
    RetryEffect,
    format_mebibytes,
    parse_quantity,
    template_memory,
)
from taskset.api.spec import Role
from taskset.api.status import ReplicaStatus
from taskset.decide.context import PassContext
from taskset.decide.owned_sync import admission_of, attempt_of
from taskset.objects.decorations import PodDecoration
from taskset.objects.pods import PodIdentity
from taskset.observed.views import ContainerExit

_RETRIED = (FailureAction.RETRY_COUNTED, FailureAction.RETRY_NOT_COUNTED, FailureAction.RESTART_IN_PLACE)
# No retry of the replica follows these, but a TaskSet retry may: the node is kept for the whole gang
# (taskset.decide.gang_avoidance); a memory grown for a replica that gets no next Pod would say a lie.
_ENDS_ROLE = (FailureAction.RESTART_TASKSET, FailureAction.FAIL_ROLE)


def _grown(amount: Decimal | None, growth: MemoryGrowth) -> str | None:
    """``amount`` times the factor in whole mebibytes, or the ceiling as written once it reaches it."""
    if amount is None:
        return None
    grown = amount * growth.factor
    text = format_mebibytes(grown)
    quantity = parse_quantity(text)
    return growth.ceiling_text if quantity is None or quantity >= growth.ceiling else text


def _memory_before(
    current: RetryEffect | None, template: Mapping[str, Any], container: str
) -> tuple[Decimal | None, Decimal | None]:
    """The container's (request, limit) in the failed attempt: the last effect's, else the template's."""
    last = current.memory_of(container) if current is not None else None
    if last is None:
        return template_memory(template, container)
    return parse_quantity(last.request), parse_quantity(last.limit)


def next_effect(
    rule: NextAttempt,
    *,
    exits: Sequence[ContainerExit],
    node: str,
    current: RetryEffect | None,
    template: Mapping[str, Any],
    attempt: int,
) -> RetryEffect | None:
    """What the replica's next attempt changes after its attempt ``attempt`` ended with ``exits`` on
    ``node`` (""), given what the earlier failures changed (``current``); None when nothing changes."""
    nodes = current.avoid_nodes if current is not None else ()
    memory = {m.container: m for m in (current.memory if current is not None else ())}
    said: list[str] = []
    if rule.avoid_failed_nodes and node:
        nodes = (*(n for n in nodes if n != node), node)[-MAX_AVOIDED_NODES:]
        said.append(f"attempt {attempt} failed on node {node}: avoid " + ", ".join(nodes))
    growth = rule.memory
    for done in exits if growth is not None else ():
        if done.reason != OOM_KILLED:
            continue
        assert growth is not None
        request, limit = _memory_before(current, template, done.container)
        if request is None and limit is None:
            said.append(f"container {done.container} OOMKilled but sets no memory to grow")
            continue
        grown = ContainerMemory(done.container, _grown(request, growth), _grown(limit, growth))
        memory[done.container] = grown
        shown = grown.limit or grown.request
        said.append(
            f"container {done.container} OOMKilled: memory x{growth.factor} to {shown} "
            f"(ceiling {growth.ceiling_text})"
        )
    if not said:
        return current
    reason = "; ".join(said)[:EFFECT_REASON_MAX]
    return RetryEffect(attempt, nodes, tuple(memory.values()), reason)


def learn(
    replica: ReplicaStatus,
    role: Role,
    *,
    rule: NextAttempt | None,
    exits: Sequence[ContainerExit],
    node: str,
    action: FailureAction,
) -> str:
    """Keep what the replica's next attempt changes, once per failed attempt that a retry follows (of
    the replica, or of the TaskSet for the nodes); the words saying it, or "" when nothing changed."""
    current = replica.next_attempt
    if rule is not None and action in _ENDS_ROLE:
        rule = NextAttempt(avoid_failed_nodes=rule.avoid_failed_nodes)
    elif rule is None or action not in _RETRIED:
        return ""
    if current is not None and current.after_attempt == replica.total_retried_count:
        return ""  # this failure was answered (a pass run again over the same status)
    effect = next_effect(
        rule,
        exits=exits,
        node=node,
        current=current,
        template=role.template,
        attempt=replica.total_retried_count,
    )
    if effect is None or effect == current:
        return ""
    replica.next_attempt = effect
    return effect.reason


def effect_decoration(effect: RetryEffect | None, gang: RetryEffect | None = None) -> PodDecoration:
    """The replica's own ``effect`` as a decoration, avoiding also the nodes the whole ``gang`` avoids
    after a failed TaskSet attempt (``status.nextAttempt``): one expression, each node once."""
    memory = () if effect is None else tuple((m.container, m.request, m.limit) for m in effect.memory)
    nodes = (*(gang.avoid_nodes if gang is not None else ()), *(effect.avoid_nodes if effect else ()))
    return PodDecoration(avoid_nodes=tuple(dict.fromkeys(nodes)), container_memory=memory)


def in_place_decoration(rules: Sequence[FailureRule]) -> tuple[PodDecoration, ...]:
    """The RestartInPlace rules as the Pod API's container restart rules (the kubelet applies them)."""
    found = []
    for rule in rules:
        if rule.action == FailureAction.RESTART_IN_PLACE and rule.exit_codes is not None:
            codes = rule.exit_codes
            found.append((codes.container, str(codes.operator), in_place_codes(rule)))
    return (PodDecoration(restart_rules=tuple(found)),) if found else ()


def pod_decorations(
    ctx: PassContext, role: Role, replica: ReplicaStatus, identity: PodIdentity
) -> tuple[PodDecoration, ...]:
    """What the integrations add to this replica's Pod (``Framework.pod_decorations``), then what its
    failures taught (its ``nextAttempt``) and the failed TaskSet attempts before (``status.nextAttempt``)."""
    attempt = attempt_of(ctx)
    spec_rules = ctx.plan.spec.failure_rules if ctx.plan.spec is not None else ()
    own = in_place_decoration((*role.failure_rules, *spec_rules))
    gang = ctx.status.next_attempt
    if replica.next_attempt is not None or gang is not None:
        own += (effect_decoration(replica.next_attempt, gang),)
    if attempt is None:
        return own
    admission = admission_of(ctx, attempt)
    return (*ctx.settings.framework.pod_decorations(attempt, role, identity, admission), *own)
