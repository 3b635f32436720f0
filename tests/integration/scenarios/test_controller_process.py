"""Scenarios that need the real controller process: restarts (S36-S38), SIGKILL mid-run, log records
on stdout (S46), faults with a short cache timeout (S51, S52), parallel load (S54) and configuration
handling (S61)."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any

from kubernetes import client, watch

from devcluster import Cluster
from taskset.api import constants as c
from tests.builders import TaskSetBuilder
from tests.integration.daemon import Daemon
from tests.integration.harness import (
    Outcome,
    PodFacts,
    Recorder,
    TaskSets,
    eventually,
    exits,
    never_overlapping,
    replica,
    run_forever,
)
from tests.integration.scenarios.steps import fails_first


def replica_field(api: TaskSets, name: str, role: str, index: int, key: str) -> Any:
    """A replica's status field, or None while the status does not list the replica yet."""
    try:
        return replica(api.status(name), role, index)[key]
    except (KeyError, IndexError):
        return None


def test_s36_controller_restart_mid_run(api: TaskSets, recorder: Recorder, daemon: Daemon) -> None:
    daemon.start()
    api.create(TaskSetBuilder("restart").role("r", 2, min_succeeded=2, max_failed=1).obj())
    eventually(
        lambda: (
            all(p["status"]["phase"] == "Running" for p in api.pods("restart"))
            and len(api.pods("restart")) == 2
        )
    )
    eventually(lambda: all(replica_field(api, "restart", "r", i, "podUID") for i in (0, 1)))
    before = {p["metadata"]["name"]: p["metadata"]["uid"] for p in api.pods("restart")}
    assert daemon.stop() == 0
    for name in before:  # the workloads end while no controller runs
        api.end_pod(name, 0)
    eventually(lambda: all(p["status"]["phase"] == "Succeeded" for p in api.pods("restart")))
    daemon.start()
    status = api.final("restart")
    assert status["state"] == "Succeeded"
    assert {replica(status, "r", i)["podName"]: replica(status, "r", i)["podUID"] for i in (0, 1)} == before
    assert status["totalRetriedCount"] == 0
    assert [replica(status, "r", i)["totalRetriedCount"] for i in (0, 1)] == [0, 0]
    log = recorder.pod_log("restart-r-")
    assert sorted((e.name, e.taskset_attempt, e.replica_attempt) for e in log) == [
        ("restart-r-0", "0", "0"),
        ("restart-r-1", "0", "0"),
    ]


def test_s37_controller_restart_during_a_retry_delay(
    api: TaskSets, recorder: Recorder, daemon: Daemon
) -> None:
    delay = 20  # the spec's 60 s, shortened; the window below scales with it
    # The second attempt runs a few seconds, so its ControlUnit stays long enough to be read.
    recorder.script = lambda pod: exits(1, after=3 * pod.taskset_attempt)
    daemon.start()
    api.create(TaskSetBuilder("delayrestart").retry(True, 1, delay).role("r", 1).obj())
    pending = eventually(
        lambda: (s := api.status("delayrestart")).get("phase") == "TaskSetAttemptRetryPending" and s,
        what="RetryPending",
    )
    t0 = pending["transitionTime"]
    time.sleep(5)
    daemon.stop()
    daemon.start()
    unit = eventually(lambda: api.configmap("c-delayrestart-1"), timeout=delay + 60, what="c-delayrestart-1")
    created = unit["metadata"]["creationTimestamp"]
    elapsed = _seconds_between(t0, created)
    assert delay <= elapsed <= delay + 30, (t0, created)


def _seconds_between(start: str, end: str) -> float:
    from taskset.api.status import parse_time  # noqa: PLC0415

    a, b = parse_time(start), parse_time(end)
    assert a is not None and b is not None
    return (b - a).total_seconds()


def test_s38_adoption_after_a_lost_status_write(api: TaskSets, recorder: Recorder, daemon: Daemon) -> None:
    daemon.start()
    api.create(TaskSetBuilder("adopt").role("r", 1).obj())
    eventually(lambda: replica_field(api, "adopt", "r", 0, "phase") == "TaskRoleReplicaAttemptRunning")
    pod_uid = api.pod("adopt-r-0")["metadata"]["uid"]  # type: ignore[index]
    daemon.stop()
    obj = api.get("adopt")
    assert obj is not None
    lost = replica(obj["status"], "r", 0)
    lost.update({"phase": "TaskRoleReplicaAttemptPending", "podName": "", "podUID": None})
    api.custom.replace_namespaced_custom_object_status(
        c.GROUP, c.VERSION, api.namespace, c.PLURAL, "adopt", obj
    )
    daemon.start()
    eventually(lambda: replica_field(api, "adopt", "r", 0, "podUID") == pod_uid, what="adoption")
    api.end_pod("adopt-r-0", 0)
    status = api.final("adopt")
    assert status["state"] == "Succeeded"
    assert [e.uid for e in recorder.pod_log("adopt-r-0")] == [pod_uid]
    already = [r for r in daemon.records() if "AlreadyExists" in str(r)]
    assert len(already) <= 1, already


def test_sigkill_mid_run_with_retries_keeps_one_pod_per_replica_and_the_same_outcome(
    api: TaskSets, recorder: Recorder, daemon: Daemon
) -> None:
    """SIGKILL the controller repeatedly while a TaskSet with replica and TaskSet retries runs;
    each restart continues from the API server's objects alone."""
    recorder.script = lambda pod: fails_first(pod, after=1)
    daemon.start()
    api.create(
        TaskSetBuilder("killed")
        .retry(True, 1, 0)
        .role("a", 3, retry=(True, 2, 1))
        .role("b", 2, retry=(True, 2, 0))
        .obj()
    )
    for pause in (0.5, 1.0, 1.5, 0.7, 2.0):
        time.sleep(pause)
        daemon.kill()
        daemon.start(wait_ready=False)
    daemon.wait_ready()
    status = api.final("killed")
    # The fault-free outcome of this workload: every replica fails once, retries once and succeeds.
    assert status["state"] == "Succeeded"
    assert status["totalRetriedCount"] == 0
    for role, replicas in (("a", 3), ("b", 2)):
        for index in range(replicas):
            done = replica(status, role, index)
            assert (done["phase"], done["totalRetriedCount"], done["terminatedInfo"]["exitCode"]) == (
                "TaskRoleReplicaCompleted",
                1,
                0,
            )
            entries = recorder.pod_log(f"killed-{role}-{index}")
            assert [e.replica_attempt for e in sorted(entries, key=lambda e: e.created)] == ["0", "1"]
            assert never_overlapping(entries)


def test_s46_events_and_structured_logs(api: TaskSets, recorder: Recorder, daemon: Daemon) -> None:
    def workload(pod: PodFacts) -> Outcome | None:
        if pod.role == "ps" or pod.index == 2:
            return run_forever()
        return exits(0, after=1)

    recorder.script = workload
    daemon.start()
    api.create(
        TaskSetBuilder("psworker")
        .role("ps", 1)
        .role(
            "worker", 3, min_succeeded=2, max_failed=2, event_policy=[("RoleSucceeded", "TaskSetSucceeded")]
        )
        .obj()
    )
    api.final("psworker")
    reasons = eventually(
        lambda: (
            (r := api.reasons("psworker"))
            >= {
                "TaskSet State Transition",
                "TaskSet is running",
                "TaskRole is running",
                "TaskRole Succeeded",
                "TaskSet Succeeded",
            }
            and r
        ),
        what="events",
    )
    assert "TaskRole is waiting" not in reasons
    assert any(
        reason == "TaskRole Succeeded" and "TaskRole:worker" in message
        for reason, message in api.events("psworker")
    )
    eventually(lambda: any(r.get("QueryKey") == "PodHistory" for r in daemon.records()), what="log records")
    records = [
        r
        for r in daemon.records()
        if r.get("logger") == "TaskSetController" and r.get("TaskSet") == "psworker"
    ]
    assert any(
        r.get("QueryKey") == "TaskSetPhaseTransition" and r.get("NextPhase") == "TaskSetCompleted"
        for r in records
    )
    assert any(
        r.get("QueryKey") == "TaskRoleTransition"
        and r.get("Role") == "worker"
        and r.get("NextPhase") == "TaskRoleCompleted"
        for r in records
    )
    assert any(
        r.get("QueryKey") == "ReplicaTransition"
        and r.get("PodName")
        and isinstance(r.get("ReplicaIndex"), int)
        for r in records
    )
    completed = [
        r
        for r in records
        if r.get("QueryKey") == "PodHistory"
        and r.get("msg") == "TaskRole replica attempt completed"
        and r.get("Role") == "worker"
        and r.get("ReplicaIndex") == 0
    ]
    assert completed, records[-5:]
    history = completed[0]
    assert history["ContainerExitCode"] == 0
    for key in (
        "AttemptID",
        "PodIP",
        "PodHostIP",
        "ContainerName",
        "ContainerID",
        "Phase",
        "PhaseMessage",
        "TransitionTime",
        "Stopped",
        "StartAt",
        "FinishAt",
    ):
        assert key in history, key
    for base in ("level", "ts", "caller", "msg"):
        assert base in history, base


def test_s46b_retry_history_records(api: TaskSets, recorder: Recorder, daemon: Daemon) -> None:
    recorder.script = lambda pod: exits(1)
    daemon.start()
    api.create(TaskSetBuilder("rretry").role("r", 1, retry=(True, 2, 0)).obj())
    api.final("rretry")
    retries = [
        r
        for r in daemon.records()
        if r.get("QueryKey") == "PodHistory"
        and r.get("msg") == "TaskRole replica is going to retry,log the pod history"
    ]
    assert sorted(r["AttemptID"] for r in retries) == [0, 1]


def _delete_on_sight(
    cluster: Cluster, namespace: str, kind: str, match: Any, stop: threading.Event
) -> threading.Thread:
    core = client.CoreV1Api(cluster.api_client())
    lister = core.list_namespaced_config_map if kind == "configmap" else core.list_namespaced_pod
    deleter = core.delete_namespaced_config_map if kind == "configmap" else core.delete_namespaced_pod

    def loop() -> None:
        while not stop.is_set():
            w = watch.Watch()
            try:
                for event in w.stream(lister, namespace, timeout_seconds=5, _request_timeout=10):
                    obj = event["raw_object"]
                    if event["type"] == "ADDED" and match(obj):
                        with contextlib.suppress(client.ApiException):
                            deleter(obj["metadata"]["name"], namespace)
                    if stop.is_set():
                        return
            except Exception:
                time.sleep(0.1)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    return thread


def test_s51_a_control_unit_that_never_settles(
    cluster: Cluster, namespace: str, api: TaskSets, tmp_path: Path
) -> None:
    stop = threading.Event()
    _delete_on_sight(cluster, namespace, "configmap", lambda o: o["metadata"]["name"] == "c-flaky-0", stop)
    daemon = Daemon(cluster, namespace, tmp_path, "--cache-creation-timeout=10").start()
    recorder = Recorder(cluster, namespace)
    recorder.script = lambda pod: exits(0, after=0.5)
    recorder.start()
    try:
        api.create(TaskSetBuilder("flaky").retry(True, 1, 0).role("r", 1).obj())
        status = api.final("flaky", timeout=120)
        assert status["state"] == "Succeeded"
        assert status["totalRetriedCount"] == 1
    finally:
        stop.set()
        recorder.stop()
        daemon.stop()


def test_s52_pods_keep_vanishing(cluster: Cluster, namespace: str, api: TaskSets, tmp_path: Path) -> None:
    stop = threading.Event()
    _delete_on_sight(
        cluster,
        namespace,
        "pod",
        lambda o: (o["metadata"].get("labels") or {}).get("TaskSet") == "vanish",
        stop,
    )
    daemon = Daemon(cluster, namespace, tmp_path, "--cache-creation-timeout=10").start()
    recorder = Recorder(cluster, namespace)
    recorder.start()
    try:
        api.create(TaskSetBuilder("vanish").role("r", 1, retry=(True, 2, 0)).obj())
        status = api.final("vanish", timeout=120)
        assert status["state"] == "Failed"
        assert status["roleStatus"][0]["state"] == "Failed"
        entries = eventually(lambda: (e := recorder.pod_log("vanish-r-0")) and all(x.gone for x in e) and e)
        assert [(e.taskset_attempt, e.replica_attempt) for e in sorted(entries, key=lambda e: e.created)] == [
            ("0", "0"),
            ("0", "1"),
            ("0", "2"),
        ]
        assert never_overlapping(entries)
    finally:
        stop.set()
        recorder.stop()
        daemon.stop()


def test_s54_parallel_load(cluster: Cluster, namespace: str, api: TaskSets, tmp_path: Path) -> None:
    daemon = Daemon(cluster, namespace, tmp_path, env={"WorkerAmount": "4"}).start()
    recorder = Recorder(cluster, namespace)
    recorder.script = lambda pod: exits(0, after=2)
    recorder.start()
    names = [f"load{n:02d}" for n in range(20)]
    try:
        for name in names:
            api.create(TaskSetBuilder(name).role("r", 2, min_succeeded=2, max_failed=1).obj())
        for name in names:
            assert api.final(name, timeout=300)["state"] == "Succeeded"
        for name in names:
            assert sorted(
                (e.name, e.taskset_attempt, e.replica_attempt) for e in recorder.pod_log(f"{name}-")
            ) == [
                (f"{name}-r-0", "0", "0"),
                (f"{name}-r-1", "0", "0"),
            ]
        errors = [
            r
            for r in daemon.records()
            if r.get("level") == "error" and "conflict" not in str(r.get("error", "")).lower()
        ]
        assert errors == []
    finally:
        recorder.stop()
        daemon.stop()


def test_s61_configuration_handling(
    cluster: Cluster, namespace: str, crd_installed: None, tmp_path: Path
) -> None:
    config = tmp_path / "f.yaml"
    config.write_text("workerAmount: 2\n")
    with_file = Daemon(cluster, namespace, tmp_path / "a", f"--config={config}")
    (tmp_path / "a").mkdir()
    with_file.start()
    assert with_file.stop() == 0
    startup = "\n".join(str(r) for r in with_file.records())
    assert "300" in startup  # the default cache creation timeout

    (tmp_path / "b").mkdir()
    bad = Daemon(cluster, namespace, tmp_path / "b", env={"WorkerAmount": "abc"})
    bad.start(wait_ready=False)
    assert bad.process is not None
    assert bad.process.wait(30) != 0
    assert "WorkerAmount" in bad.output()

    (tmp_path / "c").mkdir()
    zero = Daemon(cluster, namespace, tmp_path / "c", env={"WorkerAmount": "0"})
    zero.start()
    assert zero.stop() == 0
    started = [r for r in zero.records() if "workers" in r]
    assert any(r["workers"] == 10 for r in started), started
