"""``activeDeadlineSeconds`` one pass at a time: the deadline counts from ``status.createdAt``
(so a restarted controller, which knows only the status, keeps it), the pass that finds it passed ends
the attempt for good, and a waiting TaskSet is requeued for the moment it passes."""

from __future__ import annotations

from datetime import timedelta

import pytest

from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import TaskSetPhase as T
from taskset.decide import CreatePod, DeleteOwned, DeleteTaskSet
from tests.builders import TaskSetBuilder
from tests.unit.taskset.decide.scenes import running, the_status
from tests.unit.taskset.world import World, decide_once

pytestmark = pytest.mark.unit


def deadlined(seconds: int, *, retry: bool = False) -> World:
    builder = TaskSetBuilder("job").spec_field("activeDeadlineSeconds", seconds).role("r", 2)
    if retry:
        builder.retry(True, 5, 30)
    return running(World(builder.obj()))


@pytest.mark.parametrize(
    ("elapsed", "ends"),
    [(59, False), (60, True), (3600, True)],
)
def test_the_deadline_counts_from_created_at(elapsed: int, ends: bool) -> None:
    world = deadlined(60)
    created = the_status(world).created_at
    world.now = world.now.replace(microsecond=0) + timedelta(seconds=elapsed)
    world.reconcile()
    status = the_status(world)
    assert status.created_at == created
    assert (status.phase != T.ATTEMPT_RUNNING) == ends


def test_a_running_taskset_waits_for_its_deadline() -> None:
    world = deadlined(60)
    plan = decide_once(world)
    assert plan.requeue_after is not None and 0 < plan.requeue_after <= 60


def test_the_passed_deadline_deletes_the_control_unit_and_forbids_a_retry() -> None:
    world = deadlined(60, retry=True)
    world.now += timedelta(seconds=61)
    plan = decide_once(world)
    assert plan.status.phase == T.ATTEMPT_DELETION_PENDING or any(
        isinstance(intent, DeleteOwned) for intent in plan.intents
    )
    world.settle()
    status = the_status(world)
    assert (status.phase, status.total_retried_count) == (T.COMPLETED, 0)
    failed = [c for c in status.conditions if str(c.type) == "Failed"]
    assert failed[0].reason == "DeadlineExceeded"
    assert status.attempt_result is not None and status.attempt_result.final
    assert world.pods == {}


def test_a_deadline_passing_in_the_retry_delay_completes_the_taskset() -> None:
    world = deadlined(60, retry=True)
    world.exit("job-r-0", 1)
    world.settle()
    assert the_status(world).phase == T.ATTEMPT_RETRY_PENDING
    world.now += timedelta(seconds=61)
    world.settle()
    status = the_status(world)
    assert (status.phase, status.total_retried_count) == (T.COMPLETED, 0)
    assert "activeDeadlineSeconds (60s)" in status.state_message


def test_a_replica_retry_due_when_the_deadline_passed_starts_no_pod() -> None:
    """The controller was down (or slow) past both the replica's retry delay and the deadline: the pass
    that finds them both ends the attempt and creates nothing, not a Pod the deadline then deletes."""
    retry = {"retry": True, "maxRetryCount": 5, "delay": 10}
    world = running(
        World(
            TaskSetBuilder("job")
            .spec_field("activeDeadlineSeconds", 60)
            .role("r", 1, retryPolicy=retry)
            .obj()
        )
    )
    world.exit("job-r-0", 1)
    world.settle()
    assert the_status(world).roles[0].replicas[0].phase == P.ATTEMPT_RETRY_PENDING
    world.now += timedelta(seconds=61)
    plan = decide_once(world)
    assert not [intent for intent in plan.intents if isinstance(intent, CreatePod)]
    world.settle()
    status = the_status(world)
    assert status.phase == T.COMPLETED and "activeDeadlineSeconds (60s)" in status.state_message
    assert world.pods == {}


# ----- ttlSecondsAfterFinished ------------------------------------------------------------------------------


def finished(ttl: int | None) -> World:
    builder = TaskSetBuilder("job").role("r", 1)
    if ttl is not None:
        builder.spec_field("ttlSecondsAfterFinished", ttl)
    world = running(World(builder.obj()))
    world.exit("job-r-0", 0)
    world.settle()
    assert the_status(world).phase == T.COMPLETED
    return world


@pytest.mark.parametrize(
    ("ttl", "after", "deleted"),
    [(None, 10**6, False), (0, 0, True), (30, 29, False), (30, 31, True)],
)
def test_a_finished_taskset_is_deleted_once_its_ttl_passed(
    ttl: int | None, after: int, deleted: bool
) -> None:
    world = finished(ttl)
    world.now += timedelta(seconds=after)
    world.reconcile()
    assert world.taskset_deletes == ([world.taskset["metadata"]["uid"]] if deleted else [])


def test_a_finished_taskset_waits_for_its_ttl() -> None:
    world = finished(30)
    plan = decide_once(world)
    assert plan.requeue_after is not None and 0 < plan.requeue_after <= 30
    assert not any(isinstance(intent, DeleteTaskSet) for intent in plan.intents)
