"""Run bounds on the embedded control plane: ``activeDeadlineSeconds`` failing a long TaskSet
with reason ``DeadlineExceeded``, its Pods removed and no retry despite a retry policy; and
``ttlSecondsAfterFinished`` deleting a finished TaskSet."""

from __future__ import annotations

import time

import pytest

from tests.builders import TaskSetBuilder
from tests.integration import harness as h
from tests.integration.harness import TaskSets
from tests.integration.scenarios.steps import Run

pytestmark = pytest.mark.integration


def test_a_deadline_fails_a_long_taskset_removes_its_pods_and_stops_retries(ts: TaskSets, run: Run) -> None:
    builder = TaskSetBuilder("deadline").retry(True, 5, 0).spec_field("activeDeadlineSeconds", 4)
    status = run(builder.role("r", 2), script=lambda pod: h.run_forever())
    assert (status["state"], status["totalRetriedCount"]) == ("Failed", 0)
    failed = next(c for c in status["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "DeadlineExceeded"
    assert "activeDeadlineSeconds (4s)" in status["stateMessage"]
    assert status["attemptResult"]["final"] is True
    h.eventually(lambda: ts.pods("deadline") == [], timeout=h.FINAL_TIMEOUT, what="the Pods removed")
    elapsed = h.timestamp(status["finishAt"]) - h.timestamp(status["createdAt"])
    assert 4 <= elapsed < 4 + 10


def test_the_ttl_deletes_a_finished_taskset(ts: TaskSets, run: Run) -> None:
    builder = TaskSetBuilder("ttl").spec_field("ttlSecondsAfterFinished", 3).role("r", 1)
    status = run(builder, script=lambda pod: h.exits(0, after=0.5))
    assert status["state"] == "Succeeded"
    assert ts.get("ttl") is not None  # kept until the TTL passed
    h.eventually(lambda: ts.get("ttl") is None, timeout=h.FINAL_TIMEOUT, what="the TaskSet deleted")
    gone = time.time()
    assert gone - h.timestamp(status["finishAt"]) >= 3 - 1  # finishAt is rounded up to the second


def test_a_percentage_threshold_completes_a_role_at_half(run: Run) -> None:
    """A percentage threshold: minSucceeded "50%" of 4 replicas is 2; the two others never end, and are
    stopped."""
    policy = {"minSucceeded": "50%", "maxFailed": "25%"}
    builder = TaskSetBuilder("percent").role("r", 4, completionPolicy=policy)
    script = lambda pod: h.exits(0, after=0.5) if pod.index < 2 else h.run_forever()  # noqa: E731
    status = run(builder, script=script)
    assert status["state"] == "Succeeded"
    role = h.role_status(status, "r")
    assert "succeeded count:2" in str(role), role
