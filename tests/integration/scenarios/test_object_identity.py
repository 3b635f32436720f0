"""Scenarios S47-S50 (spec 14.1): object identity. A re-created TaskSet starts fresh (W-16), Pods default
to restartPolicy Never (W-12), the main container is the first one (W-13), and a foreign Pod holding a
replica's name fails the attempt instead of looping (W-24, D1)."""

from __future__ import annotations

import threading
from datetime import datetime
from typing import Any

from devcluster import Cluster
from tests.builders import TaskSetBuilder, pod_template
from tests.integration.harness import (
    ObjectLog,
    PodFacts,
    Recorder,
    TaskSets,
    eventually,
    exits,
    replica,
    role_status,
    run_forever,
    watching,
)
from tests.integration.scenarios.steps import FOREVER, RETRY_PENDING, Run


def _time(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def test_s47_recreating_a_taskset_under_the_same_name_starts_fresh(ts: TaskSets, recorder: Recorder) -> None:
    recreated = threading.Event()

    def workload(pod: PodFacts) -> Any:
        return exits(0) if recreated.is_set() else run_forever()  # first: sleep 3600; then: exit 0

    recorder.script = workload
    ts.create(TaskSetBuilder("reuse").role("r", 1).obj())
    first = eventually(lambda: (s := ts.status("reuse")).get("state") == "Running" and s, 60, "reuse Running")
    first_unit = first["controlUnitUID"]
    assert first_unit

    ts.delete("reuse")  # background, kubectl's default
    recreated.set()
    created = ts.create(TaskSetBuilder("reuse").role("r", 1).obj())

    status = ts.final("reuse")
    stored = ts.get("reuse")
    assert stored is not None and stored["metadata"]["uid"] == created["metadata"]["uid"]
    assert status["state"] == "Succeeded"
    assert _time(status["createdAt"]) >= _time(created["metadata"]["creationTimestamp"]) - 2
    assert status["controlUnitUID"] and status["controlUnitUID"] != first_unit


def test_s48_restart_policy_defaults_to_never(ts: TaskSets, run: Run, cluster: Cluster) -> None:
    with watching(cluster, ts.namespace, "pods") as pods:
        status = run(
            TaskSetBuilder("norestart").role("r", 1, template=pod_template(restart_policy=None)),
            script=lambda pod: exits(1),
            timeout=60,
        )
    assert status["state"] == "Failed"
    seen = pods.versions("norestart-r-0")
    assert seen
    assert {v.obj["spec"]["restartPolicy"] for v in seen} == {"Never"}


def test_s49_main_container_is_the_first_one_declared(run: Run) -> None:
    template = pod_template(FOREVER, container="zmain")
    template["spec"]["containers"].append(
        {"name": "aside", "image": "busybox", "command": ["sh", "-c", "exit 0"]}
    )
    status = run(
        TaskSetBuilder("firstmain").role("r", 1, template=template),
        # zmain: sleep 3; exit 3 -- aside: exit 0
        script=lambda pod: exits(3, after=3, container_codes={"zmain": 3, "aside": 0}),
    )
    done = replica(status, "r", 0)
    assert done["containerName"] == "zmain"
    assert done["terminatedInfo"]["exitCode"] == 3
    assert status["state"] == "Failed"


def _foreign_pod(ts: TaskSets, name: str) -> dict[str, Any]:
    body = {
        "metadata": {"name": name, "labels": {"owner": "someone-else"}},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "c0", "image": "busybox", "command": ["sh", "-c", FOREVER]}],
        },
    }
    created = ts.core.create_namespaced_pod(ts.namespace, body)
    found: dict[str, Any] = ts.core.api_client.sanitize_for_serialization(created)
    return found


def _conflicted(status: dict[str, Any], retried: int) -> bool:
    r = replica(status, "r", 0)
    return bool(r["totalRetriedCount"] == retried and r.get("podReason") == "PodNameConflict")


def test_s50_pod_name_conflict_becomes_a_failed_attempt(
    ts: TaskSets, recorder: Recorder, cluster: Cluster
) -> None:
    foreign = _foreign_pod(ts, "conf-r-0")
    recorder.script = lambda pod: exits(0)
    with watching(cluster, ts.namespace, "pods") as pods:
        ts.create(TaskSetBuilder("conf").role("r", 1, retry=(True, 1, 10)).obj())  # [retry 1 20], shortened

        def retry_pending() -> dict[str, Any] | None:
            status = ts.status("conf")
            try:
                pending = replica(status, "r", 0)["phase"] == RETRY_PENDING
            except (KeyError, IndexError):
                return None
            return status if pending else None

        status = eventually(retry_pending, 60, "replica 0 in RetryPending")
        assert _conflicted(status, 0), replica(status, "r", 0)
        eventually(lambda: "PodNameConflict" in ts.reasons("conf"), 30, "a PodNameConflict event")

        ts.delete_pod("conf-r-0")
        status = ts.final("conf")
        unit_uid = status["controlUnitUID"]

    assert status["state"] == "Succeeded"
    done = replica(status, "r", 0)
    assert done["totalRetriedCount"] == 1
    assert done["terminatedInfo"]["exitCode"] == 0
    ours = [v for v in pods.versions("conf-r-0") if v.uid != foreign["metadata"]["uid"]]
    assert ours and {v.uid for v in ours} == {done["podUID"]}
    annotations = ours[0].obj["metadata"]["annotations"]
    assert (annotations["TaskSetAttemptID"], annotations["ReplicaAttemptID"]) == ("0", "1")
    owners = [o for o in ours[0].obj["metadata"]["ownerReferences"] if o.get("controller")]
    assert [(o["kind"], o["name"], o["uid"]) for o in owners] == [("ConfigMap", "c-conf-0", unit_uid)]
    foreign_uid = foreign["metadata"]["uid"]
    first_gone = next(
        v.time for v in pods.versions("conf-r-0") if v.kind == "DELETED" and v.uid == foreign_uid
    )
    assert first_gone <= ours[0].time


def _untouched(pods: ObjectLog, foreign: dict[str, Any]) -> None:
    """The foreign Pod keeps its UID, is never deleted, and its metadata never changes."""
    meta = foreign["metadata"]
    versions = pods.versions(meta["name"])
    assert versions
    for version in versions:
        seen = version.obj["metadata"]
        assert version.kind != "DELETED"
        assert seen["uid"] == meta["uid"]
        assert seen.get("deletionTimestamp") is None
        for key in ("labels", "annotations", "ownerReferences", "finalizers"):
            assert seen.get(key) == meta.get(key), (key, seen.get(key))


def test_s50b_pod_name_conflict_persists_while_the_foreign_pod_stays(
    ts: TaskSets, recorder: Recorder, cluster: Cluster
) -> None:
    recorder.script = lambda pod: exits(0)
    with watching(cluster, ts.namespace, "pods") as pods:
        foreign = _foreign_pod(ts, "conf2-r-0")
        ts.create(TaskSetBuilder("conf2").role("r", 1, retry=(True, 1, 0)).obj())
        status = ts.final("conf2")
        still = ts.pod("conf2-r-0")
    assert status["state"] == "Failed"
    assert role_status(status, "r")["state"] == "Failed"
    done = replica(status, "r", 0)
    assert done["phase"] == "TaskRoleReplicaCompleted"
    assert _conflicted(status, 1), done  # the second attempt
    assert any(_conflicted(s, 0) for s in recorder.history("conf2"))  # the first attempt
    assert still is not None and still["metadata"]["uid"] == foreign["metadata"]["uid"]
    _untouched(pods, foreign)
    assert [e.uid for e in recorder.pod_log()] == [foreign["metadata"]["uid"]]
