"""Kueue's partial admission: a role that declares ``minReplicas`` below its replicas
asks for that ``minCount``; admitted with fewer, it runs with the admitted count as if scaled to it
(its completion threshold follows), and a live scale cannot take it past what Kueue admitted."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.decide import Settings
from taskset.integrations import BUILT_IN, Framework
from taskset.integrations.kueue import QUEUE_LABEL, WORKLOADS, KueueWorkload
from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import World

pytestmark = pytest.mark.unit
KEY = (WORKLOADS.key, "taskset-job-0")


def queued(**bounds: Any) -> World:
    obj = TaskSetBuilder("job").role("ps", 1).role("worker", 4, **bounds).obj()
    obj["metadata"]["labels"] = {QUEUE_LABEL: "team"}
    world = World(obj, settings=Settings(framework=Framework((*BUILT_IN, KueueWorkload()))))
    world.settle()
    return world


def admit(world: World, workers: int) -> None:
    world.owned[KEY]["status"] = {
        "conditions": [{"type": "Admitted", "status": "True"}],
        "admission": {
            "podSetAssignments": [{"name": "ps", "count": 1}, {"name": "worker", "count": workers}]
        },
    }
    world.settle()


@pytest.mark.parametrize(
    ("bounds", "min_count"),
    [
        pytest.param({"minReplicas": 2}, 2, id="declared below the replicas: minCount"),
        pytest.param({"minReplicas": 4}, None, id="declared at the replicas: no partial admission"),
        pytest.param({}, None, id="undeclared: no partial admission"),
    ],
)
def test_only_a_declared_min_replicas_asks_for_partial_admission(
    bounds: dict[str, Any], min_count: int | None
) -> None:
    pod_sets = queued(**bounds).owned[KEY]["spec"]["podSets"]
    assert [p.get("minCount") for p in pod_sets] == [None, min_count]
    assert [p["count"] for p in pod_sets] == [1, 4]


def test_admitted_with_fewer_the_role_runs_with_them_and_completes_on_them() -> None:
    world = queued(minReplicas=2)
    admit(world, 2)
    assert sorted(world.pods) == ["job-ps-0", "job-worker-0", "job-worker-1"]
    assert world.status is not None
    worker = world.status.roles[1]
    assert worker.target_replicas == 2
    world.taskset["spec"]["roles"][1]["replicas"] = 5  # a live scale past the admission is capped
    world.settle()
    assert sorted(world.pods) == ["job-ps-0", "job-worker-0", "job-worker-1"]
    for name in ("job-worker-0", "job-worker-1"):
        world.exit(name, 0)
    world.exit("job-ps-0", 0)
    world.settle()
    assert world.status.state == "Succeeded", "two of two admitted workers are all of them"


def test_admitted_in_full_nothing_is_scaled() -> None:
    world = queued(minReplicas=2)
    admit(world, 4)
    assert len([n for n in world.pods if n.startswith("job-worker-")]) == 4
    assert world.status is not None and world.status.roles[1].target_replicas is None
