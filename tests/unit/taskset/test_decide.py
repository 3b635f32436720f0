"""decide() and Pass.fold(), one pass at a time: validation (2.4), the unobserved-object timeouts
(S57, W-4), the frozen role outcome (S58, W-6), stopping (W-5), both retry levels (7), deletion (W-10),
action results (D1, W-1, W-14, W-24), conditions and states (2.5.1, 5.4, W-9), the status shape (2.5)
and idempotence.

Most cases settle an in-memory World into some phase, edit it by hand, and look at one pass."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import RolePhase as R
from taskset.api.constants import State
from taskset.api.constants import TaskSetPhase as T
from taskset.api.spec import (
    RawReplicaStatus,
    RawRoleStatus,
    RawTaskSetStatus,
    RawTerminatedInfo,
    parse_taskset,
)
from taskset.api.status import TaskSetStatus, TerminatedInfo
from taskset.api.views import ControlUnitView, Observed, control_unit_view, pod_view
from taskset.decide import (
    ActionResult,
    CreateControlUnit,
    CreatePod,
    DeleteControlUnit,
    DeletePod,
    Intent,
    Pass,
    Plan,
    ResultKind,
    Settings,
    TaskSetRef,
    decide,
)
from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import (
    PodBuilder,
    World,
    adopted_unseen_control_unit,
    control_unit,
    control_unit_ready,
    decide_once,
    execute,
    pass_once,
    replica,
    role_status,
    view_of,
)

pytestmark = pytest.mark.unit

START = datetime(2026, 1, 1, tzinfo=UTC)
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
TRANSITION = "TaskSet State Transition"


# ----- helpers -----------------------------------------------------------------------------------------


def events(plan: Plan) -> list[tuple[str, str]]:
    return [(str(event.reason), event.message) for event in plan.events]


def reasons(plan: Plan) -> list[str]:
    return [str(event.reason) for event in plan.events]


def transitions(plan: Plan) -> list[str]:
    return [message for reason, message in events(plan) if reason == TRANSITION]


def creates(plan: Plan) -> list[Intent]:
    return [intent for intent in plan.intents if isinstance(intent, CreateControlUnit | CreatePod)]


def stamp_at(seconds: float) -> str:
    return (START + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def the_status(world: World) -> TaskSetStatus:
    assert world.status is not None
    return world.status


def uid_of(obj: dict[str, Any]) -> str:
    uid: str = obj["metadata"]["uid"]
    return uid


def single(name: str = "r", **role: Any) -> World:
    """A World for TaskSet ``job`` with one role."""
    return World(TaskSetBuilder("job").role(name, **role).obj())


def preparing(world: World) -> World:
    """Settle until the attempt is Preparing and every Pod is created (still Pending)."""
    world.settle()
    assert the_status(world).phase == T.ATTEMPT_PREPARING
    return world


def running(world: World) -> World:
    """Settle until every Pod of the world runs."""
    preparing(world)
    for name in list(world.pods):
        world.run(name)
    world.settle()
    assert the_status(world).phase == T.ATTEMPT_RUNNING
    return world


def unit_uid(world: World) -> str:
    uid = the_status(world).control_unit_uid
    assert uid is not None
    return uid


def pod_uid(world: World, name: str) -> str:
    return uid_of(world.pods[name])


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
    assert plan.intents == [CreateControlUnit("c-job-0")]
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
        CreateControlUnit("c-job-0"),
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
    assert creates(plan) == [CreateControlUnit("c-job-0")]


def test_once_the_control_unit_is_observed_every_replica_gets_a_pod() -> None:
    world = World(TaskSetBuilder("job").role("a", replicas=2).role("b").obj())
    adopted_unseen_control_unit(world)
    plan = decide_once(world)
    assert plan.status.phase == T.ATTEMPT_PREPARING
    assert plan.status.phase_message == "Control unit is synced,prepare to launch tasks"
    assert plan.intents == [
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


# ----- S57: timeouts apply only to objects that were never observed (W-4) -----------------------------------


def test_s57_a_control_unit_observed_an_hour_late_is_used() -> None:
    world = single()
    adopted_unseen_control_unit(world)
    world.tick(3600)
    plan = decide_once(world)
    assert plan.status.phase == T.ATTEMPT_PREPARING
    assert transitions(plan) == ["Pre:TaskSetAttemptCreationRequested,Next:TaskSetAttemptPreparing"]
    assert not [i for i in plan.intents if isinstance(i, DeleteControlUnit)]


def test_s57_a_control_unit_never_observed_ends_the_attempt_as_failed() -> None:
    world = single()
    uid = adopted_unseen_control_unit(world)
    world.units.clear()
    world.tick(3600)
    plan = decide_once(world)
    assert transitions(plan)[0] == "Pre:TaskSetAttemptCreationRequested,Next:TaskSetAttemptDeletionPending"
    assert plan.intents == [DeleteControlUnit("c-job-0", uid, advances=False)]
    assert (plan.status.phase, plan.status.state) == (T.COMPLETED, State.FAILED)


def test_s57_a_control_unit_not_observed_within_the_timeout_is_waited_for() -> None:
    world = single()
    adopted_unseen_control_unit(world)
    world.units.clear()
    world.tick(299)
    plan = decide_once(world)
    assert plan.status.phase == T.ATTEMPT_CREATION_REQUESTED
    assert (plan.intents, plan.events) == ([], [])
    assert plan.requeue_after is not None and 0 < plan.requeue_after <= 10


def test_s57_a_pod_observed_an_hour_late_is_used() -> None:
    world = preparing(single())
    replica(world, "r").phase = P.ATTEMPT_CREATION_REQUESTED
    world.tick(3600)
    plan = decide_once(world)
    assert plan.status.roles[0].replicas[0].phase == P.ATTEMPT_PREPARING
    assert plan.intents == []


def test_s57_a_pod_never_observed_ends_the_replica_attempt_with_a_delete_by_name() -> None:
    world = preparing(single())
    uid = pod_uid(world, "job-r-0")
    replica(world, "r").phase = P.ATTEMPT_CREATION_REQUESTED
    del world.pods["job-r-0"]
    world.tick(3600)
    step = pass_once(world)
    plan = step.plan
    rep = plan.status.roles[0].replicas[0]
    assert rep.phase == P.ATTEMPT_DELETION_PENDING
    assert plan.intents == [DeletePod("job-r-0", uid, 0, 0, advances=True, seen=False)]
    step.fold(plan.intents[0], ActionResult(ResultKind.NOT_FOUND))
    assert plan.status.roles[0].replicas[0].phase == P.ATTEMPT_DELETION_REQUESTED
    world.status = plan.status
    after = decide_once(world)
    assert after.status.roles[0].replicas[0].phase == P.COMPLETED
    assert after.status.roles[0].replicas[0].succeeded is False


def test_s57_a_pod_the_cache_never_showed_counts_as_gone_only_after_a_not_found() -> None:
    # Spec P2/P13 and S57: the replica reaches its retry decision only once the API server says NotFound.
    world = preparing(single(retry=(True, 1, 0)))
    replica(world, "r").phase = P.ATTEMPT_CREATION_REQUESTED
    del world.pods["job-r-0"]  # it exists server-side but never reached the cache
    world.tick(3600)
    step = pass_once(world)
    plan = step.plan
    assert [type(i) for i in plan.intents] == [DeletePod]
    step.fold(plan.intents[0], ActionResult(ResultKind.OK))  # accepted: the Pod is terminating
    world.status = plan.status
    after = decide_once(world)  # the cache still does not show it
    rep = after.status.roles[0].replicas[0]
    assert rep.phase not in (P.ATTEMPT_RETRY_PENDING, P.ATTEMPT_PENDING, P.COMPLETED), rep.phase
    assert rep.total_retried_count == 0
    assert not [i for i in after.intents if isinstance(i, CreatePod)]


# ----- S58: the role outcome is frozen when the policy is first satisfied (W-6) -----------------------------

MAX_FAILED_1 = "Completion policy MaxFailed  satisfied,faild count:1"


def test_s58_the_role_outcome_is_frozen() -> None:
    world = running(World(TaskSetBuilder("job").role("r", replicas=3, min_succeeded=2, max_failed=1).obj()))
    world.exit("job-r-0", 1)
    world.reconcile()  # P5 and P9: the failed Pod is deleted
    world.exit("job-r-1", 0)  # both others finish while the role is being decided and cleaned up
    world.exit("job-r-2", 0)
    plan = world.reconcile()
    role = plan.status.roles[0]
    assert (role.phase, role.state, role.state_message) == (R.CLEANING_PENDING, State.FAILED, MAX_FAILED_1)
    assert role.phase_message == MAX_FAILED_1
    assert ("TaskRole Failed", f"TaskRole:r, Reason:{MAX_FAILED_1}") in events(plan)
    world.settle()
    role = role_status(world, "r")
    assert (role.phase, role.state, role.state_message) == (R.COMPLETED, State.FAILED, MAX_FAILED_1)
    assert [(r.phase, r.succeeded, r.stopped) for r in role.replicas] == [
        (P.COMPLETED, False, False),
        (P.COMPLETED, True, True),
        (P.COMPLETED, True, True),
    ]
    assert (the_status(world).phase, the_status(world).state) == (T.COMPLETED, State.FAILED)
    assert sum(event.startswith("TaskRole Failed") for event in world.events) == 1
    assert not any(event.startswith("TaskRole Succeeded") for event in world.events)


# ----- W-5: stopping every unfinished replica of a completed role (spec 6.4) --------------------------------


@dataclass(frozen=True)
class Stop:
    phase: P
    pod: Callable[[World, str], None] | None  # shapes the replica's Pod; None: no Pod in the cache
    after: P  # the phase after one pass, before any action result
    deletes: bool  # whether the pass deletes the replica's Pod


def pod_pending(world: World, name: str) -> None:
    world.pods[name]["status"] = {"phase": "Pending"}


def pod_assigned(world: World, name: str) -> None:
    world.pods[name]["status"] = {"phase": "Pending", "hostIP": "10.0.0.1", "podIP": "10.0.1.1"}


def pod_running(world: World, name: str) -> None:
    world.run(name)


def pod_failed(world: World, name: str) -> None:
    world.exit(name, 1)


def pod_terminating(world: World, name: str) -> None:
    world.pods[name]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:05Z"


STOPS = [
    pytest.param(Stop(P.ATTEMPT_PENDING, None, P.COMPLETED, False), id="Pending completes at once"),
    pytest.param(
        Stop(P.ATTEMPT_RETRY_PENDING, None, P.COMPLETED, False), id="RetryPending completes at once"
    ),
    pytest.param(
        Stop(P.ATTEMPT_COMPLETED, None, P.COMPLETED, False), id="AttemptCompleted completes at once"
    ),
    pytest.param(
        Stop(P.ATTEMPT_CREATION_REQUESTED, None, P.ATTEMPT_DELETION_PENDING, True),
        id="CreationRequested with the Pod not yet observed is deleted",
    ),
    pytest.param(
        Stop(P.ATTEMPT_CREATION_REQUESTED, pod_pending, P.ATTEMPT_DELETION_PENDING, True),
        id="CreationRequested with the Pod observed is deleted",
    ),
    pytest.param(
        Stop(P.ATTEMPT_PREPARING, pod_pending, P.ATTEMPT_DELETION_PENDING, True), id="Preparing is deleted"
    ),
    pytest.param(
        Stop(P.ATTEMPT_ASSIGNED, pod_assigned, P.ATTEMPT_DELETION_PENDING, True),
        id="Assigned is deleted (O left it alone)",
    ),
    pytest.param(
        Stop(P.ATTEMPT_RUNNING, pod_running, P.ATTEMPT_DELETION_PENDING, True), id="Running is deleted"
    ),
    pytest.param(
        Stop(P.ATTEMPT_DELETION_PENDING, pod_failed, P.ATTEMPT_DELETION_PENDING, True),
        id="DeletionPending continues its deletion",
    ),
    pytest.param(
        Stop(P.ATTEMPT_DELETION_REQUESTED, pod_terminating, P.ATTEMPT_DELETION_REQUESTED, False),
        id="DeletionRequested waits for its Pod to go",
    ),
]


def cleaning_world(stop: Stop) -> World:
    """Role r (2 replicas, cp 1/2, generous retries): replica 0 succeeded, the role is cleaning up and
    replica 1, stopped, is in ``stop.phase``."""
    world = preparing(single(replicas=2, min_succeeded=1, max_failed=2, retry=(True, 5, 0)))
    role = role_status(world, "r")
    role.phase, role.state = R.CLEANING_PENDING, State.SUCCEEDED
    first = role.replicas[0]
    first.phase, first.terminated_info = P.COMPLETED, TerminatedInfo(0)
    del world.pods["job-r-0"]
    second = role.replicas[1]
    second.phase, second.stopped = stop.phase, True
    if stop.pod is None:
        del world.pods["job-r-1"]
    else:
        stop.pod(world, "job-r-1")
    if stop.phase == P.ATTEMPT_PENDING:
        second.clear_pod()
    return world


@pytest.mark.parametrize("stop", STOPS)
def test_w5_a_stopped_replica_of_a_cleaning_role(stop: Stop) -> None:
    world = cleaning_world(stop)
    uid = replica(world, "r", 1).pod_uid
    step = pass_once(world)
    plan = step.plan
    rep = plan.status.roles[0].replicas[1]
    assert (rep.phase, rep.stopped, rep.total_retried_count) == (stop.after, True, 0)
    seen = stop.pod is not None  # a Pod the cache never showed is deleted until NotFound (8.6)
    expected = [DeletePod("job-r-1", uid or "", 0, 1, advances=True, seen=seen)] if stop.deletes else []
    assert [i for i in plan.intents if isinstance(i, DeletePod | CreatePod)] == expected
    if stop.after == P.COMPLETED:
        assert rep.phase_message == "Replica is stopped by parent TaskRole"
        assert plan.status.roles[0].phase == R.COMPLETED
    # whatever the phase, the replica ends completed, stopped and never retried
    execute(world, step)
    for name, pod in list(world.pods.items()):  # the kubelet finishes what was terminating
        if "deletionTimestamp" in pod["metadata"]:
            del world.pods[name]
    world.settle()
    rep = replica(world, "r", 1)
    assert (rep.phase, rep.stopped, rep.total_retried_count) == (P.COMPLETED, True, 0)
    role = role_status(world, "r")
    assert (role.phase, role.state) == (R.COMPLETED, State.SUCCEEDED)
    assert world.created_pods[-1]["metadata"]["name"] == "job-r-1"
    assert len(world.created_pods) == 2  # nothing was created for the stopped replica


def test_w5_completing_a_role_stops_every_unfinished_replica_in_the_same_pass() -> None:
    world = running(single(replicas=6, min_succeeded=1, max_failed=6, retry=(True, 3, 60)))
    # 0: finished with exit 0 and its Pod is gone; the pass completes it and so the role.
    world.exit("job-r-0", 0)
    world.reconcile()
    assert role_status(world, "r").replicas[0].phase == P.ATTEMPT_DELETION_REQUESTED
    role = role_status(world, "r")
    # 1: Running, 2: Assigned, 3: Preparing, 4: failed earlier and waits for its retry delay, 5: its Pod
    # was created but is not yet in the cache.
    role.replicas[2].phase = P.ATTEMPT_ASSIGNED
    pod_assigned(world, "job-r-2")
    role.replicas[3].phase = P.ATTEMPT_PREPARING
    pod_pending(world, "job-r-3")
    role.replicas[4].phase = P.ATTEMPT_RETRY_PENDING
    role.replicas[4].transition_time = stamp_at(0)
    del world.pods["job-r-4"]
    role.replicas[5].phase = P.ATTEMPT_CREATION_REQUESTED
    role.replicas[5].transition_time = stamp_at(0)
    del world.pods["job-r-5"]
    plan = decide_once(world)
    role = plan.status.roles[0]
    assert (role.phase, role.state) == (R.CLEANING_PENDING, State.SUCCEEDED)
    assert role.state_message == "Completion policy MinSucceeded satisfied,succeeded count:1"
    assert [(r.phase, r.stopped) for r in role.replicas] == [
        (P.COMPLETED, False),
        (P.ATTEMPT_DELETION_PENDING, True),
        (P.ATTEMPT_DELETION_PENDING, True),
        (P.ATTEMPT_DELETION_PENDING, True),
        (P.COMPLETED, True),
        (P.ATTEMPT_DELETION_PENDING, True),
    ]
    assert sorted((i.name, i.advances) for i in plan.intents if isinstance(i, DeletePod)) == [
        (f"job-r-{k}", True) for k in (1, 2, 3, 5)
    ]
    assert creates(plan) == []


# ----- replica retry (7.2) ----------------------------------------------------------------------------------


def retrying_replica(delay: int) -> World:
    """Role r with [retry 2 delay]: its first Pod failed and is gone; the replica waits for its retry."""
    world = running(single(retry=(True, 2, delay)))
    world.exit("job-r-0", 1)
    world.reconcile()
    world.reconcile()
    if delay:
        assert replica(world, "r").phase == P.ATTEMPT_RETRY_PENDING
    return world


def test_a_failed_replica_with_retries_left_waits_out_its_delay() -> None:
    world = retrying_replica(30)
    entered = replica(world, "r").transition_time
    assert entered == stamp_at(0)
    world.tick(10)
    plan = decide_once(world)
    assert plan.status.roles[0].replicas[0].phase == P.ATTEMPT_RETRY_PENDING
    assert (plan.intents, plan.events) == ([], [])
    assert plan.requeue_after == 20  # P14b: requeue after the remaining delay


def test_the_retry_delay_counts_from_entering_retry_pending() -> None:
    world = retrying_replica(30)
    world.tick(29)
    assert decide_once(world).status.roles[0].replicas[0].phase == P.ATTEMPT_RETRY_PENDING
    world.tick(1)
    assert decide_once(world).status.roles[0].replicas[0].phase == P.ATTEMPT_PENDING


@pytest.mark.parametrize("offset", [0.0, 0.3, 0.999], ids=["on the second", "0.3 s past", "0.999 s past"])
def test_a_zero_replica_retry_delay_retries_in_the_pass_that_sees_the_pod_gone(offset: float) -> None:
    """P14 with delay 0 is immediate. transitionTime is stored rounded up to the second, which must not
    hold the retry (and a pass of a busy queue) until the clock passes that second."""
    world = running(single(retry=(True, 2, 0)))
    world.tick(offset)
    world.exit("job-r-0", 1)
    world.reconcile()  # the exit is recorded, the Pod deleted
    plan = world.reconcile()  # the Pod is gone: retry at once
    assert plan.intents == [CreatePod(0, 0, "job-r-0", 0, 1)]
    assert plan.requeue_after is None


def test_a_replica_retry_starts_a_new_attempt_under_the_same_name() -> None:
    world = retrying_replica(30)
    before = copy.deepcopy(replica(world, "r"))
    assert before.pod_name == "job-r-0" and before.terminated_info == TerminatedInfo(1, "", 0, "Error")
    world.tick(30)
    step = pass_once(world)
    plan = step.plan
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.total_retried_count, rep.stopped) == (P.ATTEMPT_PENDING, 1, False)
    assert rep.phase_message == "TaskRole replica is going to retry"
    cleared = (
        rep.pod_name,
        rep.pod_uid,
        rep.pod_reason,
        rep.pod_ip,
        rep.pod_host_ip,
        rep.container_name,
        rep.container_id,
        rep.start_at,
        rep.finish_at,
        rep.terminated_info,
    )
    assert cleared == ("", None, "", "", "", "", "", None, None, None)
    assert plan.intents == [CreatePod(0, 0, "job-r-0", 0, 1)]
    history = [r for r in plan.records if r.msg == "TaskRole replica is going to retry,log the pod history"]
    assert len(history) == 1
    fields = history[0].fields
    assert (fields["QueryKey"], fields["PodName"], fields["AttemptID"], fields["TaskSetAttemptID"]) == (
        "PodHistory",
        "job-r-0",
        0,
        0,
    )
    # written before the Pod fields were cleared
    assert (fields["ContainerExitCode"], fields["PodIP"], fields["PodHostIP"]) == (1, "10.0.1.1", "10.0.0.1")
    execute(world, step)
    new_pod = world.pods["job-r-0"]
    assert new_pod["metadata"]["annotations"]["ReplicaAttemptID"] == "1"
    assert uid_of(new_pod) != before.pod_uid


def test_replica_retries_run_out_and_the_last_attempt_counts() -> None:
    world = retrying_replica(0)
    for attempt in (1, 2):
        world.settle()
        assert replica(world, "r").total_retried_count == attempt
        world.run("job-r-0")
        world.exit("job-r-0", 1)
    world.settle()
    rep = replica(world, "r")
    assert (rep.phase, rep.total_retried_count, rep.succeeded) == (P.COMPLETED, 2, False)
    assert rep.phase_message == "Can't retry anymore"
    assert [p["metadata"]["annotations"]["ReplicaAttemptID"] for p in world.created_pods] == ["0", "1", "2"]
    assert {p["metadata"]["name"] for p in world.created_pods} == {"job-r-0"}
    assert (the_status(world).phase, the_status(world).state) == (T.COMPLETED, State.FAILED)


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
    assert plan.intents == [CreateControlUnit("c-job-1")]
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


# ----- action results: Pod creates (P1, D1, W-1, W-14, W-24) ------------------------------------------------


def pending_replica(**role: Any) -> tuple[World, Pass, CreatePod]:
    """A pass that asks for replica r/0's Pod, with the result not yet folded in."""
    world = control_unit_ready(single(**role))
    step = pass_once(world)
    plan = step.plan
    intent = plan.intents[0]
    assert isinstance(intent, CreatePod)
    return world, step, intent


def our_pod(world: World, *, attempt: int = 0, uid: str = "pod-ours") -> dict[str, Any]:
    return (
        PodBuilder("job-r-0")
        .uid(uid)
        .controlled_by(unit_uid(world))
        .taskset(world.ref.uid)
        .attempt(attempt)
        .obj()
    )


def test_pod_create_ok_records_the_pod() -> None:
    world, step, intent = pending_replica()
    plan = step.plan
    pod = our_pod(world)
    pod["status"] = {"phase": "Pending", "podIP": "", "hostIP": ""}
    step.fold(intent, ActionResult(ResultKind.OK, view_of(intent, pod)))
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.pod_name, rep.pod_uid) == (P.ATTEMPT_CREATION_REQUESTED, "job-r-0", "pod-ours")
    assert rep.phase_message == "TaskRole replica is going to start"
    assert not plan.backoff


def test_pod_create_already_exists_adopts_this_attempts_pod() -> None:
    world, step, intent = pending_replica()
    plan = step.plan
    step.fold(intent, ActionResult(ResultKind.EXISTS, view_of(intent, our_pod(world, uid="pod-lost"))))
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.pod_name, rep.pod_uid) == (P.ATTEMPT_CREATION_REQUESTED, "job-r-0", "pod-lost")
    assert "PodNameConflict" not in reasons(plan)


def test_pod_create_already_exists_waits_for_a_previous_attempts_pod() -> None:
    world, step, intent = pending_replica()
    plan = step.plan
    previous = (
        PodBuilder("job-r-0").uid("old").controlled_by("cu-old").taskset(world.ref.uid).attempt(0).obj()
    )
    step.fold(intent, ActionResult(ResultKind.EXISTS, view_of(intent, previous)))
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.pod_uid, rep.pod_reason) == (P.ATTEMPT_PENDING, None, "")
    assert "PodNameConflict" not in reasons(plan)
    assert plan.requeue_after is not None


def test_pod_create_already_exists_with_a_foreign_pod_is_a_name_conflict() -> None:
    _, step, intent = pending_replica()
    plan = step.plan
    foreign = PodBuilder("job-r-0").uid("foreign").controlled_by(None).taskset(None).obj()
    step.fold(intent, ActionResult(ResultKind.EXISTS, view_of(intent, foreign)))
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.pod_reason) == (P.ATTEMPT_COMPLETED, "PodNameConflict")
    assert (rep.pod_name, rep.pod_uid, rep.terminated_info) == ("", None, None)
    assert "PodNameConflict" in reasons(plan)
    assert next(e for e in plan.events if str(e.reason) == "PodNameConflict").warning


def test_pod_create_invalid_ends_the_attempt_as_failed() -> None:
    _, step, intent = pending_replica()
    plan = step.plan
    step.fold(intent, ActionResult(ResultKind.INVALID, message="spec.containers: Required value"))
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.pod_reason) == (P.ATTEMPT_COMPLETED, "PodCreationFailed")
    assert rep.phase_message == "spec.containers: Required value"
    assert (rep.pod_uid, rep.terminated_info) == (None, None)
    assert ("PodCreationFailed", "job-r-0: spec.containers: Required value") in events(plan)
    assert not plan.backoff


def test_pod_create_transient_error_stays_and_backs_off() -> None:
    _, step, intent = pending_replica()
    plan = step.plan
    step.fold(intent, ActionResult(ResultKind.ERROR, message="exceeded quota"))
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.pod_reason, rep.pod_uid) == (P.ATTEMPT_PENDING, "", None)
    assert plan.backoff
    assert ("PodCreationFailed", "job-r-0: exceeded quota") in events(plan)


def test_pod_create_already_exists_for_a_pod_gone_again_tries_once_more() -> None:
    _, step, intent = pending_replica()
    plan = step.plan
    step.fold(intent, ActionResult(ResultKind.EXISTS, None))
    assert plan.status.roles[0].replicas[0].phase == P.ATTEMPT_PENDING
    assert plan.requeue_after == 0


@pytest.mark.parametrize(
    ("retry", "after", "retried"),
    [
        pytest.param(
            (True, 1, 20), P.ATTEMPT_RETRY_PENDING, 0, id="with a retry left the replica waits for it"
        ),
        pytest.param(None, P.COMPLETED, 0, id="without retries the replica completes as failed"),
    ],
)
def test_a_pod_name_conflict_feeds_the_role_retry_policy(
    retry: tuple[bool, int, int] | None, after: P, retried: int
) -> None:
    world = control_unit_ready(single(retry=retry))
    world.pods["job-r-0"] = PodBuilder("job-r-0").uid("foreign").controlled_by(None).running().obj()
    plan = decide_once(world)
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.total_retried_count, rep.succeeded) == (after, retried, False)
    assert (rep.pod_reason, rep.pod_name, rep.pod_uid) == ("PodNameConflict", "", None)
    assert ("PodNameConflict", "Pod name conflict: job-r-0") in events(plan)
    assert creates(plan) == []
    assert not [i for i in plan.intents if isinstance(i, DeletePod)]  # the foreign Pod is never touched
    if retry is None:
        assert (plan.status.roles[0].state, plan.status.phase) == (State.FAILED, T.ATTEMPT_DELETION_PENDING)


def test_s50_the_retry_after_a_conflict_creates_the_pod_once_the_foreign_pod_is_gone() -> None:
    world = control_unit_ready(single(retry=(True, 1, 20)))
    world.pods["job-r-0"] = PodBuilder("job-r-0").uid("foreign").controlled_by(None).running().obj()
    world.reconcile()
    assert replica(world, "r").phase == P.ATTEMPT_RETRY_PENDING
    del world.pods["job-r-0"]
    world.tick(20)
    world.settle()
    rep = replica(world, "r")
    assert (rep.phase, rep.total_retried_count, rep.pod_reason) == (P.ATTEMPT_PREPARING, 1, "")
    ours = world.pods["job-r-0"]
    assert ours["metadata"]["annotations"]["ReplicaAttemptID"] == "1"
    assert ours["metadata"]["ownerReferences"][0]["uid"] == unit_uid(world)


def test_s50_conf2_a_foreign_pod_that_stays_uses_up_every_replica_attempt() -> None:
    world = control_unit_ready(single(retry=(True, 1, 0)))
    world.pods["job-r-0"] = PodBuilder("job-r-0").uid("foreign").controlled_by(None).running().obj()
    world.settle()
    rep = replica(world, "r")
    assert (rep.phase, rep.total_retried_count, rep.pod_reason) == (P.COMPLETED, 1, "PodNameConflict")
    assert world.events.count("PodNameConflict: Pod name conflict: job-r-0") == 2
    assert (role_status(world, "r").state, the_status(world).state) == (State.FAILED, State.FAILED)
    assert uid_of(world.pods["job-r-0"]) == "foreign"
    assert world.created_pods == []


# ----- action results: ControlUnit creates and deletes (T3, T10, W-24) --------------------------------------


def creating_unit() -> tuple[World, Pass, CreateControlUnit]:
    world = single()
    step = pass_once(world)
    plan = step.plan
    intent = plan.intents[0]
    assert isinstance(intent, CreateControlUnit)
    return world, step, intent


def test_control_unit_create_already_exists_adopts_ours() -> None:
    world, step, intent = creating_unit()
    plan = step.plan
    unit = control_unit("c-job-0", "cu-lost", world.ref.uid)
    step.fold(intent, ActionResult(ResultKind.EXISTS, view_of(intent, unit)))
    assert (plan.status.phase, plan.status.control_unit_uid) == (T.ATTEMPT_CREATION_REQUESTED, "cu-lost")


def test_control_unit_create_already_exists_waits_for_ours_going_away() -> None:
    world, step, intent = creating_unit()
    plan = step.plan
    unit = control_unit("c-job-0", "cu-old", world.ref.uid, deleting=True)
    step.fold(intent, ActionResult(ResultKind.EXISTS, view_of(intent, unit)))
    assert (plan.status.phase, plan.status.control_unit_uid) == (T.ATTEMPT_PENDING, None)
    assert plan.requeue_after == 10


def test_s56_control_unit_create_already_exists_foreign_is_a_name_conflict() -> None:
    _, step, intent = creating_unit()
    plan = step.plan
    unit = control_unit("c-job-0", "cu-foreign", None)
    step.fold(intent, ActionResult(ResultKind.EXISTS, view_of(intent, unit)))
    assert plan.status.phase == T.ATTEMPT_COMPLETED
    assert plan.status.phase_message == "ControlUnit name conflict: c-job-0"
    assert plan.status.control_unit_uid is None
    assert ("ControlUnitNameConflict", "ControlUnit name conflict: c-job-0") in events(plan)


def test_s56_a_control_unit_name_conflict_fails_the_attempt_and_the_retry_uses_the_next_name() -> None:
    world = World(TaskSetBuilder("cmconf").retry(True, 1, 0).role("r").obj())
    world.units["c-cmconf-0"] = control_unit("c-cmconf-0", "cu-foreign", None)
    world.settle()
    status = the_status(world)
    assert (status.phase, status.total_retried_count) == (T.ATTEMPT_PREPARING, 1)
    assert "ControlUnitNameConflict: ControlUnit name conflict: c-cmconf-0" in world.events
    assert uid_of(world.units["c-cmconf-0"]) == "cu-foreign"
    assert status.control_unit_uid == uid_of(world.units["c-cmconf-1"])


def test_s56_with_a_retry_delay_the_next_attempt_uses_the_next_name() -> None:
    world = World(TaskSetBuilder("cmconf").retry(True, 1, 5).role("r").obj())
    world.units["c-cmconf-0"] = control_unit("c-cmconf-0", "cu-foreign", None)
    world.settle()
    assert the_status(world).phase == T.ATTEMPT_RETRY_PENDING
    world.tick(5)
    world.settle()
    status = the_status(world)
    assert (status.phase, status.total_retried_count) == (T.ATTEMPT_PREPARING, 1)
    assert status.control_unit_uid == uid_of(world.units["c-cmconf-1"])
    assert uid_of(world.units["c-cmconf-0"]) == "cu-foreign"


def test_control_unit_create_invalid_fails_the_attempt() -> None:
    _, step, intent = creating_unit()
    plan = step.plan
    step.fold(intent, ActionResult(ResultKind.INVALID, message="bad"))
    assert plan.status.phase == T.ATTEMPT_COMPLETED
    assert ("ControlUnitCreationFailed", "bad") in events(plan)


def test_control_unit_create_transient_error_stays_and_backs_off() -> None:
    _, step, intent = creating_unit()
    plan = step.plan
    step.fold(intent, ActionResult(ResultKind.ERROR, message="etcd timeout"))
    assert (plan.status.phase, plan.status.control_unit_uid) == (T.ATTEMPT_PENDING, None)
    assert plan.backoff
    assert ("ControlUnitCreationFailed", "etcd timeout") in events(plan)


def ending_attempt() -> tuple[World, Pass, DeleteControlUnit]:
    world = running(single())
    world.exit("job-r-0", 0)
    world.reconcile()
    step = pass_once(world)
    plan = step.plan
    intent = next(i for i in plan.intents if isinstance(i, DeleteControlUnit))
    assert plan.status.phase == T.ATTEMPT_DELETION_PENDING
    return world, step, intent


@pytest.mark.parametrize(
    ("kind", "phase", "backoff"),
    [
        pytest.param(ResultKind.OK, T.ATTEMPT_DELETION_REQUESTED, False, id="an accepted delete moves on"),
        pytest.param(
            ResultKind.NOT_FOUND, T.ATTEMPT_DELETION_REQUESTED, False, id="an already gone unit moves on"
        ),
        pytest.param(
            ResultKind.ERROR, T.ATTEMPT_DELETION_PENDING, True, id="a failed delete stays and backs off"
        ),
    ],
)
def test_t10_control_unit_delete_results(kind: ResultKind, phase: T, backoff: bool) -> None:
    world, step, intent = ending_attempt()
    plan = step.plan
    assert intent == DeleteControlUnit("c-job-0", unit_uid(world), advances=True)
    step.fold(intent, ActionResult(kind))
    assert (plan.status.phase, plan.backoff) == (phase, backoff)


@pytest.mark.parametrize(
    ("kind", "phase", "backoff"),
    [
        pytest.param(ResultKind.OK, P.ATTEMPT_DELETION_REQUESTED, False, id="an accepted delete moves on"),
        pytest.param(
            ResultKind.NOT_FOUND, P.ATTEMPT_DELETION_REQUESTED, False, id="an already gone Pod moves on"
        ),
        pytest.param(
            ResultKind.ERROR, P.ATTEMPT_DELETION_PENDING, True, id="a failed delete stays and backs off"
        ),
    ],
)
def test_p9_pod_delete_results(kind: ResultKind, phase: P, backoff: bool) -> None:
    world = running(single())
    world.exit("job-r-0", 1)
    step = pass_once(world)
    plan = step.plan
    intent = plan.intents[0]
    assert intent == DeletePod("job-r-0", pod_uid(world, "job-r-0"), 0, 0, advances=True)
    assert plan.status.roles[0].replicas[0].phase == P.ATTEMPT_DELETION_PENDING
    step.fold(intent, ActionResult(kind))
    assert (plan.status.roles[0].replicas[0].phase, plan.backoff) == (phase, backoff)


# ----- adoption, previous Pods and strays (W-1, D1, P0, W-3d) -----------------------------------------------


def test_w1_a_control_unit_created_before_a_lost_status_write_is_adopted() -> None:
    world = single()
    world.reconcile()
    uid = unit_uid(world)
    world.status = None  # the status write was lost
    plan = decide_once(world)
    assert (plan.status.phase, plan.status.control_unit_uid) == (T.ATTEMPT_PREPARING, uid)
    assert not [i for i in plan.intents if isinstance(i, CreateControlUnit)]


def test_w1_a_pod_created_before_a_lost_status_write_is_adopted() -> None:
    world = preparing(single())
    uid = pod_uid(world, "job-r-0")
    replica(world, "r").phase = P.ATTEMPT_PENDING
    replica(world, "r").clear_pod()
    plan = decide_once(world)
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.pod_uid, rep.pod_name) == (P.ATTEMPT_PREPARING, uid, "job-r-0")
    assert creates(plan) == []


def test_a_next_attempts_pod_made_before_a_lost_retry_write_is_kept_and_adopted() -> None:
    # Found by the chaos suite's SIGKILLs: a controller started the retry (made the attempt-1 Pod) and died
    # before writing it; the next one, still reading attempt 0 with its old podUID, took the new Pod for a
    # duplicate and deleted it, then counted its disappearance as a second failure.
    world = retrying_replica(5)
    world.tick(5)
    world.pods["job-r-0"] = (
        PodBuilder("job-r-0")
        .uid("next")
        .controlled_by(unit_uid(world))
        .taskset(world.ref.uid)
        .attempt(1)
        .obj()
    )
    plan = decide_once(world)
    assert [i for i in plan.intents if isinstance(i, DeletePod)] == []
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.total_retried_count, rep.pod_uid) == (P.ATTEMPT_PREPARING, 1, "next")


def test_an_unrecorded_pod_being_deleted_is_waited_for_not_adopted() -> None:
    world = preparing(single())
    replica(world, "r").phase = P.ATTEMPT_PENDING
    replica(world, "r").clear_pod()
    world.pods["job-r-0"]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:01Z"
    plan = decide_once(world)
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.pod_uid, plan.intents) == (P.ATTEMPT_PENDING, None, [])


def test_p0_a_previous_attempts_pod_is_deleted_and_waited_for() -> None:
    world = control_unit_ready(single())
    world.pods["job-r-0"] = (
        PodBuilder("job-r-0").uid("old").controlled_by("cu-old").taskset(world.ref.uid).obj()
    )
    plan = decide_once(world)
    assert plan.intents == [DeletePod("job-r-0", "old", 0, 0, advances=False)]
    assert plan.status.roles[0].replicas[0].phase == P.ATTEMPT_PENDING
    assert plan.requeue_after == 10
    world.pods["job-r-0"]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:01Z"
    plan = decide_once(world)
    assert (plan.intents, plan.requeue_after) == ([], 10)
    del world.pods["job-r-0"]
    plan = decide_once(world)
    assert plan.intents == [CreatePod(0, 0, "job-r-0", 0, 0)]


def test_p0_an_orphaned_pod_of_this_taskset_is_not_a_conflict() -> None:
    world = control_unit_ready(single())
    world.pods["job-r-0"] = (
        PodBuilder("job-r-0").uid("orphan").controlled_by(None).taskset(world.ref.uid).obj()
    )
    plan = decide_once(world)
    assert plan.intents == [DeletePod("job-r-0", "orphan", 0, 0, advances=False)]
    assert "PodNameConflict" not in reasons(plan)


def test_a_duplicate_pod_of_the_current_control_unit_is_deleted() -> None:
    # Spec 5.3.1: a Pod controlled by the current ControlUnit whose UID differs from the recorded podUID is
    # deleted (UID precondition) and the replica treated as having no Pod. The role goes on (cp 2/2), so
    # nothing else would remove the duplicate.
    world = running(single(replicas=2, max_failed=2))
    world.pods["job-r-0"]["metadata"]["uid"] = "duplicate"
    plan = decide_once(world)
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.succeeded) == (P.COMPLETED, False)  # P11: the recorded Pod is gone
    assert plan.status.phase == T.ATTEMPT_RUNNING
    assert DeletePod("job-r-0", "duplicate", 0, 0, advances=False) in plan.intents


def test_t15_a_completed_taskset_deletes_a_stray_control_unit() -> None:
    world = running(single())
    world.exit("job-r-0", 0)
    world.settle()
    assert the_status(world).phase == T.COMPLETED
    world.units["c-job-0"] = control_unit("c-job-0", "cu-late", world.ref.uid)
    plan = decide_once(world)
    assert plan.intents == [DeleteControlUnit("c-job-0", "cu-late", advances=False)]
    assert plan.status.to_json() == the_status(world).to_json()


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


# ----- capturing Pod information (5.3.3) --------------------------------------------------------------------


def test_pod_information_is_captured_while_the_pod_is_observed() -> None:
    world = preparing(single())
    assign = {
        "phase": "Pending",
        "hostIP": "10.0.0.7",
        "podIP": "10.0.1.7",
        "startTime": "2026-01-01T00:00:03Z",
    }
    world.pods["job-r-0"]["status"] = assign
    step = pass_once(world)
    plan = step.plan
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.pod_ip, rep.pod_host_ip, rep.start_at) == (
        P.ATTEMPT_ASSIGNED,
        "10.0.1.7",
        "10.0.0.7",
        "2026-01-01T00:00:03Z",
    )
    assert [r.msg for r in plan.records if r.fields.get("QueryKey") == "PodHistory"] == [
        "TaskRole replica is assigned to node"
    ]
    execute(world, step)
    world.pods["job-r-0"]["status"] = (
        PodBuilder("x").exited(3, message="boom").reason("Evicted").obj()["status"]
    )
    plan = decide_once(world)
    rep = plan.status.roles[0].replicas[0]
    assert rep.phase == P.ATTEMPT_DELETION_PENDING
    assert rep.phase_message == "PodPhase:Failed ,PodMessage: ,PodReason: Evicted"
    assert (rep.pod_reason, rep.container_name, rep.container_id) == ("Evicted", "c0", "kwok://c0")
    assert rep.terminated_info == TerminatedInfo(3, "boom", 0, "Error")
    assert rep.finish_at == "2026-01-01T00:00:09Z"
    assert (rep.start_at, rep.pod_ip) == ("2026-01-01T00:00:03Z", "10.0.1.1")


# ----- policies through whole passes (6.1 to 6.3) ---------------------------------------------------------


BY_R_SUCCEEDED = "TaskSet completed beacause taskrole(r) is succeeded "
BY_R_FAILED = "TaskSet completed beacause taskrole(r) is failed"


@pytest.mark.parametrize(
    ("events", "code", "state", "message"),
    [
        pytest.param(
            [("RoleCompleted", "TaskSetCompleted")],
            0,
            State.SUCCEEDED,
            BY_R_SUCCEEDED,
            id="W-8 TaskSetCompleted after a success ends it Succeeded",
        ),
        pytest.param(
            [("RoleCompleted", "TaskSetCompleted")],
            1,
            State.FAILED,
            BY_R_FAILED,
            id="W-8 TaskSetCompleted after a failure ends it Failed",
        ),
        pytest.param(
            [("RoleSucceeded", "TaskSetFailed")],
            0,
            State.FAILED,
            BY_R_FAILED,
            id="S13 a sentinel's success fails it",
        ),
        pytest.param(
            [("RoleCompleted", "NoAction")],
            1,
            State.FAILED,
            "TaskSet failed beacause all taskrole are completed,but some TaskRole are failed",
            id="S10 RoleCompleted NoAction leaves the all-completed rule to fail it",
        ),
        pytest.param(
            None,
            0,
            State.SUCCEEDED,
            "TaskSet succeeded beacause all taskrole are succeeded",
            id="the default policy leaves success to the all-completed rule",
        ),
    ],
)
def test_the_event_policy_decides_the_attempt(
    events: list[tuple[str, str]] | None, code: int, state: State, message: str
) -> None:
    world = running(World(TaskSetBuilder("job").role("r", event_policy=events).obj()))
    world.exit("job-r-0", code)
    world.settle()
    status = the_status(world)
    assert (status.phase, status.state, status.state_message) == (T.COMPLETED, state, message)
    # With a TaskSet retry policy, only a failed attempt is retried.
    retrying = running(World(TaskSetBuilder("job").retry(True, 1, 60).role("r", event_policy=events).obj()))
    retrying.exit("job-r-0", code)
    retrying.settle()
    expected = T.ATTEMPT_RETRY_PENDING if state == State.FAILED else T.COMPLETED
    assert the_status(retrying).phase == expected


def test_w3c_rule_3_completes_a_role_whose_thresholds_cannot_be_met() -> None:
    world = running(single(replicas=3, min_succeeded=3, max_failed=2))
    for name, code in (("job-r-0", 0), ("job-r-1", 0), ("job-r-2", 1)):
        world.exit(name, code)
    world.settle()
    role = role_status(world, "r")
    assert (role.phase, role.state) == (R.COMPLETED, State.FAILED)
    assert role.state_message == (
        "All replicas completed but neither MinSucceeded nor MaxFailed was reached, "
        "succeeded count:2, failed count:1"
    )
    assert (the_status(world).phase, the_status(world).state) == (T.COMPLETED, State.FAILED)


def test_w3a_a_role_with_a_completed_replica_and_a_waiting_one_keeps_going() -> None:
    world = preparing(single(replicas=2, min_succeeded=2, max_failed=2))
    world.run("job-r-0")
    world.exit("job-r-0", 0)
    world.settle()  # r-1 stays Pending (unschedulable)
    assert [r.phase for r in role_status(world, "r").replicas] == [P.COMPLETED, P.ATTEMPT_PREPARING]
    assert role_status(world, "r").phase == R.RUNNING
    world.run("job-r-1")
    world.exit("job-r-1", 0)
    world.settle()
    assert (the_status(world).phase, the_status(world).state) == (T.COMPLETED, State.SUCCEEDED)


# ----- states and conditions (5.4, 2.5.1, W-9) --------------------------------------------------------------


def conditions(status: TaskSetStatus) -> list[tuple[str, str, str, str | None]]:
    return [(str(c.type), str(c.status), c.reason, c.last_transition_time) for c in status.conditions]


def test_w9_running_is_sticky_while_a_role_cleans_up() -> None:
    world = running(World(TaskSetBuilder("job").role("r", replicas=2, min_succeeded=1).obj()))
    world.pods["job-r-1"]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:01Z"  # slow to go
    world.exit("job-r-0", 0)
    world.tick(5)
    world.settle()
    status = the_status(world)
    assert status.roles[0].phase == R.CLEANING_PENDING
    assert (status.phase, status.state) == (T.ATTEMPT_RUNNING, State.RUNNING)
    assert conditions(status) == [("Running", "True", "Running", stamp_at(0))]
    assert not any("Pre:TaskSetAttemptRunning,Next:TaskSetAttemptPreparing" in e for e in world.events)


def test_the_state_follows_the_phase_through_a_successful_run() -> None:
    world = single()
    world.settle()
    for name in list(world.pods):
        world.run(name)
    world.tick(2)
    world.settle()
    world.exit("job-r-0", 0)
    world.tick(3)
    world.settle()
    seen = [message for plan in world.plans for message in transitions(plan)]
    status = the_status(world)
    assert (status.phase, status.state) == (T.COMPLETED, State.SUCCEEDED)
    assert status.start_at == stamp_at(2)
    assert status.finish_at == stamp_at(5)
    assert (
        status.phase_message
        == status.state_message
        == "TaskSet succeeded beacause all taskrole are succeeded"
    )
    assert conditions(status) == [
        ("Running", "False", "Succeeded", stamp_at(5)),
        ("Succeeded", "True", "Succeeded", stamp_at(5)),
    ]
    assert all(c.message == status.state_message and c.observed_generation == 1 for c in status.conditions)
    assert [e for e in world.events if not e.startswith(TRANSITION)] == [
        "TaskRole is running: TaskRole:r",
        "TaskSet is running: TaskSet:job",
        "TaskRole Succeeded: TaskRole:r, Reason:Completion policy MinSucceeded satisfied,succeeded count:1",
        "TaskSet Succeeded: TaskSet:job",
    ]
    assert seen == [
        "Pre:TaskSetValidation,Next:TaskSetAttemptPending",
        "Pre:TaskSetAttemptPending,Next:TaskSetAttemptCreationRequested",
        "Pre:TaskSetAttemptCreationRequested,Next:TaskSetAttemptPreparing",
        "Pre:TaskSetAttemptPreparing,Next:TaskSetAttemptRunning",
        "Pre:TaskSetAttemptRunning,Next:TaskSetAttemptDeletionPending",
        "Pre:TaskSetAttemptDeletionPending,Next:TaskSetAttemptDeletionRequested",
        "Pre:TaskSetAttemptDeletionRequested,Next:TaskSetCompleted",
    ]


def test_a_failed_run_ends_with_the_completion_reason_as_state_message() -> None:
    world = running(single())
    world.exit("job-r-0", 1)
    world.tick(4)
    world.settle()
    status = the_status(world)
    assert (status.phase, status.state) == (T.COMPLETED, State.FAILED)
    assert status.phase_message == "Retry is forbidden"
    assert status.state_message == "TaskSet completed beacause taskrole(r) is failed"
    assert conditions(status) == [
        ("Running", "False", "Failed", stamp_at(4)),
        ("Failed", "True", "Failed", stamp_at(4)),
    ]
    assert "TaskSet Failed: TaskSet:job" in world.events


def test_an_attempt_that_never_ran_stays_waiting_until_it_fails() -> None:
    world = single()
    world.reconcile()
    world.units.clear()
    world.tick(301)
    plan = decide_once(world)
    status = plan.status
    assert (status.phase, status.state, status.start_at) == (T.COMPLETED, State.FAILED, None)
    assert conditions(status) == [("Failed", "True", "Failed", stamp_at(301))]


def test_the_running_event_fires_once_per_attempt_and_start_at_is_kept() -> None:
    world = World(TaskSetBuilder("job").retry(True, 1, 0).role("r").obj())
    running(world)
    first_start = the_status(world).start_at
    world.exit("job-r-0", 1)
    world.tick(10)
    world.settle()
    world.run("job-r-0")
    world.tick(10)
    world.settle()
    status = the_status(world)
    assert (status.phase, status.total_retried_count) == (T.ATTEMPT_RUNNING, 1)
    assert status.start_at == first_start
    assert world.events.count("TaskSet is running: TaskSet:job") == 2
    assert conditions(status) == [("Running", "True", "Running", stamp_at(20))]


# ----- the status shape (2.5) -------------------------------------------------------------------------------


def keys(typed: Any) -> set[str]:
    return set(typed.__annotations__)


def assert_full_shape(raw: dict[str, Any]) -> None:
    assert set(raw) == keys(RawTaskSetStatus)
    for field in ("transitionTime", "createdAt"):
        assert TIMESTAMP.match(raw[field]), (field, raw[field])
    for field in ("startAt", "finishAt"):
        assert raw[field] is None or TIMESTAMP.match(raw[field]), (field, raw[field])
    for role in raw["roleStatus"]:
        assert set(role) == keys(RawRoleStatus)
        assert TIMESTAMP.match(role["transitionTime"])
        for rep in role["replicaStatus"]:
            assert set(rep) == keys(RawReplicaStatus)
            assert TIMESTAMP.match(rep["transitionTime"])
            if rep["terminatedInfo"] is not None:
                assert set(rep["terminatedInfo"]) == keys(RawTerminatedInfo)
    for condition in raw["conditions"]:
        assert set(condition) == {
            "type",
            "status",
            "reason",
            "message",
            "lastTransitionTime",
            "observedGeneration",
        }


def test_the_status_always_carries_every_key() -> None:
    world = World(
        TaskSetBuilder("job")
        .retry(True, 1, 0)
        .role("a", replicas=2, max_failed=2, retry=(True, 1, 0))
        .role("b")
        .obj()
    )
    shapes = []
    world.settle()
    first_unit = unit_uid(world)
    shapes.append(the_status(world).to_json())
    for name in list(world.pods):
        world.run(name)
    world.settle()
    world.exit("job-a-0", 1)
    world.settle()
    shapes.append(the_status(world).to_json())
    for name in ("job-a-0", "job-a-1", "job-b-0"):
        world.exit(name, 0)
    world.settle()
    shapes.append(the_status(world).to_json())
    for raw in shapes:
        assert_full_shape(raw)
    first = shapes[0]
    assert first["roleStatus"][0]["replicaStatus"][0]["podUID"] is not None
    assert (first["controlUnitUID"], first["startAt"], first["finishAt"]) == (first_unit, None, None)
    assert (first["preemptCount"], first["observedGeneration"]) == (0, 1)
    assert shapes[1]["roleStatus"][0]["replicaStatus"][0]["terminatedInfo"] is None  # retried: cleared
    last = shapes[2]
    assert last["phase"] == "TaskSetCompleted"
    assert last["roleStatus"][1]["replicaStatus"][0]["terminatedInfo"] == {
        "exitCode": 0,
        "exitMessage": "",
        "signal": 0,
        "reason": "Completed",
    }


def test_the_status_round_trips_through_json() -> None:
    world = running(World(TaskSetBuilder("job").role("a", replicas=2).role("b").obj()))
    raw = the_status(world).to_json()
    again = TaskSetStatus.from_json(copy.deepcopy(raw))
    assert again is not None
    assert again.to_json() == raw


# ----- purity and idempotence -------------------------------------------------------------------------------


def lifecycle_points() -> list[Any]:
    def fresh(world: World) -> None:
        pass

    def unit_visible(world: World) -> None:
        world.reconcile()

    def pods_running(world: World) -> None:
        running(world)

    def pod_exited(world: World) -> None:
        running(world)
        world.exit("job-r-0", 1)

    def pod_gone(world: World) -> None:
        running(world)
        world.exit("job-r-0", 1)
        world.reconcile()

    def role_decided(world: World) -> None:
        running(world)
        world.exit("job-r-0", 0)
        world.exit("job-r-1", 0)
        world.reconcile()

    def unit_gone(world: World) -> None:
        role_decided(world)
        world.reconcile()
        world.gc()

    def retry_due(world: World) -> None:
        unit_gone(world)
        world.reconcile()
        world.tick(60)

    return [
        pytest.param(fresh, id="a new TaskSet"),
        pytest.param(unit_visible, id="the ControlUnit just appeared"),
        pytest.param(pods_running, id="every Pod runs"),
        pytest.param(pod_exited, id="a Pod exited"),
        pytest.param(pod_gone, id="a deleted Pod is gone"),
        pytest.param(role_decided, id="the role was decided"),
        pytest.param(unit_gone, id="the ControlUnit is gone"),
        pytest.param(retry_due, id="a TaskSet retry is due"),
    ]


def idempotence_world() -> World:
    return World(
        TaskSetBuilder("job").retry(True, 1, 60).role("r", replicas=2, max_failed=2, retry=(True, 1, 0)).obj()
    )


@pytest.mark.parametrize("reach", lifecycle_points())
def test_decide_is_a_pure_function_of_its_inputs(reach: Callable[[World], None]) -> None:
    world = idempotence_world()
    reach(world)
    recorded = copy.deepcopy(world.status)
    observed = world.observed()
    live = parse_taskset(world.taskset)
    one = decide(world.ref, live, world.status, observed, world.now).plan
    two = decide(world.ref, live, world.status, observed, world.now).plan
    assert one.status.to_json() == two.status.to_json()
    assert (one.intents, one.events, one.records, one.requeue_after) == (
        two.intents,
        two.events,
        two.records,
        two.requeue_after,
    )
    assert (world.status.to_json() if world.status else None) == (recorded.to_json() if recorded else None)


@pytest.mark.parametrize("reach", lifecycle_points())
def test_deciding_again_on_the_same_snapshot_after_the_results_changes_nothing(
    reach: Callable[[World], None],
) -> None:
    """The cache lags behind the controller's own writes: a second pass over the same snapshot, starting
    from the first pass's status (results folded in), must repeat no action and change nothing."""
    world = idempotence_world()
    reach(world)
    observed = world.observed()
    live = parse_taskset(world.taskset)
    step = decide(world.ref, live, world.status, observed, world.now)
    first = step.plan
    for intent in first.intents:
        result = world._execute(intent, first)
        step.fold(intent, result)
        if isinstance(intent, CreateControlUnit) and result.kind == ResultKind.OK:
            # The reconciler shows a ControlUnit it created until its cache does (its created-units overlay).
            assert isinstance(result.view, ControlUnitView)
            observed = replace(observed, control_unit=result.view)
    second = decide(world.ref, live, first.status, observed, world.now).plan
    assert second.status.to_json() == first.status.to_json()
    assert (second.intents, second.events) == ([], [])


def test_a_settled_world_is_a_fixed_point() -> None:
    world = running(idempotence_world())
    plan = decide_once(world)
    assert plan.status.to_json() == the_status(world).to_json()
    assert (plan.intents, plan.events, plan.records) == ([], [], [])


def test_observed_generation_follows_the_taskset() -> None:
    world = running(single())
    world.taskset["metadata"]["generation"] = 4
    plan = decide_once(world)
    assert plan.status.observed_generation == 4


def test_decide_does_not_mutate_its_observed_snapshot_or_spec() -> None:
    world = running(single())
    world.exit("job-r-0", 0)
    observed = world.observed()
    before = (copy.deepcopy(world.taskset), repr(observed))
    decide(world.ref, parse_taskset(world.taskset), world.status, observed, world.now)
    assert (world.taskset, repr(observed)) == before


def test_a_taskset_ref_and_settings_are_plain_values() -> None:
    assert Settings().cache_creation_timeout == 300
    assert Settings().cache_wait_requeue == 10
    ref = TaskSetRef("job", "ns", "uid", 1, False)
    assert Observed(control_unit=None).pods == {}
    assert control_unit_view(control_unit("c-job-0", "cu", "uid"), "spec.json").controller_uid == "uid"
    assert pod_view(PodBuilder("job-r-0").obj()).phase == "Pending"
    assert decide(
        ref, parse_taskset(TaskSetBuilder("job").obj()), None, Observed(None), START
    ).plan.status.phase == (T.ATTEMPT_PENDING)
