"""Failure rules: the pure matcher, table-tested like the Job controller's podFailurePolicy
matcher, and what each action does to a replica, its role and the TaskSet in decide passes."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.api.constants import ExitCodeOperator, FailureAction
from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import TaskSetPhase as T
from taskset.api.failures import ExitCodes, FailureRule, PodCondition
from taskset.api.spec import Backoff, RetryPolicy
from taskset.decide.failure_rules import AttemptEnd, match_failure
from taskset.decide.policies import retry_delay
from taskset.observed.views import ContainerExit
from tests.builders import TaskSetBuilder
from tests.unit.taskset.decide.scenes import preparing, running, single, the_status
from tests.unit.taskset.world import World, replica

pytestmark = pytest.mark.unit

A = FailureAction
IN, NOT_IN = ExitCodeOperator.IN, ExitCodeOperator.NOT_IN


def exited(*exits: tuple[str, int, str], reason: str = "", conditions: Any = ()) -> AttemptEnd:
    return AttemptEnd(tuple(ContainerExit(*e) for e in exits), reason, tuple(conditions))


OOM = FailureRule("oom", A.FAIL_TASKSET, terminated_reasons=frozenset({"OOMKilled"}))
CODES_IN = FailureRule("in", A.FAIL_ROLE, exit_codes=ExitCodes(IN, ((42, 42), (100, 110))))
CODES_NOT_IN = FailureRule("not-in", A.RESTART_TASKSET, exit_codes=ExitCodes(NOT_IN, ((1, 2),)))
MAIN_ONLY = FailureRule("main", A.FAIL_ROLE, exit_codes=ExitCodes(IN, ((3, 3),), "main"))
BOTH = FailureRule(
    "both", A.FAIL_ROLE, exit_codes=ExitCodes(IN, ((137, 137),)), terminated_reasons=frozenset({"Error"})
)
COUNT_EVICTIONS = FailureRule("count-evictions", A.RETRY_COUNTED, pod_reasons=frozenset({"Evicted"}))
DISRUPTED = (("DisruptionTarget", "True"),)

# (rules, how the attempt ended, the rule that matches, its action, why)
MATCHES = [
    pytest.param(*case[:5], id=case[5])
    for case in (
        ((), exited(("main", 1, "Error")), "default", A.RETRY_COUNTED, "no failure rule matched", "none"),
        (
            (OOM,),
            exited(("main", 137, "OOMKilled")),
            "oom",
            A.FAIL_TASKSET,
            "container main terminated with reason OOMKilled",
            "terminated reason",
        ),
        (
            (CODES_IN,),
            exited(("main", 42, "Error")),
            "in",
            A.FAIL_ROLE,
            "container main exited with 42",
            "In, a single code",
        ),
        (
            (CODES_IN,),
            exited(("main", 105, "Error")),
            "in",
            A.FAIL_ROLE,
            "container main exited with 105",
            "In, inside a range",
        ),
        (
            (CODES_IN,),
            exited(("main", 111, "Error")),
            "default",
            A.RETRY_COUNTED,
            "no failure rule matched",
            "In, just past a range",
        ),
        (
            (CODES_NOT_IN,),
            exited(("main", 7, "Error")),
            "not-in",
            A.RESTART_TASKSET,
            "container main exited with 7",
            "NotIn",
        ),
        (
            (CODES_NOT_IN,),
            exited(("main", 2, "Error")),
            "default",
            A.RETRY_COUNTED,
            "no failure rule matched",
            "NotIn, a listed code",
        ),
        (
            (CODES_NOT_IN,),
            exited(("side", 0, "Completed"), ("main", 1, "Error")),
            "default",
            A.RETRY_COUNTED,
            "no failure rule matched",
            "NotIn never matches an exit code 0",
        ),
        (
            (MAIN_ONLY,),
            exited(("side", 3, "Error")),
            "default",
            A.RETRY_COUNTED,
            "no failure rule matched",
            "containerName: another container's code",
        ),
        (
            (MAIN_ONLY,),
            exited(("side", 1, "Error"), ("main", 3, "Error")),
            "main",
            A.FAIL_ROLE,
            "container main exited with 3",
            "containerName: its own code",
        ),
        (
            (BOTH,),
            exited(("main", 137, "OOMKilled")),
            "default",
            A.RETRY_COUNTED,
            "no failure rule matched",
            "every criterion must hold",
        ),
        (
            (BOTH,),
            exited(("main", 137, "Error")),
            "both",
            A.FAIL_ROLE,
            "container main exited with 137, container main terminated with reason Error",
            "both hold",
        ),
        (
            (),
            exited(conditions=DISRUPTED),
            "builtin-disruption",
            A.RETRY_NOT_COUNTED,
            "Pod condition DisruptionTarget=True",
            "built-in: disruption",
        ),
        (
            (),
            exited(conditions=(("DisruptionTarget", "False"),)),
            "default",
            A.RETRY_COUNTED,
            "no failure rule matched",
            "built-in: a False condition is no disruption",
        ),
        (
            (),
            exited(("main", 137, "Error"), reason="Evicted"),
            "builtin-platform",
            A.RETRY_NOT_COUNTED,
            "Pod reason Evicted",
            "built-in: eviction",
        ),
        (
            (),
            exited(reason="NodeLost"),
            "builtin-platform",
            A.RETRY_NOT_COUNTED,
            "Pod reason NodeLost",
            "built-in: node lost",
        ),
        (
            (),
            exited(reason="Preempting"),
            "builtin-preemption",
            A.RETRY_NOT_COUNTED,
            "Pod reason Preempting",
            "built-in: preemption",
        ),
        (
            (COUNT_EVICTIONS,),
            exited(reason="Evicted"),
            "count-evictions",
            A.RETRY_COUNTED,
            "Pod reason Evicted",
            "a user rule overrides a built-in one",
        ),
        (
            (CODES_IN, OOM),
            exited(("main", 42, "OOMKilled")),
            "in",
            A.FAIL_ROLE,
            "container main exited with 42",
            "first match wins",
        ),
        (
            (FailureRule("d", A.FAIL_ROLE, pod_conditions=(PodCondition("DisruptionTarget"),)),),
            exited(conditions=DISRUPTED),
            "d",
            A.FAIL_ROLE,
            "Pod condition DisruptionTarget=True",
            "a user rule on the condition comes before the built-in one",
        ),
    )
]


@pytest.mark.parametrize(("rules", "end", "rule", "action", "why"), MATCHES)
def test_the_first_matching_rule_decides(
    rules: tuple[FailureRule, ...], end: AttemptEnd, rule: str, action: FailureAction, why: str
) -> None:
    found = match_failure(rules, end)
    assert (found.rule, found.action, found.why) == (rule, action, why)


# ----- backoff -------------------------------------------------------------------------------------------

EXPONENTIAL = RetryPolicy(True, 10, 0, Backoff(initial_seconds=2, factor=3, max_seconds=50))


@pytest.mark.parametrize(
    ("policy", "delays"),
    [
        pytest.param(RetryPolicy(True, 10, 7), [7, 7, 7, 7], id="the fixed delay keeps its meaning"),
        pytest.param(EXPONENTIAL, [2, 6, 18, 50, 50], id="exponential, capped"),
        pytest.param(
            RetryPolicy(True, 10, 0, Backoff(5, 1, 100)), [5, 5, 5], id="factor 1 is a constant delay"
        ),
    ],
)
def test_retry_delays(policy: RetryPolicy, delays: list[int]) -> None:
    assert [retry_delay(policy, n, "uid") for n in range(len(delays))] == delays


def test_jitter_lengthens_within_its_percent_and_is_the_same_after_a_restart() -> None:
    policy = RetryPolicy(True, 10, 0, Backoff(100, 2, 10_000, jitter_percent=20))
    seeds = [f"uid-{i}" for i in range(50)]
    delays = [retry_delay(policy, 1, seed) for seed in seeds]
    assert all(200 <= d <= 240 for d in delays)
    assert len(set(delays)) > 10  # spread, not one value
    assert delays == [retry_delay(policy, 1, seed) for seed in seeds]  # deterministic


# ----- the actions in decide passes ------------------------------------------------------------------------


def fail_with(
    world: World,
    name: str,
    *,
    reason: str = "",
    container_reason: str = "Error",
    code: int = 1,
    conditions: list[dict[str, str]] | None = None,
) -> None:
    world.exit(name, code)
    status = world.pods[name]["status"]
    status["containerStatuses"][0]["state"]["terminated"]["reason"] = container_reason
    if reason:
        status["reason"] = reason
    if conditions:
        status["conditions"] = conditions


def test_an_evicted_replica_is_retried_without_counting_and_the_taskset_still_succeeds() -> None:
    world = running(single())  # no retry policy at all: maxRetryCount 0
    fail_with(world, "job-r-0", reason="Evicted", code=137)
    world.settle()
    rep = replica(world, "r")
    assert (rep.total_retried_count, rep.uncounted_retries, rep.counted_retries) == (1, 1, 0)
    assert any(
        e.startswith(
            "ReplicaFailure: job-r-0 (attempt 0): rule builtin-platform matched, Pod reason "
            "Evicted: RetryNotCounted"
        )
        for e in world.events
    )
    world.run("job-r-0")
    world.exit("job-r-0", 0)
    world.settle()
    status = the_status(world)
    assert (status.phase, status.state) == (T.COMPLETED, "Succeeded")


def test_a_disruption_target_condition_on_a_deleted_pod_is_not_counted() -> None:
    world = running(single())
    pod = world.pods["job-r-0"]
    pod["status"]["conditions"] = [
        {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}
    ]
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:05Z"
    world.reconcile()
    rep = replica(world, "r")
    assert rep.failure is not None
    assert (rep.failure.rule, rep.failure.action) == ("builtin-disruption", A.RETRY_NOT_COUNTED)
    del world.pods["job-r-0"]
    world.settle()
    assert (replica(world, "r").total_retried_count, replica(world, "r").uncounted_retries) == (1, 1)


def test_oomkilled_fails_the_taskset_at_once_by_rule_with_no_taskset_retry() -> None:
    rule = {"name": "oom", "action": "FailTaskSet", "onTerminatedReasons": ["OOMKilled"]}
    builder = TaskSetBuilder("job").retry(True, 5, 0).role("r", retry=(True, 5, 0), failureRules=[rule])
    world = running(World(builder.obj()))
    fail_with(world, "job-r-0", container_reason="OOMKilled", code=137)
    world.settle()
    status = the_status(world)
    assert (status.phase, status.state, status.total_retried_count) == (T.COMPLETED, "Failed", 0)
    assert replica(world, "r").total_retried_count == 0
    assert status.attempt_result is not None and status.attempt_result.final
    assert "rule oom (container c0 terminated with reason OOMKilled): FailTaskSet" in status.state_message


def test_restart_taskset_ends_the_attempt_and_the_taskset_retry_policy_decides() -> None:
    rule = {"action": "RestartTaskSet", "onExitCodes": {"operator": "In", "values": ["10-20"]}}
    builder = TaskSetBuilder("job").retry(True, 1, 0).role("r", 2, retry=(True, 5, 0))
    builder.spec_field("failureRules", [rule])
    world = running(World(builder.obj()))
    fail_with(world, "job-r-1", code=15)
    world.settle()
    status = the_status(world)
    assert status.total_retried_count == 1  # a new attempt, the role's retries unused
    assert replica(world, "r", 1).failure is None


def test_fail_role_fails_the_role_whatever_its_completion_policy() -> None:
    rule = {"action": "FailRole", "onExitCodes": {"operator": "In", "values": [3]}}
    world = running(single(replicas=3, max_failed=3, retry=(True, 5, 0), failureRules=[rule]))
    fail_with(world, "job-r-2", code=3)
    world.settle()
    status = the_status(world)
    assert (status.phase, status.state) == (T.COMPLETED, "Failed")
    assert "FailRole on replica 2" in status.roles[0].state_message


def test_a_counted_failure_keeps_today_s_behaviour() -> None:
    world = running(single(retry=(True, 1, 0)))
    fail_with(world, "job-r-0", code=1)
    world.settle()
    rep = replica(world, "r")
    assert (rep.total_retried_count, rep.uncounted_retries) == (1, 0)
    world.run("job-r-0")
    fail_with(world, "job-r-0", code=1)
    world.settle()
    rep = replica(world, "r")
    assert (rep.phase, rep.total_retried_count) == (P.COMPLETED, 1)
    assert rep.failure is not None and rep.failure.rule == "default"


def test_exponential_backoff_between_replica_attempts_is_in_the_status() -> None:
    backoff = {"retry": True, "maxRetryCount": 5, "backoff": {"initialDelay": 10, "factor": 2}}
    world = preparing(World(TaskSetBuilder("job").role("r", retryPolicy=backoff).obj()))
    waits = []
    for _ in range(3):
        world.run("job-r-0")
        fail_with(world, "job-r-0", code=1)
        world.settle()
        rep = replica(world, "r")
        assert rep.phase == P.ATTEMPT_RETRY_PENDING and rep.next_retry_at is not None
        waited = 0
        while replica(world, "r").phase == P.ATTEMPT_RETRY_PENDING:
            world.tick(1)
            waited += 1
            world.settle()
        waits.append(waited)
    assert waits == [10, 20, 40]


def evicted_unseen(world: World, *, uid: str | None = None) -> None:
    """The Eviction API's sequence on job-r-0, all between two passes: DisruptionTarget written, the Pod
    deleted and removed; only the cache's delete handler saw its last state (Observed.gone)."""
    pod = world.pods.pop("job-r-0")
    pod["status"]["conditions"] = [
        {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}
    ]
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:05Z"
    if uid is not None:
        pod["metadata"]["uid"] = uid
    world.gone["job-r-0"] = pod


@pytest.mark.parametrize(
    ("uid", "rule", "retries"),
    [
        pytest.param(None, "builtin-disruption", (1, 1), id="the last view of this Pod: not counted"),
        pytest.param("another-pod", "default", None, id="another Pod's last view: counted, no retry"),
    ],
)
def test_a_pod_evicted_before_any_pass_saw_it_end_is_matched_on_its_last_view(
    uid: str | None, rule: str, retries: tuple[int, int] | None
) -> None:
    world = running(single())  # maxRetryCount 0
    evicted_unseen(world, uid=uid)
    world.settle()
    rep = replica(world, "r")
    if retries is None:
        assert rep.phase == P.COMPLETED and the_status(world).state == "Failed"
        assert rep.failure is not None and rep.failure.rule == rule
        return
    assert (rep.total_retried_count, rep.uncounted_retries) == retries
    assert any(f"rule {rule} matched, Pod condition DisruptionTarget=True" in e for e in world.events)
