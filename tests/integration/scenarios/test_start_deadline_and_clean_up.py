"""The start deadline, clean-up policy and Eviction-API gap on the embedded control plane.

* A replica whose Pod the scheduler cannot place (a ``nodeSelector`` on a label no node has) is replaced
  alone at its ``startDeadlineSeconds``, not counted, with ``Unschedulable`` in its failure record; a
  replica that runs longer than the deadline is never replaced by it.
* A controller stopped before the deadline and started after it replaces the replica on its first passes
  (the clock is the Pod's ``creationTimestamp``, which the API server keeps).
* ``cleanPodPolicy``: which Pods a finished TaskSet keeps, for each value, and that they go with it.
* A Pod evicted through the ``policy/v1`` Eviction API is gone before a pass sees it (Pod events are
  batched): the replica is retried without counting all the same, and a ``maxRetryCount: 0`` TaskSet
  succeeds.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client

from devcluster import Cluster
from tests.builders import TaskSetBuilder, pod_template
from tests.integration import harness as h
from tests.integration.conftest import start_controller
from tests.integration.harness import PodFacts, Recorder, TaskSets
from tests.integration.scenarios.steps import FOREVER, PREPARING, RUNNING, Run, replica_phase

pytestmark = pytest.mark.integration

RESTART_DEADLINE = 8  # seconds: long enough to stop the first controller before it passes
NOWHERE = pod_template(FOREVER, nodeSelector={"example.com/no-such-node": "true"})


def replica_history(recorder: Recorder, name: str, role: str) -> list[dict[str, Any]]:
    """Replica 0 of ``role`` in every status the TaskSet showed that lists it."""
    found = []
    for status in recorder.history(name):
        try:
            found.append(h.replica(status, role, 0))
        except (KeyError, IndexError):
            continue
    return found


def failures(recorder: Recorder, name: str, role: str) -> list[dict[str, Any]]:
    """Every failure record the replica's status ever showed, in order, once each."""
    seen: list[dict[str, Any]] = []
    for rep in replica_history(recorder, name, role):
        found = rep.get("failure")
        if found and found not in seen:
            seen.append(found)
    return seen


def main_and_stuck(name: str, deadline: int = 3) -> TaskSetBuilder:
    """``main``'s success ends the TaskSet; ``stuck`` can never be scheduled. Both have the TaskSet's
    start deadline; neither role retries."""
    return (
        TaskSetBuilder(name)
        .spec_field("startDeadlineSeconds", deadline)
        .role("main", 1, event_policy=[("RoleSucceeded", "TaskSetSucceeded")])
        .role("stuck", 1, template=NOWHERE)
    )


def main_exits_after_8s(pod: PodFacts) -> h.Outcome | None:
    return h.exits(0, after=8) if pod.role == "main" else None


def test_a_stuck_pending_replica_is_replaced_alone_and_a_running_one_never(
    recorder: Recorder, run: Run
) -> None:
    status = run(main_and_stuck("late"), script=main_exits_after_8s)
    assert status["state"] == "Succeeded"
    main = h.replica(status, "main", 0)
    assert main["totalRetriedCount"] == 0  # it ran 8 s, past the 3 s deadline: never replaced
    assert len(recorder.pod_log("late-main-")) == 1
    stuck = [e for e in recorder.pod_log("late-stuck-") if e.taskset_attempt == "0"]
    assert len({e.uid for e in stuck}) >= 2  # replaced at least once within the 8 s
    first = failures(recorder, "late", "stuck")[0]
    assert (first["rule"], first["action"]) == ("builtin-start-deadline", "RetryNotCounted")
    assert "did not run within startDeadlineSeconds (3s): Unschedulable" in first["message"]
    replaced = [r for r in replica_history(recorder, "late", "stuck") if r.get("totalRetriedCount")]
    assert replaced and all(r["uncountedRetries"] == r["totalRetriedCount"] for r in replaced)
    first_pod = stuck[0]
    assert first_pod.created_at is not None and first_pod.deletion_asked_at is not None
    # By the API server's clock, in its whole seconds: the controller, which reads the same
    # creationTimestamp, asks the deletion once 3 s have passed since it, and soon after.
    assert 3 <= first_pod.deletion_asked_at - first_pod.created_at < 3 + 10


def test_a_controller_restarted_after_the_deadline_replaces_the_replica(
    cluster: Cluster, namespace: str, crd_installed: None
) -> None:
    ts = TaskSets(cluster, namespace)
    first = start_controller(cluster, namespace, workers=2)
    try:
        ts.create(main_and_stuck("restart", deadline=RESTART_DEADLINE).obj())
        h.eventually(lambda: replica_phase(ts.status("restart"), "stuck", 0) == PREPARING, 60, "stuck seen")
        pod = ts.pod("restart-stuck-0")
        assert pod is not None
    finally:
        first.stop(5)
    created = h.timestamp(pod["metadata"]["creationTimestamp"])
    assert time.time() < created + RESTART_DEADLINE  # stopped before the deadline
    time.sleep(max(0.0, created + RESTART_DEADLINE + 2 - time.time()))  # it passes while none runs
    still = ts.pod("restart-stuck-0")
    assert still is not None and still["metadata"]["uid"] == pod["metadata"]["uid"]
    assert h.replica(ts.status("restart"), "stuck", 0)["totalRetriedCount"] == 0
    second = start_controller(cluster, namespace, workers=2)
    try:
        replaced = h.eventually(
            lambda: (s := ts.status("restart")) and h.replica(s, "stuck", 0)["uncountedRetries"] >= 1 and s,
            30,
            "the stuck replica replaced by the restarted controller",
        )
        assert h.replica(replaced, "stuck", 0)["totalRetriedCount"] >= 1
        assert h.replica(replaced, "main", 0)["totalRetriedCount"] == 0
        h.eventually(
            lambda: (p := ts.pod("restart-stuck-0")) and p["metadata"]["uid"] != pod["metadata"]["uid"],
            30,
            "a new Pod for the stuck replica",
        )
    finally:
        ts.delete("restart", "Foreground")
        second.stop(5)


def worker_and_server(name: str, policy: str | None) -> TaskSetBuilder:
    """``w`` exits 0 after 1 s and its success ends the TaskSet; ``ps`` runs until deleted."""
    builder = TaskSetBuilder(name)
    if policy is not None:
        builder.spec_field("cleanPodPolicy", policy)
    builder.role("w", 1, event_policy=[("RoleSucceeded", "TaskSetSucceeded")]).role("ps", 1)
    return builder


def script_w_exits(pod: PodFacts) -> h.Outcome:
    return h.exits(0, after=1) if pod.role == "w" else h.run_forever()


def pod_names(ts: TaskSets, name: str) -> list[str]:
    return sorted(p["metadata"]["name"] for p in ts.pods(name) if not p["metadata"].get("deletionTimestamp"))


@pytest.mark.parametrize(
    ("policy", "kept"),
    [
        pytest.param(None, [], id="absent-All"),
        pytest.param("All", [], id="All"),
        pytest.param("Running", ["keep-w-0"], id="Running"),
        pytest.param("None", ["keep-ps-0", "keep-w-0"], id="None"),
    ],
)
def test_what_a_finished_taskset_keeps(ts: TaskSets, run: Run, policy: str | None, kept: list[str]) -> None:
    status = run(worker_and_server("keep", policy), script=script_w_exits)
    assert status["state"] == "Succeeded"
    h.eventually(lambda: pod_names(ts, "keep") == kept, 60, f"the Pods {kept} left")
    time.sleep(2)  # and they stay: no later pass deletes them
    assert pod_names(ts, "keep") == kept
    assert (ts.configmap("c-keep-0") is not None) == bool(kept)  # their owner stays with them
    if "keep-ps-0" in kept:
        kept_pod = ts.pod("keep-ps-0")
        assert kept_pod is not None and kept_pod["status"]["phase"] == "Running"
    ts.delete("keep", "Foreground")
    h.eventually(lambda: ts.get("keep") is None and ts.pods("keep") == [], 60, "everything gone with it")


def test_a_pod_evicted_through_the_eviction_api_is_retried_without_counting(
    ts: TaskSets, recorder: Recorder, namespace: str
) -> None:
    recorder.script = lambda pod: h.run_forever() if pod.replica_attempt == 0 else h.exits(0, after=0.5)
    ts.create(TaskSetBuilder("evicted").role("r", 1).obj())  # maxRetryCount 0: a counted end fails it
    h.eventually(lambda: replica_phase(ts.status("evicted"), "r", 0) == RUNNING, 60, "Running")
    eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name="evicted-r-0", namespace=namespace))
    ts.core.create_namespaced_pod_eviction("evicted-r-0", namespace, eviction)
    status = ts.final("evicted")
    assert status["state"] == "Succeeded"
    rep = h.replica(status, "r", 0)
    assert (rep["totalRetriedCount"], rep["uncountedRetries"]) == (1, 1)
    # The match is in the status only between the Pod's end and the retry, often within one pass: the
    # ReplicaFailure event says it for good.
    said = [message for reason, message in ts.events("evicted") if reason == "ReplicaFailure"]
    assert len(said) == 1
    assert "rule builtin-disruption matched, Pod condition DisruptionTarget=True: RetryNotCounted" in said[0]
