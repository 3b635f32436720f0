"""The three machines of spec 5 as tables: TaskSet attempt, role and replica.

Guards read frozen *facts* computed from the recorded status and the observed snapshot; each row names
the spec's row (T*, R*, P*) so logs, tests and diagrams speak the spec's language. Which row fires is
decided here; what a row *does* (bookkeeping, API intents, how it waits, its message) is its entry in
the row table of its level, keyed by the same label (``TASKSET_ROWS`` in ``taskset.decide.attempt``,
``ROLE_ROWS`` in ``roles``, ``REPLICA_ROWS`` in ``replicas``). Row order is the spec's first-match order,
R's corrections folded in.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from statemachine import Machine, Transition
from taskset.api.constants import ReplicaPhase, RolePhase, TaskSetPhase
from taskset.observed.views import PodClass

# ----------------------------------------------------------------------------------------------------
# Replica
# ----------------------------------------------------------------------------------------------------

_OURS = (PodClass.CURRENT, PodClass.ADOPTABLE)


@dataclass(frozen=True)
class ReplicaFacts:
    pod: PodClass
    pod_deleting: bool = False
    pod_terminal: bool = False
    pod_running: bool = False
    pod_assigned: bool = False
    stopped: bool = False
    creates_allowed: bool = True
    creation_timed_out: bool = False
    may_retry: bool = False
    retry_due: bool = False
    # W-11: a Pod of an earlier TaskSet attempt still holds one of the replica names (its ControlUnit was
    # deleted externally without foreground propagation, 8.3), this replica's or another's.
    earlier_attempt_alive: bool = False
    # The TaskSet is suspended; and this replica's Pod is going away because it was.
    suspended: bool = False
    suspend_deleted: bool = False
    # The replica's Pod is still Pending past its role's startDeadlineSeconds.
    start_deadline_passed: bool = False
    # spec.cleanPodPolicy keeps finished Pods (None, Running), and the TaskSet is not deleted.
    keeps_finished: bool = False
    # The TaskSet ended (TaskSetCompleted) while this replica was unfinished: nothing follows it now.
    taskset_ended: bool = False

    @property
    def ours(self) -> bool:
        return self.pod in _OURS

    @property
    def ours_deleting(self) -> bool:
        return self.ours and self.pod_deleting

    @property
    def ours_terminal(self) -> bool:
        return self.ours and self.pod_terminal


def _stop_live(f: ReplicaFacts) -> bool:
    return f.stopped and not f.ours_deleting


def _suspend_live(f: ReplicaFacts) -> bool:
    """Suspended with a live Pod of its own to delete: one that exited has an outcome (P5) to keep."""
    return f.suspended and not f.ours_deleting and not f.ours_terminal


_LIVE = (
    ReplicaPhase.ATTEMPT_CREATION_REQUESTED,
    ReplicaPhase.ATTEMPT_PREPARING,
    ReplicaPhase.ATTEMPT_ASSIGNED,
    ReplicaPhase.ATTEMPT_RUNNING,
)
_GONE_WAIT = (ReplicaPhase.ATTEMPT_DELETION_REQUESTED, ReplicaPhase.ATTEMPT_COMPLETED)
_UNFINISHED = tuple(phase for phase in ReplicaPhase if phase != ReplicaPhase.COMPLETED)

REPLICA_MACHINE: Machine[ReplicaPhase, ReplicaFacts] = Machine(
    name="replica",
    states=tuple(ReplicaPhase),
    initial=ReplicaPhase.ATTEMPT_PENDING,
    terminal=frozenset({ReplicaPhase.COMPLETED}),
    transitions=(
        Transition(
            "S3",
            _UNFINISHED,
            ReplicaPhase.COMPLETED,
            lambda f: f.taskset_ended,
            "the TaskSet ended first (another role's outcome, a deadline, its ControlUnit's deletion): "
            "stopped where it was, its Pod deleted with the attempt or kept by cleanPodPolicy",
        ),
        # --- a new attempt's Pod ---
        Transition(
            "S1",
            (ReplicaPhase.ATTEMPT_PENDING, ReplicaPhase.ATTEMPT_RETRY_PENDING),
            ReplicaPhase.COMPLETED,
            lambda f: f.stopped,
            "stopped by its completed role",
        ),
        Transition(
            "P0",
            (ReplicaPhase.ATTEMPT_PENDING,),
            None,
            lambda f: (
                f.pod in (PodClass.PREVIOUS, PodClass.DUPLICATE)
                or (f.pod == PodClass.ABSENT and f.earlier_attempt_alive)
            ),
            "an earlier Pod still holds the name: delete it, wait until it is gone; and no next attempt's "
            "Pod while any earlier attempt's Pod is left (W-11)",
        ),
        Transition(
            "P1-conflict",
            (ReplicaPhase.ATTEMPT_PENDING,),
            ReplicaPhase.ATTEMPT_COMPLETED,
            lambda f: f.pod == PodClass.FOREIGN,
            "a foreign Pod holds the name",
        ),
        Transition(
            "P1-adopt",
            (ReplicaPhase.ATTEMPT_PENDING,),
            ReplicaPhase.ATTEMPT_CREATION_REQUESTED,
            lambda f: f.ours,
            "this attempt's Pod already exists: adopt it",
        ),
        Transition(
            "P1-suspended",
            (ReplicaPhase.ATTEMPT_PENDING,),
            None,
            lambda f: f.suspended,
            "the TaskSet is suspended: create nothing until it resumes",
        ),
        Transition(
            "P1-hold",
            (ReplicaPhase.ATTEMPT_PENDING,),
            None,
            lambda f: not f.creates_allowed,
            "the TaskSet is being deleted or past its activeDeadlineSeconds, or an integration holds the "
            "role (its objects are not there yet, or its gate is closed): create nothing, and say why",
        ),
        Transition(
            "P1",
            (ReplicaPhase.ATTEMPT_PENDING,),
            ReplicaPhase.ATTEMPT_CREATION_REQUESTED,
            doc="create the Pod",
        ),
        Transition(
            "P1-rejected",
            (ReplicaPhase.ATTEMPT_PENDING,),
            ReplicaPhase.ATTEMPT_COMPLETED,
            on_result=True,
            doc="create rejected (invalid Pod, admission) or name taken by a foreign Pod",
        ),
        # --- following the Pod ---
        Transition(
            "P10-suspended",
            _LIVE,
            ReplicaPhase.ATTEMPT_DELETION_REQUESTED,
            lambda f: f.suspended and f.ours_deleting and not f.ours_terminal,
            "the TaskSet is suspended and the Pod is being deleted: not a failure",
        ),
        Transition(
            "P10",
            (*_LIVE, ReplicaPhase.ATTEMPT_DELETION_PENDING),
            ReplicaPhase.ATTEMPT_DELETION_REQUESTED,
            lambda f: f.ours_deleting,
            "someone else is deleting the Pod",
        ),
        Transition(
            "S2", _LIVE, ReplicaPhase.ATTEMPT_DELETION_PENDING, _stop_live, "stopped by its completed role"
        ),
        Transition(
            "P-suspend",
            _LIVE,
            ReplicaPhase.ATTEMPT_DELETION_PENDING,
            _suspend_live,
            "the TaskSet is suspended: delete the running Pod, counting nothing",
        ),
        Transition(
            "P3",
            (ReplicaPhase.ATTEMPT_CREATION_REQUESTED,),
            ReplicaPhase.ATTEMPT_PREPARING,
            lambda f: f.ours,
            "the Pod appeared in the cache",
        ),
        Transition(
            "P2",
            (ReplicaPhase.ATTEMPT_CREATION_REQUESTED,),
            ReplicaPhase.ATTEMPT_DELETION_PENDING,
            lambda f: f.creation_timed_out,
            "the Pod never appeared within the cache timeout",
        ),
        Transition("P3b", (ReplicaPhase.ATTEMPT_CREATION_REQUESTED,), None, doc="wait for the cache"),
        Transition(
            "P5",
            (ReplicaPhase.ATTEMPT_PREPARING, ReplicaPhase.ATTEMPT_ASSIGNED, ReplicaPhase.ATTEMPT_RUNNING),
            ReplicaPhase.ATTEMPT_DELETION_PENDING,
            lambda f: f.ours_terminal,
            "the Pod exited, or its phase became Unknown (node lost; spec 8.2): the attempt is over",
        ),
        Transition(
            "P4",
            (ReplicaPhase.ATTEMPT_PREPARING, ReplicaPhase.ATTEMPT_ASSIGNED),
            ReplicaPhase.ATTEMPT_RUNNING,
            lambda f: f.ours and f.pod_running,
            "the Pod runs",
        ),
        Transition(
            "P6",
            (ReplicaPhase.ATTEMPT_PREPARING,),
            ReplicaPhase.ATTEMPT_ASSIGNED,
            lambda f: f.ours and f.pod_assigned,
            "the Pod got its node and IP",
        ),
        Transition(
            "P11",
            (ReplicaPhase.ATTEMPT_PREPARING, ReplicaPhase.ATTEMPT_ASSIGNED, ReplicaPhase.ATTEMPT_RUNNING),
            ReplicaPhase.ATTEMPT_COMPLETED,
            lambda f: not f.ours,
            "the Pod vanished",
        ),
        Transition(
            "P-start-deadline",
            (ReplicaPhase.ATTEMPT_PREPARING, ReplicaPhase.ATTEMPT_ASSIGNED),
            ReplicaPhase.ATTEMPT_DELETION_PENDING,
            lambda f: f.ours and f.start_deadline_passed,
            "the Pod did not run within startDeadlineSeconds: replace this replica alone, "
            "a platform failure by default (never one that ran: Running is past these phases)",
        ),
        Transition(
            "P-wait",
            (ReplicaPhase.ATTEMPT_PREPARING, ReplicaPhase.ATTEMPT_ASSIGNED, ReplicaPhase.ATTEMPT_RUNNING),
            None,
            doc="nothing new about the Pod (a Pending Pod that will not start says why)",
        ),
        # --- ending the attempt ---
        Transition(
            "P9-keep",
            (ReplicaPhase.ATTEMPT_DELETION_PENDING,),
            ReplicaPhase.COMPLETED,
            lambda f: f.keeps_finished and f.ours_terminal and not f.may_retry and not f.stopped,
            "cleanPodPolicy None or Running: the exited Pod of a replica whose outcome is final "
            "stays for the user (a retry needs its name, and so deletes it)",
        ),
        Transition(
            "P9",
            (ReplicaPhase.ATTEMPT_DELETION_PENDING,),
            ReplicaPhase.ATTEMPT_DELETION_REQUESTED,
            doc="delete the Pod (UID precondition)",
        ),
        Transition("P12", _GONE_WAIT, None, lambda f: f.ours, "wait until the Pod is gone"),
        Transition(
            "P13-suspended",
            _GONE_WAIT,
            ReplicaPhase.ATTEMPT_PENDING,
            lambda f: f.suspend_deleted,
            "the Pod a suspension deleted is gone: the same replica attempt starts again on resume",
        ),
        Transition(
            "P13-retry",
            _GONE_WAIT,
            ReplicaPhase.ATTEMPT_RETRY_PENDING,
            lambda f: f.may_retry,
            "the attempt failed and the role's retry policy allows another",
        ),
        Transition("P13", _GONE_WAIT, ReplicaPhase.COMPLETED, doc="the replica's outcome is final"),
        Transition(
            "P14",
            (ReplicaPhase.ATTEMPT_RETRY_PENDING,),
            ReplicaPhase.ATTEMPT_PENDING,
            lambda f: f.retry_due and f.creates_allowed,
            "the retry delay has passed (never while the TaskSet is being deleted, W-10)",
        ),
        Transition("P14b", (ReplicaPhase.ATTEMPT_RETRY_PENDING,), None, doc="wait for the retry delay"),
    ),
)

# ----------------------------------------------------------------------------------------------------
# Role
# ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RoleFacts:
    complete: bool  # the completion policy is satisfied (spec 6.1, with R's rule 3)
    started: bool  # some replica ran or finished
    all_replicas_completed: bool
    taskset_ended: bool = False  # the TaskSet ended (TaskSetCompleted) while this role was unfinished


ROLE_MACHINE: Machine[RolePhase, RoleFacts] = Machine(
    name="role",
    states=tuple(RolePhase),
    initial=RolePhase.WAITING,
    terminal=frozenset({RolePhase.COMPLETED}),
    transitions=(
        Transition(
            "S3",
            (RolePhase.WAITING, RolePhase.RUNNING, RolePhase.CLEANING_PENDING),
            RolePhase.COMPLETED,
            lambda f: f.taskset_ended,
            "the TaskSet ended first: the role stops where it was, its state (an outcome only its "
            "completion policy decides) as it was",
        ),
        Transition(
            "R1",
            (RolePhase.WAITING, RolePhase.RUNNING),
            RolePhase.CLEANING_PENDING,
            lambda f: f.complete,
            "the completion policy is satisfied: outcome decided, stop the rest",
        ),
        Transition("R2", (RolePhase.WAITING,), RolePhase.RUNNING, lambda f: f.started, "a replica started"),
        Transition("R-wait", (RolePhase.WAITING, RolePhase.RUNNING), None, doc="replicas still going"),
        Transition(
            "R4",
            (RolePhase.CLEANING_PENDING,),
            RolePhase.COMPLETED,
            lambda f: f.all_replicas_completed,
            "every replica is completed",
        ),
        Transition("R4b", (RolePhase.CLEANING_PENDING,), None, doc="stopped replicas still going away"),
    ),
)

# ----------------------------------------------------------------------------------------------------
# TaskSet attempt
# ----------------------------------------------------------------------------------------------------


class ControlUnitClass(Enum):
    ABSENT = "absent"
    OURS = "ours"
    OURS_DELETING = "ours-deleting"
    FOREIGN = "foreign"


@dataclass(frozen=True)
class TaskSetFacts:
    legal: bool = True
    control_unit: ControlUnitClass = ControlUnitClass.ABSENT
    deleting: bool = False
    creation_timed_out: bool = False
    attempt_complete: bool = False  # the policies decided the attempt (6.3)
    attempt_succeeded: bool = False
    role_started: bool = False
    may_retry: bool = False
    retry_due: bool = False
    suspended: bool = False  # spec.suspend is true
    deadline_exceeded: bool = False  # spec.activeDeadlineSeconds passed since createdAt
    # spec.cleanPodPolicy keeps Pods (None, Running), and the TaskSet is not being deleted.
    keeps_pods: bool = False

    @property
    def unit_present(self) -> bool:
        return self.control_unit in (ControlUnitClass.OURS, ControlUnitClass.OURS_DELETING)

    @property
    def keeps_unit(self) -> bool:
        """The attempt ends the TaskSet and its Pods are kept: so is the ControlUnit that owns them."""
        return self.keeps_pods and (self.attempt_succeeded or not self.may_retry)


_CU = ControlUnitClass
_ACTIVE = (TaskSetPhase.ATTEMPT_PREPARING, TaskSetPhase.ATTEMPT_RUNNING)
_ENDING = (
    TaskSetPhase.ATTEMPT_DELETION_PENDING,
    TaskSetPhase.ATTEMPT_DELETION_REQUESTED,
    TaskSetPhase.ATTEMPT_COMPLETED,
)

TASKSET_MACHINE: Machine[TaskSetPhase, TaskSetFacts] = Machine(
    name="taskset",
    states=tuple(TaskSetPhase),
    initial=TaskSetPhase.VALIDATION,
    terminal=frozenset({TaskSetPhase.COMPLETED}),
    transitions=(
        Transition(
            "T1",
            (TaskSetPhase.VALIDATION,),
            TaskSetPhase.COMPLETED,
            lambda f: not f.legal,
            "the TaskSet is illegal",
        ),
        Transition(
            "T2", (TaskSetPhase.VALIDATION,), TaskSetPhase.ATTEMPT_PENDING, doc="the TaskSet is legal"
        ),
        # --- starting an attempt ---
        Transition(
            "T3-conflict",
            (TaskSetPhase.ATTEMPT_PENDING,),
            TaskSetPhase.ATTEMPT_COMPLETED,
            lambda f: f.control_unit == _CU.FOREIGN,
            "a foreign ConfigMap holds the ControlUnit name",
        ),
        Transition(
            "T3-adopt",
            (TaskSetPhase.ATTEMPT_PENDING,),
            TaskSetPhase.ATTEMPT_CREATION_REQUESTED,
            lambda f: f.control_unit == _CU.OURS,
            "our ControlUnit already exists: adopt it",
        ),
        Transition(
            "T3-hold",
            (TaskSetPhase.ATTEMPT_PENDING,),
            None,
            lambda f: f.deleting or f.control_unit == _CU.OURS_DELETING,
            "the TaskSet is being deleted, or a stale ControlUnit is going away",
        ),
        Transition(
            "T3-deadline",
            (TaskSetPhase.ATTEMPT_PENDING,),
            TaskSetPhase.COMPLETED,
            lambda f: f.deadline_exceeded,
            "activeDeadlineSeconds passed before the attempt started (it runs on while "
            "suspended, as it does through retry delays): no attempt",
        ),
        Transition(
            "T3-suspended",
            (TaskSetPhase.ATTEMPT_PENDING,),
            None,
            lambda f: f.suspended,
            "the TaskSet is suspended: no ControlUnit until it resumes",
        ),
        Transition(
            "T3",
            (TaskSetPhase.ATTEMPT_PENDING,),
            TaskSetPhase.ATTEMPT_CREATION_REQUESTED,
            doc="create the ControlUnit",
        ),
        Transition(
            "T3-rejected",
            (TaskSetPhase.ATTEMPT_PENDING,),
            TaskSetPhase.ATTEMPT_COMPLETED,
            on_result=True,
            doc="the ControlUnit name is taken by a foreign ConfigMap",
        ),
        Transition(
            "T12",
            (TaskSetPhase.ATTEMPT_CREATION_REQUESTED, *_ACTIVE, TaskSetPhase.ATTEMPT_DELETION_PENDING),
            TaskSetPhase.ATTEMPT_DELETION_REQUESTED,
            lambda f: f.control_unit == _CU.OURS_DELETING,
            "the ControlUnit is being deleted",
        ),
        Transition(
            "T5",
            (TaskSetPhase.ATTEMPT_CREATION_REQUESTED,),
            TaskSetPhase.ATTEMPT_PREPARING,
            lambda f: f.control_unit == _CU.OURS,
            "the ControlUnit is seen: in the cache, or in the response of the create just made",
        ),
        Transition(
            "T4",
            (TaskSetPhase.ATTEMPT_CREATION_REQUESTED,),
            TaskSetPhase.ATTEMPT_DELETION_PENDING,
            lambda f: f.creation_timed_out,
            "the ControlUnit never appeared within the cache timeout",
        ),
        Transition("T5b", (TaskSetPhase.ATTEMPT_CREATION_REQUESTED,), None, doc="wait for the cache"),
        # --- running the attempt (roles are synced before these guards are read) ---
        Transition(
            "T11",
            _ACTIVE,
            TaskSetPhase.ATTEMPT_COMPLETED,
            lambda f: not f.unit_present,
            "the ControlUnit was deleted externally",
        ),
        Transition(
            "T6-deadline",
            _ACTIVE,
            TaskSetPhase.ATTEMPT_DELETION_PENDING,
            lambda f: f.deadline_exceeded,
            "activeDeadlineSeconds passed: end the attempt for good, its Pods removed",
        ),
        Transition(
            "T6",
            _ACTIVE,
            TaskSetPhase.ATTEMPT_DELETION_PENDING,
            lambda f: f.attempt_complete,
            "the event policies decided the attempt",
        ),
        Transition(
            "T7",
            (TaskSetPhase.ATTEMPT_PREPARING,),
            TaskSetPhase.ATTEMPT_RUNNING,
            lambda f: f.role_started,
            "a role is running",
        ),
        Transition("T-wait", _ACTIVE, None, doc="roles still going"),
        # --- ending the attempt ---
        Transition(
            "T10",
            (TaskSetPhase.ATTEMPT_DELETION_PENDING,),
            TaskSetPhase.ATTEMPT_DELETION_REQUESTED,
            lambda f: f.control_unit == _CU.OURS and not f.keeps_unit,
            "delete the ControlUnit (foreground, UID precondition); not when the TaskSet ends here and "
            "cleanPodPolicy keeps its Pods (the ControlUnit stays as their owner, and T13 follows)",
        ),
        Transition(
            "T12b",
            (TaskSetPhase.ATTEMPT_DELETION_REQUESTED, TaskSetPhase.ATTEMPT_COMPLETED),
            None,
            lambda f: f.unit_present and not f.keeps_unit,
            "wait until the ControlUnit and its Pods are gone (one kept by cleanPodPolicy is not awaited)",
        ),
        Transition(
            "T13-succeeded",
            _ENDING,
            TaskSetPhase.COMPLETED,
            lambda f: f.attempt_succeeded,
            "the attempt succeeded",
        ),
        Transition(
            "T13-retry",
            _ENDING,
            TaskSetPhase.ATTEMPT_RETRY_PENDING,
            lambda f: f.may_retry,
            "the attempt failed and the retry policy allows another",
        ),
        Transition("T13", _ENDING, TaskSetPhase.COMPLETED, doc="the attempt failed and no retry follows"),
        Transition(
            "T14-deleting",
            (TaskSetPhase.ATTEMPT_RETRY_PENDING,),
            TaskSetPhase.COMPLETED,
            lambda f: f.deleting,
            "the TaskSet is being deleted: no retry",
        ),
        Transition(
            "T14-deadline",
            (TaskSetPhase.ATTEMPT_RETRY_PENDING,),
            TaskSetPhase.COMPLETED,
            lambda f: f.deadline_exceeded,
            "activeDeadlineSeconds passed during the retry delay: no retry",
        ),
        Transition(
            "T14-illegal",
            (TaskSetPhase.ATTEMPT_RETRY_PENDING,),
            TaskSetPhase.COMPLETED,
            lambda f: not f.legal,
            "the spec became illegal (W-18)",
        ),
        Transition(
            "T14",
            (TaskSetPhase.ATTEMPT_RETRY_PENDING,),
            TaskSetPhase.ATTEMPT_PENDING,
            lambda f: f.retry_due,
            "the retry delay has passed: start the next attempt",
        ),
        Transition("T14b", (TaskSetPhase.ATTEMPT_RETRY_PENDING,), None, doc="wait for the retry delay"),
    ),
)

MACHINES = (TASKSET_MACHINE, ROLE_MACHINE, REPLICA_MACHINE)
