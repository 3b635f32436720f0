"""Failure rules on the embedded control plane (an evicted or disrupted replica retried without
counting, OOMKilled failing the TaskSet at once by rule) and exponential backoff between attempts."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from kubernetes import client

from devcluster import Cluster
from tests.builders import TaskSetBuilder
from tests.integration import harness as h
from tests.integration.harness import PodFacts, Recorder, TaskSets
from tests.integration.scenarios.steps import RUNNING, Run, replica_phase

pytestmark = pytest.mark.integration


def evicted_first(pod: PodFacts) -> Any:
    """The first replica attempt is evicted by its node (exit 137, Pod reason Evicted); the next succeeds."""
    if pod.replica_attempt == 0:
        return h.exits(137, after=0.5, pod_reason="Evicted")
    return h.exits(0, after=0.5)


def test_an_evicted_replica_is_retried_without_counting_and_a_no_retry_taskset_succeeds(
    recorder: Recorder, run: Run
) -> None:
    status = run(TaskSetBuilder("evicted").role("r", 1), script=evicted_first)  # maxRetryCount 0
    assert status["state"] == "Succeeded"
    rep = h.replica(status, "r", 0)
    assert (rep["totalRetriedCount"], rep["uncountedRetries"]) == (1, 1)
    failures = [
        r["failure"] for s in recorder.history("evicted") for r in [h.replica(s, "r", 0)] if r.get("failure")
    ]
    assert failures[0] == {
        "rule": "builtin-platform",
        "action": "RetryNotCounted",
        "message": "Pod reason Evicted",
    }


def test_oomkilled_fails_the_taskset_at_once_by_rule(recorder: Recorder, run: Run) -> None:
    rule = {"name": "oom", "action": "FailTaskSet", "onTerminatedReasons": ["OOMKilled"]}
    builder = TaskSetBuilder("oom").retry(True, 3, 0).role("r", 1, retry=(True, 3, 0), failureRules=[rule])
    status = run(builder, script=lambda pod: h.exits(137, after=0.5, reason="OOMKilled"))
    assert (status["state"], status["totalRetriedCount"]) == ("Failed", 0)
    assert h.replica(status, "r", 0)["totalRetriedCount"] == 0
    assert len(recorder.pod_log("oom-")) == 1
    assert status["attemptResult"]["final"] is True
    assert "rule oom" in status["stateMessage"] and "FailTaskSet" in status["stateMessage"]


def test_a_disrupted_pod_is_retried_without_counting(
    cluster: Cluster, ts: TaskSets, recorder: Recorder, namespace: str
) -> None:
    """What a drain leaves: the DisruptionTarget condition on a Pod that then fails, set here through
    the Pod's status subresource (a preemption is its own class: test_preemption_budget)."""
    recorder.script = lambda pod: h.run_forever() if pod.replica_attempt == 0 else h.exits(0, after=0.5)
    obj = TaskSetBuilder("disrupted").role("r", 1).obj()
    ts.create(obj)
    h.eventually(lambda: replica_phase(ts.status("disrupted"), "r", 0) == RUNNING, timeout=h.FINAL_TIMEOUT)
    core = client.CoreV1Api(cluster.api_client())
    condition = {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}
    body = {"status": {"phase": "Failed", "conditions": [condition]}}
    core.patch_namespaced_pod_status("disrupted-r-0", namespace, body)
    status = ts.final("disrupted")
    assert status["state"] == "Succeeded"
    rep = h.replica(status, "r", 0)
    assert (rep["totalRetriedCount"], rep["uncountedRetries"]) == (1, 1)
    rules = {
        r["failure"]["rule"]
        for s in recorder.history("disrupted")
        for r in [h.replica(s, "r", 0)]
        if r.get("failure")
    }
    assert rules == {"builtin-disruption"}


def test_exponential_backoff_between_replica_attempts_is_observed_and_in_the_status(
    recorder: Recorder, run: Run
) -> None:
    retry = {"retry": True, "maxRetryCount": 2, "backoff": {"initialDelay": 2, "factor": 2}}
    status = run(TaskSetBuilder("backoff").role("r", 1, retryPolicy=retry), script=lambda pod: h.exits(1))
    assert status["state"] == "Failed"
    log = sorted(recorder.pod_log("backoff-r-0"), key=lambda e: e.created)
    assert len(log) == 3
    gaps = [
        following.created - previous.gone for previous, following in itertools.pairwise(log) if previous.gone
    ]
    assert len(gaps) == 2
    assert gaps[0] >= 2 - 0.5 and gaps[1] >= 4 - 0.5  # the watch's slack
    assert gaps[1] > gaps[0]
    due = {
        r["nextRetryAt"]
        for s in recorder.history("backoff")
        for r in [h.replica(s, "r", 0)]
        if r.get("phase") == "TaskRoleReplicaAttemptRetryPending"
    }
    assert len(due) == 2 and None not in due
