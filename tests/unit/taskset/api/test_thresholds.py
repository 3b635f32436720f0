"""Completion thresholds as percentages: rounding up, and bad values rejected naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.api.spec import ParsedTaskSet, ValidationFailure, parse_taskset
from taskset.api.thresholds import percent_of
from tests.builders import TaskSetBuilder

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("percent", "replicas", "count"),
    [(50, 4, 2), (50, 3, 2), (10, 5, 1), (1, 1000, 10), (1, 1, 1), (100, 7, 7), (34, 3, 2), (33, 3, 1)],
)
def test_a_percentage_rounds_up(percent: int, replicas: int, count: int) -> None:
    assert percent_of(percent, replicas) == count


def completion(replicas: int, **policy: Any) -> ParsedTaskSet | ValidationFailure:
    return parse_taskset(TaskSetBuilder("p").role("r", replicas, completionPolicy=policy).obj())


@pytest.mark.parametrize(
    ("replicas", "policy", "thresholds"),
    [
        (4, {"minSucceeded": "50%", "maxFailed": "10%"}, (2, 1)),
        (10, {"minSucceeded": "100%", "maxFailed": "30%"}, (10, 3)),
        (3, {"minSucceeded": 2, "maxFailed": "50%"}, (2, 2)),
    ],
)
def test_percentages_become_counts(
    replicas: int, policy: dict[str, Any], thresholds: tuple[int, int]
) -> None:
    parsed = completion(replicas, **policy)
    assert isinstance(parsed, ParsedTaskSet)
    done = parsed.spec.roles[0].completion_policy
    assert (done.min_succeeded, done.max_failed) == thresholds


@pytest.mark.parametrize(
    ("policy", "field"),
    [
        ({"minSucceeded": "0%"}, "minSucceeded"),
        ({"minSucceeded": "101%"}, "minSucceeded"),
        ({"maxFailed": "50"}, "maxFailed"),
        ({"maxFailed": "5.5%"}, "maxFailed"),
        ({"maxFailed": " 5%"}, "maxFailed"),
        ({"minSucceeded": "50%\n"}, "minSucceeded"),
        ({"minSucceeded": True}, "minSucceeded"),
    ],
)
def test_bad_percentages_are_rejected_naming_the_field(policy: dict[str, Any], field: str) -> None:
    failure = completion(4, **policy)
    assert isinstance(failure, ValidationFailure)
    assert failure.field == f"spec.roles[0].completionPolicy.{field}"
    assert failure.message.startswith(f"spec.roles[0].completionPolicy.{field}: must be an integer or a")
