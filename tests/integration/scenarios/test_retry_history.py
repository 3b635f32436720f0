"""On the embedded control plane: the attempt history in status says why a TaskSet
retried (the replica, its exit code and failure rule, whether the retry was counted), keeps only the last
attempts past its bound, and is written once per attempt, through a controller killed between one
attempt's end and the next one's start."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from taskset.api.history import HISTORY_MAX_ATTEMPTS
from tests.builders import TaskSetBuilder
from tests.chaos.invariants import attempts_recorded_once
from tests.integration import harness as h
from tests.integration.daemon import Daemon
from tests.integration.harness import PodFacts, Recorder, TaskSets
from tests.integration.scenarios.steps import Run

pytestmark = pytest.mark.integration

FAILED_BY_W = "TaskSet completed beacause taskrole(w) is failed"


def attempts(status: dict[str, Any]) -> list[dict[str, Any]]:
    return list(status["attemptHistory"]["attempts"])


def summary(status: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (a["attempt"], a["outcome"], a["replica"], a["exitCode"], a["rule"], a["action"], a["counted"])
        for a in attempts(status)
    ]


def written_once(name: str, statuses: list[dict[str, Any]]) -> None:
    """Every status the TaskSet went through agrees with the next on the attempts both list: an entry,
    once written, never changes nor is written again (the chaos suite's check)."""
    verdict = attempts_recorded_once(name, statuses)
    assert not verdict.violations, verdict.violations


def two_failures_then_success(pod: PodFacts) -> h.Outcome:
    """TaskSet attempt 0: replica w-1 exits 3; attempt 1: w-0 exits 5; attempt 2: all succeed."""
    failing = {0: 1, 1: 0}.get(pod.taskset_attempt)
    if pod.index == failing:
        return h.exits(3 if pod.taskset_attempt == 0 else 5, after=0.3)
    return h.exits(0, after=0.3 if failing is None else 30)


def test_a_taskset_retried_twice_lists_both_failed_attempts(recorder: Recorder, run: Run) -> None:
    builder = TaskSetBuilder("twice").retry(True, 3, 0).role("w", 2)
    status = run(builder, script=two_failures_then_success)
    assert (status["state"], status["totalRetriedCount"]) == ("Succeeded", 2)
    assert summary(status) == [
        (0, "Failed", "w-1", 3, "default", "RetryCounted", True),
        (1, "Failed", "w-0", 5, "default", "RetryCounted", True),
        (2, "Succeeded", "", None, "", "", False),
    ]
    first, second, third = attempts(status)
    assert first["reason"] == second["reason"] == FAILED_BY_W
    assert third["reason"] == status["stateMessage"]
    for earlier, later in itertools.pairwise((first, second, third)):
        assert earlier["startAt"] <= earlier["finishAt"] <= later["startAt"] <= later["finishAt"]
    assert status["attemptHistory"]["dropped"] == 0
    written_once("twice", recorder.history("twice"))


def test_a_taskset_retried_past_the_bound_keeps_the_last_attempts(recorder: Recorder, run: Run) -> None:
    failures = HISTORY_MAX_ATTEMPTS + 2
    builder = TaskSetBuilder("many").retry(True, failures, 0).role("w", 1)
    script = lambda pod: h.exits(0 if pod.taskset_attempt == failures else 1, after=0.2)  # noqa: E731
    status = run(builder, script=script, timeout=240)
    assert (status["state"], status["totalRetriedCount"]) == ("Succeeded", failures)
    listed = attempts(status)
    assert [a["attempt"] for a in listed] == list(range(failures + 1 - HISTORY_MAX_ATTEMPTS, failures + 1))
    assert status["attemptHistory"]["dropped"] == failures + 1 - HISTORY_MAX_ATTEMPTS
    assert all(a["counted"] and a["exitCode"] == 1 for a in listed[:-1])
    assert listed[-1]["outcome"] == "Succeeded"
    written_once("many", recorder.history("many"))


def test_a_controller_killed_between_two_attempts_writes_the_history_once(
    api: TaskSets, recorder: Recorder, daemon: Daemon
) -> None:
    """SIGKILL while the TaskSet waits out its retry delay: the first attempt's record was written with
    the move that ended it; the restarted controller starts the next attempt and adds only its own."""
    recorder.script = lambda pod: h.exits(4 if pod.taskset_attempt == 0 else 0, after=0.3)
    daemon.start()
    api.create(TaskSetBuilder("killed").retry(True, 2, 8).role("w", 1).obj())
    pending = h.eventually(
        lambda: (s := api.status("killed")).get("phase") == "TaskSetAttemptRetryPending" and s,
        what="the retry delay",
    )
    assert summary(pending) == [(0, "Failed", "w-0", 4, "default", "RetryCounted", True)]
    daemon.kill()
    daemon.start()
    status = api.final("killed")
    assert (status["state"], status["totalRetriedCount"]) == ("Succeeded", 1)
    assert summary(status) == [
        (0, "Failed", "w-0", 4, "default", "RetryCounted", True),
        (1, "Succeeded", "", None, "", "", False),
    ]
    assert attempts(status)[0] == attempts(pending)[0]
    written_once("killed", recorder.history("killed"))
