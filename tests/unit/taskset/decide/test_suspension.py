"""Suspend and resume through the pure decisions: a suspension deletes the running Pods and
counts nothing, keeps the rest of the status, creates nothing while it lasts, and a resume recreates what
the attempt still needs; which timers run on while suspended."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.api.constants import (
    ANNOTATION_REPLICA_ATTEMPT_ID,
    ConditionStatus,
    ConditionType,
    ReplicaPhase,
    TaskSetPhase,
)
from taskset.decide import CreateOwned, CreatePod, DeletePod
from taskset.decide.suspension import SUSPENDED_HOLD
from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import (
    World,
    decide_once,
    execute_write_lost,
    pass_once,
    replica,
    settle_terminating,
)

pytestmark = pytest.mark.unit

P = ReplicaPhase
T = TaskSetPhase


def suspend(world: World, value: bool = True) -> None:
    world.taskset["spec"]["suspend"] = value
    world.taskset["metadata"]["generation"] += 1


def suspended_condition(world: World) -> tuple[str, str] | None:
    assert world.status is not None
    found = world.status.condition(ConditionType.SUSPENDED)
    return None if found is None else (str(found.status), found.reason)


def count(world: World, reason: str) -> int:
    return sum(1 for event in world.events if event.startswith(f"{reason}:"))


def running(replicas: int = 2, **role: Any) -> World:
    """A TaskSet with one role whose Pods all run."""
    world = World(TaskSetBuilder("job").role("r", replicas=replicas, **role).obj())
    world.settle()
    for index in range(replicas):
        world.run(f"job-r-{index}")
    world.settle()
    assert world.status is not None and world.status.phase == T.ATTEMPT_RUNNING
    return world


def test_a_taskset_created_suspended_creates_nothing_until_it_resumes() -> None:
    world = World(TaskSetBuilder("job").suspend().role("r", replicas=2).obj())
    world.settle()
    assert world.status is not None
    assert world.status.phase == T.ATTEMPT_PENDING
    assert world.units == {} and world.pods == {}
    assert suspended_condition(world) == (ConditionStatus.TRUE, "Suspended")
    assert count(world, "TaskSetSuspended") == 1
    suspend(world, False)
    world.settle()
    assert sorted(world.pods) == ["job-r-0", "job-r-1"]
    assert suspended_condition(world) == (ConditionStatus.FALSE, "Resumed")
    assert count(world, "TaskSetResumed") == 1


def test_suspending_deletes_the_running_pods_and_counts_nothing() -> None:
    world = running(retry=(True, 3, 0))
    created_before = len(world.created_pods)
    suspend(world)
    world.settle()
    status = world.status
    assert status is not None
    assert world.pods == {}, "every running Pod is deleted"
    assert status.phase == T.ATTEMPT_RUNNING, "the attempt and its ControlUnit stay"
    assert len(world.units) == 1
    assert status.total_retried_count == 0
    for index in range(2):
        kept = replica(world, "r", index)
        assert (kept.phase, kept.total_retried_count, kept.suspended) == (P.ATTEMPT_PENDING, 0, False)
        assert kept.phase_message == SUSPENDED_HOLD
    assert count(world, "TaskSetSuspended") == 1
    world.tick(3600)
    world.settle()
    assert len(world.created_pods) == created_before, "nothing is created while suspended"

    suspend(world, False)
    world.settle()
    recreated = world.created_pods[created_before:]
    assert sorted(pod["metadata"]["name"] for pod in recreated) == ["job-r-0", "job-r-1"]
    assert {pod["metadata"]["annotations"][ANNOTATION_REPLICA_ATTEMPT_ID] for pod in recreated} == {"0"}
    for index in range(2):
        world.exit(f"job-r-{index}", 0)
    world.settle()
    assert world.status is not None
    assert (world.status.phase, world.status.state) == (T.COMPLETED, "Succeeded")
    assert world.status.total_retried_count == 0
    assert count(world, "TaskSetResumed") == 1


def test_a_pod_that_exited_before_the_suspension_keeps_its_outcome() -> None:
    world = running(retry=(True, 3, 0))
    world.exit("job-r-0", 1)
    suspend(world)
    world.settle()
    assert replica(world, "r", 0).total_retried_count == 1, "the failure is a failure"
    assert replica(world, "r", 1).total_retried_count == 0, "the suspended Pod is not"


def test_a_resume_before_the_pod_is_gone_waits_for_it_and_still_counts_nothing() -> None:
    world = running(replicas=1)
    suspend(world)
    step = pass_once(world)
    deletes = [intent for intent in step.plan.intents if isinstance(intent, DeletePod)]
    assert len(deletes) == 1
    world.status = step.plan.status  # the delete is accepted, the Pod is terminating
    world.status.roles[0].replicas[0].phase = P.ATTEMPT_DELETION_REQUESTED
    world.pods["job-r-0"]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:05Z"
    suspend(world, False)
    plan = decide_once(world)
    assert not any(isinstance(intent, CreatePod) for intent in plan.intents), "never two at once"
    assert plan.status.roles[0].replicas[0].suspended
    del world.pods["job-r-0"]
    world.settle()
    kept = replica(world, "r", 0)
    assert (kept.phase, kept.total_retried_count, kept.suspended) == (P.ATTEMPT_PREPARING, 0, False)
    assert "job-r-0" in world.pods


def test_a_pod_deleted_by_someone_else_while_suspended_counts_nothing() -> None:
    world = running(replicas=1, retry=(True, 3, 0))
    world.pods["job-r-0"]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:05Z"
    suspend(world)
    plan = decide_once(world)
    kept = plan.status.roles[0].replicas[0]
    assert (kept.phase, kept.suspended) == (P.ATTEMPT_DELETION_REQUESTED, True)


def test_a_suspended_pods_end_records_no_failure_while_it_terminates() -> None:
    """The Pod a suspension deletes is seen terminating, and perhaps exiting as its containers are
    stopped: neither is the attempt's end, so no failure rule is matched and no ReplicaFailure said."""
    world = running(replicas=1)
    world.graceful = True
    suspend(world)
    world.reconcile()
    assert "deletionTimestamp" in world.pods["job-r-0"]["metadata"]
    world.exit("job-r-0", 143)  # SIGTERM
    world.settle()
    world.remove("job-r-0")
    world.settle()
    kept = replica(world, "r", 0)
    assert (kept.phase, kept.failure, kept.total_retried_count) == (P.ATTEMPT_PENDING, None, 0)
    assert count(world, "ReplicaFailure") == 0


def test_a_resumed_pod_is_never_adopted_while_deleted_after_a_lost_status_write() -> None:
    """A write of spec.suspend makes the status write of the pass that recreated the Pod conflict: the
    status still records the Pod the suspension deleted. The new Pod (same replica attempt) may be
    deleted as a duplicate, but a Pod whose delete is under way is never the replica's own, so its
    deletion counts nothing and the TaskSet still succeeds."""
    world = running(replicas=1)
    world.graceful = True
    suspend(world)
    world.reconcile()
    world.remove("job-r-0")  # the suspension's delete is done
    suspend(world, False)
    execute_write_lost(world, pass_once(world))
    assert "job-r-0" in world.pods, "the resume created the Pod again"
    kept = replica(world, "r", 0)
    assert (kept.phase, kept.suspended) == (P.ATTEMPT_DELETION_REQUESTED, True), "but the status lost it"
    settle_terminating(world)
    world.exit("job-r-0", 0)
    settle_terminating(world)
    assert world.status is not None
    assert (world.status.phase, world.status.state) == (T.COMPLETED, "Succeeded"), world.events
    assert replica(world, "r", 0).total_retried_count == 0
    assert count(world, "ReplicaFailure") == 0


# ----- timers (docs/user-manual.md, "Shared clusters"): none pauses ----------------------------------------


def test_the_taskset_retry_delay_runs_on_while_suspended() -> None:
    world = World(TaskSetBuilder("job").retry(True, 2, 30).role("r", replicas=1).obj())
    world.settle()
    world.exit("job-r-0", 1)
    world.settle()
    assert world.status is not None and world.status.phase == T.ATTEMPT_RETRY_PENDING
    suspend(world)
    world.tick(31)
    world.settle()
    after = world.status
    assert after.phase == T.ATTEMPT_PENDING
    assert after.total_retried_count == 1, "the retry was earned by a real failure"
    assert world.units == {}, "but the next attempt creates nothing while suspended"
    suspend(world, False)
    plan = world.reconcile()
    assert any(isinstance(intent, CreateOwned) for intent in plan.intents), "no second delay on resume"


def test_the_replica_retry_delay_runs_on_while_suspended() -> None:
    world = World(TaskSetBuilder("job").role("r", replicas=1, retry=(True, 2, 30)).obj())
    world.settle()
    world.exit("job-r-0", 1)
    world.settle()
    assert replica(world, "r").phase == P.ATTEMPT_RETRY_PENDING
    suspend(world)
    world.tick(31)
    world.settle()
    kept = replica(world, "r")
    assert (kept.phase, kept.total_retried_count) == (P.ATTEMPT_PENDING, 1)
    assert world.pods == {}
    suspend(world, False)
    plan = world.reconcile()
    assert [intent.name for intent in plan.intents if isinstance(intent, CreatePod)] == ["job-r-0"]


def test_a_suspended_replica_whose_pod_the_cache_never_showed_deletes_it_rather_than_timing_out() -> None:
    world = World(TaskSetBuilder("job").role("r", replicas=1, retry=(True, 2, 0)).obj())
    world.settle()
    hidden = world.pods.pop("job-r-0")  # created, but the cache never shows it
    assert world.status is not None
    world.status.roles[0].replicas[0].phase = P.ATTEMPT_CREATION_REQUESTED
    world.tick(world.settings.cache_creation_timeout + 1)
    suspend(world)
    plan = decide_once(world)
    kept = plan.status.roles[0].replicas[0]
    assert (kept.phase, kept.suspended, kept.total_retried_count) == (P.ATTEMPT_DELETION_PENDING, True, 0)
    deletes = [intent for intent in plan.intents if isinstance(intent, DeletePod)]
    assert [(d.uid, d.seen) for d in deletes] == [(hidden["metadata"]["uid"], False)]


def test_a_completed_taskset_keeps_its_conditions_when_suspended_afterwards() -> None:
    world = World(TaskSetBuilder("job").role("r", replicas=1).obj())
    world.settle()
    world.exit("job-r-0", 0)
    world.settle()
    suspend(world)
    world.settle()
    assert suspended_condition(world) is None
    assert count(world, "TaskSetSuspended") == 0


@pytest.mark.parametrize(
    "started",
    [
        pytest.param(False, id="created suspended, it never starts (T3-deadline)"),
        pytest.param(True, id="suspended while it runs (T6-deadline)"),
    ],
)
def test_the_active_deadline_runs_on_while_suspended(started: bool) -> None:
    """``activeDeadlineSeconds`` bounds the TaskSet's life from its creation, suspended or not."""
    obj = TaskSetBuilder("job").role("r", replicas=1).obj()
    obj["spec"]["activeDeadlineSeconds"] = 60
    obj["spec"]["suspend"] = not started
    world = World(obj)
    world.settle()
    if started:
        world.run("job-r-0")
        world.settle()
        suspend(world)
        world.settle()
    assert world.pods == {} and world.status is not None and world.status.phase != T.COMPLETED
    assert world.plans[-1].requeue_after is not None, "a suspended TaskSet looks again at its deadline"
    world.tick(61)
    world.settle()
    assert (world.status.phase, world.status.state) == (T.COMPLETED, "Failed")
    assert world.status.state_message.startswith("DeadlineExceeded")
    assert world.units == {} and world.pods == {}
    assert len(world.created_pods) == (1 if started else 0)
