"""A TaskSet retry after an external ControlUnit deletion starts no Pod while any Pod of the previous attempt
is still there (W-11), not only while the replica's own previous Pod is (row P0).

Found by the chaos suite (tests/chaos/test_external_deletions.py): with the ControlUnit deleted by someone
else with Background or Orphan propagation, the controller itself does not take the old attempt's Pods
away (the garbage collector does, or nobody, and row P0 then deletes each replica's own). Replica 0's old
Pod went first, its new Pod was created at once, and replica 1's old Pod was still alive: old and new
attempt side by side, which is what W-11 exists to prevent ("the next attempt's Pods can only be created
once the previous attempt's Pods are gone", spec 5.1 ControlUnit).
"""

from __future__ import annotations

import pytest

from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import TaskSetPhase as T
from taskset.decide import CreateOwned, CreatePod, DeletePod
from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import World, decide_once

pytestmark = pytest.mark.unit


def retried_after_external_deletion(*, orphaned: bool) -> World:
    """TaskSet ``job`` (TS retry 1 0; role r: 2 replicas) Running, then its ControlUnit deleted from outside:
    replica 0's old Pod is already gone, replica 1's is still there. The next pass requests attempt 1 (a
    ControlUnit ``c-job-1``) and chains on from the create's response to the first role sync."""
    world = World(TaskSetBuilder("job").retry(True, 1, 0).role("r", 2).obj())
    world.settle()
    for name in list(world.pods):
        world.run(name)
    world.settle()
    assert world.status is not None and world.status.phase == T.ATTEMPT_RUNNING
    old_unit = world.units.pop("c-job-0")["metadata"]["uid"]
    del world.pods["job-r-0"]
    left = world.pods["job-r-1"]
    if orphaned:  # Orphan propagation: the garbage collector took the owner reference away
        left["metadata"]["ownerReferences"] = []
    else:  # Background propagation: the garbage collector is deleting it
        left["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:01Z"
        assert left["metadata"]["ownerReferences"][0]["uid"] == old_unit
    return world


@pytest.mark.parametrize(
    "orphaned",
    [
        pytest.param(False, id="Background: the old Pod is being deleted by the garbage collector"),
        pytest.param(True, id="Orphan: the old Pod runs on without an owner"),
    ],
)
def test_no_pod_of_the_next_attempt_while_a_pod_of_the_previous_one_is_there(orphaned: bool) -> None:
    world = retried_after_external_deletion(orphaned=orphaned)
    old = world.pods["job-r-1"]["metadata"]["uid"]

    plan = world.reconcile()  # T11, T13, T14, T3; then T5 and the first role sync of attempt 1
    assert (plan.status.total_retried_count, plan.status.phase) == (1, T.ATTEMPT_PREPARING)
    assert [i for i in plan.intents if isinstance(i, CreatePod)] == []  # not even replica 0's
    leftover = [] if not orphaned else [DeletePod("job-r-1", old, 0, 1, advances=False)]
    # replica 1 deletes its own leftover (row P0) unless it is going
    assert plan.intents == [CreateOwned("c-job-1"), *leftover]
    assert plan.requeue_after is not None
    assert [r.phase for r in plan.status.roles[0].replicas] == [P.ATTEMPT_PENDING, P.ATTEMPT_PENDING]
    world.pods.pop("job-r-1", None)  # the leftover is gone

    plan = decide_once(world)
    assert [(i.name, i.taskset_attempt) for i in plan.intents if isinstance(i, CreatePod)] == [
        ("job-r-0", 1),
        ("job-r-1", 1),
    ]
