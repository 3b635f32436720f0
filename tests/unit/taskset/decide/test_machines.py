"""The three tables of spec 5 (TaskSet attempt, role, replica): every row fires for facts that make
exactly it hold, the first-match precedences that R's corrections depend on, and totality over every
combination of facts (S55 at the level of the tables)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, fields
from typing import Any

import pytest

from statemachine import Machine, UndeclaredTransitionError
from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import RolePhase as R
from taskset.api.constants import TaskSetPhase as T
from taskset.decide.machines import (
    MACHINES,
    REPLICA_MACHINE,
    ROLE_MACHINE,
    TASKSET_MACHINE,
    ControlUnitClass,
    ReplicaFacts,
    RoleFacts,
    TaskSetFacts,
)
from taskset.observed.views import PodClass

pytestmark = pytest.mark.unit

CU = ControlUnitClass


@dataclass(frozen=True)
class Case:
    machine: Machine[Any, Any]
    state: Any
    facts: Any
    label: str
    target: Any


def fires(case: Case, sentence: str) -> Any:
    return pytest.param(case, id=sentence)


def replica(state: P, label: str, target: P, sentence: str, **facts: Any) -> Any:
    facts.setdefault("pod", PodClass.ABSENT)
    return fires(Case(REPLICA_MACHINE, state, ReplicaFacts(**facts), label, target), sentence)


def role(state: R, label: str, target: R, sentence: str, **facts: Any) -> Any:
    values = {"complete": False, "started": False, "all_replicas_completed": False, **facts}
    return fires(Case(ROLE_MACHINE, state, RoleFacts(**values), label, target), sentence)


def taskset(state: T, label: str, target: T, sentence: str, **facts: Any) -> Any:
    return fires(Case(TASKSET_MACHINE, state, TaskSetFacts(**facts), label, target), sentence)


CURRENT = PodClass.CURRENT
ADOPTABLE = PodClass.ADOPTABLE

# ----- replica: one case per (row, source) ---------------------------------------------------------------
REPLICA_ROWS = [
    replica(P.ATTEMPT_PENDING, "S1", P.COMPLETED, "S1 a stopped pending replica completes", stopped=True),
    replica(
        P.ATTEMPT_RETRY_PENDING,
        "S1",
        P.COMPLETED,
        "S1 a stopped replica waiting for its retry completes",
        stopped=True,
    ),
    replica(
        P.ATTEMPT_PENDING,
        "P0",
        P.ATTEMPT_PENDING,
        "P0 a previous attempt's Pod holds the name",
        pod=PodClass.PREVIOUS,
    ),
    replica(
        P.ATTEMPT_PENDING,
        "P0",
        P.ATTEMPT_PENDING,
        "P0 a duplicate under the current ControlUnit holds the name",
        pod=PodClass.DUPLICATE,
    ),
    replica(
        P.ATTEMPT_PENDING,
        "P1-conflict",
        P.ATTEMPT_COMPLETED,
        "P1 a foreign Pod holding the name ends the attempt",
        pod=PodClass.FOREIGN,
    ),
    replica(
        P.ATTEMPT_PENDING,
        "P1-adopt",
        P.ATTEMPT_CREATION_REQUESTED,
        "P1 this attempt's unrecorded Pod is adopted",
        pod=ADOPTABLE,
    ),
    replica(
        P.ATTEMPT_PENDING,
        "P1-adopt",
        P.ATTEMPT_CREATION_REQUESTED,
        "P1 the recorded Pod found in Pending is adopted (W-3e)",
        pod=CURRENT,
    ),
    replica(
        P.ATTEMPT_PENDING,
        "P1-hold",
        P.ATTEMPT_PENDING,
        "P1 nothing is created while the TaskSet is being deleted",
        creates_allowed=False,
    ),
    replica(P.ATTEMPT_PENDING, "P1", P.ATTEMPT_CREATION_REQUESTED, "P1 no Pod under the name: create it"),
    *(
        replica(
            phase,
            "P10",
            P.ATTEMPT_DELETION_REQUESTED,
            f"P10 someone else deletes the Pod in {phase.removeprefix('TaskRoleReplicaAttempt')}",
            pod=CURRENT,
            pod_deleting=True,
        )
        for phase in (
            P.ATTEMPT_CREATION_REQUESTED,
            P.ATTEMPT_PREPARING,
            P.ATTEMPT_ASSIGNED,
            P.ATTEMPT_RUNNING,
            P.ATTEMPT_DELETION_PENDING,
        )
    ),
    *(
        replica(
            phase,
            "S2",
            P.ATTEMPT_DELETION_PENDING,
            f"S2 a stopped replica in {phase.removeprefix('TaskRoleReplicaAttempt')} goes to deletion",
            pod=CURRENT,
            stopped=True,
        )
        for phase in (
            P.ATTEMPT_CREATION_REQUESTED,
            P.ATTEMPT_PREPARING,
            P.ATTEMPT_ASSIGNED,
            P.ATTEMPT_RUNNING,
        )
    ),
    replica(
        P.ATTEMPT_CREATION_REQUESTED,
        "P3",
        P.ATTEMPT_PREPARING,
        "P3 the created Pod appears in the cache",
        pod=CURRENT,
    ),
    replica(
        P.ATTEMPT_CREATION_REQUESTED,
        "P2",
        P.ATTEMPT_DELETION_PENDING,
        "P2 the created Pod never appeared within the timeout",
        creation_timed_out=True,
    ),
    replica(
        P.ATTEMPT_CREATION_REQUESTED,
        "P3b",
        P.ATTEMPT_CREATION_REQUESTED,
        "P3b the created Pod is not in the cache yet",
    ),
    *(
        replica(
            phase,
            "P5",
            P.ATTEMPT_DELETION_PENDING,
            f"P5 the Pod exited while the replica was {phase.removeprefix('TaskRoleReplicaAttempt')}",
            pod=CURRENT,
            pod_terminal=True,
        )
        for phase in (P.ATTEMPT_PREPARING, P.ATTEMPT_ASSIGNED, P.ATTEMPT_RUNNING)
    ),
    replica(
        P.ATTEMPT_PREPARING, "P4", P.ATTEMPT_RUNNING, "P4 a Preparing Pod runs", pod=CURRENT, pod_running=True
    ),
    replica(
        P.ATTEMPT_ASSIGNED, "P4", P.ATTEMPT_RUNNING, "P7 an Assigned Pod runs", pod=CURRENT, pod_running=True
    ),
    replica(
        P.ATTEMPT_PREPARING,
        "P6",
        P.ATTEMPT_ASSIGNED,
        "P6 the Pod got its host and Pod IPs",
        pod=CURRENT,
        pod_assigned=True,
    ),
    replica(P.ATTEMPT_PREPARING, "P11", P.ATTEMPT_COMPLETED, "P11 a Preparing replica's Pod vanished"),
    replica(
        P.ATTEMPT_ASSIGNED, "P11", P.ATTEMPT_COMPLETED, "P11-R an Assigned replica's Pod vanished (W-3b)"
    ),
    replica(P.ATTEMPT_RUNNING, "P11", P.ATTEMPT_COMPLETED, "P11 a Running replica's Pod vanished"),
    replica(
        P.ATTEMPT_PREPARING, "P-wait", P.ATTEMPT_PREPARING, "a Preparing Pod with nothing new", pod=CURRENT
    ),
    replica(
        P.ATTEMPT_ASSIGNED,
        "P-wait",
        P.ATTEMPT_ASSIGNED,
        "an Assigned Pod still pulling its image",
        pod=CURRENT,
        pod_assigned=True,
    ),
    replica(
        P.ATTEMPT_RUNNING,
        "P-wait",
        P.ATTEMPT_RUNNING,
        "a Running Pod that keeps running",
        pod=CURRENT,
        pod_running=True,
        pod_assigned=True,
    ),
    replica(
        P.ATTEMPT_DELETION_PENDING,
        "P9",
        P.ATTEMPT_DELETION_REQUESTED,
        "P9 the ended attempt's Pod is deleted",
        pod=CURRENT,
        pod_terminal=True,
    ),
    replica(
        P.ATTEMPT_DELETION_REQUESTED,
        "P12",
        P.ATTEMPT_DELETION_REQUESTED,
        "P12 the deleted Pod is still terminating",
        pod=CURRENT,
        pod_deleting=True,
    ),
    replica(
        P.ATTEMPT_COMPLETED,
        "P12",
        P.ATTEMPT_COMPLETED,
        "P12 an AttemptCompleted replica waits for its Pod to go",
        pod=ADOPTABLE,
    ),
    replica(
        P.ATTEMPT_DELETION_REQUESTED,
        "P13-retry",
        P.ATTEMPT_RETRY_PENDING,
        "P13 a failed attempt with retries left waits for its retry",
        may_retry=True,
    ),
    replica(
        P.ATTEMPT_COMPLETED,
        "P13-retry",
        P.ATTEMPT_RETRY_PENDING,
        "P13 a vanished attempt with retries left waits for its retry",
        may_retry=True,
    ),
    replica(P.ATTEMPT_DELETION_REQUESTED, "P13", P.COMPLETED, "P13 the Pod is gone and no retry follows"),
    replica(
        P.ATTEMPT_COMPLETED,
        "P13",
        P.COMPLETED,
        "P13 a foreign Pod under the name does not hold the replica",
        pod=PodClass.FOREIGN,
    ),
    replica(
        P.ATTEMPT_RETRY_PENDING, "P14", P.ATTEMPT_PENDING, "P14 the retry delay has passed", retry_due=True
    ),
    replica(P.ATTEMPT_RETRY_PENDING, "P14b", P.ATTEMPT_RETRY_PENDING, "P14b the retry delay has not passed"),
    *(
        replica(
            phase,
            "S3",
            P.COMPLETED,
            f"S3 the TaskSet's end closes a replica in {phase}",
            pod=CURRENT,
            pod_running=True,
            taskset_ended=True,
        )
        for phase in P
        if phase != P.COMPLETED
    ),
]

# ----- role ---------------------------------------------------------------------------------------------
ROLE_ROWS = [
    role(R.WAITING, "R1", R.CLEANING_PENDING, "R1 a waiting role whose policy is satisfied", complete=True),
    role(R.RUNNING, "R1", R.CLEANING_PENDING, "R3 a running role whose policy is satisfied", complete=True),
    role(R.WAITING, "R2", R.RUNNING, "R2 a replica of a waiting role started", started=True),
    role(R.WAITING, "R-wait", R.WAITING, "a waiting role whose replicas have not started"),
    role(R.RUNNING, "R-wait", R.RUNNING, "a running role whose policy is not satisfied", started=True),
    role(R.CLEANING_PENDING, "R4", R.COMPLETED, "R4 every replica is completed", all_replicas_completed=True),
    role(
        R.CLEANING_PENDING,
        "R4b",
        R.CLEANING_PENDING,
        "R4 stopped replicas are still going away",
        complete=True,
    ),
    *(
        role(phase, "S3", R.COMPLETED, f"S3 the TaskSet's end closes a role in {phase}", taskset_ended=True)
        for phase in (R.WAITING, R.RUNNING, R.CLEANING_PENDING)
    ),
]

# ----- TaskSet ------------------------------------------------------------------------------------------
TASKSET_ROWS = [
    taskset(T.VALIDATION, "T1", T.COMPLETED, "T1 an illegal TaskSet completes at once", legal=False),
    taskset(T.VALIDATION, "T2", T.ATTEMPT_PENDING, "T2 a legal TaskSet starts its first attempt"),
    taskset(
        T.ATTEMPT_PENDING,
        "T3-conflict",
        T.ATTEMPT_COMPLETED,
        "T3 a foreign ConfigMap holding the ControlUnit name ends the attempt (W-24)",
        control_unit=CU.FOREIGN,
    ),
    taskset(
        T.ATTEMPT_PENDING,
        "T3-adopt",
        T.ATTEMPT_CREATION_REQUESTED,
        "T3 our own ControlUnit is adopted (W-1)",
        control_unit=CU.OURS,
    ),
    taskset(
        T.ATTEMPT_PENDING,
        "T3-hold",
        T.ATTEMPT_PENDING,
        "T3 no ControlUnit is created while the TaskSet is being deleted (W-10)",
        deleting=True,
    ),
    taskset(
        T.ATTEMPT_PENDING,
        "T3-hold",
        T.ATTEMPT_PENDING,
        "T3 a stale ControlUnit still going away is waited for",
        control_unit=CU.OURS_DELETING,
    ),
    taskset(T.ATTEMPT_PENDING, "T3", T.ATTEMPT_CREATION_REQUESTED, "T3 no ControlUnit yet: create it"),
    *(
        taskset(
            phase,
            "T12",
            T.ATTEMPT_DELETION_REQUESTED,
            f"T12 the ControlUnit is being deleted in {phase.removeprefix('TaskSetAttempt')}",
            control_unit=CU.OURS_DELETING,
        )
        for phase in (
            T.ATTEMPT_CREATION_REQUESTED,
            T.ATTEMPT_PREPARING,
            T.ATTEMPT_RUNNING,
            T.ATTEMPT_DELETION_PENDING,
        )
    ),
    taskset(
        T.ATTEMPT_CREATION_REQUESTED,
        "T5",
        T.ATTEMPT_PREPARING,
        "T5 the ControlUnit appeared in the cache",
        control_unit=CU.OURS,
    ),
    taskset(
        T.ATTEMPT_CREATION_REQUESTED,
        "T4",
        T.ATTEMPT_DELETION_PENDING,
        "T4 the ControlUnit never appeared within the timeout",
        creation_timed_out=True,
    ),
    taskset(
        T.ATTEMPT_CREATION_REQUESTED,
        "T5b",
        T.ATTEMPT_CREATION_REQUESTED,
        "T5b the ControlUnit is not in the cache yet",
    ),
    taskset(T.ATTEMPT_PREPARING, "T11", T.ATTEMPT_COMPLETED, "T11 the ControlUnit vanished while Preparing"),
    taskset(
        T.ATTEMPT_RUNNING,
        "T11",
        T.ATTEMPT_COMPLETED,
        "T11 a foreign ConfigMap replaced the ControlUnit while Running",
        control_unit=CU.FOREIGN,
    ),
    taskset(
        T.ATTEMPT_PREPARING,
        "T6",
        T.ATTEMPT_DELETION_PENDING,
        "T6 the policies decided a preparing attempt",
        control_unit=CU.OURS,
        attempt_complete=True,
    ),
    taskset(
        T.ATTEMPT_RUNNING,
        "T6",
        T.ATTEMPT_DELETION_PENDING,
        "T8 the policies decided a running attempt",
        control_unit=CU.OURS,
        attempt_complete=True,
    ),
    taskset(
        T.ATTEMPT_PREPARING,
        "T7",
        T.ATTEMPT_RUNNING,
        "T7 a role started",
        control_unit=CU.OURS,
        role_started=True,
    ),
    taskset(
        T.ATTEMPT_PREPARING, "T-wait", T.ATTEMPT_PREPARING, "a preparing attempt waits", control_unit=CU.OURS
    ),
    taskset(
        T.ATTEMPT_RUNNING,
        "T-wait",
        T.ATTEMPT_RUNNING,
        "W-9 a running attempt stays running with no role running",
        control_unit=CU.OURS,
        role_started=False,
    ),
    taskset(
        T.ATTEMPT_DELETION_PENDING,
        "T10",
        T.ATTEMPT_DELETION_REQUESTED,
        "T10 the ended attempt's ControlUnit is deleted",
        control_unit=CU.OURS,
    ),
    taskset(
        T.ATTEMPT_DELETION_REQUESTED,
        "T12b",
        T.ATTEMPT_DELETION_REQUESTED,
        "T12b the deleted ControlUnit is still in the cache",
        control_unit=CU.OURS,
    ),
    taskset(
        T.ATTEMPT_COMPLETED,
        "T12b",
        T.ATTEMPT_COMPLETED,
        "T12b an AttemptCompleted TaskSet waits for a ControlUnit going away",
        control_unit=CU.OURS_DELETING,
    ),
    *(
        taskset(
            phase,
            "T13-succeeded",
            T.COMPLETED,
            f"T13 a succeeded attempt completes the TaskSet from {phase.removeprefix('TaskSetAttempt')}",
            attempt_succeeded=True,
            may_retry=True,
        )
        for phase in (T.ATTEMPT_DELETION_PENDING, T.ATTEMPT_DELETION_REQUESTED, T.ATTEMPT_COMPLETED)
    ),
    *(
        taskset(
            phase,
            "T13-retry",
            T.ATTEMPT_RETRY_PENDING,
            f"T13 a failed attempt with retries left retries from {phase.removeprefix('TaskSetAttempt')}",
            may_retry=True,
        )
        for phase in (T.ATTEMPT_DELETION_PENDING, T.ATTEMPT_DELETION_REQUESTED, T.ATTEMPT_COMPLETED)
    ),
    *(
        taskset(
            phase,
            "T13",
            T.COMPLETED,
            f"T13 a failed attempt without retries completes from {phase.removeprefix('TaskSetAttempt')}",
        )
        for phase in (T.ATTEMPT_DELETION_PENDING, T.ATTEMPT_DELETION_REQUESTED, T.ATTEMPT_COMPLETED)
    ),
    taskset(
        T.ATTEMPT_DELETION_PENDING,
        "T13",
        T.COMPLETED,
        "T13 a foreign ConfigMap under the name counts as the ControlUnit gone",
        control_unit=CU.FOREIGN,
    ),
    taskset(
        T.ATTEMPT_RETRY_PENDING,
        "T14-deleting",
        T.COMPLETED,
        "T14b a TaskSet being deleted does not retry (W-10)",
        deleting=True,
    ),
    taskset(
        T.ATTEMPT_RETRY_PENDING,
        "T14-illegal",
        T.COMPLETED,
        "a spec that became illegal does not retry (W-18)",
        legal=False,
    ),
    *(
        taskset(
            phase,
            "T6-deadline",
            T.ATTEMPT_DELETION_PENDING,
            f"the deadline ends the {phase.removeprefix('TaskSetAttempt')} attempt",
            control_unit=CU.OURS,
            deadline_exceeded=True,
        )
        for phase in (T.ATTEMPT_PREPARING, T.ATTEMPT_RUNNING)
    ),
    taskset(
        T.ATTEMPT_RETRY_PENDING,
        "T14-deadline",
        T.COMPLETED,
        "the deadline passed during the retry delay: no retry",
        deadline_exceeded=True,
        retry_due=True,
    ),
    taskset(
        T.ATTEMPT_RETRY_PENDING, "T14", T.ATTEMPT_PENDING, "T14 the retry delay has passed", retry_due=True
    ),
    taskset(T.ATTEMPT_RETRY_PENDING, "T14b", T.ATTEMPT_RETRY_PENDING, "T14b the retry delay has not passed"),
]

_LIVE = (P.ATTEMPT_CREATION_REQUESTED, P.ATTEMPT_PREPARING, P.ATTEMPT_ASSIGNED, P.ATTEMPT_RUNNING)
_RUNNING = (P.ATTEMPT_PREPARING, P.ATTEMPT_ASSIGNED, P.ATTEMPT_RUNNING)

# ----- suspension: one case per (row, source) ---------------------------------------------------
SUSPENSION_ROWS = [
    replica(
        P.ATTEMPT_PENDING,
        "P1-suspended",
        P.ATTEMPT_PENDING,
        "P1 a suspended TaskSet creates no Pod",
        suspended=True,
    ),
    *(
        replica(
            phase,
            "P-suspend",
            P.ATTEMPT_DELETION_PENDING,
            f"suspending deletes the Pod in {phase.removeprefix('TaskRoleReplicaAttempt')}",
            pod=CURRENT,
            suspended=True,
        )
        for phase in _LIVE
    ),
    *(
        replica(
            phase,
            "P10-suspended",
            P.ATTEMPT_DELETION_REQUESTED,
            f"a Pod deleted while suspended in {phase.removeprefix('TaskRoleReplicaAttempt')} is no failure",
            pod=CURRENT,
            pod_deleting=True,
            suspended=True,
        )
        for phase in _LIVE
    ),
    *(
        replica(
            phase,
            "P13-suspended",
            P.ATTEMPT_PENDING,
            f"a suspension's Pod gone in {phase.removeprefix('TaskRoleReplicaAttempt')}: the replica waits "
            "again, counting nothing",
            suspend_deleted=True,
            may_retry=True,
        )
        for phase in (P.ATTEMPT_DELETION_REQUESTED, P.ATTEMPT_COMPLETED)
    ),
    taskset(
        T.ATTEMPT_PENDING,
        "T3-deadline",
        T.COMPLETED,
        "T3 the deadline passed before the attempt started (a suspended TaskSet)",
        deadline_exceeded=True,
        suspended=True,
    ),
    taskset(
        T.ATTEMPT_PENDING,
        "T3-suspended",
        T.ATTEMPT_PENDING,
        "T3 a suspended TaskSet creates no ControlUnit",
        suspended=True,
    ),
]

# ----- the start deadline: one case per (row, source) -------------------------------------------
LATE: dict[str, Any] = {"pod": CURRENT, "start_deadline_passed": True}  # Pending past its start deadline
START_DEADLINE_ROWS = [
    replica(
        phase, "P-start-deadline", P.ATTEMPT_DELETION_PENDING, f"a late Pod in {phase} is replaced", **LATE
    )
    for phase in (P.ATTEMPT_PREPARING, P.ATTEMPT_ASSIGNED)
]
START_DEADLINE_PRECEDENCE = [
    replica(
        P.ATTEMPT_ASSIGNED,
        "P4",
        P.ATTEMPT_RUNNING,
        "a Pod that runs is never replaced by the start deadline",
        pod=CURRENT,
        pod_running=True,
        start_deadline_passed=True,
    ),
    replica(
        P.ATTEMPT_PREPARING,
        "P5",
        P.ATTEMPT_DELETION_PENDING,
        "a Pod that exited keeps its own outcome",
        pod=CURRENT,
        pod_terminal=True,
        start_deadline_passed=True,
    ),
    replica(
        P.ATTEMPT_PREPARING,
        "P-suspend",
        P.ATTEMPT_DELETION_PENDING,
        "a suspension deletes the Pod counting nothing: the deadline pauses with it",
        pod=CURRENT,
        suspended=True,
        start_deadline_passed=True,
    ),
    replica(
        P.ATTEMPT_ASSIGNED,
        "P11",
        P.ATTEMPT_COMPLETED,
        "a vanished Pod is not replaced twice",
        start_deadline_passed=True,
    ),
    replica(
        P.ATTEMPT_RUNNING,
        "P-wait",
        P.ATTEMPT_RUNNING,
        "a replica that was seen Running has no start deadline",
        pod=CURRENT,
        start_deadline_passed=True,
    ),
]

# ----- cleanPodPolicy ---------------------------------------------------------------------------
CLEANUP_ROWS = [
    replica(
        P.ATTEMPT_DELETION_PENDING,
        "P9-keep",
        P.COMPLETED,
        "cleanPodPolicy keeps the exited Pod of a replica whose outcome is final",
        pod=CURRENT,
        pod_terminal=True,
        keeps_finished=True,
    ),
]
CLEANUP_PRECEDENCE = [
    replica(
        P.ATTEMPT_DELETION_PENDING,
        "P9",
        P.ATTEMPT_DELETION_REQUESTED,
        "a replica that retries deletes its Pod whatever the policy: the next Pod takes its name",
        pod=CURRENT,
        pod_terminal=True,
        keeps_finished=True,
        may_retry=True,
    ),
    replica(
        P.ATTEMPT_DELETION_PENDING,
        "P9",
        P.ATTEMPT_DELETION_REQUESTED,
        "a stopped replica's Pod is deleted whatever the policy (its role's completion stops it)",
        pod=CURRENT,
        pod_terminal=True,
        keeps_finished=True,
        stopped=True,
    ),
    replica(
        P.ATTEMPT_DELETION_PENDING,
        "P9",
        P.ATTEMPT_DELETION_REQUESTED,
        "a Pod that did not exit (a start deadline's) is deleted whatever the policy",
        pod=CURRENT,
        keeps_finished=True,
    ),
    *(
        taskset(
            T.ATTEMPT_DELETION_PENDING,
            label,
            target,
            sentence,
            control_unit=CU.OURS,
            keeps_pods=True,
            **facts,
        )
        for label, target, sentence, facts in (
            ("T13", T.COMPLETED, "a failed attempt that ends the TaskSet keeps its ControlUnit", {}),
            (
                "T13-succeeded",
                T.COMPLETED,
                "a succeeded attempt keeps its ControlUnit, retries left or not",
                {"attempt_succeeded": True, "may_retry": True},
            ),
            (
                "T10",
                T.ATTEMPT_DELETION_REQUESTED,
                "an attempt followed by a TaskSet retry deletes its ControlUnit whatever the policy",
                {"may_retry": True},
            ),
        )
    ),
    taskset(
        T.ATTEMPT_DELETION_REQUESTED,
        "T13",
        T.COMPLETED,
        "a policy set to keep Pods while the ControlUnit goes away no longer waits for it",
        control_unit=CU.OURS_DELETING,
        keeps_pods=True,
    ),
]

ALL_ROWS = [
    *REPLICA_ROWS,
    *ROLE_ROWS,
    *TASKSET_ROWS,
    *SUSPENSION_ROWS,
    *START_DEADLINE_ROWS,
    *CLEANUP_ROWS,
]


@pytest.mark.parametrize("case", ALL_ROWS)
def test_each_row_fires_for_its_facts(case: Case) -> None:
    row = case.machine.step(case.state, case.facts)
    assert row is not None
    assert (row.label, row.target_from(case.state)) == (case.label, case.target)
    case.machine.check(case.state, row.target_from(case.state))


@pytest.mark.parametrize("machine", MACHINES, ids=lambda m: f"the {m.name} table")
def test_the_cases_above_cover_every_row_from_every_source(machine: Machine[Any, Any]) -> None:
    declared = {
        (row.label, source) for row in machine.transitions if not row.on_result for source in row.sources
    }
    covered = {
        (param.values[0].label, param.values[0].state)
        for param in ALL_ROWS
        if param.values[0].machine is machine
    }
    assert declared == covered


# ----- first-match precedence ----------------------------------------------------------------------------
PRECEDENCE = [
    replica(
        P.ATTEMPT_PREPARING,
        "P10",
        P.ATTEMPT_DELETION_REQUESTED,
        "P10 a Pod being deleted beats P5 its terminal phase",
        pod=CURRENT,
        pod_deleting=True,
        pod_terminal=True,
    ),
    replica(
        P.ATTEMPT_RUNNING,
        "P10",
        P.ATTEMPT_DELETION_REQUESTED,
        "P10 beats S2 when the stopped replica's Pod is already being deleted",
        pod=CURRENT,
        pod_deleting=True,
        stopped=True,
    ),
    replica(
        P.ATTEMPT_CREATION_REQUESTED,
        "S2",
        P.ATTEMPT_DELETION_PENDING,
        "S2 stopped beats P3 the Pod appearing",
        pod=CURRENT,
        stopped=True,
    ),
    replica(
        P.ATTEMPT_CREATION_REQUESTED,
        "P3",
        P.ATTEMPT_PREPARING,
        "W-4 P3 an observed Pod beats P2 the creation timeout",
        pod=CURRENT,
        creation_timed_out=True,
    ),
    replica(
        P.ATTEMPT_PENDING,
        "S1",
        P.COMPLETED,
        "S1 stopped beats P0 waiting for a previous Pod",
        pod=PodClass.PREVIOUS,
        stopped=True,
    ),
    replica(
        P.ATTEMPT_RETRY_PENDING,
        "S1",
        P.COMPLETED,
        "S1 stopped beats P14 a due retry",
        stopped=True,
        retry_due=True,
    ),
    replica(
        P.ATTEMPT_PENDING,
        "P0",
        P.ATTEMPT_PENDING,
        "P0 a previous Pod is waited for even while the TaskSet is being deleted",
        pod=PodClass.PREVIOUS,
        creates_allowed=False,
    ),
    replica(
        P.ATTEMPT_PENDING,
        "P1-conflict",
        P.ATTEMPT_COMPLETED,
        "P1 a foreign Pod ends the attempt even while the TaskSet is being deleted",
        pod=PodClass.FOREIGN,
        creates_allowed=False,
    ),
    replica(
        P.ATTEMPT_ASSIGNED,
        "P5",
        P.ATTEMPT_DELETION_PENDING,
        "P5 terminal beats P4 running",
        pod=CURRENT,
        pod_terminal=True,
        pod_running=True,
    ),
    replica(
        P.ATTEMPT_PREPARING,
        "P4",
        P.ATTEMPT_RUNNING,
        "P4 running beats P6 assigned",
        pod=CURRENT,
        pod_running=True,
        pod_assigned=True,
    ),
    replica(
        P.ATTEMPT_RUNNING,
        "P11",
        P.ATTEMPT_COMPLETED,
        "P11 a previous attempt's Pod under the name is not the replica's Pod",
        pod=PodClass.PREVIOUS,
        pod_terminal=True,
    ),
    replica(
        P.ATTEMPT_DELETION_REQUESTED,
        "P12",
        P.ATTEMPT_DELETION_REQUESTED,
        "P12 a Pod still present beats P13 the retry decision",
        pod=CURRENT,
        may_retry=True,
    ),
    role(
        R.WAITING,
        "R1",
        R.CLEANING_PENDING,
        "R1 a satisfied policy beats R2 a started replica",
        complete=True,
        started=True,
    ),
    taskset(T.VALIDATION, "T1", T.COMPLETED, "T1 illegal beats T2", legal=False, control_unit=CU.OURS),
    taskset(
        T.ATTEMPT_PENDING,
        "T3-conflict",
        T.ATTEMPT_COMPLETED,
        "T3 a foreign ControlUnit name conflict beats holding for deletion",
        control_unit=CU.FOREIGN,
        deleting=True,
    ),
    taskset(
        T.ATTEMPT_CREATION_REQUESTED,
        "T12",
        T.ATTEMPT_DELETION_REQUESTED,
        "T12 a ControlUnit being deleted beats T4 the creation timeout",
        control_unit=CU.OURS_DELETING,
        creation_timed_out=True,
    ),
    taskset(
        T.ATTEMPT_CREATION_REQUESTED,
        "T5",
        T.ATTEMPT_PREPARING,
        "W-4 T5 an observed ControlUnit beats T4 the creation timeout",
        control_unit=CU.OURS,
        creation_timed_out=True,
    ),
    taskset(
        T.ATTEMPT_CREATION_REQUESTED,
        "T4",
        T.ATTEMPT_DELETION_PENDING,
        "T4 a foreign ConfigMap under the name does not stop the timeout",
        control_unit=CU.FOREIGN,
        creation_timed_out=True,
    ),
    taskset(
        T.ATTEMPT_RUNNING,
        "T12",
        T.ATTEMPT_DELETION_REQUESTED,
        "T12 a ControlUnit being deleted beats T6 a decided attempt",
        control_unit=CU.OURS_DELETING,
        attempt_complete=True,
    ),
    taskset(
        T.ATTEMPT_RUNNING,
        "T11",
        T.ATTEMPT_COMPLETED,
        "T11 a vanished ControlUnit beats T6 a decided attempt",
        attempt_complete=True,
    ),
    taskset(
        T.ATTEMPT_PREPARING,
        "T6",
        T.ATTEMPT_DELETION_PENDING,
        "T6 a decided attempt beats T7 a started role",
        control_unit=CU.OURS,
        attempt_complete=True,
        role_started=True,
    ),
    taskset(
        T.ATTEMPT_DELETION_REQUESTED,
        "T12b",
        T.ATTEMPT_DELETION_REQUESTED,
        "T12b a ControlUnit still present beats T13 the decision",
        control_unit=CU.OURS,
        attempt_succeeded=True,
    ),
    taskset(
        T.ATTEMPT_DELETION_REQUESTED,
        "T13-succeeded",
        T.COMPLETED,
        "T13 a succeeded attempt is never retried",
        attempt_succeeded=True,
        may_retry=True,
    ),
    taskset(
        T.ATTEMPT_RETRY_PENDING,
        "T14-deleting",
        T.COMPLETED,
        "W-10 deletion beats a due retry",
        deleting=True,
        retry_due=True,
        legal=False,
    ),
    taskset(
        T.ATTEMPT_RETRY_PENDING,
        "T14-illegal",
        T.COMPLETED,
        "W-18 an illegal spec beats a due retry",
        legal=False,
        retry_due=True,
    ),
    taskset(
        T.ATTEMPT_RUNNING,
        "T6-deadline",
        T.ATTEMPT_DELETION_PENDING,
        "the deadline beats the policies' decision",
        control_unit=CU.OURS,
        deadline_exceeded=True,
        attempt_complete=True,
        attempt_succeeded=True,
    ),
    taskset(
        T.ATTEMPT_RUNNING,
        "T11",
        T.ATTEMPT_COMPLETED,
        "a ControlUnit deleted externally beats the deadline",
        deadline_exceeded=True,
    ),
    taskset(
        T.ATTEMPT_RETRY_PENDING,
        "T14-deadline",
        T.COMPLETED,
        "the deadline beats an illegal spec",
        deadline_exceeded=True,
        legal=False,
    ),
]


# What suspension must not override, and what it does.
SUSPENSION_PRECEDENCE = [
    replica(
        P.ATTEMPT_RUNNING,
        "P5",
        P.ATTEMPT_DELETION_PENDING,
        "a Pod that exited before the suspension reached it keeps its outcome",
        pod=CURRENT,
        pod_terminal=True,
        suspended=True,
    ),
    replica(
        P.ATTEMPT_RUNNING,
        "S2",
        P.ATTEMPT_DELETION_PENDING,
        "a stopped replica's Pod is deleted as stopped, not as suspended",
        pod=CURRENT,
        stopped=True,
        suspended=True,
    ),
    replica(
        P.ATTEMPT_RUNNING,
        "P10",
        P.ATTEMPT_DELETION_REQUESTED,
        "an exited Pod being deleted while suspended keeps its outcome",
        pod=CURRENT,
        pod_deleting=True,
        pod_terminal=True,
        suspended=True,
    ),
    replica(
        P.ATTEMPT_CREATION_REQUESTED,
        "P-suspend",
        P.ATTEMPT_DELETION_PENDING,
        "suspension beats P2: the unseen Pod is deleted, not timed out",
        creation_timed_out=True,
        suspended=True,
    ),
    replica(
        P.ATTEMPT_DELETION_REQUESTED,
        "P12",
        P.ATTEMPT_DELETION_REQUESTED,
        "a suspension's Pod still present is waited for, even after the resume",
        pod=CURRENT,
        suspend_deleted=True,
    ),
    replica(
        P.ATTEMPT_PENDING,
        "P1-adopt",
        P.ATTEMPT_CREATION_REQUESTED,
        "this attempt's unrecorded Pod is adopted while suspended, to be deleted next",
        pod=ADOPTABLE,
        suspended=True,
    ),
    replica(
        P.ATTEMPT_PENDING,
        "P1-suspended",
        P.ATTEMPT_PENDING,
        "suspension is said before an integration's hold",
        suspended=True,
        creates_allowed=False,
    ),
    replica(
        P.ATTEMPT_RETRY_PENDING,
        "P14",
        P.ATTEMPT_PENDING,
        "a replica's retry delay runs on while suspended (P1-suspended then holds)",
        suspended=True,
        retry_due=True,
    ),
    taskset(
        T.ATTEMPT_RETRY_PENDING,
        "T14",
        T.ATTEMPT_PENDING,
        "the TaskSet's retry delay runs on while suspended (T3-suspended then holds)",
        suspended=True,
        retry_due=True,
    ),
    taskset(
        T.ATTEMPT_RUNNING,
        "T-wait",
        T.ATTEMPT_RUNNING,
        "a running attempt stays Running while suspended",
        control_unit=CU.OURS,
        suspended=True,
    ),
]

SUSPENSION_VANISHED = [
    *(
        replica(
            phase,
            "P-suspend",
            P.ATTEMPT_DELETION_PENDING,
            f"a Pod the cache lost while suspended in {phase.removeprefix('TaskRoleReplicaAttempt')} is "
            "deleted by name and UID, not taken as vanished",
            suspended=True,
        )
        for phase in _RUNNING
    ),
]


@pytest.mark.parametrize(
    "case",
    [
        *PRECEDENCE,
        *SUSPENSION_PRECEDENCE,
        *SUSPENSION_VANISHED,
        *START_DEADLINE_PRECEDENCE,
        *CLEANUP_PRECEDENCE,
    ],
)
def test_first_match_precedence(case: Case) -> None:
    row = case.machine.step(case.state, case.facts)
    assert row is not None
    assert (row.label, row.target_from(case.state)) == (case.label, case.target)


# ----- shape of the tables ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("machine", "initial", "terminal"),
    [
        pytest.param(TASKSET_MACHINE, T.VALIDATION, {T.COMPLETED}, id="the TaskSet machine"),
        pytest.param(ROLE_MACHINE, R.WAITING, {R.COMPLETED}, id="the role machine"),
        pytest.param(REPLICA_MACHINE, P.ATTEMPT_PENDING, {P.COMPLETED}, id="the replica machine"),
    ],
)
def test_initial_and_terminal_states_are_the_specs(
    machine: Machine[Any, Any], initial: Any, terminal: Any
) -> None:
    assert machine.initial == initial
    assert machine.terminal == terminal
    phases: Any = type(initial)  # the StrEnum of the phases
    assert set(machine.states) == set(phases)
    for state in terminal:
        assert machine.rows_from(state) == ()


@pytest.mark.parametrize(
    ("machine", "labels"),
    [
        pytest.param(TASKSET_MACHINE, {"T3-rejected"}, id="the TaskSet machine"),
        pytest.param(ROLE_MACHINE, set(), id="the role machine"),
        pytest.param(REPLICA_MACHINE, {"P1-rejected"}, id="the replica machine"),
    ],
)
def test_only_action_results_take_the_on_result_rows(machine: Machine[Any, Any], labels: set[str]) -> None:
    assert {row.label for row in machine.transitions if row.on_result} == labels


@pytest.mark.parametrize(
    ("machine", "source", "target"),
    [
        pytest.param(
            TASKSET_MACHINE, T.ATTEMPT_PENDING, T.ATTEMPT_COMPLETED, id="a rejected ControlUnit create"
        ),
        pytest.param(REPLICA_MACHINE, P.ATTEMPT_PENDING, P.ATTEMPT_COMPLETED, id="a rejected Pod create"),
        pytest.param(
            REPLICA_MACHINE,
            P.ATTEMPT_PENDING,
            P.ATTEMPT_CREATION_REQUESTED,
            id="an accepted Pod create",
        ),
        pytest.param(
            REPLICA_MACHINE,
            P.ATTEMPT_DELETION_PENDING,
            P.ATTEMPT_DELETION_REQUESTED,
            id="an accepted Pod delete",
        ),
    ],
)
def test_edges_taken_on_action_results_are_declared(
    machine: Machine[Any, Any], source: Any, target: Any
) -> None:
    machine.check(source, target)


@pytest.mark.parametrize(
    ("machine", "source", "target"),
    [
        pytest.param(
            TASKSET_MACHINE, T.ATTEMPT_RUNNING, T.ATTEMPT_PREPARING, id="W-9 Running never goes back"
        ),
        pytest.param(
            TASKSET_MACHINE, T.COMPLETED, T.ATTEMPT_PENDING, id="a completed TaskSet never restarts"
        ),
        pytest.param(
            TASKSET_MACHINE, T.VALIDATION, T.ATTEMPT_RUNNING, id="validation never skips to Running"
        ),
        pytest.param(ROLE_MACHINE, R.RUNNING, R.WAITING, id="a running role never waits again"),
        pytest.param(ROLE_MACHINE, R.CLEANING_PENDING, R.RUNNING, id="a decided role is never undecided"),
        pytest.param(ROLE_MACHINE, R.COMPLETED, R.RUNNING, id="a completed role never runs again"),
        pytest.param(REPLICA_MACHINE, P.COMPLETED, P.ATTEMPT_PENDING, id="a completed replica never retries"),
        pytest.param(
            REPLICA_MACHINE, P.ATTEMPT_RUNNING, P.ATTEMPT_PREPARING, id="a running replica never unruns"
        ),
        pytest.param(
            REPLICA_MACHINE,
            P.ATTEMPT_RUNNING,
            P.ATTEMPT_RETRY_PENDING,
            id="a retry waits until the Pod is gone",
        ),
    ],
)
def test_undeclared_edges_are_rejected(machine: Machine[Any, Any], source: Any, target: Any) -> None:
    with pytest.raises(UndeclaredTransitionError):
        machine.check(source, target)


# ----- S55 at table level: every state x every combination of facts ----------------------------------


def every_facts(kind: type[Any]) -> list[Any]:
    choices: list[tuple[Any, ...]] = []
    for spec in fields(kind):
        if spec.type in ("bool", bool):
            choices.append((False, True))
        elif spec.name == "pod":
            choices.append(tuple(PodClass))
        elif spec.name == "control_unit":
            choices.append(tuple(ControlUnitClass))
        else:  # pragma: no cover - a new field needs a line here
            raise AssertionError(f"{kind.__name__}.{spec.name}: unknown field type {spec.type}")
    names = [spec.name for spec in fields(kind)]
    return [kind(**dict(zip(names, values, strict=True))) for values in itertools.product(*choices)]


@pytest.mark.parametrize(
    ("machine", "kind", "count"),
    [
        pytest.param(TASKSET_MACHINE, TaskSetFacts, 4 * 2**11, id="the TaskSet machine"),
        pytest.param(ROLE_MACHINE, RoleFacts, 2**4, id="the role machine"),
        pytest.param(REPLICA_MACHINE, ReplicaFacts, 8 * 2**15, id="the replica machine"),
    ],
)
def test_every_state_has_a_declared_answer_for_every_combination_of_facts(
    machine: Machine[Any, Any], kind: type[Any], count: int
) -> None:
    combinations = every_facts(kind)
    assert len(combinations) == count
    for state in machine.states:
        for facts in combinations:
            row = machine.step(state, facts)
            if state in machine.terminal:
                assert row is None
                continue
            assert row is not None, (state, facts)
            assert not row.on_result
            machine.check(state, row.target_from(state))


def test_replica_facts_derived_properties() -> None:
    assert ReplicaFacts(pod=CURRENT).ours
    assert ReplicaFacts(pod=ADOPTABLE).ours
    for pod in (PodClass.ABSENT, PodClass.DUPLICATE, PodClass.PREVIOUS, PodClass.FOREIGN):
        assert not ReplicaFacts(pod=pod, pod_deleting=True, pod_terminal=True).ours_deleting
        assert not ReplicaFacts(pod=pod, pod_deleting=True, pod_terminal=True).ours_terminal
    assert ReplicaFacts(pod=CURRENT, pod_deleting=True).ours_deleting
    assert ReplicaFacts(pod=CURRENT, pod_terminal=True).ours_terminal


@pytest.mark.parametrize(
    ("unit", "present"),
    [
        pytest.param(CU.ABSENT, False, id="an absent ControlUnit is not present"),
        pytest.param(CU.OURS, True, id="our ControlUnit is present"),
        pytest.param(CU.OURS_DELETING, True, id="our ControlUnit being deleted is present"),
        pytest.param(CU.FOREIGN, False, id="a foreign ConfigMap is not our ControlUnit"),
    ],
)
def test_taskset_facts_unit_present(unit: ControlUnitClass, present: bool) -> None:
    assert TaskSetFacts(control_unit=unit).unit_present is present
