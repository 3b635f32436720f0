"""The attempt history's record and bound: listed once per attempt, the last
``HISTORY_MAX_ATTEMPTS`` kept with a count of the older ones, every entry of bounded bytes, and a stored
history read back whatever it holds."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.api.compact import json_bytes
from taskset.api.constants import FailureAction
from taskset.api.history import (
    HISTORY_BYTES,
    HISTORY_ENTRY_BYTES,
    HISTORY_MAX_ATTEMPTS,
    HISTORY_REASON_BYTES,
    AttemptHistory,
    AttemptRecord,
    with_attempt,
)
from taskset.api.status import AttemptResult, TaskSetStatus

pytestmark = pytest.mark.unit

T0 = "2026-01-01T00:00:00Z"


def record(attempt: int, **fields: Any) -> AttemptRecord:
    base: dict[str, Any] = {
        "start_at": T0,
        "finish_at": T0,
        "succeeded": False,
        "reason": "TaskSet completed beacause taskrole(w) is failed",
        "counted": True,
    }
    return AttemptRecord(attempt, **(base | fields))


def listed(history: AttemptHistory) -> tuple[list[int], int]:
    return [r.attempt for r in history.attempts], history.dropped


def history_of(*attempts: int, dropped: int = 0) -> AttemptHistory:
    return AttemptHistory(tuple(record(n) for n in attempts), dropped)


@pytest.mark.parametrize(
    ("before", "attempt", "expected"),
    [
        pytest.param(history_of(), 0, ([0], 0), id="the first attempt is listed"),
        pytest.param(history_of(0, 1), 2, ([0, 1, 2], 0), id="a later attempt is listed last"),
        pytest.param(history_of(0, 1), 1, ([0, 1], 0), id="an attempt listed already is not listed again"),
        pytest.param(history_of(0, 1), 0, ([0, 1], 0), id="nor is an earlier one"),
        pytest.param(
            history_of(*range(HISTORY_MAX_ATTEMPTS)),
            HISTORY_MAX_ATTEMPTS,
            (list(range(1, HISTORY_MAX_ATTEMPTS + 1)), 1),
            id="past the bound the oldest is dropped and counted",
        ),
        pytest.param(
            history_of(*range(5, 5 + HISTORY_MAX_ATTEMPTS), dropped=5),
            5 + HISTORY_MAX_ATTEMPTS,
            (list(range(6, 6 + HISTORY_MAX_ATTEMPTS)), 6),
            id="the dropped count grows on",
        ),
        pytest.param(
            history_of(*range(5, 5 + HISTORY_MAX_ATTEMPTS), dropped=5),
            7,
            (list(range(5, 5 + HISTORY_MAX_ATTEMPTS)), 5),
            id="a full history ignores an attempt it lists",
        ),
    ],
)
def test_with_attempt(before: AttemptHistory, attempt: int, expected: tuple[list[int], int]) -> None:
    assert listed(with_attempt(before, record(attempt))) == expected


def test_a_retried_taskset_keeps_the_last_attempts_and_counts_the_rest() -> None:
    history = AttemptHistory()
    for attempt in range(25):
        history = with_attempt(history, record(attempt))
        history = with_attempt(history, record(attempt))  # a pass that runs again
    assert listed(history) == (list(range(15, 25)), 15)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(None, ([], 0), id="absent: an older controller's status"),
        pytest.param("junk", ([], 0), id="not an object"),
        pytest.param({"attempts": "junk", "dropped": -3}, ([], 0), id="wrong types"),
        pytest.param(
            {"attempts": [record(0).to_json(), {"attempt": "1"}, {"attempt": 2}, record(3).to_json()]},
            ([0, 3], 0),
            id="entries that are not records are skipped",
        ),
        pytest.param(
            {"attempts": [record(4).to_json(), record(2).to_json()], "dropped": 1},
            ([4], 1),
            id="entries out of order are not kept",
        ),
        pytest.param(
            {"attempts": [record(n).to_json() for n in range(12)], "dropped": 0},
            (list(range(2, 12)), 2),
            id="entries over the bound count as dropped",
        ),
    ],
)
def test_a_stored_history_is_read_whatever_it_holds(raw: object, expected: tuple[list[int], int]) -> None:
    assert listed(AttemptHistory.from_json(raw)) == expected


@pytest.mark.parametrize(
    "sample",
    [
        pytest.param(record(0, succeeded=True, counted=False), id="a success"),
        pytest.param(
            record(3, replica="w-1", exit_code=3, rule="default", action=FailureAction.RETRY_COUNTED),
            id="a failure by a replica",
        ),
        pytest.param(record(1, start_at=None, finish_at=None), id="times unknown"),
    ],
)
def test_a_record_round_trips(sample: AttemptRecord) -> None:
    assert AttemptRecord.from_json(sample.to_json()) == sample


def test_every_entry_stays_within_its_bytes_whatever_its_texts() -> None:
    """Texts of six-byte characters (``<`` on the wire) at every length, the widest numbers."""
    for length in (0, 10, 100, 1000, 10_000):
        worst = record(
            10**6,
            reason="<" * length,
            replica="<" * length,
            rule="<" * length,
            exit_code=-(2**31),
            action=FailureAction.RESTART_TASKSET,
            succeeded=True,
        )
        assert json_bytes(worst.to_json()) <= HISTORY_ENTRY_BYTES, length
    full = AttemptHistory(tuple(record(n, reason="<" * 5000) for n in range(HISTORY_MAX_ATTEMPTS)), 10**6)
    assert json_bytes({"attemptHistory": full.to_json()}) <= HISTORY_BYTES


def test_a_clipped_reason_says_it_was_clipped_and_stays_as_it_is() -> None:
    written = record(0, reason="x" * 1000).to_json()["reason"]
    assert written.endswith("...") and json_bytes(written) <= HISTORY_REASON_BYTES
    assert AttemptRecord.from_json(record(0, reason=written).to_json()) == record(0, reason=written)


def test_the_status_carries_the_history_and_the_ending_replica() -> None:
    status = TaskSetStatus(
        attempt_start_at=T0,
        attempt_history=history_of(0, 1, dropped=2),
        attempt_result=AttemptResult(False, "failed", replica=("w", 1)),
    )
    written = status.full_json()
    assert written["attemptStartAt"] == T0
    assert written["attemptHistory"]["dropped"] == 2
    assert written["attemptResult"]["replica"] == {"role": "w", "index": 1}
    back = TaskSetStatus.from_json(written)
    assert back is not None
    assert (back.attempt_history, back.attempt_start_at) == (status.attempt_history, T0)
    assert back.attempt_result == status.attempt_result
    assert "replica" not in AttemptResult(True, "ok").to_json()  # the shape of before, when unknown
