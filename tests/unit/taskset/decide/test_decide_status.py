"""What a pass writes: states and conditions (2.5.1, 5.4, W-9), the status shape (2.5), and that
decide is pure and idempotent over an unchanged snapshot."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from taskset.api.compact import ROWS
from taskset.api.constants import RolePhase as R
from taskset.api.constants import State
from taskset.api.constants import TaskSetPhase as T
from taskset.api.raw import RawReplicaStatus, RawRoleStatus, RawTaskSetStatus, RawTerminatedInfo
from taskset.api.spec import parse_taskset
from taskset.api.status import TaskSetStatus
from taskset.decide import (
    CreateOwned,
    ResultKind,
    Settings,
    TaskSetRef,
    decide,
)
from taskset.observed.views import ControlUnitView, Observed, OwnedView, control_unit_view, pod_view
from tests.builders import TaskSetBuilder
from tests.unit.taskset.decide.scenes import (
    START,
    TIMESTAMP,
    TRANSITION,
    running,
    single,
    stamp_at,
    the_status,
    transitions,
    unit_uid,
)
from tests.unit.taskset.world import (
    PodBuilder,
    World,
    control_unit,
    decide_once,
)

pytestmark = pytest.mark.unit


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
    """The keys the full shape always carries: all but the compact shape's."""
    return set(typed.__annotations__) - {ROWS}


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
        if isinstance(intent, CreateOwned) and result.kind == ResultKind.OK and intent.control_unit:
            # The reconciler shows a ControlUnit it created until its cache does (its created-units overlay).
            assert isinstance(result.view, ControlUnitView)
            observed = replace(observed, control_unit=result.view)
        elif isinstance(intent, CreateOwned) and result.kind == ResultKind.OK:
            # An integration's object: the reconciler's next pass waits for the cache to show it.
            assert isinstance(result.view, OwnedView)
            owned = {**observed.owned, (intent.kind.key, intent.name): result.view}
            observed = replace(observed, owned=owned)
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
