"""The attempt history as the SDK reads it, ``kubectl taskset describe`` prints it and
``kubectl taskset get -o json`` gives it."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from taskset_sdk.render import attempt_history, tree
from taskset_sdk.views import AttemptView, TaskSetView

pytestmark = pytest.mark.unit

NOW = datetime(2026, 1, 1, 0, 1, 0, tzinfo=UTC)


def entry(attempt: int, **fields: Any) -> dict[str, Any]:
    return {
        "attempt": attempt,
        "startAt": "2026-01-01T00:00:00Z",
        "finishAt": "2026-01-01T00:00:30Z",
        "outcome": "Failed",
        "reason": "TaskSet completed beacause taskrole(worker) is failed",
        "replica": "worker-1",
        "exitCode": 3,
        "rule": "default",
        "action": "RetryCounted",
        "counted": True,
    } | fields


def view(history: object) -> TaskSetView:
    return TaskSetView.parse({"metadata": {"name": "job"}, "status": {"attemptHistory": history}})


def test_the_view_reads_every_field() -> None:
    parsed = view({"attempts": [entry(0)], "dropped": 2})
    (only,) = parsed.attempts
    assert vars(only) == {
        "attempt": 0,
        "start_at": "2026-01-01T00:00:00Z",
        "finish_at": "2026-01-01T00:00:30Z",
        "outcome": "Failed",
        "reason": "TaskSet completed beacause taskrole(worker) is failed",
        "replica": "worker-1",
        "exit_code": 3,
        "rule": "default",
        "action": "RetryCounted",
        "counted": True,
    }
    assert isinstance(only, AttemptView)
    assert parsed.attempts_dropped == 2


@pytest.mark.parametrize(
    "history",
    [
        pytest.param(None, id="a status of before the history"),
        pytest.param({"attempts": None, "dropped": None}, id="nulls"),
        pytest.param({"attempts": ["junk"]}, id="an entry that is no object"),
    ],
)
def test_a_view_without_a_history_lists_none(history: object) -> None:
    parsed = view(history)
    assert (parsed.attempts, parsed.attempts_dropped) == ((), 0)
    assert attempt_history(parsed, NOW) == ["Attempt history:", "  none"]


def test_describe_lists_the_attempts_and_the_dropped_ones() -> None:
    success = entry(
        12,
        outcome="Succeeded",
        reason="TaskSet succeeded beacause all taskrole are succeeded",
        replica="",
        exitCode=None,
        rule="",
        action="",
        counted=False,
        finishAt="2026-01-01T00:00:55Z",
    )
    lines = attempt_history(view({"attempts": [entry(11), success], "dropped": 11}), NOW)
    assert lines == [
        "Attempt history:",
        "  ATTEMPT  OUTCOME    REPLICA   EXIT  RULE     ACTION        COUNTED  REASON"
        "                                                 ENDED",
        "  11       Failed     worker-1  3     default  RetryCounted  yes      TaskSet completed beacause"
        " taskrole(worker) is failed  30s",
        "  12       Succeeded  -         -     -        -             no       TaskSet succeeded beacause"
        " all taskrole are succeeded  5s",
        "  (11 earlier attempts not listed)",
    ]


def test_get_json_gives_the_history_with_the_status_field_names() -> None:
    success = entry(1, outcome="Succeeded", replica="", exitCode=None, rule="", action="", counted=False)
    data = tree(view({"attempts": [entry(0), success], "dropped": 3}), pods={})
    assert data["attemptHistory"] == {
        "attempts": [
            entry(0),
            entry(1, outcome="Succeeded", replica=None, exitCode=None, rule=None, action=None, counted=False),
        ],
        "dropped": 3,
    }
    assert tree(view(None), pods={})["attemptHistory"] == {"attempts": [], "dropped": 0}
