"""What one pass of decide hands the reconciler, and what the reconciler hands back.

The contract between deciding and acting: the plan (a new status, API *intents*, events, log records,
when to look again), the intents themselves, and the result of carrying one out. The reconciler imports
these; the machines below fill them in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from taskset.api.constants import WARNING_EVENT_REASONS, EventReason, ReplicaPhase, TaskSetPhase
from taskset.api.spec import TaskSetSpec
from taskset.api.status import TaskSetStatus
from taskset.api.views import ControlUnitView, PodView

P = ReplicaPhase
T = TaskSetPhase
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


# What the reconciler read of an action's object: the created object, or the live one under the name
# (``EXISTS``). Built by the reconciler from the API server's response, so decide never parses one.
ResultView = PodView | ControlUnitView


@dataclass(frozen=True)
class ActionResult:
    """The outcome of one intent, in decide's vocabulary: what kind of answer came back, the object it
    showed (a view, or None when the answer carried none), and the API server's own words."""

    kind: ResultKind
    view: ResultView | None = None
    message: str = ""
