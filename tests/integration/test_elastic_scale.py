"""Issue 26, item 1: a running role scaled on the embedded control plane.

The API server's CEL rules refuse a count outside ``minReplicas``/``maxReplicas``; within them, a patch
of ``replicas`` while the attempt runs creates the new indices in the same attempt, and removes the
highest ones on the way down, which end neither failed nor retried: the TaskSet then succeeds on the
replicas it has.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from devcluster import Cluster
from taskset.api import constants as c
from taskset.runtime.controller import Controller
from tests.builders import TaskSetBuilder
from tests.integration.conftest import start_controller
from tests.integration.harness import TaskSets, eventually, role_status

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SEEN = 60.0  # seconds until the controller acts on a scale


@pytest.fixture
def controller(cluster: Cluster, namespace: str, crd_installed: None) -> Iterator[Controller]:
    running = start_controller(cluster, namespace, workers=2)
    yield running
    running.stop(5)


@pytest.fixture
def ts(cluster: Cluster, namespace: str, controller: Controller) -> TaskSets:
    return TaskSets(cluster, namespace)


def patch_replicas(ts: TaskSets, name: str, replicas: int) -> None:
    """Write the role's count as ``kubectl edit`` would: read, change, replace (resourceVersion held)."""
    obj = ts.get(name)
    assert obj is not None
    obj["spec"]["roles"][0]["replicas"] = replicas
    ts.custom.replace_namespaced_custom_object(c.GROUP, c.VERSION, ts.namespace, c.PLURAL, name, obj)


def pod_names(ts: TaskSets, name: str) -> list[str]:
    return sorted(p["metadata"]["name"] for p in ts.pods(name) if not p["metadata"].get("deletionTimestamp"))


def running_pods(ts: TaskSets, name: str, count: int) -> bool:
    pods = [p for p in ts.pods(name) if not p["metadata"].get("deletionTimestamp")]
    return len(pods) == count and all((p.get("status") or {}).get("phase") == "Running" for p in pods)


def workers(name: str, replicas: int) -> dict[str, Any]:
    return TaskSetBuilder(name).role("w", replicas, minReplicas=1, maxReplicas=4).obj()


def test_scale_up_and_down_while_running(ts: TaskSets) -> None:
    ts.create(workers("elastic", 2))
    eventually(lambda: running_pods(ts, "elastic", 2), SEEN, "two Pods running")
    uid = ts.status("elastic")["controlUnitUID"]
    patch_replicas(ts, "elastic", 4)
    eventually(lambda: running_pods(ts, "elastic", 4), SEEN, "four Pods running")
    role = role_status(ts.status("elastic"), "w")
    assert role["targetReplicas"] == 4 and (role["lastScale"]["from"], role["lastScale"]["to"]) == (2, 4)
    assert ts.status("elastic")["controlUnitUID"] == uid  # the same attempt
    patch_replicas(ts, "elastic", 1)
    eventually(lambda: pod_names(ts, "elastic") == ["elastic-w-0"], SEEN, "only index 0 left")
    status = eventually(
        lambda: (s := ts.status("elastic")) and len(role_status(s, "w")["replicaStatus"]) == 1 and s,
        SEEN,
        "the scaled-down replicas dropped from the status",
    )
    assert status["phase"] == c.TaskSetPhase.ATTEMPT_RUNNING and status["totalRetriedCount"] == 0
    assert role_status(status, "w")["state"] == c.State.RUNNING  # the removed replicas failed nothing


@pytest.mark.parametrize(
    "replicas", [pytest.param(0, id="below minReplicas"), pytest.param(5, id="above max")]
)
def test_a_scale_outside_the_bounds_is_refused_by_the_api_server(ts: TaskSets, replicas: int) -> None:
    ts.create(workers("bounded", 2))
    with pytest.raises(client.ApiException) as refused:
        patch_replicas(ts, "bounded", replicas)
    assert refused.value.status == 422
