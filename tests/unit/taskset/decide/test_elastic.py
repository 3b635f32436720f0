"""Elastic roles: a running attempt takes a change of ``roles[].replicas`` through its status,
never by rewriting its snapshot; whole passes in the in-memory World, and the pure resize rule."""

from __future__ import annotations

import pytest

from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import State
from taskset.api.constants import TaskSetPhase as T
from taskset.api.spec import ParsedTaskSet, ValidationFailure, parse_taskset, thresholds
from taskset.api.status import ReplicaStatus, RoleStatus
from taskset.decide.elastic import only_replicas_differ, resize
from taskset.integrations.start_order import Dependency, Until, required
from taskset.observed.slim import snapshot_digest
from tests.builders import TaskSetBuilder
from tests.unit.taskset.decide.scenes import running, the_status
from tests.unit.taskset.world import World, role_status

pytestmark = pytest.mark.unit


def elastic(replicas: int, **role: object) -> World:
    return World(TaskSetBuilder("job").role("r", replicas, **role).obj())


def scale(world: World, replicas: int) -> None:
    world.taskset["spec"]["roles"][0]["replicas"] = replicas
    world.settle()


def scaled_events(world: World) -> list[str]:
    return [e for e in world.events if e.startswith("TaskRoleScaled")]


# ----- the spec ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "problem"),
    [
        pytest.param({"replicas": 2, "minReplicas": 3}, "must be at least minReplicas (3)", id="below min"),
        pytest.param({"replicas": 5, "maxReplicas": 4}, "must be at most maxReplicas (4)", id="above max"),
        pytest.param({"replicas": 2, "maxReplicas": 0}, "between 1 and", id="a bound below 1"),
        pytest.param({"replicas": 2, "minReplicas": "2"}, "between 1 and", id="a bound that is no number"),
        pytest.param(
            {"replicas": 2, "completionPolicy": {"minSucceeded": 5}, "maxReplicas": 4},
            "MinSucceeded cannot be bigger",
            id="a threshold above maxReplicas",
        ),
    ],
)
def test_bounds_outside_which_a_spec_is_illegal(role: dict[str, object], problem: str) -> None:
    parsed = parse_taskset({"metadata": {"name": "job"}, "spec": {"roles": [{"name": "r", **role}]}})
    assert isinstance(parsed, ValidationFailure) and problem in parsed.message


def test_an_explicit_threshold_may_reach_max_replicas_and_is_clamped_to_the_count() -> None:
    raw = {"name": "r", "replicas": 2, "maxReplicas": 4, "completionPolicy": {"minSucceeded": 3}}
    parsed = parse_taskset({"metadata": {"name": "job"}, "spec": {"roles": [raw]}})
    assert isinstance(parsed, ParsedTaskSet)
    role = parsed.spec.roles[0]
    assert (role.completion_policy.min_succeeded, role.scaled(4).completion_policy.min_succeeded) == (2, 3)
    assert role.scaled(9).replicas == 4 and role.scaled(0).replicas == 1  # clamped to the bounds


@pytest.mark.parametrize(
    ("declared", "replicas", "expected"),
    [
        pytest.param((None, None), 5, (5, 1), id="absent minSucceeded follows the count"),
        pytest.param((3, 2), 2, (2, 2), id="explicit thresholds above the count are clamped"),
        pytest.param((3, 2), 6, (3, 2), id="explicit thresholds below the count stay"),
    ],
)
def test_thresholds(
    declared: tuple[int | None, int | None], replicas: int, expected: tuple[int, int]
) -> None:
    policy = thresholds(*declared, replicas)
    assert (policy.min_succeeded, policy.max_failed) == expected


@pytest.mark.parametrize(
    ("live", "differ_only_in_replicas"),
    [
        pytest.param({"roles": [{"name": "r", "replicas": 5}]}, True, id="replicas only"),
        pytest.param({"roles": [{"name": "r", "replicas": 5, "x": 1}]}, False, id="and another field"),
        pytest.param({"roles": [{"name": "s", "replicas": 2}]}, False, id="a renamed role"),
        pytest.param({"roles": [{"name": "r", "replicas": 2}], "queue": "q"}, False, id="a top-level field"),
    ],
)
def test_only_replicas_differ(live: dict[str, object], differ_only_in_replicas: bool) -> None:
    assert only_replicas_differ({"roles": [{"name": "r", "replicas": 2}]}, live) is differ_only_in_replicas


# ----- the pure resize rule ------------------------------------------------------------------------------


def role_of(*phases: tuple[P, bool]) -> RoleStatus:
    replicas = [
        ReplicaStatus(i, "r", phase=phase, stopped=stopped) for i, (phase, stopped) in enumerate(phases)
    ]
    return RoleStatus("r", replicas)


RUN, DONE = (P.ATTEMPT_RUNNING, False), (P.COMPLETED, False)
STOPPING, STOPPED = (P.ATTEMPT_DELETION_REQUESTED, True), (P.COMPLETED, True)


@pytest.mark.parametrize(
    ("before", "target", "after"),
    [
        pytest.param(
            [RUN], 3, [RUN, (P.ATTEMPT_PENDING, False), (P.ATTEMPT_PENDING, False)], id="up appends"
        ),
        pytest.param(
            [RUN, RUN, RUN], 1, [RUN, (P.ATTEMPT_RUNNING, True), (P.ATTEMPT_RUNNING, True)], id="down"
        ),
        pytest.param([RUN, STOPPED, STOPPED], 1, [RUN], id="the stopped completed tail is dropped"),
        pytest.param(
            [RUN, DONE], 1, [RUN], id="a completed replica above the target is dropped, not counted"
        ),
        pytest.param([RUN, STOPPING], 2, [RUN, STOPPING], id="an index still going away waits"),
        pytest.param(
            [RUN, STOPPED, STOPPING],
            2,
            [RUN, (P.ATTEMPT_PENDING, False), STOPPING],
            id="a gone one comes back",
        ),
    ],
)
def test_resize(before: list[tuple[P, bool]], target: int, after: list[tuple[P, bool]]) -> None:
    status = role_of(*before)
    resize(status, target, "t")
    assert [(r.phase, r.stopped) for r in status.replicas] == after
    assert [r.index for r in status.replicas] == list(range(len(after)))


# ----- whole passes --------------------------------------------------------------------------------------


def test_scale_up_during_running_creates_the_new_indices_in_the_same_attempt() -> None:
    world = running(elastic(2))
    digest = the_status(world).spec_digest
    scale(world, 4)
    status = the_status(world)
    assert sorted(world.pods) == [f"job-r-{i}" for i in range(4)]
    assert status.total_retried_count == 0 and status.spec_digest == digest  # no new attempt, no tampering
    assert role_status(world, "r").target_replicas == 4
    last = role_status(world, "r").last_scale
    assert last is not None and (last.before, last.after) == (2, 4)
    assert scaled_events(world) == ["TaskRoleScaled: TaskRole:r, replicas 2 -> 4"]
    for name in world.pods:
        world.exit(name, 0)
    world.settle()
    assert the_status(world).state == State.SUCCEEDED


def test_scale_down_stops_the_highest_indices_without_failing_or_retrying_them() -> None:
    world = running(elastic(3, retry=(True, 5, 0)))
    scale(world, 1)
    assert sorted(world.pods) == ["job-r-0"]
    role = role_status(world, "r")
    assert [r.index for r in role.replicas] == [0] and role.state == State.RUNNING
    assert all(r.total_retried_count == 0 for r in role.replicas)
    world.exit("job-r-0", 0)
    world.settle()
    assert the_status(world).state == State.SUCCEEDED


def test_a_scale_that_decides_the_outcome_decides_it_at_once() -> None:
    world = running(elastic(3))
    world.exit("job-r-0", 0)
    world.settle()
    assert the_status(world).phase == T.ATTEMPT_RUNNING
    scale(world, 1)  # minSucceeded follows replicas: one success is enough now
    assert the_status(world).state == State.SUCCEEDED


def test_an_explicit_min_succeeded_is_clamped_to_a_smaller_count() -> None:
    world = running(elastic(4, min_succeeded=3, maxReplicas=4))
    world.exit("job-r-0", 0)
    world.exit("job-r-1", 0)
    world.settle()
    assert the_status(world).phase == T.ATTEMPT_RUNNING
    scale(world, 2)
    assert the_status(world).state == State.SUCCEEDED


def test_an_index_that_comes_back_is_a_new_instance_once_the_old_pod_is_gone() -> None:
    world = running(elastic(2))
    scale(world, 1)
    old = len(world.created_pods)
    scale(world, 2)
    assert len(world.created_pods) == old + 1
    replica = role_status(world, "r").replicas[1]
    assert (replica.total_retried_count, replica.stopped) == (0, False)


def test_another_edit_with_a_replicas_change_waits_for_the_next_attempt() -> None:
    world = running(elastic(2))
    world.taskset["spec"]["roles"][0]["template"]["metadata"] = {"labels": {"edited": "yes"}}
    scale(world, 4)
    assert sorted(world.pods) == ["job-r-0", "job-r-1"] and scaled_events(world) == []
    assert role_status(world, "r").target_replicas is None


def test_a_scale_after_the_taskset_completed_changes_nothing() -> None:
    world = running(elastic(1))
    world.exit("job-r-0", 0)
    world.settle()
    before = the_status(world).to_json()
    scale(world, 3)
    assert the_status(world).to_json() == before and scaled_events(world) == []


def test_the_snapshot_is_never_rewritten_by_a_scale() -> None:
    world = running(elastic(2))
    text = world.units["c-job-0"]["data"]["spec.json"]
    scale(world, 3)
    assert world.units["c-job-0"]["data"]["spec.json"] == text
    assert the_status(world).spec_digest == snapshot_digest(text)


# ----- thresholds and start order against a scaled role -------------------------------------------------


@pytest.mark.parametrize(
    ("completion", "count", "expected"),
    [
        pytest.param({"minSucceeded": "50%"}, 6, (3, 1), id="a percentage is re-read at the new count"),
        pytest.param({"minSucceeded": "50%", "maxFailed": "25%"}, 8, (4, 2), id="both, rounded up"),
        pytest.param({"minSucceeded": "50%"}, 1, (1, 1), id="never below 1"),
        pytest.param({"minSucceeded": 2}, 6, (2, 1), id="a count stays"),
        pytest.param({"minSucceeded": 2}, 1, (1, 1), id="a count is clamped"),
    ],
)
def test_a_scaled_roles_thresholds(
    completion: dict[str, object], count: int, expected: tuple[int, int]
) -> None:
    raw = {"name": "r", "replicas": 2, "maxReplicas": 8, "completionPolicy": completion}
    parsed = parse_taskset({"metadata": {"name": "job"}, "spec": {"roles": [raw]}})
    assert isinstance(parsed, ParsedTaskSet)
    policy = parsed.spec.roles[0].scaled(count).completion_policy
    assert (policy.min_succeeded, policy.max_failed) == expected


@pytest.mark.parametrize(
    ("until", "minimum", "count", "needed"),
    [
        pytest.param(Until.RUNNING, None, 4, 4, id="by default every replica it has now"),
        pytest.param(Until.RUNNING, 3, 2, 2, id="an explicit minReplicas is clamped to the count"),
        pytest.param(Until.RUNNING, 3, 4, 3, id="an explicit minReplicas below the count stays"),
        pytest.param(Until.SUCCEEDED, None, 6, 6, id="Succeeded: its minSucceeded at the count"),
    ],
)
def test_depends_on_counts_against_the_scaled_role(
    until: Until, minimum: int | None, count: int, needed: int
) -> None:
    raw = {"name": "r", "replicas": 2, "maxReplicas": 8}
    parsed = parse_taskset({"metadata": {"name": "job"}, "spec": {"roles": [raw]}})
    assert isinstance(parsed, ParsedTaskSet)
    assert required(Dependency("r", until, minimum), parsed.spec.roles[0].scaled(count)) == needed


def test_a_pod_at_an_index_the_scaled_role_no_longer_lists_is_deleted() -> None:
    """A scaled-down replica with no recorded Pod completes and leaves the list at once; a Pod its create
    made just before the controller died (unrecorded, W-1) must not run on with no replica to look at it."""
    world = running(elastic(2, maxReplicas=4))
    scale(world, 3)
    world.run("job-r-2")
    world.settle()
    role = role_status(world, "r")
    role.replicas.pop()  # as if index 2 had been dropped while its Pod was not recorded
    role.target_replicas = 2
    world.taskset["spec"]["roles"][0]["replicas"] = 2
    world.settle()
    assert sorted(world.pods) == ["job-r-0", "job-r-1"]
    assert the_status(world).total_retried_count == 0
