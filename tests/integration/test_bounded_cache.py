"""Issue 30, item 4: a stranger's Pods and ConfigMaps labelled ``TaskSet`` reach the controller's caches
(the label is the informers' selector, and anyone may set it), but the caches keep none of their
foreign labels or annotations: a Pod with 250 KB of annotations costs what an ordinary Pod costs.

The controller watches every namespace (the daemon's default); the stranger writes in a namespace of
its own, deleted after the controller stops.
"""

from __future__ import annotations

import contextlib
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
from tests.integration.conftest import SYNC_TIMEOUT
from tests.integration.harness import eventually

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


@pytest.fixture
def everywhere(cluster: Cluster, crd_installed: None, stranger: str) -> Iterator[Controller]:
    controller = Controller(
        api_client=cluster.api_client(),
        settings=ControllerSettings(namespace=None, workers=2),
        logger=structlog.get_logger("taskset-test").bind(test="bounded-cache"),
    )
    controller.start()
    if not controller.wait_for_sync(SYNC_TIMEOUT):
        controller.stop(1)
        raise AssertionError("controller caches did not sync")
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
    assert unit["data"] == {"spec.json": "{}"}, "a ConfigMap's data is kept: the snapshot is read from it"


def _cached(informer: SharedInformer, key: str) -> dict[str, Any]:
    """The object under ``key`` once the informer's cache shows it."""
    found: dict[str, Any] = eventually(lambda: informer.store.get_by_key(key), 30, f"{key} in the cache")
    return found
