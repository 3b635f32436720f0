"""Issue 26, item 3: the live membership ConfigMap on the embedded control plane. Its content (what the
mounted file shows) is read after each change: a scale up and down while Running, a replica retry, a
scale during a replica's retry delay (the scaled-down replica is never retried), and a scale during a
TaskSet retry (the next attempt runs at the new count, and says so with a new generation)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from devcluster import Cluster
from taskset.api import constants as c
from taskset.integrations.membership import (
    GENERATION_FILE,
    MEMBERSHIP_DIR,
    MEMBERSHIP_FILE,
    MEMBERSHIP_VOLUME,
)
from taskset.runtime.controller import Controller
from tests.builders import TaskSetBuilder
from tests.integration.conftest import start_controller
from tests.integration.harness import TaskSets, eventually, replica, role_status

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SEEN = 60.0
RETRY_DELAY = 8  # seconds: long enough to scale within it


@pytest.fixture
def controller(cluster: Cluster, namespace: str, crd_installed: None) -> Iterator[Controller]:
    running = start_controller(cluster, namespace, workers=2)
    yield running
    running.stop(5)


@pytest.fixture
def ts(cluster: Cluster, namespace: str, controller: Controller) -> TaskSets:
    return TaskSets(cluster, namespace)


def membership(ts: TaskSets, name: str) -> dict[str, Any] | None:
    """The mounted file's content, as the ConfigMap holds it (None before it exists)."""
    cm = ts.configmap(f"{name}-membership")
    if cm is None:
        return None
    data = cm.get("data") or {}
    document: dict[str, Any] = json.loads(data[MEMBERSHIP_FILE])
    assert data[GENERATION_FILE] == str(document["generation"])
    return document


def peers_are(ts: TaskSets, name: str, count: int, after: int) -> dict[str, Any] | None:
    """The membership once it lists ``count`` peers of role w at a generation above ``after``."""
    doc = membership(ts, name)
    ok = doc is not None and doc["generation"] > after and len(doc["roles"]["w"]["peers"]) == count
    return doc if ok else None


def set_replicas(ts: TaskSets, name: str, replicas: int) -> None:
    ts.custom.patch_namespaced_custom_object(
        c.GROUP,
        c.VERSION,
        ts.namespace,
        c.PLURAL,
        name,
        [{"op": "replace", "path": "/spec/roles/0/replicas", "value": replicas}],
    )


def live_pods(ts: TaskSets, name: str) -> list[str]:
    return sorted(p["metadata"]["name"] for p in ts.pods(name) if not p["metadata"].get("deletionTimestamp"))


def running_pods(ts: TaskSets, name: str, count: int) -> bool:
    pods = [p for p in ts.pods(name) if not p["metadata"].get("deletionTimestamp")]
    return len(pods) == count and all((p.get("status") or {}).get("phase") == "Running" for p in pods)


def test_the_membership_follows_scales_and_a_replica_retry(ts: TaskSets) -> None:
    ts.create(TaskSetBuilder("m").role("w", 2, minReplicas=1, maxReplicas=4, retry=(True, 3, 0)).obj())
    eventually(lambda: running_pods(ts, "m", 2), SEEN, "two Pods running")
    first = eventually(lambda: peers_are(ts, "m", 2, 0), SEEN, "the membership of two")
    ns = ts.namespace
    assert first["roles"]["w"]["peers"] == [f"m-w-0.m.{ns}.svc", f"m-w-1.m.{ns}.svc"]
    pod = ts.pod("m-w-0")
    assert pod is not None
    volume = {"name": MEMBERSHIP_VOLUME, "configMap": {"name": "m-membership", "defaultMode": 420}}
    assert volume in pod["spec"]["volumes"]
    mount = {"name": MEMBERSHIP_VOLUME, "mountPath": MEMBERSHIP_DIR, "readOnly": True}
    assert all(mount in container["volumeMounts"] for container in pod["spec"]["containers"])

    set_replicas(ts, "m", 3)
    up = eventually(lambda: peers_are(ts, "m", 3, first["generation"]), SEEN, "the membership of three")
    assert ts.status("m")["membership"]["generation"] >= up["generation"]

    ts.end_pod("m-w-1", 1)  # a replica retry: the same name, a new instance
    retried = eventually(
        lambda: (d := membership(ts, "m")) and d["roles"]["w"]["instances"][1] == 1 and d,
        SEEN,
        "the retried replica as a new instance",
    )
    assert retried["generation"] > up["generation"]

    set_replicas(ts, "m", 1)
    down = eventually(lambda: peers_are(ts, "m", 1, retried["generation"]), SEEN, "the membership of one")
    assert down["roles"]["w"]["instances"] == [0]
    eventually(lambda: live_pods(ts, "m") == ["m-w-0"], SEEN, "only index 0 left")


def test_a_scale_down_during_a_replica_retry_delay_is_never_retried(ts: TaskSets) -> None:
    ts.create(
        TaskSetBuilder("d").role("w", 3, minReplicas=1, maxReplicas=4, retry=(True, 3, RETRY_DELAY)).obj()
    )
    eventually(lambda: running_pods(ts, "d", 3), SEEN, "three Pods running")
    ts.end_pod("d-w-2", 1)
    eventually(
        lambda: replica(ts.status("d"), "w", 2).get("nextRetryAt"), SEEN, "replica 2 waiting for its retry"
    )
    before = membership(ts, "d")
    assert before is not None
    set_replicas(ts, "d", 4)  # up during the delay: index 3 is made, index 2 still waits
    eventually(lambda: "d-w-3" in live_pods(ts, "d"), SEEN, "index 3 made")
    set_replicas(ts, "d", 2)  # down during the delay: index 2 is stopped, never retried
    eventually(lambda: live_pods(ts, "d") == ["d-w-0", "d-w-1"], SEEN, "indices 2 and 3 gone")
    eventually(lambda: peers_are(ts, "d", 2, before["generation"]), SEEN, "the membership of two")
    eventually(lambda: len(role_status(ts.status("d"), "w")["replicaStatus"]) == 2, SEEN, "two replicas")
    status = ts.status("d")
    assert status["phase"] == c.TaskSetPhase.ATTEMPT_RUNNING
    time.sleep(RETRY_DELAY + 2)  # past the retry delay, nothing came back under index 2
    assert live_pods(ts, "d") == ["d-w-0", "d-w-1"]
    assert all(len(role["replicaStatus"]) == 2 for role in ts.status("d")["roleStatus"])


def test_a_scale_during_a_taskset_retry_is_the_next_attempts_count(ts: TaskSets) -> None:
    obj = TaskSetBuilder("r").role("w", 2, minReplicas=1, maxReplicas=4).obj()
    obj["spec"]["retryPolicy"] = {"retry": True, "maxRetryCount": 1, "delay": 8}
    ts.create(obj)
    eventually(lambda: running_pods(ts, "r", 2), SEEN, "two Pods running")
    first = eventually(lambda: peers_are(ts, "r", 2, 0), SEEN, "the membership of two")
    ts.end_pod("r-w-0", 1)
    eventually(
        lambda: ts.status("r")["phase"] == c.TaskSetPhase.ATTEMPT_RETRY_PENDING,
        SEEN,
        "the TaskSet retry's delay",
    )
    set_replicas(ts, "r", 3)
    eventually(lambda: running_pods(ts, "r", 3), SEEN, "the next attempt's three Pods")
    second = eventually(lambda: peers_are(ts, "r", 3, first["generation"]), SEEN, "the membership of three")
    assert second["attempt"] == 1 and ts.status("r")["totalRetriedCount"] == 1
