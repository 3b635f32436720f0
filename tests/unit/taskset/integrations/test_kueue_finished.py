"""A queued TaskSet's Workload once its attempt ends: marked ``Finished`` as Kueue's
jobframework marks a job's (reason Succeeded or Failed, the outcome's words), kept until the TaskSet
is deleted (the TaskSet owns it, not the attempt's ControlUnit), never applied twice; a retried
attempt's finished Workload is deleted once the next attempt is there."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.decide import ApplyOwnedStatus, Settings
from taskset.integrations import BUILT_IN, Framework
from taskset.integrations.kueue import QUEUE_LABEL, WORKLOADS, KueueWorkload
from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import World

pytestmark = pytest.mark.unit


def admit(world: World, attempt: int) -> None:
    world.owned[(WORKLOADS.key, f"taskset-job-{attempt}")]["status"] = {
        "conditions": [{"type": "Admitted", "status": "True"}],
        "admission": {"podSetAssignments": [{"name": "r"}]},
    }
    world.settle()


def queued(retries: int = 0) -> World:
    builder = TaskSetBuilder("job").role("r", 1)
    obj = (builder.retry(True, retries) if retries else builder).obj()
    obj["metadata"]["labels"] = {QUEUE_LABEL: "team"}
    world = World(obj, settings=Settings(framework=Framework((*BUILT_IN, KueueWorkload()))))
    world.settle()
    admit(world, 0)
    return world


def finished(world: World, attempt: int) -> dict[str, Any] | None:
    conditions = world.owned[(WORKLOADS.key, f"taskset-job-{attempt}")]["status"]["conditions"]
    return next((c for c in conditions if c["type"] == "Finished"), None)


@pytest.mark.parametrize(
    ("code", "reason"),
    [pytest.param(0, "Succeeded", id="succeeded"), pytest.param(3, "Failed", id="failed")],
)
def test_the_workload_of_an_ended_taskset_is_finished_and_stays(code: int, reason: str) -> None:
    world = queued()
    world.exit("job-r-0", code)
    world.settle()
    world.gc()
    world.settle()
    assert world.status is not None and world.status.state == reason
    assert world.units == {}, "the attempt's ControlUnit is gone"
    condition = finished(world, 0)
    assert condition is not None
    assert (condition["status"], condition["reason"]) == ("True", reason)
    assert world.status.attempt_result is not None
    assert condition["message"] == world.status.attempt_result.reason != ""
    assert condition["lastTransitionTime"].startswith("2026-01-01T")
    others = {c["type"] for c in world.owned[(WORKLOADS.key, "taskset-job-0")]["status"]["conditions"]}
    assert others == {"Admitted", "Finished"}, "Kueue's conditions stay"
    applies = [i for plan in world.plans[-3:] for i in plan.intents if isinstance(i, ApplyOwnedStatus)]
    assert applies == [], "applied once: the cache shows it Finished"


def test_a_retried_attempts_workload_is_finished_then_deleted_when_the_next_is_there() -> None:
    world = queued(retries=1)
    world.exit("job-r-0", 1)
    world.settle()
    world.gc()
    world.settle()
    assert world.status is not None and world.status.total_retried_count == 1
    assert (WORKLOADS.key, "taskset-job-1") in world.owned, "the next attempt queues anew"
    assert (WORKLOADS.key, "taskset-job-0") not in world.owned, "the finished one is deleted"
    finishes = [i.name for plan in world.plans for i in plan.intents if isinstance(i, ApplyOwnedStatus)]
    assert finishes == ["taskset-job-0"], "it was marked Finished before it went"
    admit(world, 1)
    world.exit("job-r-0", 0)
    world.settle()
    world.gc()
    world.settle()
    assert world.status.state == "Succeeded"
    condition = finished(world, 1)
    assert condition is not None and condition["reason"] == "Succeeded"
