"""Scenarios S30-S34 (spec 14.1, section 8): Pods, ControlUnits and TaskSets deleted from outside, and a
Pod-level failure reason."""

from __future__ import annotations

import time
from functools import partial

from kubernetes import client

from devcluster import Cluster, sim
from tests.builders import TaskSetBuilder, pod_template
from tests.integration.harness import (
    PodEntry,
    Recorder,
    TaskSets,
    eventually,
    exits,
    never_overlapping,
    replica,
    role_status,
    watching,
)
from tests.integration.scenarios.steps import FOREVER, Run, replica_phase


def _entry(recorder: Recorder, name: str, attempts: tuple[str, str]) -> PodEntry | None:
    return next(
        (
            e
            for e in recorder.pod_log(name)
            if e.name == name and (e.taskset_attempt, e.replica_attempt) == attempts
        ),
        None,
    )


def _delete_twice_then_failed(ts: TaskSets, recorder: Recorder, name: str, phase: str) -> None:
    """S30's steps: delete the Pod in ``phase``; a retry Pod (0, 1) follows; delete that too; Failed."""
    pod = f"{name}-r-0"
    eventually(lambda: replica_phase(ts.status(name), "r", 0) == phase, 60, f"replica 0 in {phase}")
    first = _entry(recorder, pod, ("0", "0"))
    assert first is not None
    ts.delete_pod(pod)

    second = eventually(lambda: _entry(recorder, pod, ("0", "1")), 60, f"Pod {pod} (0, 1)")
    assert first.gone is not None and first.gone <= second.created
    eventually(
        lambda: (r := replica(ts.status(name), "r", 0))["totalRetriedCount"] == 1 and r["phase"] == phase,
        60,
        f"retried replica in {phase}",
    )
    ts.delete_pod(pod)

    status = ts.final(name)
    done = replica(status, "r", 0)
    assert done["phase"] == "TaskRoleReplicaCompleted"
    assert done["totalRetriedCount"] == 1
    assert done["terminatedInfo"] is None or done["terminatedInfo"]["exitCode"] != 0
    assert role_status(status, "r")["state"] == "Failed"
    assert status["state"] == "Failed"
    log = recorder.pod_log(pod)
    assert [(e.taskset_attempt, e.replica_attempt) for e in log] == [("0", "0"), ("0", "1")]
    assert never_overlapping(log)


def test_s30_pod_deleted_externally_is_retried_then_fails(ts: TaskSets, recorder: Recorder) -> None:
    ts.create(TaskSetBuilder("extdel").role("r", 1, command=FOREVER, retry=(True, 1, 0)).obj())
    _delete_twice_then_failed(ts, recorder, "extdel", "TaskRoleReplicaAttemptRunning")


def test_s30b_pod_deleted_externally_while_assigned(ts: TaskSets, recorder: Recorder) -> None:
    """[R] Held Pending with IPs (an init container `sleep 30`): TaskRoleReplicaAttemptAssigned (W-3b)."""
    template = pod_template(FOREVER, annotations={sim.HOLD: "init"})
    ts.create(TaskSetBuilder("extdela").role("r", 1, template=template, retry=(True, 1, 0)).obj())
    _delete_twice_then_failed(ts, recorder, "extdela", "TaskRoleReplicaAttemptAssigned")


def test_s31_pod_failure_with_a_pod_level_reason(run: Run) -> None:
    # activeDeadlineSeconds: the kubelet's part (the Pod fails with reason DeadlineExceeded) is the driver's.
    template = pod_template(FOREVER, activeDeadlineSeconds=5)
    status = run(
        TaskSetBuilder("deadline").role("r", 1, template=template),
        script=lambda pod: exits(1, after=3, pod_reason="DeadlineExceeded"),
    )
    done = replica(status, "r", 0)
    assert done["podReason"] == "DeadlineExceeded"
    assert done["phase"] == "TaskRoleReplicaCompleted"
    assert role_status(status, "r")["state"] == "Failed"
    assert status["state"] == "Failed"


def test_s32_eviction_api(ts: TaskSets, recorder: Recorder, namespace: str) -> None:
    ts.create(TaskSetBuilder("evict").role("r", 1, command=FOREVER, retry=(True, 1, 0)).obj())
    eventually(
        lambda: replica_phase(ts.status("evict"), "r", 0) == "TaskRoleReplicaAttemptRunning", 60, "Running"
    )
    first = _entry(recorder, "evict-r-0", ("0", "0"))
    assert first is not None
    eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name="evict-r-0", namespace=namespace))
    ts.core.create_namespaced_pod_eviction("evict-r-0", namespace, eviction)

    second = eventually(lambda: _entry(recorder, "evict-r-0", ("0", "1")), 60, "Pod evict-r-0 (0, 1)")
    assert first.gone is not None and first.gone <= second.created
    eventually(lambda: replica(ts.status("evict"), "r", 0)["totalRetriedCount"] == 1, 60, "one replica retry")


def test_s33_control_unit_deleted_externally(ts: TaskSets, recorder: Recorder, namespace: str) -> None:
    ts.create(TaskSetBuilder("cmdel").role("r", 2, command=FOREVER, min_succeeded=2, max_failed=1).obj())
    ts.create(
        TaskSetBuilder("cmdelr")
        .retry(True, 1, 0)
        .role("r", 2, command=FOREVER, min_succeeded=2, max_failed=1)
        .obj()
    )

    def all_running(name: str) -> bool:
        return all(replica_phase(ts.status(name), "r", i) == "TaskRoleReplicaAttemptRunning" for i in (0, 1))

    eventually(lambda: all_running("cmdel") and all_running("cmdelr"), 60, "every Pod Running")
    attempt0 = [e for e in recorder.pod_log() if e.taskset_attempt == "0"]
    assert sorted(e.name for e in attempt0) == ["cmdel-r-0", "cmdel-r-1", "cmdelr-r-0", "cmdelr-r-1"]

    ts.core.delete_namespaced_config_map("c-cmdel-0", namespace)  # default propagation
    ts.core.delete_namespaced_config_map("c-cmdelr-0", namespace)

    eventually(lambda: all(e.gone is not None for e in attempt0), 60, "attempt-0 Pods gone")
    assert ts.final("cmdel")["state"] == "Failed"

    eventually(lambda: ts.configmap("c-cmdelr-1"), 60, "ControlUnit c-cmdelr-1")
    for pod in ("cmdelr-r-0", "cmdelr-r-1"):
        retried: PodEntry = eventually(partial(_entry, recorder, pod, ("1", "0")), 60, f"Pod {pod} (1, 0)")
        previous = _entry(recorder, pod, ("0", "0"))
        assert previous is not None and previous.gone is not None and previous.gone <= retried.created
    eventually(lambda: ts.status("cmdelr").get("totalRetriedCount") == 1, 60, "one TaskSet retry")
    assert ts.status("cmdelr")["totalRetriedCount"] == 1

    ts.delete("cmdelr")
    eventually(lambda: ts.get("cmdelr") is None and ts.pods("cmdelr") == [], 60, "cmdelr deleted")


def test_s34_foreground_deletion_does_not_trigger_retries(
    ts: TaskSets, recorder: Recorder, cluster: Cluster, namespace: str
) -> None:
    with watching(cluster, namespace, "configmaps") as units:
        ts.create(TaskSetBuilder("fgdel").retry(True, 5, 0).role("r", 1, command=FOREVER).obj())
        eventually(lambda: ts.status("fgdel").get("state") == "Running", 60, "fgdel Running")
        ts.delete("fgdel", "Foreground")
        eventually(
            lambda: (
                ts.get("fgdel") is None and ts.configmap("c-fgdel-0") is None and ts.pod("fgdel-r-0") is None
            ),
            60,
            "TaskSet, ControlUnit and Pod gone",
        )
        time.sleep(3)  # anything a retry would create shows up in the watches meanwhile
        created = [n for n in units.names() if n.startswith("c-fgdel-")]
    assert created == ["c-fgdel-0"]
    assert [(e.name, e.taskset_attempt) for e in recorder.pod_log()] == [("fgdel-r-0", "0")]
