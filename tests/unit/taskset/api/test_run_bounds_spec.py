"""Parsing the run bounds of issue 25: accepted values, and hostile input rejected naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.api.spec import ParsedTaskSet, ValidationFailure, parse_taskset
from tests.builders import TaskSetBuilder


def spec_with(**fields: Any) -> ParsedTaskSet | ValidationFailure:
    builder = TaskSetBuilder("b").role("r", 4)
    for name, value in fields.items():
        builder.spec_field(name, value)
    return parse_taskset(builder.obj())


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"activeDeadlineSeconds": 0}, "spec.activeDeadlineSeconds"),
        ({"activeDeadlineSeconds": -3}, "spec.activeDeadlineSeconds"),
        ({"activeDeadlineSeconds": "60"}, "spec.activeDeadlineSeconds"),
        ({"activeDeadlineSeconds": True}, "spec.activeDeadlineSeconds"),
        ({"activeDeadlineSeconds": 10**12}, "spec.activeDeadlineSeconds"),
        ({"ttlSecondsAfterFinished": -1}, "spec.ttlSecondsAfterFinished"),
        ({"ttlSecondsAfterFinished": 1.5}, "spec.ttlSecondsAfterFinished"),
        ({"ttlSecondsAfterFinished": "1d"}, "spec.ttlSecondsAfterFinished"),
    ],
)
def test_hostile_bounds_are_rejected_naming_the_field(fields: dict[str, Any], field: str) -> None:
    result = spec_with(**fields)
    assert isinstance(result, ValidationFailure)
    assert result.field == field
    assert result.message.startswith(f"{field}: ")


@pytest.mark.parametrize(
    ("fields", "deadline"),
    [({}, None), ({"activeDeadlineSeconds": None}, None), ({"activeDeadlineSeconds": 60}, 60)],
)
def test_bounds_are_parsed(fields: dict[str, Any], deadline: int | None) -> None:
    result = spec_with(**fields)
    assert isinstance(result, ParsedTaskSet)
    assert result.spec.active_deadline_seconds == deadline


@pytest.mark.parametrize(("value", "ttl"), [(None, None), (0, 0), (3600, 3600)])
def test_the_ttl_is_parsed(value: int | None, ttl: int | None) -> None:
    result = spec_with(ttlSecondsAfterFinished=value)
    assert isinstance(result, ParsedTaskSet)
    assert result.spec.ttl_seconds_after_finished == ttl
