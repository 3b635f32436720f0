"""The role machine through whole passes: the frozen role outcome (S58, W-6), stopping every unfinished
replica of a completed role (W-5, spec 6.4) and the policies that decide roles and attempts (6.1 to
6.3)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import RolePhase as R
from taskset.api.constants import State
from taskset.api.constants import TaskSetPhase as T
from taskset.api.status import TerminatedInfo
from taskset.decide import (
    CreatePod,
    DeletePod,
)
from tests.builders import TaskSetBuilder
from tests.unit.taskset.decide.scenes import (
    creates,
    events,
    preparing,
    running,
    single,
    stamp_at,
    the_status,
)
from tests.unit.taskset.world import (
    World,
    decide_once,
    execute,
    pass_once,
    replica,
    role_status,
)

pytestmark = pytest.mark.unit


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
