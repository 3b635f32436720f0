"""What one pass of decide hands the reconciler, and what the reconciler hands back.

The contract between deciding and acting: the plan (a new status, API *intents*, events, log records,
when to look again), the intents themselves, and the result of carrying one out. The reconciler imports
these; the machines below fill them in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final

from taskset.api.constants import WARNING_EVENT_REASONS, EventReason, ReplicaPhase, TaskSetPhase
from taskset.api.spec import TaskSetSpec
from taskset.api.status import TaskSetStatus
from taskset.integrations import BUILT_IN_FRAMEWORK, Framework
from taskset.objects.decorations import PodDecoration
from taskset.objects.owned import CONFIGMAPS, ObjectKind
from taskset.objects.pods import PodIdentity
from taskset.observed.proof import PROCESS_PROOF_KEY
from taskset.observed.views import ControlUnitView, OwnedView, PodView

# Phases that say only "a create or delete was requested". A pass that moved machines into these and
# nowhere else has no news for the user: the request's own watch event brings the next pass, which writes
# them together with what it learns. If they are lost (a crash, a conflict), the pass that redoes them
# finds the object and adopts it (W-1) or repeats the delete, which its UID precondition makes safe.
# TaskSetAttemptPending is the first pass's step before T3, and T14's after a retry, whose ControlUnit
# name (from the retry count) is the same when redone; a pass that rests there (suspended, or held for
# a deletion) has nothing in flight (Plan.only_requests_in_flight). A created Pod's way to running
# (Pending, then scheduled) is news of the same kind: the Pod's next events bring the pass that writes
# it, and one that stays there is written HOLD_LIMIT (reconciler.py) later; the TaskSet's state is
# Waiting throughout.
IN_FLIGHT_PHASES: frozenset[str] = frozenset(
    {
        TaskSetPhase.ATTEMPT_PENDING,
        TaskSetPhase.ATTEMPT_CREATION_REQUESTED,
        TaskSetPhase.ATTEMPT_DELETION_REQUESTED,
        ReplicaPhase.ATTEMPT_CREATION_REQUESTED,
        ReplicaPhase.ATTEMPT_PREPARING,
        ReplicaPhase.ATTEMPT_ASSIGNED,
        ReplicaPhase.ATTEMPT_DELETION_REQUESTED,
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
    # How long a Pod may stay after its deletion time (which includes its grace period) before the
    # TaskSet's PodsStuckTerminating condition and a Warning event name it.
    stuck_terminating_after: float = 300.0
    # Bound on chained transitions per machine and pass; far above any legal path, so only a bug hits it.
    max_chain: int = 32
    # The integrations every pass asks, sorted by capability (taskset.integrations.framework): their
    # admission, objects, gates, Pod decorations and what follows an attempt's end.
    framework: Framework = BUILT_IN_FRAMEWORK
    # The key of the Pods' creation proofs (taskset.observed.proof). The daemon loads the cluster's from a
    # Secret (taskset.daemon.proof_key), so that a restarted or new leader proves and checks the same;
    # without one, a key made for this process: proofs then outlive neither a restart nor a failover.
    proof_key: bytes = field(default=PROCESS_PROOF_KEY, repr=False)


@dataclass(frozen=True)
class TaskSetRef:
    """Identity of the TaskSet being reconciled, from its metadata."""

    name: str
    namespace: str
    uid: str
    generation: int
    deleting: bool
    # spec.suspend, read live (taskset.api.live_fields): the attempt keeps no Pods and creates none.
    suspended: bool = False
    # metadata.labels, for the integrations that read one (Kueue's queue name).
    labels: Mapping[str, str] = field(default_factory=dict, compare=False)
    # Role -> who last wrote its count, from metadata.managedFields (best effort:
    # taskset.api.scale).
    scale_requesters: Mapping[str, str] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class RowRef:
    """The row an intent was issued for, whose ``on_result`` folds the intent's outcome into the pass
    (``Pass.fold``): a machine's row (``machine`` is the machine's name, ``label`` the row's), or an
    upkeep row (``taskset.decide.upkeep``) for what a pass asks beside its machines' moves."""

    machine: str
    label: str


# The row of an intent made outside a pass (a test's expected intent): no row folds its result. Every
# intent ends with its ``row``, set where it is made, keyword only and no part of its equality: the same
# request is the same intent whichever row asks it.
NO_ROW: Final = RowRef("", "")


# Who asked for an owned object: the attempt's ControlUnit is the controller's own, every other one an
# integration's (named by ``Integration.name``). Only the ControlUnit's results move the TaskSet machine.
CONTROL_UNIT: Final = "control-unit"


@dataclass(frozen=True)
class CreateOwned:
    """Create an object the TaskSet owns: the attempt's ControlUnit (the spec snapshot, W-18) or one an
    integration asked for. ``manifest`` is the whole object, decided with the rest of the pass; two
    creates of the same object compare equal whatever their manifests."""

    name: str
    kind: ObjectKind = CONFIGMAPS
    integration: str = CONTROL_UNIT
    manifest: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    row: RowRef = field(default=NO_ROW, compare=False, repr=False, kw_only=True)
    # Its data follows the TaskSet (``OwnedObject.updates``: the live membership), so it publishes what
    # the status holds (``publishes_status``).
    follows: bool = field(default=False, compare=False, repr=False, kw_only=True)

    @property
    def control_unit(self) -> bool:
        return self.integration == CONTROL_UNIT

    @property
    def action(self) -> str:
        """The action's name in metrics and logs."""
        return "CreateControlUnit" if self.control_unit else f"Create{self.kind.kind}"


@dataclass(frozen=True)
class DeleteOwned:
    """Delete an object the TaskSet owns, by name and UID (a precondition, so never another object)."""

    name: str
    uid: str
    advances: bool  # T10: the TaskSet moves on when the delete is accepted; False for stray cleanup (T15)
    kind: ObjectKind = CONFIGMAPS
    integration: str = CONTROL_UNIT
    row: RowRef = field(default=NO_ROW, compare=False, repr=False, kw_only=True)

    @property
    def control_unit(self) -> bool:
        return self.integration == CONTROL_UNIT

    @property
    def action(self) -> str:
        return "DeleteControlUnit" if self.control_unit else f"Delete{self.kind.kind}"


@dataclass(frozen=True)
class ApplyOwnedStatus:
    """Apply part of an owned object's status (``taskset.objects.owned.OwnedStatus``: a Kueue Workload's
    ``Finished`` condition); ``uid`` is the object's as the pass saw it, checked by the API server."""

    name: str
    uid: str
    kind: ObjectKind
    integration: str
    body: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    advances: bool = False  # no machine moves on it
    row: RowRef = field(default=NO_ROW, compare=False, repr=False, kw_only=True)

    @property
    def action(self) -> str:
        return f"Apply{self.kind.kind}Status"


@dataclass(frozen=True)
class UpdateOwned:
    """Write declared fields of an owned object back to what the integration declares (the live
    membership's data as the pass computed it from the TaskSet, a Service's selector a stranger
    edited), guarded by its UID; the rest of the object, its creation proof included, is untouched."""

    name: str
    uid: str
    # Each drifted field's path (``ObjectKind.declared``) and the whole value to write there.
    fields: tuple[tuple[tuple[str, ...], Any], ...] = field(compare=False, repr=False)
    kind: ObjectKind = CONFIGMAPS
    integration: str = CONTROL_UNIT
    row: RowRef = field(default=NO_ROW, compare=False, repr=False, kw_only=True)

    @property
    def action(self) -> str:
        return f"Update{self.kind.kind}"


@dataclass(frozen=True)
class CreatePod:
    """Create one replica's Pod: who it is, and what the integrations add to its role's template. The
    reconciler builds the Pod from these alone, lazily, sharing the template (2,000 Pods in a pass).
    Identity and decorations follow from the fields before them, so they take no part in equality."""

    role: int  # position in spec.roles
    index: int
    name: str
    taskset_attempt: int
    replica_attempt: int
    identity: PodIdentity | None = field(default=None, compare=False, repr=False)
    decorations: tuple[PodDecoration, ...] = field(default=(), compare=False, repr=False)
    row: RowRef = field(default=NO_ROW, compare=False, repr=False, kw_only=True)

    @property
    def action(self) -> str:
        return "CreatePod"


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
    row: RowRef = field(default=NO_ROW, compare=False, repr=False, kw_only=True)
    # Grace period 0: the API server removes the Pod without its node's confirmation (a lost node's
    # Pod, ``taskset.decide.node_recovery``); otherwise the kubelet stops it and confirms.
    force: bool = field(default=False, kw_only=True)

    @property
    def action(self) -> str:
        return "DeletePod"


@dataclass(frozen=True)
class DeleteTaskSet:
    """Delete the finished TaskSet itself once its ``ttlSecondsAfterFinished`` passed, with a
    UID precondition (never a re-created namesake); the garbage collector takes what it owns."""

    uid: str
    advances: bool = False  # no machine moves on it: the TaskSet is gone
    row: RowRef = field(default=NO_ROW, compare=False, repr=False, kw_only=True)

    @property
    def action(self) -> str:
        return "DeleteTaskSet"


Intent = CreateOwned | DeleteOwned | UpdateOwned | CreatePod | DeletePod | DeleteTaskSet | ApplyOwnedStatus


def publishes_status(intent: Intent) -> bool:
    """Whether ``intent`` writes what the pass's status allocates: an owned object's data that follows
    the TaskSet (the live membership and its generation). Such a write goes out only once that status is
    persisted, so no later pass, whatever became of this one, allocates again what was already
    published: a generation shown for one content is never shown for another, nor followed by a lower
    one (``taskset.decide.membership_generation``)."""
    return isinstance(intent, UpdateOwned) or (isinstance(intent, CreateOwned) and intent.follows)


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
    # The UID of the ControlUnit whose snapshot this pass must use and whose text the caches do not hold
    # (taskset.decide.snapshot): the pass stopped before deciding anything; the reconciler fetches the
    # text and decides again. Nothing else in such a plan counts.
    snapshot_wanted: str | None = None

    def requeue(self, seconds: float) -> None:
        seconds = max(0.0, seconds)
        self.requeue_after = seconds if self.requeue_after is None else min(self.requeue_after, seconds)

    @property
    def only_requests_in_flight(self) -> bool:
        """Whether every move since the last write went into an ``IN_FLIGHT_PHASES`` phase, so the write
        may wait for the next pass (status writes are the API server's costliest TaskSet requests). A
        warning is news of its own: a Pod that will not start says why at once. A TaskSet that ends the
        pass still in AttemptPending has no request in flight: it stays there for a resume or for a
        deletion to finish (T3-suspended, T3-hold), which no watch event of ours brings, so a TaskSet
        created suspended shows its status at once rather than none until the hold runs out."""
        return (
            bool(self.moves)
            and all(target in IN_FLIGHT_PHASES for target in self.moves)
            and self.status.phase != TaskSetPhase.ATTEMPT_PENDING
            and not any(event.warning for event in self.events)
        )


class ResultKind(Enum):
    OK = "ok"
    EXISTS = "already-exists"  # ``obj`` is the live object under the name, or None if it vanished
    INVALID = "invalid"  # 422 / lasting admission denial: retrying the same request cannot succeed
    NOT_FOUND = "not-found"
    CONFLICT = "conflict"  # a UID precondition failed: the object under the name is another one
    # A create denied by admission for now (kube.TRANSIENT_DENIALS: a quota, a missing service account):
    # retried with backoff like ERROR, and said in the status, since it lasts until someone acts.
    REFUSED = "refused"
    ERROR = "error"  # transient: 429, 5xx, timeouts


# What the reconciler read of an action's object: the created object, or the live one under the name
# (``EXISTS``). Built by the reconciler from the API server's response, so decide never parses one.
ResultView = PodView | ControlUnitView | OwnedView


@dataclass(frozen=True)
class ActionResult:
    """The outcome of one intent, in decide's vocabulary: what kind of answer came back, the object it
    showed (a view, or None when the answer carried none), and the API server's own words."""

    kind: ResultKind
    view: ResultView | None = None
    message: str = ""


# ----- how a plan's intents go out ------------------------------------------------------------------


def next_batch(intents: list[Intent], start: int) -> list[Intent]:
    """The intents from ``start`` that go out together: a run of Pod creates, or of Pod deletes (each
    touches its own Pod and none waits for another's result: a TaskSet's end deletes its Pods in one
    round trip, not one after another); a ControlUnit action alone."""
    first = intents[start]
    end = start + 1
    if isinstance(first, CreatePod | DeletePod):
        while end < len(intents) and type(intents[end]) is type(first):
            end += 1
    return intents[start:end]


def advancing_delete(intent: Intent) -> bool:
    """A delete whose acceptance moves a machine on (P9, T10), as opposed to removing a stray object."""
    return isinstance(intent, DeletePod | DeleteOwned) and intent.advances


def persists_first(intent: Intent) -> bool:
    """An intent that may go out only once the pass's status is persisted: an advancing delete, a
    forced one (a lost node's Pod is gone at once, and with it the eviction the pass noted as its end:
    lost with a status write, the next pass would count it as the workload's), or a write of what the
    status allocates (``publishes_status``)."""
    forced = isinstance(intent, DeletePod) and intent.force
    return advancing_delete(intent) or forced or publishes_status(intent)
