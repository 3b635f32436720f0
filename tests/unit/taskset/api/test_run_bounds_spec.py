"""Parsing the run bounds: accepted values, and hostile input rejected naming the field."""

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


@pytest.mark.parametrize(
    ("default", "own", "effective"),
    [(None, None, None), (60, None, 60), (60, 5, 5), (None, 5, 5)],
)
def test_a_roles_start_deadline_is_its_own_or_the_taskset_default(
    default: int | None, own: int | None, effective: int | None
) -> None:
    builder = TaskSetBuilder("b").spec_field("startDeadlineSeconds", default)
    result = parse_taskset(builder.role("r", 1, startDeadlineSeconds=own).role("s", 1).obj())
    assert isinstance(result, ParsedTaskSet)
    assert [role.start_deadline_seconds for role in result.spec.roles] == [effective, default]


@pytest.mark.parametrize(
    ("spec_value", "role_value", "field"),
    [
        (0, None, "spec.startDeadlineSeconds"),
        ("30s", None, "spec.startDeadlineSeconds"),
        (None, 0, "spec.roles[0].startDeadlineSeconds"),
        (None, -1, "spec.roles[0].startDeadlineSeconds"),
        (None, 2.5, "spec.roles[0].startDeadlineSeconds"),
        (None, False, "spec.roles[0].startDeadlineSeconds"),
        (None, 10**12, "spec.roles[0].startDeadlineSeconds"),
    ],
)
def test_hostile_start_deadlines_are_rejected_naming_the_field(
    spec_value: object, role_value: object, field: str
) -> None:
    builder = TaskSetBuilder("b").spec_field("startDeadlineSeconds", spec_value)
    result = parse_taskset(builder.role("r", 1, startDeadlineSeconds=role_value).obj())
    assert isinstance(result, ValidationFailure)
    assert result.field == field
    assert result.message.startswith(f"{field}: must be an integer between 1 and ")


@pytest.mark.parametrize(
    ("value", "policy"), [(None, "All"), ("All", "All"), ("Running", "Running"), ("None", "None")]
)
def test_the_clean_pod_policy_is_parsed(value: str | None, policy: str) -> None:
    result = spec_with(cleanPodPolicy=value)
    assert isinstance(result, ParsedTaskSet)
    assert result.spec.clean_pod_policy == policy


@pytest.mark.parametrize("value", ["none", "", "Always", 0, True, ["All"], {"All": 1}])
def test_a_hostile_clean_pod_policy_is_rejected_naming_the_field(value: object) -> None:
    result = spec_with(cleanPodPolicy=value)
    assert isinstance(result, ValidationFailure)
    assert result.field == "spec.cleanPodPolicy"
    assert result.message == "spec.cleanPodPolicy: must be one of None, Running, All"
