"""Preemption as its own class on the embedded control plane: a replica's Pod preempted as kube-scheduler
preempts one (the ``DisruptionTarget`` condition with reason ``PreemptionByScheduler``, then the
deletion) is retried without counting against ``maxRetryCount`` but against
``spec.retryPolicy.maxPreemptions``; the preemption past it fails the TaskSet with that reason."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest
from kubernetes import client

from devcluster import Cluster
from tests.builders import TaskSetBuilder
from tests.integration import harness as h
from tests.integration.harness import Recorder, TaskSets
from tests.integration.scenarios.steps import RUNNING, replica_phase

pytestmark = pytest.mark.integration

SCHEDULER = "default-scheduler: preempting to accommodate a higher priority pod"


def preempt(core: client.CoreV1Api, namespace: str, pod: str) -> None:
    """What kube-scheduler does to a victim: the condition through the status subresource, then the
    deletion (the Pod terminator confirms it, as the victim's kubelet would)."""
    condition = {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": SCHEDULER,
    }
    core.patch_namespaced_pod_status(pod, namespace, {"status": {"conditions": [condition]}})
    core.delete_namespaced_pod(pod, namespace)


def running_again(ts: TaskSets, name: str, uid: str) -> bool:
    status = ts.status(name)
    rep = h.replica(status, "r", 0) if status else None
    return rep is not None and replica_phase(status, "r", 0) == RUNNING and rep.get("podUID") != uid


def test_a_taskset_preempted_three_times_with_a_budget_of_two_fails_with_the_preemption_reason(
    cluster: Cluster, ts: TaskSets, recorder: Recorder, namespace: str
) -> None:
    recorder.script = lambda pod: h.run_forever()
    obj = TaskSetBuilder("preempted").retry(True, 5, 0).role("r", 1).obj()
    obj["spec"]["retryPolicy"]["maxPreemptions"] = 2
    ts.create(obj)
    h.eventually(lambda: replica_phase(ts.status("preempted"), "r", 0) == RUNNING, timeout=h.FINAL_TIMEOUT)
    core = client.CoreV1Api(cluster.api_client())
    for round_ in range(2):
        uid: str = h.replica(ts.status("preempted"), "r", 0)["podUID"]
        preempt(core, namespace, "preempted-r-0")
        h.eventually(partial(running_again, ts, "preempted", uid), timeout=h.FINAL_TIMEOUT)
        status = ts.status("preempted")
        assert status["preemptCount"] == round_ + 1
    preempted = next(c for c in status["conditions"] if c["type"] == "Preempted")
    assert (preempted["status"], preempted["reason"]) == ("True", "PreemptionByScheduler")
    assert SCHEDULER in preempted["message"] and "preempted 2 times of at most 2" in preempted["message"]
    rep = h.replica(status, "r", 0)
    assert (rep["totalRetriedCount"], rep["uncountedRetries"]) == (2, 2), "no preemption was counted"

    preempt(core, namespace, "preempted-r-0")
    status = ts.final("preempted")
    assert (status["state"], status["preemptCount"], status["totalRetriedCount"]) == ("Failed", 3, 0)
    assert "more than spec.retryPolicy.maxPreemptions (2)" in status["stateMessage"]
    failed: dict[str, Any] = next(c for c in status["conditions"] if c["type"] == "Preempted")
    assert failed["reason"] == "PreemptionBudgetExceeded"
    record = status["attemptHistory"]["attempts"][-1]
    assert (record["rule"], record["action"], record["preemptCount"]) == (
        "builtin-preemption",
        "FailTaskSet",
        3,
    )
    assert len(recorder.pod_log("preempted-r-0")) == 3, "one Pod per attempt, none after the budget"


def test_maxpreemptions_is_refused_below_zero_naming_the_field(ts: TaskSets) -> None:
    obj = TaskSetBuilder("negative").role("r", 1).obj()
    obj["spec"]["retryPolicy"] = {"maxPreemptions": -1}
    with pytest.raises(client.ApiException) as refused:
        ts.create(obj)
    assert "spec.retryPolicy.maxPreemptions" in str(refused.value.body)
