"""A seeded chaos workload: TaskSets whose failures are written into their templates, with the outcome a
fault-free run gives each of them.

Every failing attempt is chosen by a ``sim.attempt_exit_code`` annotation (TaskSet attempt, replica,
replica attempt) in the role's template, so the workload is fixed at creation: no test thread has to patch
live Pods at the right moment, and a controller restart cannot make a Pod fail that was meant to succeed.
The expected outcome of each shape follows from the spec's defaults (minSucceeded = replicas, maxFailed = 1)
and is checked by the fault-free test of the suite. ``MIXED`` adds more shapes (failure rules,
backoff at both levels, deadlines, TTL, percentage thresholds) to the churn of the controller-kill test.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from devcluster import sim
from tests.builders import TaskSetBuilder, pod_template
from tests.chaos.invariants import Outcome

FAIL = "1"


@dataclass(frozen=True)
class Planned:
    """One TaskSet of the workload and how it ends without faults."""

    obj: dict[str, Any]
    expected: Outcome
    deleted: bool = False  # its ttlSecondsAfterFinished deletes it once it ended as expected

    @property
    def name(self) -> str:
        name: str = self.obj["metadata"]["name"]
        return name


def _template(rng: random.Random, failures: dict[str, str]) -> dict[str, Any]:
    annotations = {**sim.outcome(duration=rng.uniform(0.8, 2.5), exit_code=0), **failures}
    return pod_template("exit 0", annotations=annotations)


Replica = tuple[str, int, int, int]


def _replicas(
    role: str, count: int, retried: dict[int, int] | None = None, uncounted: dict[int, int] | None = None
) -> list[Replica]:
    """(role, index, totalRetriedCount, uncountedRetries) of each replica (the total includes the
    uncounted retries)."""
    return [
        (role, index, (retried or {}).get(index, 0), (uncounted or {}).get(index, 0))
        for index in range(count)
    ]


def clean(name: str, rng: random.Random) -> Planned:
    """Two roles, nothing fails."""
    obj = (
        TaskSetBuilder(name)
        .role("ps", 1, template=_template(rng, {}))
        .role("worker", 2, template=_template(rng, {}))
        .obj()
    )
    return Planned(obj, Outcome("Succeeded", 0, tuple(sorted(_replicas("ps", 1) + _replicas("worker", 2)))))


def replica_retry(name: str, rng: random.Random) -> Planned:
    """Replica 1 fails its first attempt and is retried (replica retry policy)."""
    failures = {sim.attempt_exit_code(0, 1, 0): FAIL}
    delay = rng.choice((0, 1))
    obj = TaskSetBuilder(name).role("r", 3, retry=(True, 2, delay), template=_template(rng, failures)).obj()
    return Planned(obj, Outcome("Succeeded", 0, tuple(_replicas("r", 3, {1: 1}))))


def taskset_retry(name: str, rng: random.Random) -> Planned:
    """Replica 0 fails in TaskSet attempt 0: the role fails, the TaskSet is retried and then succeeds."""
    failures = {sim.attempt_exit_code(0, 0, 0): FAIL}
    obj = (
        TaskSetBuilder(name)
        .retry(True, 1, rng.choice((0, 1)))
        .role("r", 2, template=_template(rng, failures))
        .obj()
    )
    return Planned(obj, Outcome("Succeeded", 1, tuple(_replicas("r", 2))))


def both_levels(name: str, rng: random.Random) -> Planned:
    """Replica 1 exhausts its one retry in TaskSet attempt 0; the TaskSet retry then succeeds."""
    failures = {sim.attempt_exit_code(0, 1, 0): FAIL, sim.attempt_exit_code(0, 1, 1): FAIL}
    obj = (
        TaskSetBuilder(name)
        .retry(True, 1, 0)
        .role("r", 2, retry=(True, 1, 0), template=_template(rng, failures))
        .obj()
    )
    return Planned(obj, Outcome("Succeeded", 1, tuple(_replicas("r", 2))))


def exhausted(name: str, rng: random.Random) -> Planned:
    """Replica 0 fails twice with one retry allowed and no TaskSet retry: the TaskSet fails."""
    failures = {sim.attempt_exit_code(0, 0, 0): FAIL, sim.attempt_exit_code(0, 0, 1): FAIL}
    obj = TaskSetBuilder(name).role("r", 2, retry=(True, 1, 0), template=_template(rng, failures)).obj()
    return Planned(obj, Outcome("Failed", 0, tuple(_replicas("r", 2, {0: 1}))))


SHAPES: tuple[Callable[[str, random.Random], Planned], ...] = (
    clean,
    replica_retry,
    taskset_retry,
    both_levels,
    exhausted,
)

# ----- failure rules, backoff, run bounds, percentages ----------------------------------------------------

PLATFORM, FATAL, RESTART, ROLE_FATAL = "75", "137", "143", "2"  # exit codes the rules below match
RULES = [
    {"name": "platform", "action": "RetryNotCounted", "onExitCodes": {"operator": "In", "values": [75]}},
    {"name": "fatal", "action": "FailTaskSet", "onExitCodes": {"operator": "In", "values": [137]}},
    {"name": "restart", "action": "RestartTaskSet", "onExitCodes": {"operator": "In", "values": ["140-143"]}},
    {"name": "role-fatal", "action": "FailRole", "onExitCodes": {"operator": "In", "values": [2]}},
]
LONG_RUN = 600.0  # seconds: longer than any deadline of the workload


def _backoff(
    initial: int, factor: int, cap: int | None = None, jitter: int = 0, retries: int = 3
) -> dict[str, Any]:
    backoff = {"initialDelay": initial, "factor": factor, "jitterPercent": jitter}
    if cap is not None:
        backoff["maxDelay"] = cap
    return {"retry": True, "maxRetryCount": retries, "backoff": backoff}


def not_counted(name: str, rng: random.Random) -> Planned:
    """maxRetryCount 0 and still Succeeded: replica 1 exits 75 twice, which the TaskSet's default rule
    retries without counting."""
    failures = {sim.attempt_exit_code(0, 1, 0): PLATFORM, sim.attempt_exit_code(0, 1, 1): PLATFORM}
    retry = {"retry": True, "maxRetryCount": 0, "delay": rng.choice((0, 1))}
    obj = (
        TaskSetBuilder(name)
        .spec_field("failureRules", RULES)
        .role("r", 2, retry=retry, template=_template(rng, failures))
        .obj()
    )
    return Planned(obj, Outcome("Succeeded", 0, tuple(_replicas("r", 2, {1: 2}, {1: 2}))))


def fail_taskset(name: str, rng: random.Random) -> Planned:
    """Replica 0 exits 137, which the role's rule makes fail the TaskSet at once: no replica retry and
    no TaskSet retry, though both policies allow them."""
    failures = {sim.attempt_exit_code(0, 0, 0): FATAL}
    obj = (
        TaskSetBuilder(name)
        .retry(True, 2, 0)
        .role("r", 2, retry=(True, 2, 0), template=_template(rng, failures), failureRules=RULES)
        .obj()
    )
    return Planned(obj, Outcome("Failed", 0, tuple(_replicas("r", 2))))


def restart_taskset(name: str, rng: random.Random) -> Planned:
    """Replica 1 exits 143 (RestartTaskSet) or 2 (FailRole) in TaskSet attempt 0: its role's retries are
    not used, the TaskSet retry is, and attempt 1 succeeds."""
    failures = {sim.attempt_exit_code(0, 1, 0): rng.choice((RESTART, ROLE_FATAL))}
    obj = (
        TaskSetBuilder(name)
        .retry(True, 1, rng.choice((0, 1)))
        .role("r", 2, retry=(True, 2, 0), template=_template(rng, failures), failureRules=RULES)
        .obj()
    )
    return Planned(obj, Outcome("Succeeded", 1, tuple(_replicas("r", 2))))


def replica_backoff(name: str, rng: random.Random) -> Planned:
    """Replica 0 fails three attempts, waiting 2, 4 and 6 s (then up to half as long again) in between;
    replica 1 exits 75 once and is retried after 2 s without counting."""
    failures = {sim.attempt_exit_code(0, 0, attempt): FAIL for attempt in range(3)}
    failures[sim.attempt_exit_code(0, 1, 0)] = PLATFORM
    retry = _backoff(2, 2, cap=6, jitter=50)
    obj = (
        TaskSetBuilder(name)
        .spec_field("failureRules", RULES)
        .role("r", 2, retry=retry, template=_template(rng, failures))
        .obj()
    )
    return Planned(obj, Outcome("Succeeded", 0, tuple(_replicas("r", 2, {0: 3, 1: 1}, {1: 1}))))


def taskset_backoff(name: str, rng: random.Random) -> Planned:
    """Replica 0 fails TaskSet attempts 0 and 1, with 3 then 6 s (up to 30 % more) between attempts."""
    failures = {sim.attempt_exit_code(0, 0, 0): FAIL, sim.attempt_exit_code(1, 0, 0): FAIL}
    obj = (
        TaskSetBuilder(name)
        .spec_field("retryPolicy", _backoff(3, 2, jitter=30, retries=2))
        .role("r", 2, template=_template(rng, failures))
        .obj()
    )
    return Planned(obj, Outcome("Succeeded", 2, tuple(_replicas("r", 2))))


def _deadline_failure(replicas: tuple[Replica, ...] | None) -> Outcome:
    return Outcome("Failed", 0, replicas, reason="DeadlineExceeded")


def deadline_running(name: str, rng: random.Random) -> Planned:
    """Two replicas that would run for ten minutes, a deadline of 5 to 20 s and a TaskSet retry policy:
    Failed with reason DeadlineExceeded, no retry, the Pods removed."""
    template = pod_template(annotations=sim.outcome(duration=LONG_RUN))
    obj = (
        TaskSetBuilder(name)
        .retry(True, 3, 0)
        .spec_field("activeDeadlineSeconds", rng.randint(5, 20))
        .role("r", 2, template=template)
        .obj()
    )
    return Planned(obj, _deadline_failure(tuple(_replicas("r", 2))))


def deadline_in_backoff(name: str, rng: random.Random) -> Planned:
    """Replica 0 fails TaskSet attempt 0; the TaskSet retry waits 60 s, and the deadline (5 to 15 s)
    passes during that wait: Failed with reason DeadlineExceeded, no retry started."""
    failures = {sim.attempt_exit_code(0, 0, 0): FAIL}
    obj = (
        TaskSetBuilder(name)
        .spec_field("retryPolicy", _backoff(60, 2))
        .spec_field("activeDeadlineSeconds", rng.randint(5, 15))
        .role("r", 2, template=_template(rng, failures))
        .obj()
    )
    return Planned(obj, _deadline_failure(tuple(_replicas("r", 2))))


def deadline_retrying(name: str, rng: random.Random) -> Planned:
    """A replica that fails every attempt, retried each second beside one that runs for ten minutes, until
    the deadline (6 to 15 s): Pods keep being created up to the deadline, none after it. How many
    retries fit in is a matter of timing, so the replicas' counts are left open."""
    flaky = pod_template(annotations=sim.outcome(duration=rng.uniform(0.3, 0.8), exit_code=1))
    obj = (
        TaskSetBuilder(name)
        .spec_field("activeDeadlineSeconds", rng.randint(6, 15))
        .role("long", 1, template=pod_template(annotations=sim.outcome(duration=LONG_RUN)))
        .role("flaky", 1, retry=(True, 100, 1), template=flaky)
        .obj()
    )
    return Planned(obj, _deadline_failure(None))


def ttl(name: str, rng: random.Random) -> Planned:
    """A TaskSet that succeeds and is deleted 0 to 3 s later by its ttlSecondsAfterFinished."""
    obj = (
        TaskSetBuilder(name)
        .spec_field("ttlSecondsAfterFinished", rng.randint(0, 3))
        .role("r", 2, template=_template(rng, {}))
        .obj()
    )
    return Planned(obj, Outcome("Succeeded", 0, tuple(_replicas("r", 2))), deleted=True)


def percent_met(name: str, rng: random.Random) -> Planned:
    """minSucceeded and maxFailed "50%" of 3 replicas are 2 each (rounded up): replica 2 fails and the
    role still succeeds (rounded down, maxFailed would be 1 and the role would fail)."""
    failures = {sim.attempt_exit_code(0, 2, 0): FAIL}
    policy = {"minSucceeded": "50%", "maxFailed": "50%"}
    obj = TaskSetBuilder(name).role("r", 3, template=_template(rng, failures), completionPolicy=policy).obj()
    return Planned(obj, Outcome("Succeeded", 0, tuple(_replicas("r", 3))))


def percent_missed(name: str, rng: random.Random) -> Planned:
    """maxFailed "25%" of 4 replicas is 1: replica 0's failure fails TaskSet attempt 0 (minSucceeded
    "100%" keeps the role from succeeding first), and the TaskSet retry succeeds."""
    failures = {sim.attempt_exit_code(0, 0, 0): FAIL}
    policy = {"minSucceeded": "100%", "maxFailed": "25%"}
    obj = (
        TaskSetBuilder(name)
        .retry(True, 1, 0)
        .role("r", 4, template=_template(rng, failures), completionPolicy=policy)
        .obj()
    )
    return Planned(obj, Outcome("Succeeded", 1, tuple(_replicas("r", 4))))


ISSUE25_SHAPES: tuple[Callable[[str, random.Random], Planned], ...] = (
    not_counted,
    fail_taskset,
    restart_taskset,
    replica_backoff,
    taskset_backoff,
    deadline_running,
    deadline_in_backoff,
    deadline_retrying,
    ttl,
    percent_met,
    percent_missed,
)
MIXED: tuple[Callable[[str, random.Random], Planned], ...] = SHAPES + ISSUE25_SHAPES


def workload(
    count: int,
    seed: int,
    prefix: str = "w",
    shapes: tuple[Callable[[str, random.Random], Planned], ...] = SHAPES,
) -> list[Planned]:
    """``count`` TaskSets cycling through ``shapes``, durations and choices drawn from ``seed``."""
    rng = random.Random(seed)
    return [shapes[i % len(shapes)](f"{prefix}{i:03d}", rng) for i in range(count)]
