"""One reconcile pass's decisions: (TaskSet, recorded status, observed snapshot, now) -> Plan.

Pure: no API calls, no clock, no logging. The plan holds the new status, the API *intents* to carry
out, the Kubernetes events and log records to emit after the status write, and when to look again.
Rows that need the API server (create/delete) do not change a phase themselves: their intent comes
back through ``apply_result`` with the outcome, which moves the machine along a declared edge. Rows
without I/O chain within the pass (bounded), so one pass goes as far as the observed facts allow.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import Enum
from typing import Any

from taskset.api.constants import (
    KIND,
    LOG_MSG_POD_ASSIGNED,
    LOG_MSG_POD_COMPLETED,
    LOG_MSG_POD_RETRY,
    LOG_MSG_TASKSET_PHASE_TRANSITION,
    POD_REASON_CREATION_FAILED,
    POD_REASON_NAME_CONFLICT,
    WARNING_EVENT_REASONS,
    ConditionReason,
    ConditionStatus,
    ConditionType,
    EventReason,
    QueryKey,
    ReplicaPhase,
    RolePhase,
    State,
    TaskSetPhase,
)
from taskset.api.spec import (
    ParsedTaskSet,
    ParseResult,
    RetryPolicy,
    Role,
    TaskSetSpec,
    ValidationFailure,
    control_unit_name,
    pod_name,
)
from taskset.api.status import (
    AttemptResult,
    ReplicaStatus,
    RoleStatus,
    TaskSetStatus,
    TerminatedInfo,
    seconds_since,
    stamp,
)
from taskset.api.views import (
    POD_PHASE_UNKNOWN,
    Observed,
    PodClass,
    PodView,
    classify_pod,
    control_unit_view,
    pod_view,
)
from taskset.decide import policies
from taskset.decide.machines import (
    REPLICA_MACHINE,
    ROLE_MACHINE,
    TASKSET_MACHINE,
    ControlUnitClass,
    ReplicaFacts,
    RoleFacts,
    TaskSetFacts,
)
from taskset.objects.controlunit import parse_snapshot

P = ReplicaPhase
T = TaskSetPhase
# Seconds between deletes of a Pod the cache never showed, until the API server answers NotFound.
UNSEEN_DELETE_POLL = 2.0
# Phases that say only "a create or delete was requested". A pass that moved machines into these and
# nowhere else has no news for the user: the request's own watch event brings the next pass, which writes
# them together with what it learns. If they are lost (a crash, a conflict), the pass that redoes them
# finds the object and adopts it (W-1) or repeats the delete, which its UID precondition makes safe.
# TaskSetAttemptPending is the first pass's step before T3, and T14's after a retry, whose ControlUnit
# name (from the retry count) is the same when redone. A created Pod's way to running (Pending, then
# scheduled) is news of the same kind: the Pod's next events bring the pass that writes it, and one that
# stays there is written HOLD_LIMIT (reconciler.py) later; the TaskSet's state is Waiting throughout.
IN_FLIGHT_PHASES: frozenset[str] = frozenset(
    {
        T.ATTEMPT_PENDING,
        T.ATTEMPT_CREATION_REQUESTED,
        T.ATTEMPT_DELETION_REQUESTED,
        P.ATTEMPT_CREATION_REQUESTED,
        P.ATTEMPT_PREPARING,
        P.ATTEMPT_ASSIGNED,
        P.ATTEMPT_DELETION_REQUESTED,
    }
)


@dataclass(frozen=True)
class Settings:
    """Timing knobs of the machines, in seconds."""

    # How long a created ControlUnit or Pod may stay invisible in the cache (O: cacheCreationTimeoutSec).
    cache_creation_timeout: float = 300.0
    # Safety-net requeue while waiting for the cache to show a create or a delete (O: 10 s).
    cache_wait_requeue: float = 10.0
    # Requeue while a Pod or ControlUnit deletion is in flight (spec P12: "for example every 30 s").
    deletion_wait_requeue: float = 30.0
    # Bound on chained transitions per machine and pass; far above any legal path, so only a bug hits it.
    max_chain: int = 32


# ----------------------------------------------------------------------------------------------------
# What a plan carries
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskSetRef:
    """Identity of the TaskSet being reconciled, from its metadata."""

    name: str
    namespace: str
    uid: str
    generation: int
    deleting: bool


@dataclass(frozen=True)
class CreateControlUnit:
    name: str  # the reconciler snapshots the TaskSet's spec into it (W-18)


@dataclass(frozen=True)
class DeleteControlUnit:
    name: str
    uid: str
    advances: bool  # T10: the TaskSet moves on when the delete is accepted; False for stray cleanup (T15)


@dataclass(frozen=True)
class CreatePod:
    role: int  # position in spec.roles
    index: int
    name: str
    taskset_attempt: int
    replica_attempt: int


@dataclass(frozen=True)
class DeletePod:
    name: str
    uid: str
    role: int
    index: int
    advances: bool  # P9: the replica moves on when the delete is accepted; False for P0/duplicates
    # Whether the cache showed the Pod. If not (P2's timeout), only a NotFound proves it is gone (8.6),
    # so an accepted delete keeps the replica waiting and asking again.
    seen: bool = True


Intent = CreateControlUnit | DeleteControlUnit | CreatePod | DeletePod


@dataclass(frozen=True)
class Event:
    reason: EventReason
    message: str

    @property
    def warning(self) -> bool:
        return self.reason in WARNING_EVENT_REASONS


@dataclass(frozen=True)
class LogRecord:
    """One LOG.md record: ``msg`` plus its exact fields (spec 10.2)."""

    msg: str
    fields: Mapping[str, Any]
    level: str = "info"


@dataclass
class Plan:
    status: TaskSetStatus
    spec: TaskSetSpec | None
    intents: list[Intent] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    records: list[LogRecord] = field(default_factory=list)
    requeue_after: float | None = None
    # Set when an action failed in a way worth a rate-limited retry (API errors, not policy outcomes).
    backoff: bool = False
    # Target phases of the TaskSet, role and replica moves since the status was last written.
    moves: list[str] = field(default_factory=list)
    # The pass that made this plan, so apply_result folds outcomes in with the same inputs.
    context: _Pass | None = field(default=None, repr=False, compare=False)

    def requeue(self, seconds: float) -> None:
        seconds = max(0.0, seconds)
        self.requeue_after = seconds if self.requeue_after is None else min(self.requeue_after, seconds)

    @property
    def only_requests_in_flight(self) -> bool:
        """Whether every move since the last write went into an ``IN_FLIGHT_PHASES`` phase, so the write
        may wait for the next pass (status writes are the API server's costliest TaskSet requests). A
        warning is news of its own: a Pod that will not start says why at once (issue 8)."""
        return (
            bool(self.moves)
            and all(target in IN_FLIGHT_PHASES for target in self.moves)
            and not any(event.warning for event in self.events)
        )


class ResultKind(Enum):
    OK = "ok"
    EXISTS = "already-exists"  # ``obj`` is the live object under the name, or None if it vanished
    INVALID = "invalid"  # 422 / lasting admission denial: retrying the same request cannot succeed
    NOT_FOUND = "not-found"
    CONFLICT = "conflict"  # a UID precondition failed: the object under the name is another one
    ERROR = "error"  # transient: 429, 5xx, timeouts, the denials of kube.TRANSIENT_DENIALS


@dataclass(frozen=True)
class ActionResult:
    kind: ResultKind
    obj: Mapping[str, Any] | None = None
    message: str = ""


# ----------------------------------------------------------------------------------------------------
# Entry point
# ----------------------------------------------------------------------------------------------------


@dataclass
class _Pass:
    """Everything one pass reads, plus the plan it fills in."""

    ref: TaskSetRef
    live: ParseResult
    observed: Observed
    now: datetime
    settings: Settings
    plan: Plan
    # (role, index) of replicas waiting for an action's result: later syncs in this pass leave them be.
    busy: set[tuple[int, int]] = field(default_factory=set)
    # UIDs of stray Pods this pass already deletes.
    deleted: set[str] = field(default_factory=set)
    # ControlUnit UID -> whether a Pod of an earlier attempt is left (computed once per pass, W-11).
    earlier_attempt_pods: dict[str | None, bool] = field(default_factory=dict)

    @functools.cached_property
    def stamp(self) -> str:
        """``now`` as the API's timestamps write it; once per pass (a pass stamps every move)."""
        return stamp(self.now)

    @property
    def status(self) -> TaskSetStatus:
        return self.plan.status


def decide(
    ref: TaskSetRef,
    live: ParseResult,
    recorded: TaskSetStatus | None,
    observed: Observed,
    now: datetime,
    *,
    settings: Settings = Settings(),
) -> Plan:
    """Run the machines over a private copy of ``recorded`` and return what to do."""
    status = recorded.copy() if recorded is not None else _fresh_status(live, now)
    status.observed_generation = ref.generation
    ctx = _Pass(ref, live, observed, now, settings, Plan(status=status, spec=None))
    ctx.plan.context = ctx
    ctx.plan.spec = _attempt_spec(ctx)
    _run_taskset(ctx)
    _report_waiting(ctx)
    return ctx.plan


def _fresh_status(live: ParseResult, now: datetime) -> TaskSetStatus:
    at = stamp(now)
    status = TaskSetStatus(phase_message="Initialize the taskset status", transition_time=at, created_at=at)
    status.state_message = status.phase_message
    status.roles = _fresh_roles(live, at)
    return status


def _fresh_roles(live: ParseResult, at: str) -> list[RoleStatus]:
    if isinstance(live, ValidationFailure):
        return [RoleStatus.fresh(outline.name, max(outline.replicas, 0), at) for outline in live.roles]
    return [RoleStatus.fresh(role.name, role.replicas, at) for role in live.spec.roles]


def _attempt_spec(ctx: _Pass) -> TaskSetSpec | None:
    """The spec this attempt runs with: the ControlUnit's snapshot when there is one (W-18), else the
    live spec; None when neither is usable."""
    unit = ctx.observed.control_unit
    ours = _unit_class(ctx) in (ControlUnitClass.OURS, ControlUnitClass.OURS_DELETING)
    if unit is not None and unit.spec_snapshot and ours:
        snapshot = parse_snapshot(unit.spec_snapshot, ctx.ref.name, ctx.ref.namespace, ctx.ref.uid)
        if snapshot is not None:
            return snapshot
    return ctx.live.spec if isinstance(ctx.live, ParsedTaskSet) else None


def _shape_matches(spec: TaskSetSpec, roles: list[RoleStatus]) -> bool:
    return len(spec.roles) == len(roles) and all(
        role.name == status.name and role.replicas == len(status.replicas)
        for role, status in zip(spec.roles, roles, strict=True)
    )


# ----------------------------------------------------------------------------------------------------
# TaskSet machine
# ----------------------------------------------------------------------------------------------------


def _unit_class(ctx: _Pass) -> ControlUnitClass:
    unit = ctx.observed.control_unit
    if unit is None or unit.name != control_unit_name(ctx.ref.name, ctx.status.attempt_id):
        return ControlUnitClass.ABSENT  # nothing, or an earlier attempt's (a retry started in this pass)
    if unit.controller_uid != ctx.ref.uid or not ctx.ref.uid:
        if unit.controller_kind == KIND and unit.controller_name == ctx.ref.name and unit.controller_uid:
            # An earlier TaskSet object of the same name owns it (deleted, then re-created, W-16): the
            # garbage collector is taking it away, so wait as for any ControlUnit being deleted.
            return ControlUnitClass.OURS_DELETING
        return ControlUnitClass.FOREIGN
    recorded = ctx.status.control_unit_uid
    if recorded and unit.uid != recorded:
        # Ours by owner, but not the one this attempt recorded: a leftover going away, or a stale one.
        return ControlUnitClass.OURS_DELETING if unit.deleting else ControlUnitClass.FOREIGN
    return ControlUnitClass.OURS_DELETING if unit.deleting else ControlUnitClass.OURS


def _taskset_facts(ctx: _Pass) -> TaskSetFacts:
    status, spec = ctx.status, ctx.plan.spec
    unit = _unit_class(ctx)
    outcome = None
    usable = spec is not None and _shape_matches(spec, status.roles)
    if status.phase in (T.ATTEMPT_PREPARING, T.ATTEMPT_RUNNING, *_ENDING_PHASES) and usable:
        assert spec is not None
        outcome = policies.attempt_outcome(spec.roles, status.roles)
    unusable_attempt = status.phase in (T.ATTEMPT_PREPARING, T.ATTEMPT_RUNNING) and not usable
    if status.attempt_result is not None and status.phase in _ENDING_PHASES:
        outcome = policies.Outcome(status.attempt_result.succeeded, status.attempt_result.reason)
    may_retry, _ = policies.taskset_retry_decision(_retry_policy(ctx), status.total_retried_count)
    delay = _retry_policy(ctx).delay_seconds
    return TaskSetFacts(
        legal=isinstance(ctx.live, ParsedTaskSet),
        control_unit=unit,
        deleting=ctx.ref.deleting,
        creation_timed_out=seconds_since(status.transition_time, ctx.now)
        > ctx.settings.cache_creation_timeout,
        attempt_complete=outcome is not None or unusable_attempt,
        attempt_succeeded=outcome is not None and outcome.succeeded,
        role_started=any(role.phase != RolePhase.WAITING for role in status.roles),
        may_retry=may_retry and not ctx.ref.deleting,
        retry_due=policies.retry_due(delay, seconds_since(status.transition_time, ctx.now)),
    )


_ENDING_PHASES = (T.ATTEMPT_DELETION_PENDING, T.ATTEMPT_DELETION_REQUESTED, T.ATTEMPT_COMPLETED)


def _retry_policy(ctx: _Pass) -> RetryPolicy:
    if isinstance(ctx.live, ParsedTaskSet):
        return ctx.live.spec.retry_policy
    return ctx.plan.spec.retry_policy if ctx.plan.spec is not None else RetryPolicy()


def _run_taskset(ctx: _Pass) -> None:
    for _ in range(ctx.settings.max_chain):
        status = ctx.status
        if (
            status.phase in (T.ATTEMPT_PREPARING, T.ATTEMPT_RUNNING)
            and _unit_class(ctx) == ControlUnitClass.OURS
        ):
            _sync_roles(ctx)
        facts = _taskset_facts(ctx)
        row = TASKSET_MACHINE.step(status.phase, facts)
        if row is None:  # terminal
            _remove_stray_units(ctx)
            return
        if row.target is None:
            _taskset_wait(ctx, row.label)
            return
        if not _TASKSET_EFFECTS.get(row.label, _no_effect)(ctx, facts):
            return  # the row's action is in flight; its result moves the machine
        _move_taskset(ctx, row.target, _taskset_message(ctx, row.label, facts), row.label)
    _unhandled(ctx, "TaskSet machine did not settle within the chain bound")


def _no_effect(ctx: _Pass, facts: TaskSetFacts) -> bool:
    return True


def _taskset_wait(ctx: _Pass, label: str) -> None:
    settings, status = ctx.settings, ctx.status
    if label == "T5b":
        remaining = settings.cache_creation_timeout - seconds_since(status.transition_time, ctx.now)
        ctx.plan.requeue(min(settings.cache_wait_requeue, remaining + 1))
    elif label == "T14b":
        delay = _retry_policy(ctx).delay_seconds
        ctx.plan.requeue(delay - seconds_since(status.transition_time, ctx.now))
    elif label in ("T12b", "T3-hold"):
        ctx.plan.requeue(settings.cache_wait_requeue)


def _effect_create_unit(ctx: _Pass, facts: TaskSetFacts) -> bool:
    spec = ctx.live.spec if isinstance(ctx.live, ParsedTaskSet) else None
    if spec is not None and not _shape_matches(spec, ctx.status.roles):
        ctx.status.roles = _fresh_roles(ctx.live, ctx.stamp)  # nothing has started yet: follow the spec
    ctx.plan.spec = spec
    name = control_unit_name(ctx.ref.name, ctx.status.attempt_id)
    ctx.plan.intents.append(CreateControlUnit(name))
    return False


def _effect_adopt_unit(ctx: _Pass, facts: TaskSetFacts) -> bool:
    unit = ctx.observed.control_unit
    assert unit is not None
    ctx.status.control_unit_uid = unit.uid
    return True


def _effect_unit_conflict(ctx: _Pass, facts: TaskSetFacts) -> bool:
    name = control_unit_name(ctx.ref.name, ctx.status.attempt_id)
    ctx.plan.events.append(
        Event(EventReason.CONTROL_UNIT_NAME_CONFLICT, f"ControlUnit name conflict: {name}")
    )
    return True


def _effect_delete_unit(ctx: _Pass, facts: TaskSetFacts) -> bool:
    unit = ctx.observed.control_unit
    assert unit is not None
    ctx.plan.intents.append(DeleteControlUnit(unit.name, unit.uid, advances=True))
    return False


def _effect_unit_timeout(ctx: _Pass, facts: TaskSetFacts) -> bool:
    # Spec 8.6: also delete it by name, so a ControlUnit that exists but never reached the cache cannot
    # keep an attempt running unobserved. The delete's outcome does not matter to the machine.
    if ctx.status.control_unit_uid:
        name = control_unit_name(ctx.ref.name, ctx.status.attempt_id)
        ctx.plan.intents.append(DeleteControlUnit(name, ctx.status.control_unit_uid, advances=False))
    return True


def _effect_retry(ctx: _Pass, facts: TaskSetFacts) -> bool:
    status = ctx.status
    ctx.plan.events.append(
        Event(EventReason.TASKSET_RETRY, f"Current Retried Count:{status.total_retried_count}")
    )
    status.total_retried_count += 1
    status.control_unit_uid = None
    status.attempt_result = None
    status.roles = _fresh_roles(ctx.live, ctx.stamp)
    ctx.plan.spec = ctx.live.spec if isinstance(ctx.live, ParsedTaskSet) else None
    return True


def _effect_attempt_decided(ctx: _Pass, facts: TaskSetFacts) -> bool:
    """T6: keep the decision, since the spec it was made with goes away with the ControlUnit."""
    reason = _attempt_reason(ctx)
    succeeded = reason is not None and facts.attempt_succeeded
    ctx.status.attempt_result = AttemptResult(succeeded, reason or _UNUSABLE_SPEC)
    return True


_UNUSABLE_SPEC = "The TaskSet spec of this attempt is no longer usable"

_TASKSET_EFFECTS: dict[str, Callable[[_Pass, TaskSetFacts], bool]] = {
    "T6": _effect_attempt_decided,
    "T3": _effect_create_unit,
    "T3-adopt": _effect_adopt_unit,
    "T3-conflict": _effect_unit_conflict,
    "T10": _effect_delete_unit,
    "T4": _effect_unit_timeout,
    "T14": _effect_retry,
}


def _taskset_message(ctx: _Pass, label: str, facts: TaskSetFacts) -> str:
    fixed = {
        "T2": "TaskSet is legal",
        "T3": "TaskSet is going to start",
        "T3-adopt": "TaskSet is going to start",
        "T3-conflict": f"ControlUnit name conflict: {control_unit_name(ctx.ref.name, ctx.status.attempt_id)}",
        "T4": "It's already timeout ,can't wait anymore",
        "T5": "Control unit is synced,prepare to launch tasks",
        "T7": "Some TaskRole is running",
        "T10": "The deletion of control unit has been requested",
        "T11": "ControlUnit was deleted externally",
        "T12": "The ControlUnit is being deleted",
        "T14": "TaskSet is going to retry",
        "T14-deleting": "TaskSet is being deleted, no retry",
    }
    if label in fixed:
        return fixed[label]
    if label == "T1" and isinstance(ctx.live, ValidationFailure):
        return ctx.live.message
    if label == "T14-illegal" and isinstance(ctx.live, ValidationFailure):
        return ctx.live.message
    if label == "T6":
        return _attempt_reason(ctx) or _UNUSABLE_SPEC
    if label.startswith("T13"):
        if facts.attempt_succeeded:
            return _attempt_reason(ctx) or "TaskSet succeeded"
        if ctx.ref.deleting:
            return "TaskSet is being deleted, no retry"
        return policies.taskset_retry_decision(_retry_policy(ctx), ctx.status.total_retried_count)[1]
    return ctx.status.phase_message


def _attempt_reason(ctx: _Pass) -> str | None:
    if ctx.status.attempt_result is not None:
        return ctx.status.attempt_result.reason
    spec = ctx.plan.spec
    if spec is None or not _shape_matches(spec, ctx.status.roles):
        return None
    outcome = policies.attempt_outcome(spec.roles, ctx.status.roles)
    return outcome.reason if outcome is not None else None


def _transition_record(
    ctx: _Pass, query: QueryKey, source: str, target: str, reason: str, *, msg: str = "", **extra: str
) -> LogRecord:
    """A TaskSetPhaseTransition / TaskRoleTransition / ReplicaTransition record (spec 10.2)."""
    fields = {"QueryKey": str(query), "TaskSet": ctx.ref.name, "Namespace": ctx.ref.namespace, **extra}
    return LogRecord(msg, {**fields, "PrePhase": source, "NextPhase": target, "Reason": reason})


def _move_taskset(ctx: _Pass, target: TaskSetPhase, message: str, label: str) -> None:
    status = ctx.status
    source = status.phase
    TASKSET_MACHINE.check(source, target)
    ctx.plan.moves.append(str(target))
    status.phase = target
    status.phase_message = message
    status.state_message = message
    status.transition_time = ctx.stamp
    ctx.plan.events.append(Event(EventReason.TASKSET_STATE_TRANSITION, f"Pre:{source},Next:{target}"))
    ctx.plan.records.append(
        _transition_record(
            ctx,
            QueryKey.TASKSET_PHASE_TRANSITION,
            str(source),
            str(target),
            message,
            msg=LOG_MSG_TASKSET_PHASE_TRANSITION,
        )
    )
    _update_state(ctx, label)


def _update_state(ctx: _Pass, label: str) -> None:
    """Spec 5.4 and the conditions of 2.5.1, after a phase change."""
    status = ctx.status
    if status.phase in (T.VALIDATION, T.ATTEMPT_PENDING, T.ATTEMPT_CREATION_REQUESTED, T.ATTEMPT_PREPARING):
        _set_state(ctx, State.WAITING)
    elif status.phase == T.ATTEMPT_RUNNING:
        _set_state(ctx, State.RUNNING)
    elif status.phase == T.COMPLETED:
        succeeded = label == "T13-succeeded"
        # A failed attempt's completion reason says more than the retry decision that ended it (6.3).
        final_message = _attempt_reason(ctx) if label.startswith("T13") else None
        if final_message and not succeeded:
            status.state_message = final_message
        status.finish_at = ctx.stamp
        _set_state(ctx, State.SUCCEEDED if succeeded else State.FAILED)
        kind = ConditionType.SUCCEEDED if succeeded else ConditionType.FAILED
        reason = ConditionReason.VALIDATION_FAILED if label == "T1" else ConditionReason(str(status.state))
        status.set_condition(kind, ConditionStatus.TRUE, str(reason), status.state_message, ctx.stamp)
        name = ctx.ref.name
        ctx.plan.events.append(
            Event(
                EventReason.TASKSET_SUCCEEDED if succeeded else EventReason.TASKSET_FAILED, f"TaskSet:{name}"
            )
        )


def _set_state(ctx: _Pass, state: State) -> None:
    status = ctx.status
    previous = status.state
    status.state = state
    if state == previous:
        return
    if state == State.RUNNING:
        status.start_at = status.start_at or ctx.stamp
        ctx.plan.events.append(Event(EventReason.TASKSET_RUNNING, f"TaskSet:{ctx.ref.name}"))
        status.set_condition(
            ConditionType.RUNNING,
            ConditionStatus.TRUE,
            str(ConditionReason.RUNNING),
            status.state_message,
            ctx.stamp,
        )
    elif status.condition(ConditionType.RUNNING) is not None:
        status.set_condition(
            ConditionType.RUNNING, ConditionStatus.FALSE, str(state), status.state_message, ctx.stamp
        )


def _remove_stray_units(ctx: _Pass) -> None:
    """T15 (W-3d): a completed TaskSet owns no ControlUnit; delete any that is still around."""
    units = list(ctx.observed.other_control_units)
    if ctx.observed.control_unit is not None:
        units.append(ctx.observed.control_unit)
    for unit in units:
        if unit.controller_uid == ctx.ref.uid and not unit.deleting:
            ctx.plan.intents.append(DeleteControlUnit(unit.name, unit.uid, advances=False))


def _unhandled(ctx: _Pass, why: str) -> None:
    ctx.plan.records.append(
        LogRecord(
            why,
            {
                "QueryKey": str(QueryKey.UNHANDLED_SITUATION),
                "TaskSet": ctx.ref.name,
                "Namespace": ctx.ref.namespace,
            },
            level="error",
        )
    )
    ctx.plan.requeue(ctx.settings.cache_wait_requeue)


# ----------------------------------------------------------------------------------------------------
# Role machine
# ----------------------------------------------------------------------------------------------------


def _sync_roles(ctx: _Pass) -> None:
    spec = ctx.plan.spec
    if spec is None or not _shape_matches(spec, ctx.status.roles):
        return  # _taskset_facts ends such an attempt
    for position, (role, role_status) in enumerate(zip(spec.roles, ctx.status.roles, strict=True)):
        _run_role(ctx, position, role, role_status)


def _role_facts(role: Role, status: RoleStatus) -> RoleFacts:
    started_phases = (
        P.ATTEMPT_RUNNING,
        P.ATTEMPT_DELETION_PENDING,
        P.ATTEMPT_DELETION_REQUESTED,
        P.ATTEMPT_COMPLETED,
        P.COMPLETED,
    )
    return RoleFacts(
        complete=policies.role_completion(role, status.replicas) is not None,
        started=any(r.phase in started_phases for r in status.replicas),
        all_replicas_completed=all(r.phase == P.COMPLETED for r in status.replicas),
    )


def _run_role(ctx: _Pass, position: int, role: Role, status: RoleStatus) -> None:
    for _ in range(ctx.settings.max_chain):
        if status.phase != RolePhase.COMPLETED:
            for replica in status.replicas:
                if (position, replica.index) not in ctx.busy:
                    _run_replica(ctx, position, role, replica)
        row = ROLE_MACHINE.step(status.phase, _role_facts(role, status))
        if row is None or row.target is None:
            return
        message = status.phase_message
        if row.label == "R1":
            message = _decide_role(ctx, role, status)
        elif row.label == "R2":
            message = "Some replica is running"
            status.state = State.RUNNING
            ctx.plan.events.append(Event(EventReason.ROLE_RUNNING, f"TaskRole:{role.name}"))
        elif row.label == "R4":
            message = "TaskRole is completed ,because all replica are completed"
        _move_role(ctx, role.name, status, row.target, message)
    _unhandled(ctx, f"role {role.name} did not settle within the chain bound")


def _decide_role(ctx: _Pass, role: Role, status: RoleStatus) -> str:
    """Entering CleaningPending: freeze the outcome (W-6) and mark every unfinished replica stopped (W-5)."""
    outcome = policies.role_completion(role, status.replicas)
    assert outcome is not None
    status.state = State.SUCCEEDED if outcome.succeeded else State.FAILED
    status.state_message = outcome.reason
    reason = EventReason.ROLE_SUCCEEDED if outcome.succeeded else EventReason.ROLE_FAILED
    ctx.plan.events.append(Event(reason, f"TaskRole:{role.name}, Reason:{outcome.reason}"))
    for replica in status.replicas:
        if replica.phase != P.COMPLETED:
            replica.stopped = True
    return outcome.reason


def _move_role(ctx: _Pass, name: str, status: RoleStatus, target: RolePhase, message: str) -> None:
    ROLE_MACHINE.check(status.phase, target)
    ctx.plan.moves.append(str(target))
    ctx.plan.records.append(
        _transition_record(ctx, QueryKey.ROLE_TRANSITION, str(status.phase), str(target), message, Role=name)
    )
    status.phase = target
    status.phase_message = message
    status.transition_time = ctx.stamp


# ----------------------------------------------------------------------------------------------------
# Replica machine
# ----------------------------------------------------------------------------------------------------


def _classify(ctx: _Pass, replica: ReplicaStatus, pod: PodView | None) -> PodClass:
    """How a Pod under the replica's name relates to it (5.3.1), from the cache or a live read."""
    return classify_pod(
        pod,
        recorded_uid=replica.pod_uid,
        control_unit_uid=ctx.status.control_unit_uid,
        taskset_uid=ctx.ref.uid,
        replica_attempt=replica.total_retried_count,
        taskset_name=ctx.ref.name,
    )


def _replica_pod(ctx: _Pass, role: Role, replica: ReplicaStatus) -> tuple[PodView | None, PodClass]:
    pod = ctx.observed.pods.get(pod_name(ctx.ref.name, role.name, replica.index))
    return pod, _classify(ctx, replica, pod)


def _earlier_attempt_alive(ctx: _Pass) -> bool:
    """W-11: a Pod of this TaskSet that the current ControlUnit does not control belongs to an earlier
    attempt, left behind when that attempt's ControlUnit was deleted externally with Background or Orphan
    propagation (8.3). Row P0 deletes each replica's own; no replica starts the next attempt's Pod until
    every one of them is gone, or the two attempts would overlap."""
    unit = ctx.status.control_unit_uid
    found = ctx.earlier_attempt_pods.get(unit)
    if found is None:
        pods = ctx.observed.pods.values()
        found = any(pod.taskset_uid == ctx.ref.uid and pod.controller_uid != unit for pod in pods)
        ctx.earlier_attempt_pods[unit] = found
    return found


def _replica_facts(
    ctx: _Pass, role: Role, replica: ReplicaStatus, pod: PodView | None, kind: PodClass
) -> ReplicaFacts:
    elapsed = seconds_since(replica.transition_time, ctx.now)
    return ReplicaFacts(
        pod=kind,
        pod_deleting=pod is not None and pod.deleting,
        pod_terminal=pod is not None and pod.terminal,
        pod_running=pod is not None and pod.running,
        pod_assigned=pod is not None and pod.assigned,
        stopped=replica.stopped,
        creates_allowed=not ctx.ref.deleting,
        creation_timed_out=elapsed > ctx.settings.cache_creation_timeout,
        may_retry=policies.replica_may_retry(role.retry_policy, replica, taskset_deleting=ctx.ref.deleting),
        retry_due=policies.retry_due(role.retry_policy.delay_seconds, elapsed),
        earlier_attempt_alive=replica.phase == P.ATTEMPT_PENDING and _earlier_attempt_alive(ctx),
    )


def _delete_stray(ctx: _Pass, position: int, replica: ReplicaStatus, pod: PodView) -> None:
    """Delete (once per pass) a Pod under the replica's name that is not the replica's own: an earlier
    attempt's (P0) or a duplicate of this attempt's (5.3.1). The replica treats it as absent."""
    if pod.deleting or pod.uid in ctx.deleted:
        return
    ctx.deleted.add(pod.uid)
    ctx.plan.intents.append(DeletePod(pod.name, pod.uid, position, replica.index, advances=False))


def _run_replica(ctx: _Pass, position: int, role: Role, replica: ReplicaStatus) -> None:
    for _ in range(ctx.settings.max_chain):
        pod, kind = _replica_pod(ctx, role, replica)
        if pod is not None and kind == PodClass.DUPLICATE:
            _delete_stray(ctx, position, replica, pod)
        if (
            pod is not None
            and kind in (PodClass.CURRENT, PodClass.ADOPTABLE)
            and replica.phase != P.ATTEMPT_PENDING
        ):
            _capture_pod(ctx, role, replica, pod)
        facts = _replica_facts(ctx, role, replica, pod, kind)
        row = REPLICA_MACHINE.step(replica.phase, facts)
        if row is None:
            return
        if row.target is None:
            _replica_wait(ctx, position, role, replica, row.label, pod=pod, kind=kind)
            return
        effect = _REPLICA_EFFECTS.get(row.label)
        message = (
            effect(ctx, position, role, replica, pod) if effect else _replica_message(row.label, replica, pod)
        )
        if message is None:
            ctx.busy.add((position, replica.index))
            return  # an action is in flight
        _move_replica(ctx, role.name, replica, row.target, message)
    _unhandled(ctx, f"replica {role.name}/{replica.index} did not settle within the chain bound")


def _replica_wait(
    ctx: _Pass,
    position: int,
    role: Role,
    replica: ReplicaStatus,
    label: str,
    *,
    pod: PodView | None,
    kind: PodClass,
) -> None:
    settings = ctx.settings
    if label == "P0":
        if pod is not None:
            _delete_stray(ctx, position, replica, pod)
        ctx.plan.requeue(settings.cache_wait_requeue)
    elif label == "P3b":
        remaining = settings.cache_creation_timeout - seconds_since(replica.transition_time, ctx.now)
        ctx.plan.requeue(min(settings.cache_wait_requeue, remaining + 1))
    elif label == "P12":
        ctx.plan.requeue(settings.deletion_wait_requeue)
    elif label == "P14b":
        ctx.plan.requeue(role.retry_policy.delay_seconds - seconds_since(replica.transition_time, ctx.now))
    elif label == "P-wait":
        _report_wait(ctx, replica, pod)


# ----- why a replica waits (issue 8) ------------------------------------------------------------------
# A Pod that was created and observed but never starts has no timeout (spec S53: it waits, since a
# scheduler or a node may yet come). So the waiting must at least be visible: the replica's
# phaseMessage says why, a Warning event says it once, and the Running condition names the waiting
# replicas. Every text is derived from the observed Pods alone, never from the clock, so a resync over
# an unchanged cluster writes nothing.

# Bounds: the scheduler's message grows with the cluster's variety of nodes, and a status or an event
# is no place for kilobytes of it (the CRD allows 32 KiB per condition message).
WAIT_MESSAGE_MAX = 512  # characters of one replica's reason: its phaseMessage and its event
WAITING_SUMMARY_MAX = 1024  # characters of the Running condition's message
WAITING_SUMMARY_NAMED = 3  # replicas the condition names; the others are counted
# Characters per named replica: three of them, the count and the "and N more" fit the bound above.
WAITING_ENTRY_MAX = 300
_CLIPPED = "..."

_UNSCHEDULABLE = "Pod is unschedulable: "
_CONTAINER_WAITING = re.compile(r"^container \S* waiting: ")
_WAITING_SUMMARY = re.compile(r"^\d+ replicas? waiting: ")
# Replica phases whose Pod is Pending: the only ones a Pod can be stuck in without a transition.
_WAITING_PHASES = (P.ATTEMPT_PREPARING, P.ATTEMPT_ASSIGNED)
# The row that entered each of those phases, whose message comes back once the Pod stops waiting.
_ENTRY_ROW = {P.ATTEMPT_PREPARING: "P3", P.ATTEMPT_ASSIGNED: "P6"}


@dataclass(frozen=True)
class PodWait:
    """Why a Pending Pod does not start: the event's reason and the replica's phaseMessage."""

    reason: EventReason
    message: str


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, visibly."""
    return text if len(text) <= limit else text[: limit - len(_CLIPPED)] + _CLIPPED


def pod_wait(pod: PodView) -> PodWait | None:
    """Why ``pod`` will not start by itself, if its status says so: the scheduler found no node for it,
    or one of its containers waits for something other than its normal start (an image that cannot
    be pulled, a missing ConfigMap or Secret, ...)."""
    if pod.unschedulable_message:
        text = _UNSCHEDULABLE + pod.unschedulable_message
        return PodWait(EventReason.POD_UNSCHEDULABLE, clip(text, WAIT_MESSAGE_MAX))
    if pod.waiting is not None:
        waiting = pod.waiting
        text = f"container {waiting.container} waiting: {waiting.reason}"
        if waiting.message:
            text += f": {waiting.message}"
        return PodWait(EventReason.POD_CONTAINER_WAITING, clip(text, WAIT_MESSAGE_MAX))
    return None


def _wait_kind(message: str) -> EventReason | None:
    """Which wait a replica's phaseMessage reports, if it reports one (the inverse of ``pod_wait``)."""
    if message.startswith(_UNSCHEDULABLE):
        return EventReason.POD_UNSCHEDULABLE
    if _CONTAINER_WAITING.match(message):
        return EventReason.POD_CONTAINER_WAITING
    return None


def _report_wait(ctx: _Pass, replica: ReplicaStatus, pod: PodView | None) -> None:
    """P-wait: keep the replica's phaseMessage saying why its Pod waits, and back to the phase's own
    message once it no longer does. The event goes out when the message starts saying so (or changes
    cause): decide's only memory is the status, and a phaseMessage that already says so was written
    together with the event, so each Pod's wait is reported once, across passes and restarts."""
    wait = pod_wait(pod) if pod is not None and replica.phase in _WAITING_PHASES else None
    reported = _wait_kind(replica.phase_message)
    if wait is None:
        if reported is not None and replica.phase in _ENTRY_ROW:
            replica.phase_message = _replica_message(_ENTRY_ROW[replica.phase], replica, pod)
        return
    assert pod is not None
    if reported != wait.reason:
        ctx.plan.events.append(Event(wait.reason, clip(f"{pod.name}: {wait.message}", WAIT_MESSAGE_MAX)))
    replica.phase_message = wait.message


def waiting_summary(status: TaskSetStatus) -> str:
    """The replicas whose Pods wait (per their phaseMessage), in spec order: "2 replicas waiting: r-0:
    Pod is unschedulable: ...; r-1: ...", naming the first few and counting the rest, bounded."""
    waiting = [
        clip(f"{role.name}-{replica.index}: {replica.phase_message}", WAITING_ENTRY_MAX)
        for role in status.roles
        for replica in role.replicas
        if replica.phase in _WAITING_PHASES and _wait_kind(replica.phase_message) is not None
    ]
    if not waiting:
        return ""
    count = len(waiting)
    text = f"{count} replica{'' if count == 1 else 's'} waiting: " + "; ".join(
        waiting[:WAITING_SUMMARY_NAMED]
    )
    if count > WAITING_SUMMARY_NAMED:
        text += f"; and {count - WAITING_SUMMARY_NAMED} more"
    return clip(text, WAITING_SUMMARY_MAX)


def _report_waiting(ctx: _Pass) -> None:
    """The Running condition names the waiting replicas while the attempt is Preparing or Running, and
    goes back to the state message once none waits.

    Departs from spec 2.5.1 (conditions "carry no information of their own" and are added when first
    True) because issue 8 asks that a TaskSet never hang silently: a TaskSet that never ran gets a
    ``Running`` condition that is False with reason ``Waiting`` and says why. Status and reason still
    restate ``state``, so ``kubectl wait --for=condition=Running`` is unaffected, and the
    lastTransitionTime moves only with the status, as before."""
    status = ctx.status
    if status.phase == T.COMPLETED:
        return  # the final condition messages are the completion reason (6.3)
    active = status.phase in (T.ATTEMPT_PREPARING, T.ATTEMPT_RUNNING)
    summary = waiting_summary(status) if active else ""
    condition = status.condition(ConditionType.RUNNING)
    if summary:
        running = status.state == State.RUNNING
        if condition is not None:
            kind, reason = condition.status, condition.reason
        elif running:
            kind, reason = ConditionStatus.TRUE, str(ConditionReason.RUNNING)
        else:
            kind, reason = ConditionStatus.FALSE, str(status.state)
        status.set_condition(ConditionType.RUNNING, kind, reason, summary, ctx.stamp)
    elif condition is not None and _WAITING_SUMMARY.match(condition.message):
        status.set_condition(
            ConditionType.RUNNING, condition.status, condition.reason, status.state_message, ctx.stamp
        )


def _effect_create_pod(
    ctx: _Pass, position: int, role: Role, replica: ReplicaStatus, pod: PodView | None
) -> str | None:
    name = pod_name(ctx.ref.name, role.name, replica.index)
    ctx.plan.intents.append(
        CreatePod(position, replica.index, name, ctx.status.attempt_id, replica.total_retried_count)
    )
    return None


def _effect_adopt_pod(
    ctx: _Pass, position: int, role: Role, replica: ReplicaStatus, pod: PodView | None
) -> str:
    assert pod is not None
    replica.pod_name = pod.name
    replica.pod_uid = pod.uid
    if pod.replica_attempt_id is not None and pod.replica_attempt_id > replica.total_retried_count:
        replica.total_retried_count = pod.replica_attempt_id
    _capture_pod(ctx, role, replica, pod)
    return "TaskRole replica is going to start"


def _effect_pod_conflict(
    ctx: _Pass, position: int, role: Role, replica: ReplicaStatus, pod: PodView | None
) -> str:
    name = pod_name(ctx.ref.name, role.name, replica.index)
    return _name_conflict(ctx, replica, name)


def _name_conflict(ctx: _Pass, replica: ReplicaStatus, name: str) -> str:
    replica.pod_reason = POD_REASON_NAME_CONFLICT
    ctx.plan.events.append(Event(EventReason.POD_NAME_CONFLICT, f"Pod name conflict: {name}"))
    return f"Pod name conflict: {name} belongs to another owner"


def _effect_delete_pod(
    ctx: _Pass, position: int, role: Role, replica: ReplicaStatus, pod: PodView | None
) -> str | None:
    """P9. A recorded Pod the cache does not show (P2's timeout, or just vanished) is deleted by name and
    UID anyway: the cache's silence proves nothing, and only the API server's answer does (spec 8.6)."""
    if replica.pod_uid and (pod is None or (pod.uid == replica.pod_uid and not pod.deleting)):
        name = replica.pod_name or pod_name(ctx.ref.name, role.name, replica.index)
        seen = pod is not None
        ctx.plan.intents.append(
            DeletePod(name, replica.pod_uid, position, replica.index, advances=True, seen=seen)
        )
        return None
    return _deletion_message(replica)


_TIMEOUT_MESSAGE = "It's already timeout ,can't wait anymore"


def _effect_pod_gone(
    ctx: _Pass, position: int, role: Role, replica: ReplicaStatus, pod: PodView | None
) -> str:
    """P13 into ReplicaCompleted. A failed attempt keeps the reason it failed (a rejected create, a name
    conflict, the Pod's exit) in front of the retry decision, so the final status says why."""
    if replica.stopped:
        return "Replica is stopped by parent TaskRole"
    if replica.succeeded:
        return replica.phase_message or "TaskRole replica succeeded"
    return _retry_decision(role, replica)


def _effect_replica_retry_decided(
    ctx: _Pass, position: int, role: Role, replica: ReplicaStatus, pod: PodView | None
) -> str:
    return _retry_decision(role, replica)


def _retry_decision(role: Role, replica: ReplicaStatus) -> str:
    """P13's message: the retry decision, after the reason the attempt failed when nothing else in the
    status keeps that reason: a rejected create or a name conflict (no Pod ran), or a Pod whose phase
    became Unknown (no container exit was ever reported)."""
    decision = policies.taskset_retry_decision(role.retry_policy, replica.total_retried_count)[1]
    creation = replica.pod_reason in (POD_REASON_CREATION_FAILED, POD_REASON_NAME_CONFLICT)
    return f"{replica.phase_message}; {decision}" if creation or _ended_unknown(replica) else decision


# The start of P5's message for a Pod whose phase became Unknown (spec 8.2).
_UNKNOWN_EXIT = f"PodPhase:{POD_PHASE_UNKNOWN} ,"
_DELETION_REQUESTED = "The deletion request of pod has been made"


def _exit_message(pod: PodView) -> str:
    """P5's message, O's format (spec 2.5.3)."""
    return f"PodPhase:{pod.phase} ,PodMessage:{pod.message} ,PodReason: {pod.reason}"


def _ended_unknown(replica: ReplicaStatus) -> bool:
    """Whether this attempt ended because its Pod's phase became Unknown (node lost, spec 8.2)."""
    return replica.phase_message.startswith(_UNKNOWN_EXIT)


def _deletion_message(replica: ReplicaStatus) -> str:
    """P9's message. O overwrites the exit text with its own (W-23); for a Pod lost to phase Unknown that
    text is the only record of why the attempt failed (no container exit, often no Pod reason), so R
    keeps it, and P13 puts it in front of the retry decision (issue 8)."""
    return replica.phase_message if _ended_unknown(replica) else _DELETION_REQUESTED


def _effect_replica_retry(
    ctx: _Pass, position: int, role: Role, replica: ReplicaStatus, pod: PodView | None
) -> str:
    """P14: log the Pod's history, then forget it and count the new attempt."""
    ctx.plan.records.append(_pod_history(ctx, replica, LOG_MSG_POD_RETRY))
    replica.clear_pod()
    replica.total_retried_count += 1
    return "TaskRole replica is going to retry"


_REPLICA_EFFECTS: dict[str, Callable[[_Pass, int, Role, ReplicaStatus, PodView | None], str | None]] = {
    "P1": _effect_create_pod,
    "P1-adopt": _effect_adopt_pod,
    "P1-conflict": _effect_pod_conflict,
    "P9": _effect_delete_pod,
    "P13": _effect_pod_gone,
    "P13-retry": _effect_replica_retry_decided,
    "P14": _effect_replica_retry,
}


def _replica_message(label: str, replica: ReplicaStatus, pod: PodView | None) -> str:
    if label in ("P5",) and pod is not None:
        return _exit_message(pod)
    fixed = {
        "S1": "Replica is stopped by parent TaskRole",
        "S2": "Stop replica",
        "P3": "Creation has be made,and pod appears at local",
        "P4": "Pod is running",
        "P6": "Pod is assigned to a node",
        "P2": _TIMEOUT_MESSAGE,
        "P10": "The Pod is being deleted",
        "P11": "The Pod vanished",
    }
    return fixed.get(label, replica.phase_message)


def _move_replica(
    ctx: _Pass, role_name: str, replica: ReplicaStatus, target: ReplicaPhase, message: str
) -> None:
    REPLICA_MACHINE.check(replica.phase, target)
    ctx.plan.moves.append(str(target))
    name = replica.pod_name or pod_name(ctx.ref.name, role_name, replica.index)
    ctx.plan.records.append(
        _transition_record(
            ctx,
            QueryKey.REPLICA_TRANSITION,
            str(replica.phase),
            str(target),
            message,
            Role=role_name,
            PodName=name,
        )
    )
    replica.phase = target
    replica.phase_message = message
    replica.transition_time = ctx.stamp
    if target == P.COMPLETED:
        ctx.plan.records.append(_pod_history(ctx, replica, LOG_MSG_POD_COMPLETED))


def _capture_pod(ctx: _Pass, role: Role, replica: ReplicaStatus, pod: PodView) -> None:
    """Refresh the Pod-derived fields on every pass the Pod is observed (spec 5.3.3, R's SHOULD)."""
    replica.pod_uid = replica.pod_uid or pod.uid
    replica.pod_name = pod.name
    replica.pod_reason = pod.reason or replica.pod_reason
    replica.start_at = replica.start_at or pod.start_time
    was_assigned = bool(replica.pod_ip or replica.pod_host_ip)
    if pod.pod_ip and pod.pod_ip != replica.pod_ip:
        replica.pod_ip = pod.pod_ip
    if pod.host_ip and pod.host_ip != replica.pod_host_ip:
        replica.pod_host_ip = pod.host_ip
    if not was_assigned and (replica.pod_ip or replica.pod_host_ip):
        ctx.plan.records.append(_pod_history(ctx, replica, LOG_MSG_POD_ASSIGNED))
    replica.container_name = replica.container_name or pod.container_name
    replica.container_id = replica.container_id or pod.container_id
    if replica.terminated_info is None and pod.terminated is not None:
        done = pod.terminated
        replica.terminated_info = TerminatedInfo(done.exit_code, done.message, done.signal, done.reason)
        replica.finish_at = done.finished_at or ctx.stamp


def _pod_history(ctx: _Pass, replica: ReplicaStatus, msg: str) -> LogRecord:
    fields: dict[str, Any] = {
        "QueryKey": str(QueryKey.POD_HISTORY),
        "TaskSet": ctx.ref.name,
        "Namespace": ctx.ref.namespace,
        "Role": replica.name,
        "AttemptID": replica.total_retried_count,
        "TaskSetAttemptID": ctx.status.attempt_id,
        "ReplicaIndex": replica.index,
        "PodName": replica.pod_name,
        "PodReason": replica.pod_reason,
        "PodIP": replica.pod_ip,
        "PodHostIP": replica.pod_host_ip,
        "ContainerName": replica.container_name,
        "ContainerID": replica.container_id,
        "Phase": str(replica.phase),
        "PhaseMessage": replica.phase_message,
        "TransitionTime": replica.transition_time or "",
        "Stopped": replica.stopped,
    }
    for key, value in (("StartAt", replica.start_at), ("FinishAt", replica.finish_at)):
        moment = _epoch(value)
        if moment is not None:
            fields[key] = moment
    if replica.terminated_info is not None:
        info = replica.terminated_info
        fields |= {
            "ContainerExitCode": info.exit_code,
            "ContainerExitMessage": info.exit_message,
            "ContainerExitSignal": info.signal,
            "ContainerExitReason": info.reason,
        }
    return LogRecord(msg, fields)


def _epoch(value: str | None) -> float | None:
    from taskset.api.status import parse_time  # noqa: PLC0415

    moment = parse_time(value)
    return None if moment is None else moment.timestamp()


# ----------------------------------------------------------------------------------------------------
# Action results
# ----------------------------------------------------------------------------------------------------


def apply_result(plan: Plan, intent: Intent, result: ActionResult) -> None:
    """Fold one action's outcome into the plan: move along the declared edge, or stay and retry."""
    ctx = plan.context
    assert ctx is not None, "apply_result needs a plan made by decide()"
    if isinstance(intent, CreateControlUnit):
        _unit_created(ctx, result)
    elif isinstance(intent, DeleteControlUnit):
        _unit_deleted(ctx, intent, result)
    elif isinstance(intent, CreatePod):
        _pod_created(ctx, intent, result)
    else:
        _pod_deleted(ctx, intent, result)


def _next_pass_now(ctx: _Pass) -> None:
    """A result moved a machine to a state whose next step needs no new watch event (the object is
    already gone, or was never made): look again at once instead of waiting for a safety-net requeue."""
    ctx.plan.requeue(0)


def _transient(ctx: _Pass, reason: EventReason | None, message: str) -> None:
    ctx.plan.backoff = True
    if reason is not None:
        ctx.plan.events.append(Event(reason, message))


def _unit_created(ctx: _Pass, result: ActionResult) -> None:
    obj = result.obj or {}
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    uid = str(meta.get("uid", "")) if isinstance(meta, Mapping) else ""
    if result.kind == ResultKind.OK and uid:
        ctx.status.control_unit_uid = uid
        _move_taskset(ctx, T.ATTEMPT_CREATION_REQUESTED, "TaskSet is going to start", "T3")
        _go_on_with_created_unit(ctx, obj)
        return
    if result.kind == ResultKind.EXISTS:
        live = control_unit_view(obj, "") if obj else None
        if live is None:
            ctx.plan.requeue(0)
        elif live.controller_uid == ctx.ref.uid and not live.deleting:
            ctx.status.control_unit_uid = live.uid
            _move_taskset(ctx, T.ATTEMPT_CREATION_REQUESTED, "TaskSet is going to start", "T3-adopt")
            # The ControlUnit already exists, so its add event may already have been handled: by a pass
            # that started this retry and observed only the previous attempt's unit. Nothing else would
            # wake the TaskSet for T5.
            _next_pass_now(ctx)
        elif live.controller_uid == ctx.ref.uid:
            ctx.plan.requeue(ctx.settings.cache_wait_requeue)
        else:
            name = live.name
            ctx.plan.events.append(
                Event(EventReason.CONTROL_UNIT_NAME_CONFLICT, f"ControlUnit name conflict: {name}")
            )
            _move_taskset(ctx, T.ATTEMPT_COMPLETED, f"ControlUnit name conflict: {name}", "T3-rejected")
            _next_pass_now(ctx)
        return
    if result.kind == ResultKind.INVALID:
        ctx.plan.events.append(Event(EventReason.CONTROL_UNIT_CREATION_FAILED, result.message))
        _move_taskset(
            ctx, T.ATTEMPT_COMPLETED, f"ControlUnit creation rejected: {result.message}", "T3-rejected"
        )
        _next_pass_now(ctx)
        return
    _transient(ctx, EventReason.CONTROL_UNIT_CREATION_FAILED, result.message)


def _go_on_with_created_unit(ctx: _Pass, created: Mapping[str, Any]) -> None:
    """Chain on from T3 in the same pass (spec 5: R MAY chain): the create's response is the API
    server's own word that the ControlUnit exists, so it stands in for the cache's sight of it (T5),
    and the Pods' creates go out now instead of a queue trip later, when the ConfigMap's add event
    would bring the next pass. Only a fresh create chains: its add event is still to come, which the
    reconciler waits for before the next pass (and bridges while it lags). An adopted ControlUnit's
    cache lags for reasons unknown, so adoption waits for the cache as before."""
    ctx.observed = replace(ctx.observed, control_unit=control_unit_view(created, ""))
    _run_taskset(ctx)
    _report_waiting(ctx)


def _unit_deleted(ctx: _Pass, intent: DeleteControlUnit, result: ActionResult) -> None:
    if not intent.advances:
        if result.kind == ResultKind.ERROR:
            ctx.plan.backoff = True
        return
    if result.kind == ResultKind.ERROR:
        _transient(ctx, None, result.message)
        return
    _move_taskset(ctx, T.ATTEMPT_DELETION_REQUESTED, "The deletion of control unit has been requested", "T10")
    if result.kind != ResultKind.OK:  # already gone: no deletion event will come
        _next_pass_now(ctx)


def _replica_of(ctx: _Pass, role: int, index: int) -> tuple[Role | None, ReplicaStatus]:
    spec = ctx.plan.spec
    return (spec.roles[role] if spec is not None else None), ctx.status.roles[role].replicas[index]


def _pod_created(ctx: _Pass, intent: CreatePod, result: ActionResult) -> None:
    _, replica = _replica_of(ctx, intent.role, intent.index)
    role_name = ctx.status.roles[intent.role].name
    if result.kind == ResultKind.OK and result.obj is not None:
        pod = pod_view(result.obj)
        replica.pod_name, replica.pod_uid = pod.name, pod.uid
        replica.pod_ip, replica.pod_host_ip = pod.pod_ip, pod.host_ip
        replica.start_at = pod.start_time
        _move_replica(
            ctx, role_name, replica, P.ATTEMPT_CREATION_REQUESTED, "TaskRole replica is going to start"
        )
        return
    if result.kind == ResultKind.EXISTS:
        _pod_exists(ctx, intent, role_name, replica, result)
        return
    if result.kind == ResultKind.INVALID:
        replica.pod_reason = POD_REASON_CREATION_FAILED
        ctx.plan.events.append(Event(EventReason.POD_CREATION_FAILED, f"{intent.name}: {result.message}"))
        _move_replica(ctx, role_name, replica, P.ATTEMPT_COMPLETED, result.message)
        _next_pass_now(ctx)
        return
    _transient(ctx, EventReason.POD_CREATION_FAILED, f"{intent.name}: {result.message}")


def _pod_exists(
    ctx: _Pass, intent: CreatePod, role_name: str, replica: ReplicaStatus, result: ActionResult
) -> None:
    if result.obj is None:
        ctx.plan.requeue(0)  # gone again already: try once more
        return
    pod = pod_view(result.obj)
    kind = _classify(ctx, replica, pod)
    if kind in (PodClass.ADOPTABLE, PodClass.CURRENT):
        replica.pod_name, replica.pod_uid = pod.name, pod.uid
        _move_replica(
            ctx, role_name, replica, P.ATTEMPT_CREATION_REQUESTED, "TaskRole replica is going to start"
        )
    elif kind == PodClass.FOREIGN:
        _move_replica(ctx, role_name, replica, P.ATTEMPT_COMPLETED, _name_conflict(ctx, replica, pod.name))
        _next_pass_now(ctx)
    else:  # an earlier Pod of this replica: P0 on the next pass deletes it and waits
        ctx.plan.requeue(1.0)


def _pod_deleted(ctx: _Pass, intent: DeletePod, result: ActionResult) -> None:
    if result.kind == ResultKind.ERROR:
        _transient(ctx, None, result.message)
        return
    if not intent.advances:
        return
    if result.kind == ResultKind.OK and not intent.seen:
        ctx.plan.requeue(UNSEEN_DELETE_POLL)  # it exists and is going away: ask again until NotFound
        return
    _, replica = _replica_of(ctx, intent.role, intent.index)
    role_name = ctx.status.roles[intent.role].name
    _move_replica(ctx, role_name, replica, P.ATTEMPT_DELETION_REQUESTED, _deletion_message(replica))
    if result.kind != ResultKind.OK:  # already gone: no deletion event will come
        _next_pass_now(ctx)
