"""The TaskSet attempt machine, one pass at a time: validation (2.4), the first passes (T2, T3, T5 and
the in-pass chaining to the Pods), the TaskSet retry (7.1, T14), deletion (W-10) and external
deletions of the ControlUnit (8.1, 8.3)."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest

from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import RolePhase as R
from taskset.api.constants import State
from taskset.api.constants import TaskSetPhase as T
from taskset.decide import (
    ActionResult,
    CreateOwned,
    CreatePod,
    ResultKind,
)
from taskset.objects.network import SERVICES
from tests.builders import TaskSetBuilder
from tests.unit.taskset.decide.scenes import (
    START,
    TRANSITION,
    creates,
    events,
    preparing,
    reasons,
    retrying_replica,
    running,
    single,
    stamp_at,
    the_status,
    transitions,
)
from tests.unit.taskset.world import (
    World,
    adopted_unseen_control_unit,
    control_unit,
    control_unit_ready,
    decide_once,
    pass_once,
    replica,
    view_of,
)

pytestmark = pytest.mark.unit


# ----- validation (T1, spec 2.4 "What the user sees"), S23 and the [unit] parts of S24 ----------------------


def illegal(sentence: str, builder: TaskSetBuilder, message: str) -> Any:
    return pytest.param(builder, message, id=sentence)


ILLEGAL = [
    illegal(
        "S23 duplicate role names",
        TaskSetBuilder("dupnames").role("role1").role("role1"),
        "TaskRole naming conflicts,name:role1",
    ),
    illegal(
        "S24 minSucceeded above replicas",
        TaskSetBuilder("job").role("r", min_succeeded=2, max_failed=1),
        "MinSucceeded cannot be bigger than replica amount for TaskRole:r",
    ),
    illegal(
        "S24 maxFailed above replicas",
        TaskSetBuilder("job").role("r", min_succeeded=1, max_failed=2),
        "MaxFailed cannot be bigger than replica amount for TaskRole:r",
    ),
    illegal(
        "S24 maxFailed 0 stored under an older CRD",
        TaskSetBuilder("job").role("r", min_succeeded=1, max_failed=0),
        "MaxFailed cannot be smaller than 1 for TaskRole:r",
    ),
    illegal(
        "S24 maxFailed -1 stored under an older CRD",
        TaskSetBuilder("job").role("r", min_succeeded=1, max_failed=-1),
        "MaxFailed cannot be smaller than 1 for TaskRole:r",
    ),
    illegal(
        "S24 minSucceeded 0 stored under an older CRD",
        TaskSetBuilder("job").role("r", min_succeeded=0, max_failed=1),
        "MinSucceeded cannot be smaller than 1 for TaskRole:r",
    ),
    illegal(
        "S24 D2 a Pod name of 64 characters",
        TaskSetBuilder("a" * 59).role("r", replicas=11),
        "Pod name cannot be longer than 63 characters for TaskRole:r",
    ),
    illegal(
        "W-19 an unknown event",
        TaskSetBuilder("job").role("r", event_policy=[("RoleFail", "NoAction")]),
        "Unknown event 'RoleFail' in eventPolicy of TaskRole:r",
    ),
    illegal(
        "W-19 an unknown action",
        TaskSetBuilder("job").role("r", event_policy=[("RoleFailed", "TaskSetSucceed")]),
        "Unknown action 'TaskSetSucceed' in eventPolicy of TaskRole:r",
    ),
    illegal(
        "the second role is the illegal one",
        TaskSetBuilder("job").role("a", replicas=2).role("b", replicas=3, min_succeeded=4),
        "MinSucceeded cannot be bigger than replica amount for TaskRole:b",
    ),
]


@pytest.mark.parametrize(("builder", "message"), ILLEGAL)
def test_an_illegal_taskset_completes_failed_at_once(builder: TaskSetBuilder, message: str) -> None:
    world = World(builder.generation(3).obj())
    world.now = START + timedelta(seconds=7)
    plan = world.reconcile()
    status = plan.status
    assert (status.phase, status.state) == (T.COMPLETED, State.FAILED)
    assert status.phase_message == status.state_message == message
    assert status.finish_at == stamp_at(7)
    assert status.created_at == stamp_at(7)
    assert (status.start_at, status.control_unit_uid, status.total_retried_count) == (None, None, 0)
    assert status.observed_generation == 3
    assert [c.to_json() for c in status.conditions] == [
        {
            "type": "Failed",
            "status": "True",
            "reason": "ValidationFailed",
            "message": message,
            "lastTransitionTime": stamp_at(7),
            "observedGeneration": 3,
        }
    ]
    spec_roles = builder.obj()["spec"]["roles"]
    assert [(r.name, len(r.replicas)) for r in status.roles] == [
        (r["name"], r["replicas"]) for r in spec_roles
    ]
    for role in status.roles:
        assert (role.phase, role.state, role.state_message) == (R.WAITING, State.WAITING, "")
        assert {replica.phase for replica in role.replicas} == {P.ATTEMPT_PENDING}
    assert events(plan) == [
        (TRANSITION, "Pre:TaskSetValidation,Next:TaskSetCompleted"),
        ("TaskSet Failed", f"TaskSet:{world.ref.name}"),
    ]
    assert plan.intents == []
    world.tick(3600)
    again = world.reconcile()
    assert (again.intents, again.events) == ([], [])
    assert again.status.to_json() == status.to_json()
    assert world.units == {} and world.created_pods == []


def test_a_pod_name_of_exactly_63_characters_is_legal() -> None:
    world = World(TaskSetBuilder("a" * 59).role("r", replicas=10).obj())
    plan = world.reconcile()
    assert plan.status.phase == T.ATTEMPT_PREPARING
    assert [len(name) for name in world.units] == [len("c-" + "a" * 59 + "-0")]
    assert max(len(name) for name in world.pods) == 63


def test_an_illegal_taskset_is_never_retried() -> None:
    world = World(TaskSetBuilder("job").retry(True, 5, 0).role("r", min_succeeded=2).obj())
    world.settle()
    status = the_status(world)
    assert (status.phase, status.state, status.total_retried_count) == (T.COMPLETED, State.FAILED, 0)
    assert not any("Retry Taskset" in event for event in world.events)


# ----- the first passes -----------------------------------------------------------------------------------


def test_the_first_pass_validates_and_asks_for_the_control_unit() -> None:
    world = single(replicas=2)
    world.now = START + timedelta(seconds=0.2)
    plan = decide_once(world)
    status = plan.status
    assert status.phase == T.ATTEMPT_PENDING
    assert status.phase_message == status.state_message == "TaskSet is legal"
    assert (status.state, status.created_at, status.control_unit_uid) == (State.WAITING, stamp_at(1), None)
    assert plan.intents == [CreateOwned("c-job-0")]
    assert transitions(plan) == ["Pre:TaskSetValidation,Next:TaskSetAttemptPending"]
    assert [(r.name, [x.phase for x in r.replicas]) for r in status.roles] == [
        ("r", [P.ATTEMPT_PENDING, P.ATTEMPT_PENDING])
    ]


def test_the_control_unit_create_result_moves_the_taskset_on_to_its_pods() -> None:
    """T3, then T5 on the create's response (R MAY chain): the Pods' creates join the same pass."""
    world = World(TaskSetBuilder("job").role("a", replicas=2).role("b").obj())
    step = pass_once(world)
    plan = step.plan
    unit = control_unit("c-job-0", "cu-1", world.ref.uid)
    step.fold(plan.intents[0], ActionResult(ResultKind.OK, view_of(plan.intents[0], unit)))
    assert plan.status.control_unit_uid == "cu-1"
    assert transitions(plan)[-2:] == [
        "Pre:TaskSetAttemptPending,Next:TaskSetAttemptCreationRequested",
        "Pre:TaskSetAttemptCreationRequested,Next:TaskSetAttemptPreparing",
    ]
    assert plan.status.phase == T.ATTEMPT_PREPARING
    assert plan.status.phase_message == "Control unit is synced,prepare to launch tasks"
    assert plan.intents == [
        CreateOwned("c-job-0"),
        CreateOwned("job", SERVICES, "headless-service"),  # made beside the Pods, which need not wait
        CreatePod(0, 0, "job-a-0", 0, 0),
        CreatePod(0, 1, "job-a-1", 0, 0),
        CreatePod(1, 0, "job-b-0", 0, 0),
    ]


@pytest.mark.parametrize(
    ("result", "phase"),
    [
        pytest.param(ResultKind.EXISTS, T.ATTEMPT_CREATION_REQUESTED, id="adopted: waits for the cache"),
        pytest.param(ResultKind.ERROR, T.ATTEMPT_PENDING, id="failed: retried with backoff"),
        pytest.param(ResultKind.INVALID, T.ATTEMPT_COMPLETED, id="rejected: the attempt ends"),
    ],
)
def test_only_a_control_unit_created_by_the_pass_chains_on_to_the_pods(result: ResultKind, phase: T) -> None:
    world = single()
    step = pass_once(world)
    plan = step.plan
    unit = control_unit("c-job-0", "cu-1", world.ref.uid) if result == ResultKind.EXISTS else None
    step.fold(plan.intents[0], ActionResult(result, view_of(plan.intents[0], unit), "no"))
    assert plan.status.phase == phase
    assert creates(plan) == [CreateOwned("c-job-0")]


def test_once_the_control_unit_is_observed_every_replica_gets_a_pod() -> None:
    world = World(TaskSetBuilder("job").role("a", replicas=2).role("b").obj())
    adopted_unseen_control_unit(world)
    plan = decide_once(world)
    assert plan.status.phase == T.ATTEMPT_PREPARING
    assert plan.status.phase_message == "Control unit is synced,prepare to launch tasks"
    assert plan.intents == [
        CreateOwned("job", SERVICES, "headless-service"),
        CreatePod(0, 0, "job-a-0", 0, 0),
        CreatePod(0, 1, "job-a-1", 0, 0),
        CreatePod(1, 0, "job-b-0", 0, 0),
    ]


def test_s26_a_taskset_without_roles_succeeds_at_once() -> None:
    world = World(TaskSetBuilder("noroles").no_roles().obj())
    world.settle()
    status = the_status(world)
    assert (status.phase, status.state, status.roles) == (T.COMPLETED, State.SUCCEEDED, [])
    assert status.state_message == "TaskSet succeeded beacause all taskrole are succeeded"
    assert world.units == {} and world.created_pods == []
    assert "TaskSet Succeeded: TaskSet:noroles" in world.events


# ----- TaskSet retry (7.1, T14) -----------------------------------------------------------------------------


def retrying_taskset(max_retry_count: int = 2, delay: int = 30) -> World:
    world = running(World(TaskSetBuilder("job").retry(True, max_retry_count, delay).role("r").obj()))
    world.exit("job-r-0", 1)
    world.settle()
    if delay:
        assert the_status(world).phase == T.ATTEMPT_RETRY_PENDING
    return world


def test_a_failed_attempt_with_retries_left_waits_out_the_delay() -> None:
    world = retrying_taskset(delay=30)
    world.tick(10)
    plan = decide_once(world)
    assert plan.status.phase == T.ATTEMPT_RETRY_PENDING
    assert (plan.intents, plan.events) == ([], [])
    assert plan.requeue_after == 20  # T14b: requeue after the remaining delay


@pytest.mark.parametrize("offset", [0.0, 0.5], ids=["on the second", "0.5 s past"])
def test_a_zero_taskset_retry_delay_starts_the_next_attempt_without_waiting(offset: float) -> None:
    """T14 with delay 0 is immediate, whatever the fraction of a second the attempt ended at."""
    world = running(World(TaskSetBuilder("job").retry(True, 2, 0).role("r").obj()))
    world.tick(offset)
    world.exit("job-r-0", 1)
    world.settle()
    assert [p.requeue_after for p in world.plans if p.requeue_after] == []
    assert the_status(world).total_retried_count == 1


def test_t14_a_taskset_retry_starts_a_fresh_attempt() -> None:
    world = retrying_taskset(delay=30)
    before = copy.deepcopy(the_status(world))
    assert before.phase_message == "Policy.Retry is true,and current retry time is smaller than MaxRetryCount"
    assert before.start_at is not None
    world.tick(30)
    plan = decide_once(world)
    status = plan.status
    assert status.phase == T.ATTEMPT_PENDING
    assert status.phase_message == status.state_message == "TaskSet is going to retry"
    assert (status.state, status.total_retried_count, status.control_unit_uid) == (State.WAITING, 1, None)
    assert (status.created_at, status.start_at, status.finish_at) == (
        before.created_at,
        before.start_at,
        None,
    )
    assert events(plan) == [
        ("Retry Taskset", "Current Retried Count:0"),
        (TRANSITION, "Pre:TaskSetAttemptRetryPending,Next:TaskSetAttemptPending"),
    ]
    assert plan.intents == [CreateOwned("c-job-1")]
    fresh = status.roles[0]
    assert (fresh.name, fresh.phase, fresh.state, fresh.state_message) == ("r", R.WAITING, State.WAITING, "")
    rep = fresh.replicas[0]
    assert rep.to_json() == {
        "index": 0,
        "name": "r",
        "phase": "TaskRoleReplicaAttemptPending",
        "phaseMessage": "",
        "stopped": False,
        "transitionTime": stamp_at(30),
        "startAt": None,
        "finishAt": None,
        "totalRetriedCount": 0,
        "podName": "",
        "podReason": "",
        "podUID": None,
        "podIP": "",
        "podHostIP": "",
        "containerName": "",
        "containerID": "",
        "terminatedInfo": None,
        "uncountedRetries": 0,
        "failure": None,
        "nextRetryAt": None,
    }
    running_condition = status.to_json()["conditions"]
    assert [(c["type"], c["status"], c["reason"]) for c in running_condition] == [
        ("Running", "False", "Waiting")
    ]


def test_every_taskset_retry_counts_and_names_a_new_control_unit() -> None:
    world = retrying_taskset(max_retry_count=2, delay=0)
    for attempt in (1, 2):
        world.settle()
        assert the_status(world).total_retried_count == attempt
        assert the_status(world).phase == T.ATTEMPT_PREPARING
        assert f"c-job-{attempt}" in world.units
        world.run("job-r-0")
        world.exit("job-r-0", 1)
    world.settle()
    status = the_status(world)
    assert (status.phase, status.state, status.total_retried_count) == (T.COMPLETED, State.FAILED, 2)
    assert status.phase_message == "Can't retry anymore"
    assert status.state_message == "TaskSet completed beacause taskrole(r) is failed"
    assert [e for e in world.events if e.startswith("Retry Taskset")] == [
        "Retry Taskset: Current Retried Count:0",
        "Retry Taskset: Current Retried Count:1",
    ]
    annotations = [p["metadata"]["annotations"] for p in world.created_pods]
    assert [(a["TaskSetAttemptID"], a["ReplicaAttemptID"]) for a in annotations] == [
        ("0", "0"),
        ("1", "0"),
        ("2", "0"),
    ]


def test_a_succeeded_attempt_is_never_retried() -> None:
    world = running(World(TaskSetBuilder("job").retry(True, 3, 0).role("r").obj()))
    world.exit("job-r-0", 0)
    world.settle()
    status = the_status(world)
    assert (status.phase, status.state, status.total_retried_count) == (T.COMPLETED, State.SUCCEEDED, 0)


# ----- W-10: a TaskSet being deleted creates nothing and retries nothing ------------------------------------


def test_w10_no_control_unit_is_created_while_deleting() -> None:
    world = single()
    world.deleting = True
    plan = decide_once(world)
    assert plan.status.phase == T.ATTEMPT_PENDING
    assert creates(plan) == []
    assert plan.requeue_after == 10


def test_w10_no_pod_is_created_while_deleting() -> None:
    world = control_unit_ready(single(replicas=2))
    world.deleting = True
    plan = decide_once(world)
    assert plan.status.phase == T.ATTEMPT_PREPARING
    assert creates(plan) == []
    assert [r.phase for r in plan.status.roles[0].replicas] == [P.ATTEMPT_PENDING, P.ATTEMPT_PENDING]


def test_w10_a_failed_replica_is_not_retried_while_deleting() -> None:
    world = running(single(replicas=2, max_failed=2, retry=(True, 3, 0)))
    world.exit("job-r-0", 1)
    world.reconcile()
    assert replica(world, "r").phase == P.ATTEMPT_DELETION_REQUESTED
    world.deleting = True
    plan = decide_once(world)
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.total_retried_count) == (P.COMPLETED, 0)
    assert creates(plan) == []


def test_w10_a_replica_waiting_for_its_retry_does_not_start_it_while_deleting() -> None:
    world = retrying_replica(5)
    world.tick(5)
    world.deleting = True
    plan = decide_once(world)
    rep = plan.status.roles[0].replicas[0]
    assert rep.total_retried_count == 0  # spec 4.4: MUST NOT start retries
    assert rep.phase != P.ATTEMPT_PENDING
    assert creates(plan) == []


def test_w10_a_failed_attempt_is_not_retried_while_deleting() -> None:
    world = running(World(TaskSetBuilder("job").retry(True, 3, 0).role("r").obj()))
    world.exit("job-r-0", 1)
    world.reconcile()
    world.reconcile()
    world.gc()
    assert the_status(world).phase == T.ATTEMPT_DELETION_REQUESTED and world.units == {}
    world.deleting = True
    plan = decide_once(world)
    status = plan.status
    assert (status.phase, status.state, status.total_retried_count) == (T.COMPLETED, State.FAILED, 0)
    assert creates(plan) == []


def test_w10_a_taskset_waiting_for_its_retry_completes_failed_when_deleted() -> None:
    world = retrying_taskset(delay=30)
    world.deleting = True
    plan = decide_once(world)
    status = plan.status
    assert (status.phase, status.state, status.total_retried_count) == (T.COMPLETED, State.FAILED, 0)
    assert "Retry Taskset" not in reasons(plan)
    assert creates(plan) == []


# ----- external deletions (8.1, 8.3) ------------------------------------------------------------------------


def test_t11_a_control_unit_deleted_externally_fails_the_attempt() -> None:
    world = running(single())
    world.units.clear()
    world.pods.clear()
    plan = decide_once(world)
    assert transitions(plan) == [
        "Pre:TaskSetAttemptRunning,Next:TaskSetAttemptCompleted",
        "Pre:TaskSetAttemptCompleted,Next:TaskSetCompleted",
    ]
    assert (plan.status.phase, plan.status.state) == (T.COMPLETED, State.FAILED)
    assert plan.status.phase_message == "Retry is forbidden"
    assert creates(plan) == []


def test_t12_a_control_unit_being_deleted_externally_stops_role_syncs() -> None:
    world = running(single())
    world.units["c-job-0"]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:01Z"
    world.exit("job-r-0", 1)
    plan = decide_once(world)
    assert plan.status.phase == T.ATTEMPT_DELETION_REQUESTED
    assert plan.status.roles[0].replicas[0].phase == P.ATTEMPT_RUNNING  # frozen: no role sync
    assert plan.intents == []


@pytest.mark.parametrize(
    "phase",
    [
        pytest.param(P.ATTEMPT_PREPARING, id="P11 a Preparing replica's Pod vanished"),
        pytest.param(P.ATTEMPT_ASSIGNED, id="P11-R an Assigned replica's Pod vanished (W-3b)"),
        pytest.param(P.ATTEMPT_RUNNING, id="P11 a Running replica's Pod vanished"),
    ],
)
def test_a_vanished_pod_counts_as_a_failed_attempt(phase: P) -> None:
    world = preparing(single())
    replica(world, "r").phase = phase
    del world.pods["job-r-0"]
    plan = decide_once(world)
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.succeeded) == (P.COMPLETED, False)
    assert (plan.status.roles[0].state, plan.status.phase) == (State.FAILED, T.ATTEMPT_DELETION_PENDING)


def test_p10_a_pod_deleted_by_someone_else_is_followed_to_its_end() -> None:
    world = running(single())
    world.pods["job-r-0"]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:01Z"
    plan = decide_once(world)
    rep = plan.status.roles[0].replicas[0]
    assert rep.phase == P.ATTEMPT_DELETION_REQUESTED
    assert plan.intents == []
    assert plan.requeue_after == 30
