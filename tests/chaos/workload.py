"""A seeded chaos workload: TaskSets whose failures are written into their templates, with the outcome a
fault-free run gives each of them.

Every failing attempt is chosen by a ``sim.attempt_exit_code`` annotation (TaskSet attempt, replica,
replica attempt) in the role's template, so the workload is fixed at creation: no test thread has to patch
live Pods at the right moment, and a controller restart cannot make a Pod fail that was meant to succeed.
The expected outcome of each shape follows from the spec's defaults (minSucceeded = replicas, maxFailed = 1)
and is checked by the fault-free test of the suite.
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

    @property
    def name(self) -> str:
        name: str = self.obj["metadata"]["name"]
        return name


def _template(rng: random.Random, failures: dict[str, str]) -> dict[str, Any]:
    annotations = {**sim.outcome(duration=rng.uniform(0.8, 2.5), exit_code=0), **failures}
    return pod_template("exit 0", annotations=annotations)


def _replicas(role: str, count: int, retried: dict[int, int] | None = None) -> list[tuple[str, int, int]]:
    return [(role, index, (retried or {}).get(index, 0)) for index in range(count)]


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


def workload(count: int, seed: int, prefix: str = "w") -> list[Planned]:
    """``count`` TaskSets cycling through the shapes, durations drawn from ``seed``."""
    rng = random.Random(seed)
    return [SHAPES[i % len(SHAPES)](f"{prefix}{i:03d}", rng) for i in range(count)]
