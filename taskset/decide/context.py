"""What every machine level shares: the pass's inputs and plan, the shape of a row, and the helpers
that record a move or an unhandled situation.

A pass reads (TaskSet ref, live spec, observed views, now, settings) and fills in one ``Plan``. Each
machine level (attempt, roles, replicas) says what its rows do in one table of ``Row`` s, keyed by
the labels its machine declares (``taskset.decide.machines``), so a reader finds what a row does,
how it waits and what message it writes in one place.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, TypeVar

from statemachine import Machine
from taskset.api.constants import EventReason, QueryKey
from taskset.api.spec import ParseResult, TaskSetSpec, ValidationFailure
from taskset.api.status import RoleStatus, TaskSetStatus, stamp
from taskset.decide.plan import ActionResult, Event, LogRecord, Plan, ResultKind, RowRef, Settings, TaskSetRef
from taskset.integrations.base import Attempt
from taskset.integrations.framework import Admissions
from taskset.observed.views import Observed


@dataclass
class PassContext:
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
    # The integrations' owned objects were compared with the caches (once per pass), and why the roles
    # wait for them (None: every one is there and ours). See taskset.decide.owned_sync.
    owned_synced: bool = False
    owned_hold: str | None = None
    # Role position -> why its Pods may not be created now (None: they may); asked once per pass.
    gates: dict[int, str | None] = field(default_factory=dict)
    # Role positions whose hold this pass already reported in an event.
    held_reported: set[int] = field(default_factory=set)
    # The Pod create failures already said in an event, each with its Pod's name taken out
    # (taskset.decide.waiting.creation_failure_said): a quota refuses every Pod in the same words.
    # None until the first failure of the pass reads the refusals the status already records.
    failures_said: set[str] | None = None
    # What the integrations are told of the attempt (taskset.decide.owned_sync.attempt_of), made once per
    # attempt and spec rather than once per Pod created.
    attempt: Attempt | None = None
    # What the admitting integrations said of that attempt (taskset.decide.owned_sync.admission_of), asked
    # once per attempt and spec: the scale, the suspension, the gates and the decorations all read it.
    admissions: tuple[Attempt, Admissions] | None = None
    # Why the attempt's ControlUnit snapshot is refused (None: it is not); see taskset.decide.snapshot.
    snapshot_refused: str | None = None
    # Whether the attempt stops its Pods as a suspension does, and why an admission asks it
    # (taskset.decide.suspension.suspended): worked out once per pass.
    suspension: tuple[bool, str | None] | None = None
    # Roles scaled in this pass, announced once the membership generation is known.
    scaled: list[RoleStatus] = field(default_factory=list)
    # Whether finished Pods stay (taskset.decide.cleanup.keeps_pods), once the live spec has said it.
    keeps_pods: bool | None = None

    @functools.cached_property
    def stamp(self) -> str:
        """``now`` as the API's timestamps write it; once per pass (a pass stamps every move)."""
        return stamp(self.now)

    @property
    def status(self) -> TaskSetStatus:
        return self.plan.status


# ----- rows ---------------------------------------------------------------------------------------------

# What a row reads besides the pass: the TaskSet's facts, one role, or one replica with its Pod.
Scope = TypeVar("Scope")


@dataclass(frozen=True)
class FromResult:
    """The message of a row taken only on an action's result (``Transition.on_result``): the result's
    own words, which no step can know, so the function that folds the result writes it."""

    doc: str


@dataclass(frozen=True)
class Row(Generic[Scope]):
    """What one row does once its machine chose it.

    A row that moves the machine runs its ``effect`` (bookkeeping, events, API intents), then writes
    its ``message`` into the phase it enters: a fixed text, a function of what the row read, or, for a
    row taken only on an action's result, ``FromResult``. An effect that starts an API action answers
    False: the move waits for the action's result. A row that keeps the phase runs its ``wait`` (when to
    look again, what to report while waiting). A row whose effect asks the API server for something
    makes its intents carry the row (``RowRef``), and its ``on_result`` takes each one's answer: it moves
    the machine along a declared edge, or stays and retries. Every field is optional: a row with none of
    them moves and keeps the phase's message, or waits doing nothing."""

    effect: Callable[[PassContext, Scope], bool] | None = None
    message: str | Callable[[PassContext, Scope], str] | FromResult | None = None
    wait: Callable[[PassContext, Scope], None] | None = None
    # (pass, the intent the row issued, its result): the intent's own type, which the row knows.
    on_result: Callable[[PassContext, Any, ActionResult], None] | None = None


def row_message(row: Row[Scope], ctx: PassContext, scope: Scope, current: str) -> str:
    """The message a step writes when it takes ``row``; ``current`` (the phase's message) when the row
    has none of its own."""
    message = row.message
    if isinstance(message, str):
        return message
    if isinstance(message, FromResult):
        raise TypeError(f"a step took a row that only an action's result may take: {message.doc}")
    return current if message is None else message(ctx, scope)


def fixed_message(rows: Mapping[str, Row[Any]], label: str) -> str:
    """The fixed message of the row ``label``, for the results that move the machine along it."""
    message = rows[label].message
    if not isinstance(message, str):
        raise TypeError(f"row {label} has no fixed message")
    return message


def check_rows(
    machine: Machine[Any, Any], rows: Mapping[str, Row[Any]], issuing: Iterable[RowRef] = ()
) -> None:
    """Fail at import when a table and its machine disagree: every declared row has exactly one entry
    (so a step's strict lookup cannot miss), and a row that keeps the phase neither moves nor writes.
    ``issuing`` are the rows whose effects make intents (the ``RowRef`` s they carry): each is a row of
    this machine with an effect, and exactly these rows take an action's result (``on_result``)."""
    declared = {transition.label: transition for transition in machine.transitions}
    if set(rows) != set(declared):
        missing, unknown = sorted(set(declared) - set(rows)), sorted(set(rows) - set(declared))
        raise ValueError(f"{machine.name} rows: missing {missing}, not declared {unknown}")
    for label, row in rows.items():
        if declared[label].target is None and (row.effect or row.message):
            raise ValueError(f"{machine.name} row {label} keeps the phase but has an effect or a message")
        if declared[label].target is not None and row.wait:
            raise ValueError(f"{machine.name} row {label} moves but has a wait")
    issuers = set()
    for ref in issuing:
        if ref.machine != machine.name or ref.label not in rows or rows[ref.label].effect is None:
            raise ValueError(
                f"{machine.name}: an intent names row {ref.label} of {ref.machine}, no effect of it"
            )
        issuers.add(ref.label)
    for label, row in rows.items():
        if label in issuers and row.on_result is None:
            raise ValueError(f"{machine.name} row {label} makes intents but takes no result (on_result)")
        if label not in issuers and row.on_result is not None:
            raise ValueError(f"{machine.name} row {label} takes a result but makes no intent")


# ----- shared helpers -------------------------------------------------------------------------------------


def fresh_roles(live: ParseResult, at: str) -> list[RoleStatus]:
    """A new attempt's role statuses, shaped by the live spec (or by the outline of an illegal one)."""
    if isinstance(live, ValidationFailure):
        return [RoleStatus.fresh(outline.name, max(outline.replicas, 0), at) for outline in live.roles]
    return [RoleStatus.fresh(role.name, role.replicas, at) for role in live.spec.roles]


def shape_matches(spec: TaskSetSpec, roles: list[RoleStatus]) -> bool:
    """Whether the status's roles and replicas are the spec's: a spec edited mid-attempt is not run. A
    scaled role (``taskset.decide.elastic``) matches its recorded target instead: its list
    may hold replicas still going away, or lack some still to come back."""
    return len(spec.roles) == len(roles) and all(
        role.name == status.name and role.replicas in (len(status.replicas), status.target_replicas)
        for role, status in zip(spec.roles, roles, strict=True)
    )


def transition_record(
    ctx: PassContext,
    query: QueryKey,
    source: str,
    target: str,
    reason: str,
    *,
    msg: str = "",
    **extra: str | int,
) -> LogRecord:
    """A TaskSetPhaseTransition / TaskRoleTransition / ReplicaTransition record (spec 10.2). A replica's
    record also carries its index: its ``PodName`` is what the status recorded, which a hand-edited status
    may set to another replica's name, so the name alone does not say whose phase moved."""
    fields = {"QueryKey": str(query), "TaskSet": ctx.ref.name, "Namespace": ctx.ref.namespace, **extra}
    return LogRecord(msg, {**fields, "PrePhase": source, "NextPhase": target, "Reason": reason})


def unhandled(ctx: PassContext, why: str) -> None:
    """Log a situation no row covers (a bug), and look again later rather than spin."""
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


def next_pass_now(ctx: PassContext) -> None:
    """A result moved a machine to a state whose next step needs no new watch event (the object is
    already gone, or was never made): look again at once instead of waiting for a safety-net requeue."""
    ctx.plan.requeue(0)


def retry_if_failed(ctx: PassContext, intent: Any, result: ActionResult) -> None:
    """The answer to an action no machine moves on (a stray's delete, say): only a failure matters,
    retried with backoff."""
    if result.kind == ResultKind.ERROR:
        ctx.plan.backoff = True


def transient(ctx: PassContext, reason: EventReason | None, message: str) -> None:
    """An action failed in a way worth retrying the same request later, with backoff."""
    ctx.plan.backoff = True
    if reason is not None:
        ctx.plan.events.append(Event(reason, message))
