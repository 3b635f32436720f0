"""A TaskSet retry that learns from the failure, on the embedded control plane: a two-role TaskSet whose
failure rule restarts the whole TaskSet and asks to avoid the failed node; a replica fails on node X;
no Pod of the next attempt, of either role, lands on X, and the status says so.

The template allows two of the four kwok nodes, as two alternatives (two ``nodeSelectorTerms``, which
Kubernetes ORs): the avoided node must be excluded from each alternative (ANDed into every term) for
kube-scheduler to keep every Pod of the next attempt off X, and the first attempt's Pods, spread over
both nodes, make X a node the next attempt would otherwise use.
"""

from __future__ import annotations

from typing import Any

import pytest

from taskset.api import constants as c
from tests.builders import TaskSetBuilder, pod_template
from tests.integration import harness as h
from tests.integration.harness import ObjectLog, PodFacts, Recorder, TaskSets

pytestmark = pytest.mark.integration

ALLOWED = ("kwok-node-0", "kwok-node-1")
HOST = "kubernetes.io/hostname"
RUNNING = "TaskRoleReplicaAttemptRunning"
BAD_NODE_EXIT = 74


def term(node: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": HOST, "operator": "In", "values": [node]}]}


def template() -> dict[str, Any]:
    """Runs until deleted, on either of the two ALLOWED nodes (two alternatives)."""
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [term(node) for node in ALLOWED]
            }
        }
    }
    return pod_template(affinity=affinity)


def bound(pods: ObjectLog, attempt: int) -> dict[str, dict[str, Any]]:
    """Each Pod (by UID) of TaskSet attempt ``attempt`` as last seen bound to a node."""
    found: dict[str, dict[str, Any]] = {}
    for version in pods.versions():
        meta = version.obj["metadata"]
        annotations = meta.get("annotations") or {}
        if annotations.get(c.ANNOTATION_TASKSET_ATTEMPT_ID) != str(attempt):
            continue
        if version.obj["spec"].get("nodeName"):
            found[meta["uid"]] = version.obj
    return found


def second_attempt_runs(ts: TaskSets, name: str) -> dict[str, Any] | None:
    status = ts.status(name)
    replicas = [r for role in status.get("roleStatus") or [] for r in role.get("replicaStatus") or []]
    running = len(replicas) == 4 and all(r.get("phase") == RUNNING for r in replicas)
    return status if running and status.get("totalRetriedCount") == 1 else None


def test_no_pod_of_the_next_attempt_lands_on_the_node_a_restart_taskset_failure_ran_on(
    ts: TaskSets, recorder: Recorder, pods: ObjectLog
) -> None:
    def script(pod: PodFacts) -> h.Outcome:
        failing = (pod.role, pod.index, pod.taskset_attempt) == ("worker", 1, 0)
        return h.exits(BAD_NODE_EXIT, after=2.0) if failing else h.run_forever()

    recorder.script = script
    rule = {
        "name": "bad-node",
        "action": "RestartTaskSet",
        "onExitCodes": {"operator": "In", "values": [BAD_NODE_EXIT]},
        "nextAttempt": {"avoidFailedNodes": True},
    }
    obj = (
        TaskSetBuilder("gang")
        .retry(True, 1, 0)
        .role("ps", 1, template=template())
        .role("worker", 3, template=template())
        .spec_field("failureRules", [rule])
        .obj()
    )
    ts.create(obj)
    status = h.eventually(lambda: second_attempt_runs(ts, "gang"), h.FINAL_TIMEOUT, "the next attempt runs")
    first = bound(pods, 0)
    (failed,) = [p for p in first.values() if p["metadata"]["name"] == "gang-worker-1"]
    x = failed["spec"]["nodeName"]
    assert x in ALLOWED
    second = bound(pods, 1)
    placed = {p["metadata"]["name"]: p["spec"]["nodeName"] for p in second.values()}
    assert sorted(placed) == ["gang-ps-0", "gang-worker-0", "gang-worker-1", "gang-worker-2"]
    assert x not in placed.values(), f"a Pod of the next attempt landed on {x}: {placed}"
    assert status["nextAttempt"]["avoidNodes"] == [x]
    assert status["nextAttempt"]["afterAttempt"] == 0
    assert status["nextAttempt"]["reason"] == f"attempt 0 failed on node {x}: every Pod avoids {x}"
    avoid = {"key": HOST, "operator": "NotIn", "values": [x]}
    for pod in second.values():
        terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert terms["nodeSelectorTerms"] == [
            {"matchExpressions": [*term(node)["matchExpressions"], avoid]} for node in ALLOWED
        ]
    spec = (ts.get("gang") or {})["spec"]
    assert spec["roles"][1]["template"] == template(), "the user's template is never edited"
    history = status["attemptHistory"]["attempts"]
    assert [(a["attempt"], a["rule"], a["action"], a["replica"]) for a in history] == [
        (0, "bad-node", "RestartTaskSet", "worker-1")
    ]
