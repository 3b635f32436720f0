"""Whole lifecycles through the pure decision functions, pass by pass, in an in-memory world."""

from __future__ import annotations

from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import World


def phases(world: World) -> tuple[str, ...]:
    assert world.status is not None
    return (
        str(world.status.phase),
        *(str(role.phase) for role in world.status.roles),
        *(str(r.phase) for role in world.status.roles for r in role.replicas),
    )


def test_a_single_role_runs_to_success() -> None:
    world = World(TaskSetBuilder("single").role("r", replicas=1).obj())
    world.settle()
    assert phases(world) == ("TaskSetAttemptPreparing", "TaskRoleWaiting", "TaskRoleReplicaAttemptPreparing")
    world.run("single-r-0")
    world.settle()
    assert phases(world) == ("TaskSetAttemptRunning", "TaskRoleRunning", "TaskRoleReplicaAttemptRunning")
    world.exit("single-r-0", 0)
    world.settle()
    status = world.status
    assert status is not None
    assert phases(world) == ("TaskSetCompleted", "TaskRoleCompleted", "TaskRoleReplicaCompleted")
    assert status.state == "Succeeded"
    assert world.pods == {} and world.units == {}
    print("\n".join(world.events))
    print(status.to_json())
