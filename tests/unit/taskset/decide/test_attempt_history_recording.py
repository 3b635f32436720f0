"""The attempt history as the TaskSet machine writes it: one record per ended attempt,
in the pass that ends it, naming the replica and failure rule that ended a failed one; never twice,
whether a pass runs again or its status write was lost."""

from __future__ import annotations

import copy

import pytest

from taskset.api.constants import FailureAction
from taskset.api.constants import TaskSetPhase as T
from taskset.api.history import HISTORY_MAX_ATTEMPTS, AttemptRecord
from taskset.api.status import TaskSetStatus
from taskset.decide.history_records import ENDING_ROWS
from taskset.decide.machines import TASKSET_MACHINE
from tests.builders import TaskSetBuilder
from tests.unit.taskset.decide.scenes import START, running, stamp_at, the_status
from tests.unit.taskset.world import World

pytestmark = pytest.mark.unit

FAILED_BY_W = "TaskSet completed beacause taskrole(w) is failed"


def retried(max_retry_count: int, replicas: int = 2, delay: int = 0) -> World:
    """TaskSet ``job``, retried by its own policy; its role w retries nothing, so one failed replica
    fails the role and the attempt."""
    builder = TaskSetBuilder("job").retry(True, max_retry_count, delay).role("w", replicas)
    return World(builder.obj())


def fail_attempt(world: World, pod: str = "job-w-1", code: int = 3) -> None:
    """Run the current attempt, end ``pod`` with ``code`` a second later, and settle."""
    running(world)
    world.tick(1)
    world.exit(pod, code)
    world.settle()


def succeed_attempt(world: World) -> None:
    running(world)
    world.tick(1)
    for name in list(world.pods):
        world.exit(name, 0)
    world.settle()


def entries(world: World) -> list[AttemptRecord]:
    return list(the_status(world).attempt_history.attempts)


def test_ending_rows_are_rows_of_the_taskset_machine() -> None:
    assert {transition.label for transition in TASKSET_MACHINE.transitions} >= ENDING_ROWS


def test_a_taskset_retried_twice_then_succeeding_lists_three_attempts() -> None:
    world = retried(3)
    fail_attempt(world, "job-w-1", 3)
    assert the_status(world).total_retried_count == 1
    fail_attempt(world, "job-w-0", 7)
    succeed_attempt(world)
    status = the_status(world)
    assert (status.phase, status.total_retried_count) == (T.COMPLETED, 2)
    first, second, third = entries(world)
    assert first == AttemptRecord(
        attempt=0,
        start_at=stamp_at(0),
        finish_at=first.finish_at,
        succeeded=False,
        reason=FAILED_BY_W,
        counted=True,
        replica="w-1",
        exit_code=3,
        rule="default",
        action=FailureAction.RETRY_COUNTED,
    )
    assert (second.attempt, second.replica, second.exit_code, second.counted) == (1, "w-0", 7, True)
    assert (third.attempt, third.succeeded, third.counted, third.replica, third.action) == (
        2,
        True,
        False,
        "",
        None,
    )
    assert third.reason == status.state_message
    assert [r.start_at is not None and r.finish_at is not None for r in (first, second, third)] == [True] * 3
    assert first.finish_at is not None and second.start_at is not None
    assert first.finish_at <= second.start_at
    assert status.attempt_history.dropped == 0


def test_the_last_attempt_failing_for_good_is_listed_not_counted() -> None:
    world = retried(1)
    fail_attempt(world)
    fail_attempt(world)
    status = the_status(world)
    assert (status.phase, status.state_message) == (T.COMPLETED, FAILED_BY_W)
    assert [(r.attempt, r.counted, r.replica) for r in entries(world)] == [
        (0, True, "w-1"),
        (1, False, "w-1"),
    ]


def test_a_failure_rule_that_ends_the_attempt_is_named() -> None:
    rule = {"name": "crash", "action": "RestartTaskSet", "onExitCodes": {"operator": "In", "values": [42]}}
    world = World(
        TaskSetBuilder("job").retry(True, 1, 0).role("w", 2, retry=(True, 5, 0), failureRules=[rule]).obj()
    )
    fail_attempt(world, "job-w-0", 42)
    (first,) = entries(world)
    assert (first.replica, first.exit_code, first.rule, first.action, first.counted) == (
        "w-0",
        42,
        "crash",
        FailureAction.RESTART_TASKSET,
        True,
    )


def test_a_taskset_retried_past_the_bound_keeps_the_last_attempts() -> None:
    attempts = HISTORY_MAX_ATTEMPTS + 3
    world = retried(attempts, replicas=1)
    for _ in range(attempts):
        fail_attempt(world, "job-w-0", 1)
    succeed_attempt(world)
    history = the_status(world).attempt_history
    assert [r.attempt for r in history.attempts] == list(range(4, attempts + 1))
    assert history.dropped == 4
    assert history.attempts[-1].succeeded


@pytest.mark.parametrize(
    "delay",
    [
        pytest.param(0, id="the pass that ends the attempt starts the next"),
        pytest.param(30, id="the next attempt waits for its delay"),
    ],
)
def test_a_pass_over_an_ended_attempt_never_lists_it_twice(delay: int) -> None:
    """The pass that ends the attempt is run again from the status before it (its write was lost), and
    again over the status after it (its watch event comes back): one record each time."""
    world = retried(3, delay=delay)
    running(world)
    world.tick(1)
    world.exit("job-w-1", 3)
    before: TaskSetStatus | None = None
    for _ in range(20):
        before = copy.deepcopy(world.status)
        world.reconcile()
        world.gc()
        if the_status(world).attempt_history.attempts:
            break
    assert the_status(world).total_retried_count == (1 if delay == 0 else 0)
    after = copy.deepcopy(world.status)
    world.status = before  # the write was lost: the same pass again
    world.reconcile()
    assert the_status(world).attempt_history == the_status_of(after).attempt_history
    world.reconcile()  # and again over what it wrote
    world.tick(delay)
    world.settle()
    assert [r.attempt for r in entries(world)] == [0]
    assert the_status(world).total_retried_count == 1


def the_status_of(status: TaskSetStatus | None) -> TaskSetStatus:
    assert status is not None
    return status


def test_a_restarted_controller_reads_the_history_back_and_goes_on() -> None:
    """The status is the controller's only memory: a new one (the world's status through its JSON, as a
    restart reads it) keeps the listed attempts and adds the next."""
    world = retried(3)
    fail_attempt(world)
    world.status = TaskSetStatus.from_json(copy.deepcopy(the_status(world).to_json()))
    fail_attempt(world)
    assert [(r.attempt, r.replica) for r in entries(world)] == [(0, "w-1"), (1, "w-1")]


def test_an_attempt_starts_when_it_enters_attempt_pending() -> None:
    world = retried(3)
    world.settle()
    assert the_status(world).attempt_start_at == stamp_at(0)
    world.tick(30)
    fail_attempt(world)
    status = the_status(world)
    assert status.attempt_start_at == status.transition_time  # T14 started the next at once (no delay)
    assert START.year == 2026
