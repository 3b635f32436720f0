"""A stranger's Pods and ConfigMaps labelled ``TaskSet`` reach the controller's caches
(the label is the informers' selector, and anyone may set it), but the caches keep none of their
foreign labels or annotations, nor any ConfigMap's data: a Pod with 250 KB of annotations costs what an
ordinary Pod costs, a ConfigMap of 1 MB what an empty one costs. The attempt's snapshot, which the
cache no longer holds, is read once per ControlUnit when it is needed, also after a restart.

The controller watches every namespace (the daemon's default); the stranger writes in a namespace of
its own, deleted after the controller stops.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
import structlog
from kubernetes import client

from devcluster import Cluster
from informers import SharedInformer
from taskset.api import constants as c
from taskset.runtime.controller import Controller, ControllerSettings
from tests.builders import TaskSetBuilder
from tests.integration.conftest import SYNC_TIMEOUT
from tests.integration.harness import PodFacts, Recorder, TaskSets, eventually, exits, replica, run_forever

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180)]

BIG = 250 * 1024  # the annotations of the swelling Pods (the API server admits 256 KiB in all)
FOREIGN_LABELS = {c.LABEL_TASKSET: "victim", "app": "miner", "team": "evil"}
FOREIGN_ANNOTATIONS = {c.ANNOTATION_TASKSET: "victim", "notes": "x" * BIG}


@pytest.fixture
def stranger(cluster: Cluster) -> Iterator[str]:
    name = f"ns-stranger-{uuid.uuid4().hex[:6]}"
    cluster.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    yield name
    with contextlib.suppress(OSError):
        cluster.request("DELETE", f"/api/v1/namespaces/{name}")


class Reads:
    """The controller's requests by (verb, resource), through its client's request observer."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts: dict[tuple[str, str], int] = {}

    def __call__(self, verb: str, resource: str, code: int, seconds: float) -> None:
        with self._lock:
            self.counts[(verb, resource)] = self.counts.get((verb, resource), 0) + 1


def start_everywhere(cluster: Cluster, reads: Reads | None = None) -> Controller:
    """A controller watching every namespace (the daemon's default)."""
    controller = Controller(
        api_client=cluster.api_client(),
        settings=ControllerSettings(namespace=None, workers=2),
        logger=structlog.get_logger("taskset-test").bind(test="bounded-cache"),
        request_observer=reads,
    )
    controller.start()
    if not controller.wait_for_sync(SYNC_TIMEOUT):
        controller.stop(1)
        raise AssertionError("controller caches did not sync")
    return controller


@pytest.fixture
def everywhere(cluster: Cluster, crd_installed: None, stranger: str) -> Iterator[Controller]:
    controller = start_everywhere(cluster)
    yield controller
    controller.stop(5)


def test_a_strangers_labelled_pod_and_config_map_are_cached_without_their_foreign_metadata(
    cluster: Cluster, everywhere: Controller, stranger: str
) -> None:
    core = client.CoreV1Api(cluster.api_client())
    metadata = {"labels": FOREIGN_LABELS, "annotations": FOREIGN_ANNOTATIONS}
    core.create_namespaced_pod(
        stranger,
        {
            "metadata": {"name": "victim-w-0", **metadata},
            "spec": {
                "restartPolicy": "Never",
                "terminationGracePeriodSeconds": 1,
                "containers": [{"name": "c0", "image": "busybox", "command": ["sleep", "3600"]}],
            },
        },
    )
    core.create_namespaced_config_map(
        stranger, {"metadata": {"name": "c-victim-0", **metadata}, "data": {"spec.json": "{}"}}
    )

    pod = _cached(everywhere.pods, f"{stranger}/victim-w-0")
    unit = _cached(everywhere.units, f"{stranger}/c-victim-0")

    for cached in (pod, unit):
        assert cached["metadata"]["labels"] == {c.LABEL_TASKSET: "victim"}
        assert cached["metadata"]["annotations"] == {c.ANNOTATION_TASKSET: "victim"}
        assert "managedFields" not in cached["metadata"]
    assert len(orjson.dumps(pod)) < 2048
    assert "data" not in unit, "a ConfigMap's data is not cached: the snapshot is read when it is used"


def _cached(informer: SharedInformer, key: str) -> dict[str, Any]:
    """The object under ``key`` once the informer's cache shows it."""
    found: dict[str, Any] = eventually(lambda: informer.store.get_by_key(key), 30, f"{key} in the cache")
    return found


MB = 1_000_000  # a ConfigMap holds at most 1 MiB in all


def big_config_map(name: str) -> dict[str, Any]:
    labels = {c.LABEL_TASKSET: "job", "team": "evil"}
    return {"metadata": {"name": name, "labels": labels}, "data": {"spec.json": "x" * MB}}


class Script:
    """The first Pod runs until the test ends it with exit code 1; its retry exits 0 at once. Keeps
    what it saw of each Pod."""

    def __init__(self) -> None:
        self.seen: list[PodFacts] = []

    def __call__(self, pod: PodFacts) -> Any:
        self.seen.append(pod)
        return exits(0, after=1) if pod.replica_attempt > 0 else run_forever()


def pod_recorded(ts: TaskSets) -> bool:
    roles = ts.status("job").get("roleStatus") or []
    return bool(roles and roles[0]["replicaStatus"][0].get("podUID"))


@pytest.mark.timeout(300)
def test_strangers_config_maps_of_1_mb_are_cached_without_data_and_a_taskset_runs_through_a_restart(
    cluster: Cluster, crd_installed: None, stranger: str, namespace: str
) -> None:
    """20 ConfigMaps of 1 MB labelled ``TaskSet`` in another namespace and 5 in the TaskSet's: the cache
    holds none of their data. The TaskSet's spec is edited mid-run (the attempt keeps its snapshot,
    W-18), the controller restarted, and the replica's retry runs from the snapshot, which the new
    controller read once (the TaskSet's spec no longer builds it)."""
    core = client.CoreV1Api(cluster.api_client())
    for i in range(20):
        core.create_namespaced_config_map(stranger, big_config_map(f"big-{i}"))
    for i in range(5):
        core.create_namespaced_config_map(namespace, big_config_map(f"big-{i}"))
    ts, recorder, script = TaskSets(cluster, namespace), Recorder(cluster, namespace), Script()
    recorder.script = script
    recorder.start()
    first = start_everywhere(cluster)
    try:
        ts.create(TaskSetBuilder("job").role("r", 1, retry=(True, 1, 0)).obj())
        eventually(lambda: pod_recorded(ts), 60, "the replica's Pod")
        assert_no_data_cached(first, expected=26)
        edited = ts.get("job")
        assert edited is not None
        container = edited["spec"]["roles"][0]["template"]["spec"]["containers"][0]
        container["env"] = [{"name": "EDITED", "value": "1"}]
        ts.custom.replace_namespaced_custom_object(c.GROUP, c.VERSION, namespace, c.PLURAL, "job", edited)
    finally:
        first.stop(5)
    reads = Reads()
    second = start_everywhere(cluster, reads)
    try:
        ts.end_pod("job-r-0", 1)
        status = ts.final("job", timeout=90)
        assert status["state"] == "Succeeded", status
        assert replica(status, "r", 0)["totalRetriedCount"] == 1
        assert reads.counts.get(("GET", "configmaps")) == 1, reads.counts
        assert_no_data_cached(second, expected=25)  # the ControlUnit is gone with the attempt's end
    finally:
        second.stop(5)
        recorder.stop()
    assert [(pod.replica_attempt, "EDITED" in pod.env) for pod in script.seen] == [(0, False), (1, False)]


def assert_no_data_cached(controller: Controller, expected: int) -> None:
    """At least ``expected`` ConfigMaps in the cache (the strangers', the ControlUnit), none with data."""
    cached = eventually(
        lambda: (found := controller.units.store.list()) and len(found) >= expected and found,
        30,
        f"{expected} ConfigMaps in the cache",
    )
    assert all("data" not in cm and len(orjson.dumps(cm)) < 1024 for cm in cached)
