"""One reconcile pass's decisions: (TaskSet, recorded status, observed snapshot, now) -> Plan.

Pure: no API calls, no clock, no logging. The plan holds the new status, the API *intents* to carry
out, the Kubernetes events and log records to emit after the status write, and when to look again.
Rows that need the API server (create/delete) do not change a phase themselves: their intent carries
the row (``RowRef``) and comes back through ``Pass.fold`` with the outcome to that row's ``on_result``,
which moves the machine along a declared edge. Rows without I/O chain within the pass (bounded), so
one pass goes as far as the observed facts allow.

The machines nest, and calls run strictly downward: the TaskSet attempt (``attempt``) syncs its roles
(``roles``), each role its replicas (``replicas``). Each level says what its rows do in one table;
``plan`` is the contract with the reconciler, ``context`` what the levels share, ``stages`` the order
of a pass's steps and why, ``waiting`` the words for a Pod that does not start.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from taskset.api.spec import ParseResult, TaskSetSpec
from taskset.api.status import TaskSetStatus, clip, stamp
from taskset.decide.after_attempt import status_applied
from taskset.decide.attempt import TASKSET_ROWS, unit_class
from taskset.decide.context import FromResult, PassContext, Row, fresh_roles, retry_if_failed
from taskset.decide.deadlines import taskset_deleted
from taskset.decide.elastic import scaled_spec
from taskset.decide.machines import REPLICA_MACHINE, ROLE_MACHINE, TASKSET_MACHINE, ControlUnitClass
from taskset.decide.owned_sync import owned_created, owned_deleted, owned_updated
from taskset.decide.plan import (
    CONTROL_UNIT,
    IN_FLIGHT_PHASES,
    ActionResult,
    ApplyOwnedStatus,
    CreateOwned,
    CreatePod,
    DeleteOwned,
    DeletePod,
    DeleteTaskSet,
    Event,
    Intent,
    LogRecord,
    Plan,
    ResultKind,
    ResultView,
    RowRef,
    Settings,
    TaskSetRef,
    UpdateOwned,
    next_batch,
    persists_first,
    publishes_status,
)
from taskset.decide.replicas import REPLICA_ROWS, UNSEEN_DELETE_POLL
from taskset.decide.roles import ROLE_ROWS
from taskset.decide.snapshot import attempt_spec
from taskset.decide.stages import STAGES
from taskset.decide.upkeep import (
    ATTEMPT_END_STATUS,
    EARLIER_ATTEMPT_OBJECT,
    EXPIRED_TASKSET,
    LEFT_BEHIND_OBJECT,
    NODE_LOST_POD,
    ORPHANED_POD,
    OWNED_DATA,
    OWNED_OBJECT,
    SCALED_DOWN_POD,
    STALE_OBJECT,
    STRAY_POD,
    STRAY_UNIT,
    UNFINISHED_POD,
    UPKEEP,
    check_upkeep,
)
from taskset.decide.waiting import (
    WAIT_MESSAGE_MAX,
    WAITING_ENTRY_MAX,
    WAITING_SUMMARY_MAX,
    WAITING_SUMMARY_NAMED,
    PodWait,
    pod_wait,
    report_waiting,
    waiting_summary,
)
from taskset.observed.views import Observed

__all__ = [
    "CONTROL_UNIT",
    "IN_FLIGHT_PHASES",
    "ROWS",
    "UNSEEN_DELETE_POLL",
    "UPKEEP_ROWS",
    "WAITING_ENTRY_MAX",
    "WAITING_SUMMARY_MAX",
    "WAITING_SUMMARY_NAMED",
    "WAIT_MESSAGE_MAX",
    "ActionResult",
    "ApplyOwnedStatus",
    "CreateOwned",
    "CreatePod",
    "DeleteOwned",
    "DeletePod",
    "DeleteTaskSet",
    "Event",
    "FromResult",
    "Intent",
    "LogRecord",
    "Pass",
    "Plan",
    "PodWait",
    "ResultKind",
    "ResultView",
    "Row",
    "RowRef",
    "Settings",
    "TaskSetRef",
    "UpdateOwned",
    "clip",
    "decide",
    "next_batch",
    "persists_first",
    "pod_wait",
    "publishes_status",
    "waiting_summary",
]

# Each machine's row table, by machine name: what every row does, how it waits, what it writes, and
# what it does with the answer to the intents it makes.
ROWS: Mapping[str, Mapping[str, Row[Any]]] = {
    TASKSET_MACHINE.name: TASKSET_ROWS,
    ROLE_MACHINE.name: ROLE_ROWS,
    REPLICA_MACHINE.name: REPLICA_ROWS,
}

# What a pass asks beside its machines' moves (``taskset.decide.upkeep``), by row: what it does with
# each answer. Only a failure matters to most; no machine moves on any.
UPKEEP_ROWS: Mapping[str, Row[Any]] = {
    STRAY_POD.label: Row(on_result=retry_if_failed),
    ORPHANED_POD.label: Row(on_result=retry_if_failed),
    UNFINISHED_POD.label: Row(on_result=retry_if_failed),
    SCALED_DOWN_POD.label: Row(on_result=retry_if_failed),
    STRAY_UNIT.label: Row(on_result=retry_if_failed),
    OWNED_OBJECT.label: Row(on_result=owned_created),
    LEFT_BEHIND_OBJECT.label: Row(on_result=owned_deleted),
    OWNED_DATA.label: Row(on_result=owned_updated),
    STALE_OBJECT.label: Row(on_result=owned_deleted),
    ATTEMPT_END_STATUS.label: Row(on_result=status_applied),
    EARLIER_ATTEMPT_OBJECT.label: Row(on_result=owned_deleted),
    EXPIRED_TASKSET.label: Row(on_result=taskset_deleted),
    NODE_LOST_POD.label: Row(on_result=retry_if_failed),
}
check_upkeep(UPKEEP_ROWS)

# The one owner of every intent's result: the row the intent was issued for.
_ON_RESULT: Mapping[RowRef, Callable[[PassContext, Any, ActionResult], None]] = {
    RowRef(machine, label): row.on_result
    for machine, rows in (*ROWS.items(), (UPKEEP, UPKEEP_ROWS))
    for label, row in rows.items()
    if row.on_result is not None
}


class Pass:
    """One pass's decisions so far, and the way to go on with them.

    ``plan`` is what to do; ``fold`` takes the result of one of its intents and moves the machines
    along the row that intent was for, with the same inputs the pass decided from (a created
    ControlUnit even lets the pass go on to create the Pods, so ``fold`` may add intents)."""

    def __init__(self, ctx: PassContext) -> None:
        self._ctx = ctx

    @property
    def plan(self) -> Plan:
        return self._ctx.plan

    def fold(self, intent: Intent, result: ActionResult) -> None:
        """Fold one action's outcome into the plan: the row the intent was issued for takes it
        (``Row.on_result``), and moves along a declared edge or stays and retries."""
        on_result = _ON_RESULT.get(intent.row)
        if on_result is None:
            raise LookupError(f"no row takes the result of {intent.action}, issued by {intent.row}")
        on_result(self._ctx, intent, result)

    def conclude(self) -> None:
        """Once every result is folded, before the status is written: what summarises the replicas (the
        Running condition's list of waiting replicas) is said again from what the results changed (a
        create the API server refused names its refusal in the replica's message), so the status
        written agrees with itself rather than a pass behind, which a backoff can make seconds."""
        report_waiting(self._ctx)


def decide(
    ref: TaskSetRef,
    live: ParseResult,
    recorded: TaskSetStatus | None,
    observed: Observed,
    now: datetime,
    *,
    settings: Settings = Settings(),  # noqa: B008  (frozen)
) -> Pass:
    """Run the machines over a private copy of ``recorded`` and return the pass: its plan says what
    to do, and it folds the actions' results in."""
    status = recorded.copy() if recorded is not None else _fresh_status(live, now)
    status.observed_generation = ref.generation
    ctx = PassContext(ref, live, observed, now, settings, Plan(status=status, spec=None))
    ctx.plan.spec = scaled_spec(ctx, _attempt_spec(ctx))
    if ctx.plan.snapshot_wanted is not None:
        return Pass(ctx)  # nothing is decided without the attempt's spec: the reconciler fetches it
    for stage in STAGES:
        stage.run(ctx)
    return Pass(ctx)


def _fresh_status(live: ParseResult, now: datetime) -> TaskSetStatus:
    at = stamp(now)
    status = TaskSetStatus(phase_message="Initialize the taskset status", transition_time=at, created_at=at)
    status.state_message = status.phase_message
    status.roles = fresh_roles(live, at)
    return status


def _attempt_spec(ctx: PassContext) -> TaskSetSpec | None:
    """The spec this attempt runs with: the ControlUnit's snapshot when there is one and its digest
    checks out (W-18), else the live spec; None when the snapshot is refused or nothing is
    usable."""
    ours = unit_class(ctx) in (ControlUnitClass.OURS, ControlUnitClass.OURS_DELETING)
    return attempt_spec(ctx, ctx.ref.uid if ours else None)
