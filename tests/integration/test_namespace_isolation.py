"""A Pod in another namespace never affects a TaskSet, whatever its name, labels and
annotations claim. A stranger in namespace ``evil`` plants a Pod named like the victim's replica,
labelled and annotated as the controller labels and annotates its own (``TaskSet: <victim>``,
``Namespace: <victim's namespace>``), before the victim starts and while it runs; the victim runs
as if nothing happened.

The controller here watches every namespace (the daemon's default), so the stranger's Pod is in its
caches: that is what makes the test mean something. It runs alone in this file, with two namespaces of
its own, and stops its controller before it deletes them.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import structlog
from kubernetes import client

from devcluster import Cluster
from taskset.api import constants as c
from taskset.runtime.controller import Controller, ControllerSettings
from tests.builders import TaskSetBuilder
from tests.integration.conftest import SYNC_TIMEOUT
from tests.integration.harness import TaskSets, eventually, exits, recording, replica, run_forever

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

RUNNING_TIMEOUT = 60.0  # seconds for a one-replica TaskSet to be Running on the embedded control plane
# Seconds the victim is watched after the stranger's Pod is in the controller's cache and the
# victim's pass has run: its batch period (0.5 s) several times over.
SETTLE = 3.0
# Replicas of the TaskSet a stranger squats on while it runs. Which of two Pods filed under one name a
# pass would see is a matter of hash order, so one replica alone would catch the hole only half the
# time; four catch it 15 times in 16 (the issue saw 9 victims fail of 16).
LATE_REPLICAS = 4


def _fresh_namespace(cluster: Cluster, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    cluster.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    return name


@pytest.fixture
def namespaces(cluster: Cluster) -> Iterator[tuple[str, str]]:
    """(the victim's namespace, the stranger's), deleted (without waiting) afterwards."""
    made = (_fresh_namespace(cluster, "ns-victim"), _fresh_namespace(cluster, "ns-evil"))
    yield made
    for name in made:
        with contextlib.suppress(OSError):
            cluster.request("DELETE", f"/api/v1/namespaces/{name}")


@pytest.fixture
def everywhere(cluster: Cluster, crd_installed: None, namespaces: tuple[str, str]) -> Iterator[Controller]:
    """A controller watching every namespace (``namespace=None``), stopped before the namespaces go."""
    controller = Controller(
        api_client=cluster.api_client(),
        settings=ControllerSettings(namespace=None, workers=4),
        logger=structlog.get_logger("taskset-test").bind(test="namespace-isolation"),
    )
    controller.start()
    if not controller.wait_for_sync(SYNC_TIMEOUT):
        controller.stop(1)
        raise AssertionError("controller caches did not sync")
    yield controller
    controller.stop(5)


def _plant(cluster: Cluster, namespace: str, name: str, victim: str, victim_namespace: str) -> str:
    """The stranger's Pod: named, labelled and annotated as the victim's replica; returns its UID."""
    body = {
        "metadata": {
            "name": name,
            "labels": {c.LABEL_TASKSET: victim},
            "annotations": {c.ANNOTATION_TASKSET: victim, c.ANNOTATION_NAMESPACE: victim_namespace},
        },
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "c0", "image": "busybox", "command": ["sleep", "3600"]}],
        },
    }
    created = client.CoreV1Api(cluster.api_client()).create_namespaced_pod(namespace, body)
    return str(created.metadata.uid)


def _cached(controller: Controller, namespace: str, name: str) -> None:
    """Wait until the controller's Pod cache shows ``namespace/name``: the stranger's Pod is seen."""
    key = f"{namespace}/{name}"
    eventually(lambda: controller.pods.store.get_by_key(key) is not None, 30, f"{key} in the cache")


def _no_conflict(ts: TaskSets, name: str, status: dict[str, Any]) -> None:
    assert c.POD_REASON_NAME_CONFLICT not in ts.reasons(name)
    assert replica(status, "w", 0).get("podReason") != c.POD_REASON_NAME_CONFLICT


def test_a_pod_planted_in_another_namespace_before_the_victim_starts_changes_nothing(
    cluster: Cluster, namespaces: tuple[str, str], everywhere: Controller
) -> None:
    victim_ns, evil_ns = namespaces
    planted = _plant(cluster, evil_ns, "early-w-0", "early", victim_ns)
    _cached(everywhere, evil_ns, "early-w-0")
    ts = TaskSets(cluster, victim_ns)

    with recording(cluster, victim_ns, script=lambda pod: exits(0, after=1)):
        ts.create(TaskSetBuilder("early").role("w", 1).obj())
        status = ts.final("early", timeout=120)

    assert status["state"] == "Succeeded", status
    _no_conflict(ts, "early", status)
    done = replica(status, "w", 0)
    assert done["terminatedInfo"]["exitCode"] == 0
    assert done["podUID"] != planted
    stranger = TaskSets(cluster, evil_ns).pod("early-w-0")
    assert stranger is not None and stranger["metadata"]["uid"] == planted
    assert stranger["metadata"].get("deletionTimestamp") is None


def test_pods_planted_in_another_namespace_while_the_victim_runs_change_nothing(
    cluster: Cluster, namespaces: tuple[str, str], everywhere: Controller
) -> None:
    victim_ns, evil_ns = namespaces
    ts = TaskSets(cluster, victim_ns)
    names = [f"late-w-{index}" for index in range(LATE_REPLICAS)]
    with recording(cluster, victim_ns, script=lambda pod: run_forever()) as recorder:
        ts.create(TaskSetBuilder("late").role("w", LATE_REPLICAS).obj())
        running = eventually(lambda: _all_running(ts, "late"), RUNNING_TIMEOUT, "late Running, Pods recorded")
        ours = [replica(running, "w", index)["podUID"] for index in range(LATE_REPLICAS)]

        for name in names:
            _plant(cluster, evil_ns, name, "late", victim_ns)
        for name in names:
            _cached(everywhere, evil_ns, name)
        _wake(ts, names[0])  # a pass of the victim now, with the strangers' Pods in the cache
        time.sleep(SETTLE)

        status = ts.status("late")
        assert status["state"] == "Running", status
        assert c.POD_REASON_NAME_CONFLICT not in ts.reasons("late")
        for index, name in enumerate(names):
            assert replica(status, "w", index)["podUID"] == ours[index]
            pod = ts.pod(name)
            assert pod is not None and pod["metadata"]["uid"] == ours[index]
            assert pod["metadata"].get("deletionTimestamp") is None

        for name in names:
            ts.end_pod(name, 0)
        final = ts.final("late", timeout=120)
    assert final["state"] == "Succeeded", final
    for index, name in enumerate(names):
        assert replica(final, "w", index)["podUID"] == ours[index]
        assert [entry.uid for entry in recorder.pod_log(name)] == [ours[index]]  # never replaced


def _all_running(ts: TaskSets, name: str) -> dict[str, Any] | None:
    status = ts.status(name)
    if status.get("state") != "Running":
        return None
    try:
        recorded = all(replica(status, "w", index).get("podUID") for index in range(LATE_REPLICAS))
    except (KeyError, IndexError):
        return None
    return status if recorded else None


def _wake(ts: TaskSets, pod: str) -> None:
    """Change the victim's Pod (an annotation nobody reads), so its TaskSet is reconciled."""
    stamp = {"metadata": {"annotations": {"test.octopus/poke": str(time.monotonic())}}}
    ts.core.patch_namespaced_pod(pod, ts.namespace, stamp)
