"""Start order: dependsOn's checks name the field, and its gate holds a role's Pods
until the roles it depends on have reached the point, saying what it waits for, in every attempt."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.api.constants import EventReason
from taskset.api.constants import ReplicaPhase as P
from taskset.api.spec import ValidationFailure, parse_taskset
from taskset.decide import CreatePod
from taskset.integrations import BUILT_IN, Framework
from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import World, replica

pytestmark = pytest.mark.unit


def rl(depends: list[dict[str, Any]], *, learners: int = 2) -> dict[str, Any]:
    """A learner and a collector that depends on it as given."""
    return TaskSetBuilder("rl").role("learner", learners).role("collector", 1, dependsOn=depends).obj()


@pytest.mark.parametrize(
    ("depends", "field", "message"),
    [
        pytest.param("learner", "spec.roles[1].dependsOn", "must be a list", id="a string"),
        pytest.param([{"role": "learner"}] * 17, "spec.roles[1].dependsOn", "at most 16", id="too many"),
        pytest.param(["learner"], "spec.roles[1].dependsOn[0]", "must be an object", id="an entry string"),
        pytest.param([{}], "spec.roles[1].dependsOn[0].role", "must name another role", id="no role"),
        pytest.param(
            [{"role": "ghost"}], "spec.roles[1].dependsOn[0].role", "must name another", id="unknown"
        ),
        pytest.param([{"role": "collector"}], "spec.roles[1].dependsOn[0].role", "itself", id="itself"),
        pytest.param(
            [{"role": "learner"}, {"role": "learner"}],
            "spec.roles[1].dependsOn[1].role",
            "role learner is named twice",
            id="twice",
        ),
        pytest.param(
            [{"role": "learner", "until": "Started"}],
            "spec.roles[1].dependsOn[0].until",
            "must be one of Running, Ready, Succeeded",
            id="an unknown point",
        ),
        pytest.param(
            [{"role": "learner", "minReplicas": 3}],
            "spec.roles[1].dependsOn[0].minReplicas",
            "between 1 and the replicas of role learner",
            id="more than the role has",
        ),
        pytest.param(
            [{"role": "learner", "minReplicas": 0}],
            "spec.roles[1].dependsOn[0].minReplicas",
            "between 1 and",
            id="zero",
        ),
        pytest.param(
            [{"role": "learner", "minReplicas": True}],
            "spec.roles[1].dependsOn[0].minReplicas",
            "between 1 and",
            id="a boolean",
        ),
    ],
)
def test_a_bad_depends_on_is_illegal_naming_the_field(depends: Any, field: str, message: str) -> None:
    result = parse_taskset(rl(depends), Framework(BUILT_IN).spec_checks())
    assert isinstance(result, ValidationFailure)
    assert (result.field, message in result.message) == (field, True), result.message


@pytest.mark.parametrize(
    ("edges", "field", "cycle"),
    [
        pytest.param({"a": ["b"], "b": ["a"]}, "spec.roles[0].dependsOn", "a -> b -> a", id="two"),
        pytest.param(
            {"a": [], "b": ["c"], "c": ["d"], "d": ["b"]},
            "spec.roles[1].dependsOn",
            "b -> c -> d -> b",
            id="three",
        ),
    ],
)
def test_a_cycle_is_illegal_naming_where_it_starts(
    edges: dict[str, list[str]], field: str, cycle: str
) -> None:
    builder = TaskSetBuilder("job")
    for name, targets in edges.items():
        builder.role(name, 1, dependsOn=[{"role": t} for t in targets])
    result = parse_taskset(builder.obj(), Framework(BUILT_IN).spec_checks())
    assert isinstance(result, ValidationFailure)
    assert result.field == field
    assert result.message == f"{field}: the roles {cycle} depend on one another in a cycle"


def test_a_diamond_is_no_cycle() -> None:
    builder = TaskSetBuilder("job").role("a", 1).role("b", 1, dependsOn=[{"role": "a"}])
    builder.role("c", 1, dependsOn=[{"role": "a"}]).role("d", 1, dependsOn=[{"role": "b"}, {"role": "c"}])
    assert not isinstance(parse_taskset(builder.obj(), Framework(BUILT_IN).spec_checks()), ValidationFailure)


def created(world: World) -> list[str]:
    return [i.name for plan in world.plans for i in plan.intents if isinstance(i, CreatePod)]


def test_the_dependent_role_waits_until_enough_replicas_run_and_says_so() -> None:
    world = World(rl([{"role": "learner", "until": "Running", "minReplicas": 2}]))
    world.settle()
    assert created(world) == ["rl-learner-0", "rl-learner-1"]
    held = replica(world, "collector")
    assert (held.phase, held.phase_message) == (
        P.ATTEMPT_PENDING,
        "Held: waiting for role learner to be Running (0/2)",
    )
    assert "TaskRoleHeld: TaskRole:collector: waiting for role learner to be Running (0/2)" in world.events
    world.run("rl-learner-0")
    world.settle()
    assert replica(world, "collector").phase_message == "Held: waiting for role learner to be Running (1/2)"
    world.run("rl-learner-1")
    world.settle()
    assert created(world)[-1] == "rl-collector-0"
    assert replica(world, "collector").phase != P.ATTEMPT_PENDING


def test_ready_waits_for_the_ready_condition() -> None:
    world = World(rl([{"role": "learner", "until": "Ready", "minReplicas": 1}]))
    world.settle()
    world.run("rl-learner-0")
    world.settle()
    assert replica(world, "collector").phase_message == "Held: waiting for role learner to be Ready (0/1)"
    world.pods["rl-learner-0"]["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    world.settle()
    assert "rl-collector-0" in created(world)


def test_succeeded_waits_for_exits_with_zero() -> None:
    world = World(rl([{"role": "learner", "until": "Succeeded"}], learners=1))
    world.settle()
    world.run("rl-learner-0")
    world.settle()
    assert replica(world, "collector").phase_message == "Held: waiting for role learner to be Succeeded (0/1)"
    world.exit("rl-learner-0", 0)
    world.settle()
    assert "rl-collector-0" in created(world)


def test_events_name_the_role_held() -> None:
    world = World(rl([{"role": "learner"}], learners=1))
    world.settle()
    held = [e for plan in world.plans for e in plan.events if e.reason == EventReason.ROLE_HELD]
    assert [e.message for e in held] == ["TaskRole:collector: waiting for role learner to be Running (0/1)"]


def test_a_role_that_depends_on_a_later_one_is_looked_at_again_once_the_pass_opens_its_gate() -> None:
    """The launcher is asked before its workers move in the pass; no watch event follows the controller's
    own status write, so the pass asks for the next one at once."""
    world = World(
        TaskSetBuilder("mpi").role("launcher", 1, dependsOn=[{"role": "worker"}]).role("worker", 1).obj()
    )
    world.settle()
    world.run("mpi-worker-0")
    plan = world.reconcile()
    assert replica(world, "launcher").phase == P.ATTEMPT_PENDING
    assert plan.requeue_after == 0
    world.reconcile()
    assert created(world)[-1] == "mpi-launcher-0"


def test_a_gate_that_stays_closed_asks_for_no_pass() -> None:
    world = World(rl([{"role": "learner"}], learners=2))
    world.settle()
    world.run("rl-learner-0")
    plan = world.reconcile()
    assert replica(world, "collector").phase_message == "Held: waiting for role learner to be Running (1/2)"
    assert plan.requeue_after != 0
