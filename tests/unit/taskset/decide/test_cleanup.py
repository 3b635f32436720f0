"""``spec.cleanPodPolicy``: what a finished TaskSet keeps of its Pods. Role ``w`` exits 0 and
its success ends the TaskSet while ``ps`` still runs: ``All`` (the default, the spec's behaviour) keeps
nothing, ``Running`` keeps the exited Pod and deletes the running one, ``None`` keeps both; the
ControlUnit stays as the owner of whatever is kept, so deleting the TaskSet still takes everything."""

from __future__ import annotations

import pytest

from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import TaskSetPhase as T
from tests.builders import TaskSetBuilder
from tests.unit.taskset.decide.scenes import running, the_status
from tests.unit.taskset.world import World, replica

pytestmark = pytest.mark.unit


def finished(policy: str | None, *, deadline: bool = False, retry: bool = False) -> World:
    builder = TaskSetBuilder("job")
    if policy is not None:
        builder.spec_field("cleanPodPolicy", policy)
    if retry:
        builder.retry(True, 1, 0)
    if deadline:
        builder.spec_field("activeDeadlineSeconds", 60)
    builder.role("w", 1, event_policy=[("RoleSucceeded", "TaskSetSucceeded")]).role("ps", 1)
    world = running(World(builder.obj()))
    if deadline:
        world.tick(61)
    else:
        world.exit("job-w-0", 0)
    world.settle()
    return world


@pytest.mark.parametrize(
    ("policy", "pods", "unit_kept"),
    [
        pytest.param(None, [], False, id="absent: All, the spec's behaviour"),
        pytest.param("All", [], False, id="All"),
        pytest.param("Running", ["job-w-0"], True, id="Running: the exited Pod stays"),
        pytest.param("None", ["job-ps-0", "job-w-0"], True, id="None: every Pod stays"),
    ],
)
def test_what_a_finished_taskset_keeps(policy: str | None, pods: list[str], unit_kept: bool) -> None:
    world = finished(policy)
    status = the_status(world)
    assert (status.phase, str(status.state)) == (T.COMPLETED, "Succeeded")
    assert sorted(world.pods) == pods
    assert (list(world.units) == ["c-job-0"]) == unit_kept
    if "job-w-0" in pods:
        assert replica(world, "w").phase == P.COMPLETED
        assert replica(world, "w").pod_uid == world.pods["job-w-0"]["metadata"]["uid"]


def test_kept_pods_go_with_the_taskset() -> None:
    world = finished("None")
    world.deleting = True  # the TaskSet's deletion: the garbage collector takes the ControlUnit's Pods
    world.units["c-job-0"]["metadata"]["deletionTimestamp"] = "now"
    world.gc()
    world.settle()
    assert world.pods == {} and world.units == {}


@pytest.mark.parametrize(
    ("later", "pods"),
    [("All", []), ("Running", ["job-w-0"])],
)
def test_a_policy_changed_after_the_finish_applies(later: str, pods: list[str]) -> None:
    world = finished("None")
    world.taskset["spec"]["cleanPodPolicy"] = later
    world.settle()
    assert sorted(world.pods) == pods


def test_a_deadline_stops_running_pods_under_none_too() -> None:
    world = finished("None", deadline=True)
    status = the_status(world)
    assert (status.phase, str(status.state)) == (T.COMPLETED, "Failed")
    assert sorted(world.pods) == []  # neither Pod had exited: both were running
    assert list(world.units) == ["c-job-0"]


def test_a_taskset_retry_deletes_the_attempts_pods_whatever_the_policy() -> None:
    builder = TaskSetBuilder("job").spec_field("cleanPodPolicy", "None").retry(True, 1, 0).role("r", 1)
    world = running(World(builder.obj()))
    first = world.pods["job-r-0"]["metadata"]["uid"]
    world.exit("job-r-0", 1)
    world.settle()
    status = the_status(world)
    assert status.total_retried_count == 1
    assert list(world.units) == ["c-job-1"]
    assert world.pods["job-r-0"]["metadata"]["uid"] != first
