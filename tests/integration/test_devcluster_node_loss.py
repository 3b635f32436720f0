"""Node loss is real on the embedded control plane when node health is on: a lost node turns Unknown and
tainted after the grace, its Pods are evicted and stay terminating (no kubelet confirms), the scheduler
places nothing new on it, and once it is restored the waiting deletions are confirmed. Without node
health (the session cluster) nothing of this runs, and ``lose-node`` says why."""

from __future__ import annotations

import functools
import subprocess
import sys
import time
import urllib.error
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from devcluster import Cluster, Settings
from devcluster.node_health import LOST_HOLDER, NodeHealth, NodeHealthOffError, lose_node

pytestmark = pytest.mark.integration

GRACE = 8  # seconds without a heartbeat before a node is Unknown
TOLERATION = 3  # seconds a Pod tolerates an unreachable node before it is evicted
UNREACHABLE = "node.kubernetes.io/unreachable"
# Generous on a busy machine: the grace, the lifecycle controller's pass, the eviction, and slack.
LOSS_TIMEOUT = 90.0


def wait_until(predicate: Callable[[], Any], timeout: float = LOSS_TIMEOUT) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"condition not met within {timeout}s")


@pytest.fixture(scope="module")
def healthy() -> Iterator[Cluster]:
    settings = Settings(
        nodes=3,
        node_health=NodeHealth(grace_seconds=GRACE, lease_seconds=GRACE, toleration_seconds=TOLERATION),
    )
    with Cluster(settings) as running:
        yield running


def ready(cluster: Cluster, node: str) -> str:
    conditions = cluster.request("GET", f"/api/v1/nodes/{node}")["status"].get("conditions") or []
    return next((c["status"] for c in conditions if c["type"] == "Ready"), "")


def taints(cluster: Cluster, node: str) -> set[str]:
    return {t["key"] for t in cluster.request("GET", f"/api/v1/nodes/{node}")["spec"].get("taints") or []}


def pod_on(name: str, node: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"nodeName": node, "containers": [{"name": "main", "image": "busybox"}]},
    }


def get_pod(cluster: Cluster, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        pod: dict[str, Any] = cluster.request("GET", f"/api/v1/namespaces/{namespace}/pods/{name}")
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise
    return pod


def test_a_lost_node_is_tainted_its_pods_evicted_and_left_terminating_until_it_is_back(
    healthy: Cluster,
) -> None:
    cluster = healthy
    ns = "lost-node"
    cluster.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    lost, alive = "kwok-node-0", "kwok-node-1"
    for name, node in (("on-lost", lost), ("on-alive", alive)):
        cluster.request("POST", f"/api/v1/namespaces/{ns}/pods", pod_on(name, node))

    def running(name: str) -> bool:
        return bool((get_pod(cluster, ns, name) or {}).get("status", {}).get("phase") == "Running")

    for name in ("on-lost", "on-alive"):
        wait_until(functools.partial(running, name))
    lease = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/"
    assert cluster.request("GET", lease + lost)["spec"]["holderIdentity"] != LOST_HOLDER

    cluster.lose_node(lost)
    wait_until(lambda: ready(cluster, lost) == "Unknown" and UNREACHABLE in taints(cluster, lost))
    evicted = wait_until(
        lambda: (p := get_pod(cluster, ns, "on-lost")) and p["metadata"].get("deletionTimestamp") and p
    )
    reasons = {c["type"]: c.get("reason") for c in evicted["status"].get("conditions") or []}
    assert reasons.get("DisruptionTarget") == "DeletionByTaintManager"
    # No kubelet confirms: the Pod stays terminating, while the alive node's Pod runs on.
    time.sleep(3)
    assert get_pod(cluster, ns, "on-lost") is not None
    assert ready(cluster, alive) == "True"
    assert get_pod(cluster, ns, "on-alive")["status"]["phase"] == "Running"  # type: ignore[index]
    # A deletion on an alive node is confirmed as before.
    cluster.request("DELETE", f"/api/v1/namespaces/{ns}/pods/on-alive")
    wait_until(lambda: get_pod(cluster, ns, "on-alive") is None)

    cluster.restore_node(lost)
    wait_until(lambda: get_pod(cluster, ns, "on-lost") is None)
    wait_until(lambda: ready(cluster, lost) == "True" and UNREACHABLE not in taints(cluster, lost))


def test_lose_node_without_node_health_says_how_to_turn_it_on(cluster: Cluster) -> None:
    with pytest.raises(NodeHealthOffError, match="node health"):
        lose_node(cluster, "kwok-node-0")
    # The session cluster's nodes have no Lease and stay Ready: nothing was changed.
    assert ready(cluster, "kwok-node-0") == "True"


def test_the_command_line_loses_and_restores_a_node(healthy: Cluster) -> None:
    directory = healthy.directory
    (directory / "state.json").exists() or pytest.fail("the cluster writes its state file")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "devcluster", *args, f"--dir={directory}"]
        return subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)

    lost = run("lose-node", "kwok-node-2")
    assert lost.returncode == 0, lost.stderr
    assert "kwok-node-2 lost" in lost.stdout
    wait_until(lambda: ready(healthy, "kwok-node-2") == "Unknown")
    restored = run("restore-node", "kwok-node-2")
    assert restored.returncode == 0, restored.stderr
    wait_until(lambda: ready(healthy, "kwok-node-2") == "True")
    missing = run("lose-node", "no-such-node")
    assert missing.returncode == 1
    assert "404" in missing.stderr
