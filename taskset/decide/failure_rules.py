"""Telling failures apart: which failure rule a replica's failed attempt matches, and why.

``match_failure`` is the pure matcher, first match wins over the role's rules, then the TaskSet's
default rules, then ``BUILTIN_RULES`` (disruption, eviction, node loss and preemption are platform
failures, retried without counting); nothing matched means ``RetryCounted``, today's behaviour. A user
overrides a built-in rule by matching the same thing first. ``note_failure`` records the match in the
replica's status (``failure``) and says it in a ``ReplicaFailure`` event, once per attempt and match.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Final

from taskset.api.constants import (
    MAX_UNCOUNTED_RETRIES,
    POD_CONDITION_DISRUPTION_TARGET,
    POD_REASON_NODE_LOST,
    POD_REASON_START_DEADLINE,
    EventReason,
    FailureAction,
)
from taskset.api.failures import FailureRule, PodCondition
from taskset.api.retry_effects import NextAttempt
from taskset.api.spec import Role, TaskSetSpec
from taskset.api.status import QUOTED_MAX, FailureRecord, ReplicaStatus, clip
from taskset.decide.context import PassContext
from taskset.decide.next_attempt import learn
from taskset.decide.plan import Event
from taskset.decide.preemption import (
    PREEMPTION_DISRUPTIONS,
    PREEMPTION_POD_REASONS,
    PREEMPTION_RULE,
    already_charged,
    charge_preemption,
)
from taskset.observed.views import POD_PHASE_UNKNOWN, ContainerExit, PodView

# Pod reasons the kubelet and the node lifecycle write when the platform, not the workload, ended a Pod.
PLATFORM_POD_REASONS: Final = frozenset({"Evicted", "Preempting", POD_REASON_NODE_LOST, "NodeShutdown"})
BUILTIN_RULES: Final = (
    # Preemption first: its own class, with its own budget (taskset.decide.preemption).
    FailureRule(PREEMPTION_RULE, FailureAction.RETRY_NOT_COUNTED, disruption_reasons=PREEMPTION_DISRUPTIONS),
    FailureRule(PREEMPTION_RULE, FailureAction.RETRY_NOT_COUNTED, pod_reasons=PREEMPTION_POD_REASONS),
    FailureRule(
        "builtin-disruption",
        FailureAction.RETRY_NOT_COUNTED,
        pod_conditions=(PodCondition(POD_CONDITION_DISRUPTION_TARGET, "True"),),
    ),
    FailureRule("builtin-platform", FailureAction.RETRY_NOT_COUNTED, pod_reasons=PLATFORM_POD_REASONS),
    # A Pod that never ran within startDeadlineSeconds (taskset.decide.start_deadline).
    FailureRule(
        "builtin-start-deadline",
        FailureAction.RETRY_NOT_COUNTED,
        pod_reasons=frozenset({POD_REASON_START_DEADLINE}),
    ),
)
NO_RULE: Final = "default"  # the rule name recorded when nothing matched
_ENDS_ATTEMPT: Final = frozenset({FailureAction.FAIL_TASKSET, FailureAction.RESTART_TASKSET})


@dataclass(frozen=True)
class AttemptEnd:
    """What failure rules read of a failed replica attempt: its containers' exits, the Pod's reason
    (``NodeLost`` for a Pod whose phase became Unknown without one), its kept conditions and its
    DisruptionTarget's (reason, message)."""

    exits: tuple[ContainerExit, ...] = ()
    pod_reason: str = ""
    conditions: tuple[tuple[str, str], ...] = ()
    disruption: tuple[str, str] | None = None
    node: str = ""  # the node the attempt ran on, "" when unknown


@dataclass(frozen=True)
class FailureMatch:
    rule: str
    action: FailureAction
    why: str
    next_attempt: NextAttempt | None = None  # what the matched rule changes in the next attempt


def end_of_pod(pod: PodView) -> AttemptEnd:
    lost = pod.phase == POD_PHASE_UNKNOWN
    reason = pod.reason or (POD_REASON_NODE_LOST if lost else "")
    return AttemptEnd(pod.exits, reason, pod.conditions, pod.disruption, pod.node_name)


def end_of_replica(replica: ReplicaStatus, last: PodView | None = None) -> AttemptEnd:
    """What the status still says once the Pod is gone (it vanished, or was never created), with the
    conditions of ``last``, the Pod's last view when the cache saw it deleted while disrupted (evicted
    through the Eviction API before any pass saw it end: ``taskset.runtime.disruptions``)."""
    info = replica.terminated_info
    exits = () if info is None else (ContainerExit(replica.container_name, info.exit_code, info.reason),)
    if last is None or last.uid != replica.pod_uid:
        return AttemptEnd(exits, replica.pod_reason)
    reason = replica.pod_reason or last.reason
    return AttemptEnd(exits or last.exits, reason, last.conditions, last.disruption, last.node_name)


def _exit_codes(rule: FailureRule, end: AttemptEnd) -> str | None:
    codes = rule.exit_codes
    assert codes is not None
    for done in end.exits:  # the Job controller's rule: a container that exited 0 did not fail
        if done.exit_code != 0 and codes.container in (None, done.container) and codes.holds(done.exit_code):
            return f"container {done.container} exited with {done.exit_code}"
    return None


def _terminated_reasons(rule: FailureRule, end: AttemptEnd) -> str | None:
    done = next((d for d in end.exits if d.reason in rule.terminated_reasons), None)
    return None if done is None else f"container {done.container} terminated with reason {done.reason}"


def _pod_reasons(rule: FailureRule, end: AttemptEnd) -> str | None:
    return f"Pod reason {end.pod_reason}" if end.pod_reason in rule.pod_reasons else None


def _pod_conditions(rule: FailureRule, end: AttemptEnd) -> str | None:
    wanted = {(condition.type, condition.status) for condition in rule.pod_conditions}
    found = next((c for c in end.conditions if c in wanted), None)
    return None if found is None else f"Pod condition {found[0]}={found[1]}"


def _disruption_reasons(rule: FailureRule, end: AttemptEnd) -> str | None:
    if end.disruption is None or end.disruption[0] not in rule.disruption_reasons:
        return None
    reason, message = end.disruption
    return f"Pod condition DisruptionTarget={reason}" + (f" ({message})" if message else "")


_Criterion = Callable[[FailureRule, AttemptEnd], "str | None"]
_CRITERIA: Final[tuple[tuple[Callable[[FailureRule], bool], _Criterion], ...]] = (
    (lambda rule: rule.exit_codes is not None, _exit_codes),
    (lambda rule: bool(rule.terminated_reasons), _terminated_reasons),
    (lambda rule: bool(rule.pod_reasons), _pod_reasons),
    (lambda rule: bool(rule.pod_conditions), _pod_conditions),
    (lambda rule: bool(rule.disruption_reasons), _disruption_reasons),
)


def _why(rule: FailureRule, end: AttemptEnd) -> str | None:
    """Why ``rule`` matches ``end`` (every criterion it gives holds), or None."""
    reasons = []
    for given, criterion in _CRITERIA:
        if given(rule):
            reason = criterion(rule, end)
            if reason is None:
                return None
            reasons.append(reason)
    return ", ".join(reasons) if reasons else None


def match_failure(rules: Sequence[FailureRule], end: AttemptEnd) -> FailureMatch:
    """The first of ``rules`` then ``BUILTIN_RULES`` that matches, or ``RetryCounted`` by default."""
    for rule in (*rules, *BUILTIN_RULES):
        why = _why(rule, end)
        if why is not None:
            return FailureMatch(rule.name, rule.action, why, rule.next_attempt)
    return FailureMatch(NO_RULE, FailureAction.RETRY_COUNTED, "no failure rule matched")


def rules_of(spec: TaskSetSpec, role: Role) -> tuple[FailureRule, ...]:
    """The rules a role's replicas are matched against, in order: the role's, then the TaskSet's."""
    return (*role.failure_rules, *spec.failure_rules)


def failure_action(replica: ReplicaStatus) -> FailureAction:
    """What the current attempt's failure asks for; past ``MAX_UNCOUNTED_RETRIES`` a platform failure
    counts like any other."""
    action = FailureAction.RETRY_COUNTED if replica.failure is None else replica.failure.action
    if action == FailureAction.RESTART_IN_PLACE:  # the kubelet did not restart it in place: replace it
        return FailureAction.RETRY_COUNTED
    if action == FailureAction.RETRY_NOT_COUNTED and replica.uncounted_retries >= MAX_UNCOUNTED_RETRIES:
        return FailureAction.RETRY_COUNTED
    return action


def fails_role(replica: ReplicaStatus) -> bool:
    """Whether this completed replica's failure fails its role at once (FailRole and the two that end
    the attempt, which do so through the role)."""
    return not replica.stopped and failure_action(replica) in (FailureAction.FAIL_ROLE, *_ENDS_ATTEMPT)


def ends_attempt(replica: ReplicaStatus) -> FailureAction | None:
    """FailTaskSet or RestartTaskSet when this completed replica's failure ends the attempt at once."""
    action = failure_action(replica)
    return action if not replica.stopped and action in _ENDS_ATTEMPT else None


def note_failure(
    ctx: PassContext, role: Role, replica: ReplicaStatus, end: AttemptEnd, detail: str = ""
) -> None:
    """Record which rule the failed attempt matches, with a ``ReplicaFailure`` event when that is new
    (the status is decide's only memory, so each attempt's match is said once across restarts).
    ``detail`` follows the match's why: what the end itself cannot say (why a Pod never started)."""
    spec = ctx.plan.spec
    found = match_failure(rules_of(spec, role) if spec is not None else role.failure_rules, end)
    if detail:
        found = replace(found, why=f"{found.why}: {detail}")
    if found.rule == PREEMPTION_RULE:
        if already_charged(replica):  # counted when this attempt's record was written
            return
        reason = end.disruption[0] if end.disruption is not None else end.pod_reason
        action, why = charge_preemption(ctx, replica, reason, found.why)
        found = replace(found, action=action, why=why)
    record = FailureRecord(found.rule, found.action, clip(found.why, QUOTED_MAX))
    if replica.failure == record:
        return
    replica.failure = record
    learned = learn(
        replica, role, rule=found.next_attempt, exits=end.exits, node=end.node, action=found.action
    )
    name = replica.pod_name or f"{role.name}-{replica.index}"
    message = f"{name} (attempt {replica.total_retried_count}): rule {found.rule} matched, {found.why}: "
    message += str(found.action) + (f"; next attempt: {learned}" if learned else "")
    ctx.plan.events.append(Event(EventReason.REPLICA_FAILURE, clip(message, 1024)))


def failure_text(replica: ReplicaStatus) -> str:
    """The failure in front of a retry decision: ``rule <name> (<why>): <action>``."""
    failure = replica.failure
    if failure is None:
        return ""
    return f"rule {failure.rule} ({failure.message}): {failure.action}"
