"""Retries that learn from the failure, on the embedded control plane: after an ``OOMKilled`` exit the
replica's next Pod has the grown memory and the status says so, and a replica failing on a node is not
placed on that node again (kube-scheduler honours the anti-affinity the controller adds)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from tests.builders import TaskSetBuilder, pod_template
from tests.integration import harness as h
from tests.integration.harness import ObjectLog, PodFacts, Recorder, TaskSets
from tests.integration.scenarios.steps import RUNNING, replica_phase

pytestmark = pytest.mark.integration


def template(memory: str) -> dict[str, Any]:
    tmpl = pod_template()
    tmpl["spec"]["containers"][0]["resources"] = {
        "requests": {"memory": memory},
        "limits": {"memory": memory},
    }
    return tmpl


def running_attempt(ts: TaskSets, name: str, attempt: int) -> bool:
    status = ts.status(name)
    if replica_phase(status, "r", 0) != RUNNING:
        return False
    return bool(h.replica(status, "r", 0)["totalRetriedCount"] == attempt)


def pod_specs(pods: ObjectLog, name: str) -> dict[str, dict[str, Any]]:
    """Each Pod (by UID) of ``name`` as last seen bound to a node: its spec."""
    found: dict[str, dict[str, Any]] = {}
    for version in pods.versions(name):
        if version.obj["spec"].get("nodeName"):
            found[version.obj["metadata"]["uid"]] = version.obj["spec"]
    return found


def test_an_oomkilled_replica_s_next_pod_has_the_larger_memory_and_the_status_says_so(
    ts: TaskSets, recorder: Recorder, pods: ObjectLog
) -> None:
    def script(pod: PodFacts) -> h.Outcome:
        return h.exits(137, after=0.5, reason="OOMKilled") if pod.replica_attempt == 0 else h.run_forever()

    recorder.script = script
    rule = {
        "name": "more-memory",
        "action": "RetryCounted",
        "onTerminatedReasons": ["OOMKilled"],
        "nextAttempt": {"memory": {"factor": 1.5, "ceiling": "4Gi"}},
    }
    obj = TaskSetBuilder("oom").role(
        "r", 1, retry=(True, 3, 0), template=template("1Gi"), failureRules=[rule]
    )
    ts.create(obj.obj())
    h.eventually(lambda: running_attempt(ts, "oom", 1), timeout=h.FINAL_TIMEOUT)
    learned = h.replica(ts.status("oom"), "r", 0)["nextAttempt"]
    assert learned["memory"] == [{"container": "c0", "request": "1536Mi", "limit": "1536Mi"}]
    assert "container c0 OOMKilled: memory x1.5 to 1536Mi (ceiling 4Gi)" in learned["reason"]
    specs = list(pod_specs(pods, "oom-r-0").values())  # in the order they were created
    assert [s["containers"][0]["resources"] for s in specs] == [
        {"requests": {"memory": "1Gi"}, "limits": {"memory": "1Gi"}},
        {"requests": {"memory": "1536Mi"}, "limits": {"memory": "1536Mi"}},
    ]
    spec = (ts.get("oom") or {})["spec"]
    assert spec["roles"][0]["template"]["spec"]["containers"][0]["resources"]["limits"] == {"memory": "1Gi"}


def test_a_replica_failing_on_a_node_is_not_placed_on_it_again(
    ts: TaskSets, recorder: Recorder, pods: ObjectLog
) -> None:
    """Three failed attempts on the embedded plane's four nodes: each next Pod avoids every node an
    earlier attempt failed on, so the four attempts run on four different nodes."""

    def script(pod: PodFacts) -> h.Outcome:
        return h.exits(1, after=0.5) if pod.replica_attempt < 3 else h.run_forever()

    recorder.script = script
    rule = {
        "name": "elsewhere",
        "action": "RetryCounted",
        "onExitCodes": {"operator": "In", "values": [1]},
        "nextAttempt": {"avoidFailedNodes": True},
    }
    obj = TaskSetBuilder("away").role("r", 1, retry=(True, 5, 0), failureRules=[rule])
    ts.create(obj.obj())
    h.eventually(lambda: running_attempt(ts, "away", 3), timeout=h.FINAL_TIMEOUT)
    specs = list(pod_specs(pods, "away-r-0").values())
    nodes = [spec["nodeName"] for spec in specs]
    assert len(specs) == 4 and len(set(nodes)) == 4, f"an attempt ran on a node it had failed on: {nodes}"
    avoided = h.replica(ts.status("away"), "r", 0)["nextAttempt"]["avoidNodes"]
    assert len(avoided) == 3 and nodes[-1] not in avoided
    last = specs[-1]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    expression = last["nodeSelectorTerms"][0]["matchExpressions"][-1]
    assert expression == {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": avoided}


def test_a_memory_factor_of_one_is_refused_by_the_api_server_naming_the_field(ts: TaskSets) -> None:
    rule = {
        "action": "RetryCounted",
        "onTerminatedReasons": ["OOMKilled"],
        "nextAttempt": {"memory": {"factor": 1, "ceiling": "4Gi"}},
    }
    obj = TaskSetBuilder("factor").role("r", 1, failureRules=[rule]).obj()
    with pytest.raises(client.ApiException) as refused:
        ts.create(obj)
    assert "nextAttempt.memory.factor" in str(refused.value.body)
