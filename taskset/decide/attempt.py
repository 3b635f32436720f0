"""The TaskSet attempt machine (spec 5.1): validate, create the attempt's ControlUnit, run the roles,
delete the ControlUnit, then retry or complete.

``run_taskset`` steps the machine, syncing the roles (and through them the replicas) while the attempt
runs; ``TASKSET_ROWS`` says what each row does, how it waits and what message it writes; the ``unit_*``
functions at the end fold a ControlUnit action's result back in.
"""

from __future__ import annotations

from dataclasses import replace

from taskset.api.constants import (
    KIND,
    LOG_MSG_TASKSET_PHASE_TRANSITION,
    MSG_CONTROL_UNIT_BEING_DELETED,
    MSG_CONTROL_UNIT_DELETED,
    ConditionReason,
    ConditionStatus,
    ConditionType,
    EventReason,
    QueryKey,
    RolePhase,
    State,
    TaskSetPhase,
)
from taskset.api.names import control_unit_name
from taskset.api.spec import ParsedTaskSet, RetryPolicy, ValidationFailure
from taskset.api.status import AttemptResult, seconds_since
from taskset.decide.cleanup import clean_finished, keeps_pods, kept_unit
from taskset.decide.context import (
    FromResult,
    PassContext,
    Row,
    check_rows,
    fixed_message,
    fresh_roles,
    next_pass_now,
    retry_if_failed,
    row_message,
    shape_matches,
    transient,
    transition_record,
    unhandled,
)
from taskset.decide.deadlines import (
    deadline_exceeded,
    deadline_message,
    end_at_deadline,
    ended_by_deadline,
    expire_finished,
    requeue_for_deadline,
)
from taskset.decide.deletions import remove_orphaned_pods
from taskset.decide.history_records import note_move
from taskset.decide.machines import TASKSET_MACHINE, ControlUnitClass, TaskSetFacts
from taskset.decide.owned_sync import sync_owned
from taskset.decide.plan import ActionResult, CreateOwned, DeleteOwned, Event, ResultKind, RowRef
from taskset.decide.policies import Outcome, attempt_outcome, retry_delay, retry_due, taskset_retry_decision
from taskset.decide.retrying import next_retry_at
from taskset.decide.roles import say_unfinished_ended, sync_roles
from taskset.decide.upkeep import STRAY_UNIT
from taskset.decide.waiting import report_waiting
from taskset.objects.controlunit import SNAPSHOT_KEY, build_control_unit
from taskset.observed.slim import snapshot_digest
from taskset.observed.views import ControlUnitView

_RUNNING_PHASES = (TaskSetPhase.ATTEMPT_PREPARING, TaskSetPhase.ATTEMPT_RUNNING)
_ENDING_PHASES = (
    TaskSetPhase.ATTEMPT_DELETION_PENDING,
    TaskSetPhase.ATTEMPT_DELETION_REQUESTED,
    TaskSetPhase.ATTEMPT_COMPLETED,
)
_UNUSABLE_SPEC = "The TaskSet spec of this attempt is no longer usable"

# ----- the step -----------------------------------------------------------------------------------------


def run_taskset(ctx: PassContext) -> None:
    """Step the TaskSet's machine until it waits, an action is in flight, or it is done."""
    for _ in range(ctx.settings.max_chain):
        status = ctx.status
        if (
            status.phase in (TaskSetPhase.ATTEMPT_PREPARING, TaskSetPhase.ATTEMPT_RUNNING)
            and unit_class(ctx) == ControlUnitClass.OURS
        ):
            sync_owned(ctx)
            sync_roles(ctx)
        facts = _taskset_facts(ctx)
        transition = TASKSET_MACHINE.step(status.phase, facts)
        if transition is None:  # terminal
            _remove_stray_units(ctx)
            remove_orphaned_pods(ctx)
            clean_finished(ctx)  # what cleanPodPolicy keeps
            expire_finished(ctx)
            return
        row = TASKSET_ROWS[transition.label]
        if transition.target is None:
            if row.wait is not None:
                row.wait(ctx, facts)
            requeue_for_deadline(ctx)
            return
        if row.effect is not None and not row.effect(ctx, facts):
            return  # the row's action is in flight; its result moves the machine
        message = row_message(row, ctx, facts, status.phase_message)
        _move_taskset(ctx, transition.target, message, transition.label)
    unhandled(ctx, "TaskSet machine did not settle within the chain bound")


def unit_class(ctx: PassContext) -> ControlUnitClass:
    """How the ControlUnit under this attempt's name relates to the TaskSet."""
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


def _taskset_facts(ctx: PassContext) -> TaskSetFacts:
    status, spec = ctx.status, ctx.plan.spec
    unit = unit_class(ctx)
    outcome = None
    usable = spec is not None and shape_matches(spec, status.roles)
    if (
        status.phase in (TaskSetPhase.ATTEMPT_PREPARING, TaskSetPhase.ATTEMPT_RUNNING, *_ENDING_PHASES)
        and usable
    ):
        assert spec is not None
        outcome = attempt_outcome(spec.roles, status.roles)
    unusable_attempt = (
        status.phase in (TaskSetPhase.ATTEMPT_PREPARING, TaskSetPhase.ATTEMPT_RUNNING) and not usable
    )
    # Kept at T6 for the ending phases; earlier only when an owned object was refused (decide.owned_sync).
    if status.attempt_result is not None and status.phase in (*_RUNNING_PHASES, *_ENDING_PHASES):
        outcome = Outcome(status.attempt_result.succeeded, status.attempt_result.reason)
    may_retry, _ = taskset_retry_decision(_retry_policy(ctx), status.total_retried_count)
    may_retry = may_retry and not _final(ctx)
    delay = _retry_delay(ctx)
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
        retry_due=retry_due(delay, seconds_since(status.transition_time, ctx.now)),
        suspended=ctx.ref.suspended,
        deadline_exceeded=deadline_exceeded(ctx),
        keeps_pods=keeps_pods(ctx),
    )


def _retry_policy(ctx: PassContext) -> RetryPolicy:
    if isinstance(ctx.live, ParsedTaskSet):
        return ctx.live.spec.retry_policy
    return ctx.plan.spec.retry_policy if ctx.plan.spec is not None else RetryPolicy()


def _retry_delay(ctx: PassContext) -> int:
    """Seconds between a failed attempt and the next (fixed, or backoff with jitter seeded by the UID)."""
    return retry_delay(_retry_policy(ctx), ctx.status.total_retried_count, ctx.ref.uid)


def _final(ctx: PassContext) -> bool:
    """Whether no retry may follow this attempt, whatever the retry policy."""
    if ctx.status.attempt_result is not None:
        return ctx.status.attempt_result.final
    outcome = _outcome(ctx)
    return outcome is not None and outcome.final


def _outcome(ctx: PassContext) -> Outcome | None:
    spec = ctx.plan.spec
    if spec is None or not shape_matches(spec, ctx.status.roles):
        return None
    return attempt_outcome(spec.roles, ctx.status.roles)


def _attempt_reason(ctx: PassContext) -> str | None:
    if ctx.status.attempt_result is not None:
        return ctx.status.attempt_result.reason
    outcome = _outcome(ctx)
    return outcome.reason if outcome is not None else None


# ----- what the rows do ----------------------------------------------------------------------------------


def _create_unit(ctx: PassContext, facts: TaskSetFacts) -> bool:
    """Ask for the attempt's ControlUnit, with the live spec (W-18); the create's result moves on."""
    spec = ctx.live.spec if isinstance(ctx.live, ParsedTaskSet) else None
    if spec is not None and not shape_matches(spec, ctx.status.roles):
        ctx.status.roles = fresh_roles(ctx.live, ctx.stamp)  # nothing has started yet: follow the spec
    ctx.plan.spec = spec
    name = control_unit_name(ctx.ref.name, ctx.status.attempt_id)
    ref = ctx.ref
    taskset = {"metadata": {"name": ref.name, "namespace": ref.namespace, "uid": ref.uid}}
    body = build_control_unit({**taskset, "spec": spec.raw if spec is not None else {}}, name)
    # Recorded before the create goes out: a create whose response is lost is verified too.
    ctx.status.spec_digest = snapshot_digest(body["data"].get(SNAPSHOT_KEY))
    ctx.plan.intents.append(CreateOwned(name, manifest=body, row=_CREATE_UNIT))
    return False


def _adopt_unit(ctx: PassContext, facts: TaskSetFacts) -> bool:
    """Record our ControlUnit found under the name (a lost status write, W-1) as this attempt's."""
    unit = ctx.observed.control_unit
    assert unit is not None
    ctx.status.control_unit_uid = unit.uid
    return True


def _unit_conflict(ctx: PassContext, facts: TaskSetFacts) -> bool:
    """Say in a Warning event that a foreign ConfigMap holds the name."""
    ctx.plan.events.append(Event(EventReason.CONTROL_UNIT_NAME_CONFLICT, _conflict_message(ctx, facts)))
    return True


def _conflict_message(ctx: PassContext, facts: TaskSetFacts) -> str:
    """The ControlUnit name the foreign ConfigMap holds."""
    return f"ControlUnit name conflict: {control_unit_name(ctx.ref.name, ctx.status.attempt_id)}"


def _delete_unit(ctx: PassContext, facts: TaskSetFacts) -> bool:
    """Delete the ControlUnit (foreground, UID precondition); the delete's result moves on."""
    unit = ctx.observed.control_unit
    assert unit is not None
    ctx.plan.intents.append(DeleteOwned(unit.name, unit.uid, advances=True, row=_DELETE_UNIT))
    return False


def _unit_timeout(ctx: PassContext, facts: TaskSetFacts) -> bool:
    """Also delete the unseen ControlUnit by name and UID, whatever the delete's outcome."""
    # Spec 8.6: so a ControlUnit that exists but never reached the cache cannot keep an attempt running
    # unobserved. The delete's outcome does not matter to the machine.
    if ctx.status.control_unit_uid:
        name = control_unit_name(ctx.ref.name, ctx.status.attempt_id)
        ctx.plan.intents.append(
            DeleteOwned(name, ctx.status.control_unit_uid, advances=False, row=_UNSEEN_UNIT)
        )
    return True


def _start_retry(ctx: PassContext, facts: TaskSetFacts) -> bool:
    """Count the retry and start the next attempt afresh, with the live spec."""
    status = ctx.status
    ctx.plan.events.append(
        Event(EventReason.TASKSET_RETRY, f"Current Retried Count:{status.total_retried_count}")
    )
    status.total_retried_count += 1
    status.control_unit_uid = None
    status.spec_digest = None
    status.attempt_result = None
    status.next_retry_at = None
    status.roles = fresh_roles(ctx.live, ctx.stamp)
    ctx.plan.spec = ctx.live.spec if isinstance(ctx.live, ParsedTaskSet) else None
    return True


def _unit_deleted(ctx: PassContext, facts: TaskSetFacts) -> bool:
    """Record the ControlUnit's deletion by someone else as why the attempt failed, unless the policies
    decided it already: the final message then names it rather than only the retry decision."""
    if _attempt_reason(ctx) is None:
        ctx.status.attempt_result = AttemptResult(
            False, MSG_CONTROL_UNIT_DELETED.format(name=_unit_name(ctx))
        )
    return True


def _unit_name(ctx: PassContext) -> str:
    return control_unit_name(ctx.ref.name, ctx.status.attempt_id)


def _decide_attempt(ctx: PassContext, facts: TaskSetFacts) -> bool:
    """Keep the attempt's outcome, since the spec it was decided with goes away with the ControlUnit."""
    kept = ctx.status.attempt_result
    reason = _attempt_reason(ctx)
    succeeded = reason is not None and facts.attempt_succeeded
    # The replica that failed the attempt, for its history entry once it ends.
    outcome = _outcome(ctx) if kept is None and not succeeded else None
    replica = None if outcome is None else outcome.replica
    ctx.status.attempt_result = AttemptResult(
        succeeded, reason or _unusable(ctx), final=_final(ctx), replica=replica
    )
    return True


def _deadline(ctx: PassContext, facts: TaskSetFacts) -> bool:
    """T6-deadline, T14-deadline: the deadline is the attempt's final outcome."""
    end_at_deadline(ctx)
    ctx.status.next_retry_at = None
    return True


def _deadline_row_message(ctx: PassContext, facts: TaskSetFacts) -> str:
    """ "DeadlineExceeded: the TaskSet ran longer than activeDeadlineSeconds (60s)"."""
    return deadline_message(ctx)


def _schedule_retry(ctx: PassContext, facts: TaskSetFacts) -> bool:
    """T13-retry: write when the next attempt is due."""
    ctx.status.next_retry_at = next_retry_at(ctx.stamp, _retry_delay(ctx))
    return True


# ----- the messages rows write ----------------------------------------------------------------------------


def _validation_message(ctx: PassContext, facts: TaskSetFacts) -> str:
    """What makes the spec illegal (spec 2.4)."""
    return ctx.live.message if isinstance(ctx.live, ValidationFailure) else ctx.status.phase_message


def _outcome_message(ctx: PassContext, facts: TaskSetFacts) -> str:
    """The event policies' reason for the attempt's outcome (spec 6.3)."""
    return _attempt_reason(ctx) or _unusable(ctx)


def _unusable(ctx: PassContext) -> str:
    """Why the attempt has no usable spec: its refused snapshot, or the spec itself."""
    return ctx.snapshot_refused or _UNUSABLE_SPEC


def _unit_deleted_message(ctx: PassContext, facts: TaskSetFacts) -> str:
    """T11's message: "ControlUnit c-x-0 was deleted"."""
    return MSG_CONTROL_UNIT_DELETED.format(name=_unit_name(ctx))


def _unit_deleting_message(ctx: PassContext, facts: TaskSetFacts) -> str:
    """T12's message: "ControlUnit c-x-0 is being deleted"."""
    return MSG_CONTROL_UNIT_BEING_DELETED.format(name=_unit_name(ctx))


def _ending_message(ctx: PassContext, facts: TaskSetFacts) -> str:
    """The success reason, or why no retry follows, or the retry policy's decision."""
    if facts.attempt_succeeded:
        return _attempt_reason(ctx) or "TaskSet succeeded"
    if ctx.ref.deleting:
        return "TaskSet is being deleted, no retry"
    if _final(ctx):
        return f"{_attempt_reason(ctx)}; no retry"
    return taskset_retry_decision(_retry_policy(ctx), ctx.status.total_retried_count)[1]


# ----- how rows wait --------------------------------------------------------------------------------------


def _wait_for_cache(ctx: PassContext, facts: TaskSetFacts) -> None:
    """Look again when the cache should show the ControlUnit, or when its creation times out."""
    settings = ctx.settings
    remaining = settings.cache_creation_timeout - seconds_since(ctx.status.transition_time, ctx.now)
    ctx.plan.requeue(min(settings.cache_wait_requeue, remaining + 1))


def _wait_for_retry_delay(ctx: PassContext, facts: TaskSetFacts) -> None:
    """Look again when the retry delay has passed."""
    delay = _retry_delay(ctx)
    ctx.plan.requeue(delay - seconds_since(ctx.status.transition_time, ctx.now))


def _look_again_later(ctx: PassContext, facts: TaskSetFacts) -> None:
    """Look again after the safety-net requeue (the awaited watch event usually comes first)."""
    ctx.plan.requeue(ctx.settings.cache_wait_requeue)


# ----- ControlUnit action results -------------------------------------------------------------------------


def unit_created(ctx: PassContext, intent: CreateOwned, result: ActionResult) -> None:
    """T3's create came back: created (along its row, and the pass goes on), already there (adopt it,
    wait for it, or a conflict), rejected (T3-rejected), or a transient failure to retry with backoff."""
    unit = result.view if isinstance(result.view, ControlUnitView) else None
    if result.kind == ResultKind.OK and unit is not None and unit.uid:
        ctx.status.control_unit_uid = unit.uid
        _move_on_result(ctx, intent.row.label, fixed_message(TASKSET_ROWS, intent.row.label))
        _go_on_with_created_unit(ctx, unit)
        return
    if result.kind == ResultKind.EXISTS:
        _unit_exists(ctx, unit)
        return
    if result.kind == ResultKind.INVALID:
        ctx.plan.events.append(Event(EventReason.CONTROL_UNIT_CREATION_FAILED, result.message))
        _move_on_result(ctx, "T3-rejected", f"ControlUnit creation rejected: {result.message}")
        next_pass_now(ctx)
        return
    transient(ctx, EventReason.CONTROL_UNIT_CREATION_FAILED, result.message)


def _unit_exists(ctx: PassContext, live: ControlUnitView | None) -> None:
    if live is None:
        ctx.plan.requeue(0)
    elif live.controller_uid == ctx.ref.uid and not live.deleting:
        ctx.status.control_unit_uid = live.uid
        # Not the manifest this pass decided: the next pass verifies it as any found ControlUnit.
        ctx.status.spec_digest = None
        _move_on_result(ctx, "T3-adopt", fixed_message(TASKSET_ROWS, "T3-adopt"))
        # The ControlUnit already exists, so its add event may already have been handled: by a pass
        # that started this retry and observed only the previous attempt's unit. Nothing else would
        # wake the TaskSet for T5.
        next_pass_now(ctx)
    elif live.controller_uid == ctx.ref.uid:
        ctx.plan.requeue(ctx.settings.cache_wait_requeue)
    else:
        message = f"ControlUnit name conflict: {live.name}"
        ctx.plan.events.append(Event(EventReason.CONTROL_UNIT_NAME_CONFLICT, message))
        _move_on_result(ctx, "T3-rejected", message)
        next_pass_now(ctx)


def _go_on_with_created_unit(ctx: PassContext, created: ControlUnitView) -> None:
    """Chain on from T3 in the same pass (spec 5: R MAY chain): the create's response is the API
    server's own word that the ControlUnit exists, so it stands in for the cache's sight of it (T5),
    and the Pods' creates go out now instead of a queue trip later, when the ConfigMap's add event
    would bring the next pass. Only a fresh create chains: its add event is still to come, which the
    reconciler waits for before the next pass (and bridges while it lags). An adopted ControlUnit's
    cache lags for reasons unknown, so adoption waits for the cache as before."""
    ctx.observed = replace(ctx.observed, control_unit=created)
    run_taskset(ctx)
    report_waiting(ctx)


def unit_deleted(ctx: PassContext, intent: DeleteOwned, result: ActionResult) -> None:
    """T10's delete came back: the TaskSet moves along the row once it is accepted (or the unit is
    gone); a failure is retried with backoff."""
    if result.kind == ResultKind.ERROR:
        transient(ctx, None, result.message)
        return
    _move_on_result(ctx, intent.row.label, fixed_message(TASKSET_ROWS, intent.row.label))
    if result.kind != ResultKind.OK:  # already gone: no deletion event will come
        next_pass_now(ctx)


# ----- the table ------------------------------------------------------------------------------------------

_GOING_TO_START = "TaskSet is going to start"

# The rows whose effects ask the API server for something: their intents carry them, and each takes
# the answer in its ``on_result``.
_CREATE_UNIT = RowRef(TASKSET_MACHINE.name, "T3")
_UNSEEN_UNIT = RowRef(TASKSET_MACHINE.name, "T4")
_DELETE_UNIT = RowRef(TASKSET_MACHINE.name, "T10")

TASKSET_ROWS: dict[str, Row[TaskSetFacts]] = {
    "T1": Row(message=_validation_message),
    "T2": Row(message="TaskSet is legal"),
    "T3-conflict": Row(effect=_unit_conflict, message=_conflict_message),
    "T3-adopt": Row(effect=_adopt_unit, message=_GOING_TO_START),
    "T3-hold": Row(wait=_look_again_later),
    "T3-deadline": Row(effect=_deadline, message=_deadline_row_message),
    "T3-suspended": Row(),  # the resume's own update event brings the pass that goes on
    "T3": Row(effect=_create_unit, message=_GOING_TO_START, on_result=unit_created),
    "T3-rejected": Row(
        message=FromResult("the name conflict, or the API server's reason for refusing the create")
    ),
    "T12": Row(effect=_unit_deleted, message=_unit_deleting_message),
    "T5": Row(message="Control unit is synced,prepare to launch tasks"),
    "T4": Row(
        effect=_unit_timeout, message="It's already timeout ,can't wait anymore", on_result=retry_if_failed
    ),
    "T5b": Row(wait=_wait_for_cache),
    "T11": Row(effect=_unit_deleted, message=_unit_deleted_message),
    "T6-deadline": Row(effect=_deadline, message=_deadline_row_message),
    "T6": Row(effect=_decide_attempt, message=_outcome_message),
    "T7": Row(message="Some TaskRole is running"),
    "T-wait": Row(),
    "T10": Row(
        effect=_delete_unit, message="The deletion of control unit has been requested", on_result=unit_deleted
    ),
    "T12b": Row(wait=_look_again_later),
    "T13-succeeded": Row(message=_ending_message),
    "T13-retry": Row(effect=_schedule_retry, message=_ending_message),
    "T13": Row(message=_ending_message),
    "T14-deleting": Row(message="TaskSet is being deleted, no retry"),
    "T14-deadline": Row(effect=_deadline, message=_deadline_row_message),
    "T14-illegal": Row(message=_validation_message),
    "T14": Row(effect=_start_retry, message="TaskSet is going to retry"),
    "T14b": Row(wait=_wait_for_retry_delay),
}
check_rows(TASKSET_MACHINE, TASKSET_ROWS, issuing=(_CREATE_UNIT, _UNSEEN_UNIT, _DELETE_UNIT))

# Where each row goes, for the results that move the TaskSet along the row their action was for.
_TARGET = {transition.label: transition.target for transition in TASKSET_MACHINE.transitions}


# ----- moving and the TaskSet's state ---------------------------------------------------------------------


def _move_taskset(ctx: PassContext, target: TaskSetPhase, message: str, label: str) -> None:
    status = ctx.status
    source = status.phase
    TASKSET_MACHINE.check(source, target)
    ctx.plan.moves.append(str(target))
    note_move(status, target, label, ctx.stamp)  # the attempt history, in this same write
    status.phase = target
    status.phase_message = message
    status.state_message = message
    status.transition_time = ctx.stamp
    ctx.plan.events.append(Event(EventReason.TASKSET_STATE_TRANSITION, f"Pre:{source},Next:{target}"))
    ctx.plan.records.append(
        transition_record(
            ctx,
            QueryKey.TASKSET_PHASE_TRANSITION,
            str(source),
            str(target),
            message,
            msg=LOG_MSG_TASKSET_PHASE_TRANSITION,
        )
    )
    _update_state(ctx, label)


def _move_on_result(ctx: PassContext, label: str, message: str) -> None:
    """Move along the row ``label`` because an action's result says so."""
    target = _TARGET[label]
    assert target is not None, f"row {label} keeps the phase"
    _move_taskset(ctx, target, message, label)


def _update_state(ctx: PassContext, label: str) -> None:
    """Spec 5.4 and the conditions of 2.5.1, after a phase change."""
    status = ctx.status
    if status.phase in (
        TaskSetPhase.VALIDATION,
        TaskSetPhase.ATTEMPT_PENDING,
        TaskSetPhase.ATTEMPT_CREATION_REQUESTED,
        TaskSetPhase.ATTEMPT_PREPARING,
    ):
        _set_state(ctx, State.WAITING)
    elif status.phase == TaskSetPhase.ATTEMPT_RUNNING:
        _set_state(ctx, State.RUNNING)
    elif status.phase == TaskSetPhase.COMPLETED:
        _complete(ctx, label)


def _complete(ctx: PassContext, label: str) -> None:
    """The TaskSet's final state, condition and event."""
    status = ctx.status
    succeeded = label == "T13-succeeded"
    # A failed attempt's completion reason says more than the retry decision that ended it (6.3).
    final_message = _attempt_reason(ctx) if label.startswith("T13") else None
    if final_message and not succeeded:
        status.state_message = final_message
    status.finish_at = ctx.stamp
    say_unfinished_ended(ctx, label)
    _set_state(ctx, State.SUCCEEDED if succeeded else State.FAILED)
    kind = ConditionType.SUCCEEDED if succeeded else ConditionType.FAILED
    reason = ConditionReason.VALIDATION_FAILED if label == "T1" else ConditionReason(str(status.state))
    if not succeeded and ended_by_deadline(status.attempt_result):
        reason = ConditionReason.DEADLINE_EXCEEDED
    status.set_condition(kind, ConditionStatus.TRUE, str(reason), status.state_message, ctx.stamp)
    name = ctx.ref.name
    ctx.plan.events.append(
        Event(EventReason.TASKSET_SUCCEEDED if succeeded else EventReason.TASKSET_FAILED, f"TaskSet:{name}")
    )


def _set_state(ctx: PassContext, state: State) -> None:
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


def _remove_stray_units(ctx: PassContext) -> None:
    """T15 (W-3d): a completed TaskSet owns no ControlUnit but the one cleanPodPolicy keeps;
    delete any other that is still around."""
    units = list(ctx.observed.other_control_units)
    if ctx.observed.control_unit is not None:
        units.append(ctx.observed.control_unit)
    kept = kept_unit(ctx)
    for unit in units:
        if unit.controller_uid == ctx.ref.uid and not unit.deleting and unit.uid != kept:
            ctx.plan.intents.append(DeleteOwned(unit.name, unit.uid, advances=False, row=STRAY_UNIT))
