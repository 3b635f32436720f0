"""Preemption as its own class: the built-in rule that tells it apart, its own budget
(``spec.retryPolicy.maxPreemptions``), the ``Preempted`` condition, and a count that a pass run again
over the same status (a restarted controller) never charges twice."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taskset.api.constants import ConditionType, FailureAction
from taskset.api.constants import TaskSetPhase as T
from taskset.api.failures import FailureRule, PodCondition
from taskset.decide.failure_rules import AttemptEnd, match_failure
from tests.builders import TaskSetBuilder
from tests.unit.taskset.decide.scenes import running, the_status
from tests.unit.taskset.world import World, replica

pytestmark = pytest.mark.unit

A = FailureAction
BY_SCHEDULER = ("PreemptionByScheduler", "default-scheduler: preempting to accommodate a higher priority pod")
DISRUPTED = (("DisruptionTarget", "True"),)

# (rules, how the attempt ended, the rule that matches, its action, why)
MATCHES = [
    pytest.param(*case[:5], id=case[5])
    for case in (
        (
            (),
            AttemptEnd(conditions=DISRUPTED, disruption=BY_SCHEDULER),
            "builtin-preemption",
            A.RETRY_NOT_COUNTED,
            "Pod condition DisruptionTarget=PreemptionByScheduler (default-scheduler: preempting to "
            "accommodate a higher priority pod)",
            "the scheduler's preemption",
        ),
        (
            (),
            AttemptEnd(conditions=DISRUPTED, disruption=("PreemptionByScheduler", "")),
            "builtin-preemption",
            A.RETRY_NOT_COUNTED,
            "Pod condition DisruptionTarget=PreemptionByScheduler",
            "a preemption without a message",
        ),
        (
            (),
            AttemptEnd(pod_reason="Preempting"),
            "builtin-preemption",
            A.RETRY_NOT_COUNTED,
            "Pod reason Preempting",
            "the kubelet's preemption for a critical Pod",
        ),
        (
            (),
            AttemptEnd(conditions=DISRUPTED, disruption=("EvictionByEvictionAPI", "")),
            "builtin-disruption",
            A.RETRY_NOT_COUNTED,
            "Pod condition DisruptionTarget=True",
            "an eviction is a disruption, not a preemption",
        ),
        (
            (),
            AttemptEnd(conditions=DISRUPTED, disruption=("DeletionByTaintManager", "")),
            "builtin-disruption",
            A.RETRY_NOT_COUNTED,
            "Pod condition DisruptionTarget=True",
            "a taint eviction is a disruption, not a preemption",
        ),
        (
            (FailureRule("d", A.FAIL_ROLE, pod_conditions=(PodCondition("DisruptionTarget"),)),),
            AttemptEnd(conditions=DISRUPTED, disruption=BY_SCHEDULER),
            "d",
            A.FAIL_ROLE,
            "Pod condition DisruptionTarget=True",
            "a user rule on the condition still comes first",
        ),
    )
]


@pytest.mark.parametrize(("rules", "end", "rule", "action", "why"), MATCHES)
def test_a_preemption_is_told_apart_from_other_disruptions(
    rules: tuple[FailureRule, ...], end: AttemptEnd, rule: str, action: FailureAction, why: str
) -> None:
    found = match_failure(rules, end)
    assert (found.rule, found.action, found.why) == (rule, action, why)


def budgeted(budget: int | None, *, retry: int = 0) -> World:
    """A one-replica TaskSet whose Pods run; ``budget``: spec.retryPolicy.maxPreemptions."""
    obj = TaskSetBuilder("job").retry(retry > 0, retry, 0).role("r").obj()
    if budget is not None:
        obj["spec"]["retryPolicy"]["maxPreemptions"] = budget
    return running(World(obj))


def preempt(world: World, name: str = "job-r-0", *, passes: int = 1) -> None:
    """What kube-scheduler does to a victim: DisruptionTarget with its reason, then the deletion;
    ``passes`` reconciles while the Pod is deleting (each must charge it once at most)."""
    pod: dict[str, Any] = world.pods[name]
    condition = {"type": "DisruptionTarget", "status": "True", "reason": BY_SCHEDULER[0]}
    pod["status"]["conditions"] = [{**condition, "message": BY_SCHEDULER[1]}]
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:05Z"
    for _ in range(passes):
        world.reconcile()
    del world.pods[name]
    world.settle()


def rerun(world: World) -> None:
    for name in list(world.pods):
        world.run(name)
    world.settle()


def test_preemptions_past_the_budget_fail_the_taskset_with_the_preemption_as_reason() -> None:
    world = budgeted(2, retry=5)  # a TaskSet retry policy does not buy more preemptions
    for _ in range(2):
        preempt(world)
        rerun(world)
        assert the_status(world).phase == T.ATTEMPT_RUNNING
    condition = the_status(world).condition(ConditionType.PREEMPTED)
    assert condition is not None and condition.status == "True"
    assert (condition.reason, the_status(world).preempt_count) == ("PreemptionByScheduler", 2)
    assert "preempted 2 times of at most 2" in condition.message
    assert "default-scheduler: preempting" in condition.message
    preempt(world)
    status = the_status(world)
    assert (status.phase, status.state, status.preempt_count) == (T.COMPLETED, "Failed", 3)
    assert status.total_retried_count == 0, "no TaskSet retry follows a spent preemption budget"
    assert "more than spec.retryPolicy.maxPreemptions (2)" in status.state_message
    condition = status.condition(ConditionType.PREEMPTED)
    assert condition is not None and condition.reason == "PreemptionBudgetExceeded"
    record = status.attempt_history.attempts[-1]
    assert (record.rule, record.action, record.preempt_count) == ("builtin-preemption", A.FAIL_TASKSET, 3)


def test_without_a_budget_preemptions_are_retried_uncounted_as_before() -> None:
    world = budgeted(None)  # maxRetryCount 0: a counted failure would fail it
    for _ in range(3):
        preempt(world)
        rerun(world)
    status = the_status(world)
    assert (status.phase, status.preempt_count) == (T.ATTEMPT_RUNNING, 3)
    rep = replica(world, "r")
    assert (rep.total_retried_count, rep.uncounted_retries, rep.counted_retries) == (3, 3, 0)


def test_a_budget_of_zero_fails_on_the_first_preemption() -> None:
    world = budgeted(0)
    preempt(world)
    status = the_status(world)
    assert (status.phase, status.state, status.preempt_count) == (T.COMPLETED, "Failed", 1)


def test_a_user_failure_spends_nothing_of_the_preemption_budget() -> None:
    obj = TaskSetBuilder("job").role("r", retry=(True, 3, 0)).obj()
    obj["spec"]["retryPolicy"] = {"maxPreemptions": 0}
    world = running(World(obj))
    world.exit("job-r-0", 1)
    world.settle()
    rerun(world)
    status = the_status(world)
    assert (status.phase, status.preempt_count) == (T.ATTEMPT_RUNNING, 0)
    assert status.condition(ConditionType.PREEMPTED) is None


@settings(max_examples=25, deadline=None)
@given(
    budget=st.one_of(st.none(), st.integers(0, 3)),
    passes=st.lists(st.integers(1, 3), min_size=1, max_size=5),
)
def test_each_preemption_is_charged_once_however_many_passes_see_it(
    budget: int | None, passes: list[int]
) -> None:
    """Passes run again over the same deleting Pod (a lost status-write answer, a restarted controller
    reading the status back) never charge it twice; the TaskSet fails exactly at budget + 1."""
    world = budgeted(budget)
    for seen, repeats in enumerate(passes, start=1):
        preempt(world, passes=repeats)
        status = the_status(world)
        assert status.preempt_count == seen
        over = budget is not None and seen > budget
        assert (status.state == "Failed") == over
        if over:
            return
        rerun(world)
