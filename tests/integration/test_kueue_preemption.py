"""Kueue preemption as the TaskSet's own budget, against the real Kueue v0.17: each eviction of its
Workload to admit a higher priority is one preemption (``status.preemptCount``), said in the
``Preempted`` condition naming the Workload and its preemptor; within ``maxPreemptions`` the TaskSet
queues and runs again, past it the TaskSet fails with the preemption as its reason."""

from __future__ import annotations

from typing import Any

import pytest

from devcluster import Cluster
from taskset.runtime.controller import Controller
from tests.integration.harness import TaskSets, eventually, never_overlapping, recording, replica
from tests.integration.test_kueue_admission import (
    kueue_controller,
    preempting_queue_for_one,
    queued,
    running,
    workload_of,
)

__all__ = ["kueue_controller", "preempting_queue_for_one"]  # the admission tests' fixtures, used by name

pytestmark = pytest.mark.integration


def preempted(status: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in status.get("conditions") or [] if c["type"] == "Preempted"), None)


def test_a_taskset_preempted_past_max_preemptions_fails_with_the_preemption_as_its_reason(
    cluster: Cluster, namespace: str, kueue_controller: Controller, preempting_queue_for_one: str
) -> None:
    ts = TaskSets(cluster, namespace)
    low = queued("low", preempting_queue_for_one, priority=0)
    low["spec"]["retryPolicy"] = {"maxPreemptions": 1}
    with recording(cluster, namespace) as recorder:
        ts.create(low)
        eventually(lambda: running(ts, "low"), 90, "the low-priority TaskSet running")

        # Preempted once, within its budget: counted, said, and it runs again once the quota is free.
        ts.create(queued("high-1", preempting_queue_for_one, priority=100))
        eventually(lambda: running(ts, "high-1"), 90, "the first higher priority admitted and running")
        status = eventually(
            lambda: (s := ts.status("low"))["preemptCount"] == 1 and s, 30, "the preemption counted"
        )
        said = preempted(status)
        assert said is not None and (said["status"], said["reason"]) == ("True", "EvictedByKueue")
        preemptor = workload_of(cluster, namespace, "high-1")["metadata"]["uid"]
        assert said["message"].startswith("Workload taskset-low-0 preempted 1 time of at most 1; last: ")
        assert preemptor in said["message"], "Kueue names the preemptor's Workload"
        assert (status["totalRetriedCount"], replica(status, "r", 0)["totalRetriedCount"]) == (0, 0)
        ts.end_pod("high-1-r-0", 0)
        assert ts.final("high-1")["state"] == "Succeeded"
        eventually(lambda: running(ts, "low"), 90, "the preempted TaskSet admitted again and running")
        status = ts.status("low")
        assert (status["state"], status["preemptCount"]) == ("Running", 1)

        # Preempted a second time, past maxPreemptions 1: it fails, naming the preemption.
        ts.create(queued("high-2", preempting_queue_for_one, priority=100))
        final = ts.final("low")
        eventually(lambda: running(ts, "high-2"), 90, "the second higher priority admitted and running")
        log = recorder.pod_log("low-r-0")
    assert (final["state"], final["preemptCount"], final["totalRetriedCount"]) == ("Failed", 2, 0)
    assert final["attemptResult"]["reason"].startswith("PreemptionBudgetExceeded: Workload taskset-low-0")
    assert final["attemptResult"]["final"] is True
    said = preempted(final)
    assert said is not None and said["reason"] == "PreemptionBudgetExceeded"
    assert "more than spec.retryPolicy.maxPreemptions (1)" in said["message"]
    assert workload_of(cluster, namespace, "high-2")["metadata"]["uid"] in said["message"]
    (entry,) = final["attemptHistory"]["attempts"]
    assert entry["preemptCount"] == 2
    assert len(log) == 2, "one Pod before each preemption"
    assert never_overlapping(log)
    # One event per preemption, not per pass or Pod (the Events go out from a background thread).
    eventually(
        lambda: [r for r, _ in ts.events("low")].count("TaskSetPreempted") == 2, 30, "two TaskSetPreempted"
    )
