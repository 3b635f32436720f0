"""The plugin's small parsers and the ages it prints, as kubectl spells them."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime

import pytest

from taskset_sdk.kubectl import parse_duration, parse_for
from taskset_sdk.render import age

NOW = datetime(2026, 1, 2, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("timestamp", "expected"),
    [
        pytest.param("", "-", id="no time"),
        pytest.param("2026-01-02T11:59:15Z", "45s", id="seconds"),
        pytest.param("2026-01-02T11:57:01Z", "2m59s", id="minutes and seconds under ten minutes"),
        pytest.param("2026-01-02T11:30:00Z", "30m", id="minutes"),
        pytest.param("2026-01-02T09:55:00Z", "2h5m", id="hours and minutes under ten hours"),
        pytest.param("2026-01-01T22:00:00Z", "14h", id="hours"),
        pytest.param("2025-12-29T12:00:00Z", "4d", id="days"),
        pytest.param("2026-01-02T12:00:05Z", "0s", id="a clock ahead of ours is now"),
    ],
)
def test_age(timestamp: str, expected: str) -> None:
    assert age(timestamp, NOW) == expected


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("30", 30), ("5m", 300), ("1h30m", 5400), ("2m10s", 130)],
)
def test_a_timeout_as_kubectl_spells_it(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "5x", "-1s"])
def test_a_timeout_that_is_not_a_duration(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="invalid duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("state=Succeeded", ("state", "Succeeded", "")),
        ("condition=Failed", ("condition", "Failed", "True")),
        ("condition=Running=False", ("condition", "Running", "False")),
    ],
)
def test_for(text: str, parsed: tuple[str, str, str]) -> None:
    assert parse_for(text) == parsed


@pytest.mark.parametrize("text", ["Succeeded", "state=", "phase=Running", "condition="])
def test_for_refuses_anything_else(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="--for must be"):
        parse_for(text)
