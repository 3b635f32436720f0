"""Lost nodes on the embedded control plane with node health on (``devcluster.node_health``): a node's
heartbeats stop, the node lifecycle controller marks it ``Unknown`` and taints it, the taint-eviction
controller evicts its Pods, and no kubelet confirms those deletions.

* ``Wait`` (the default): under a running 20-replica TaskSet, within a minute the Running condition and
  the replicas' messages name the node and the replicas waiting on it, and nothing else happens: no Pod
  is deleted or created for a while; once the node is back every replica runs again.
* ``Recover``: the same TaskSet runs again within the node's grace, its Pods' toleration and the policy's
  grace, plus 30 s; no replacement lands on the lost node, the recoveries are recorded, and the history
  never shows two live Pods for a replica.
* chaos: 20 node losses (and returns) over 50 running TaskSets with ``Recover``: none wedged, no
  duplicate Pod of a replica.

The cluster is this module's own (4 nodes, an 8 s node grace, Pods tolerating unreachable for 5 s), so
that losing nodes never disturbs another test.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from typing import Any, Final

import pytest

from devcluster import Cluster, Settings
from devcluster.node_health import NodeHealth
from taskset.api import constants as c
from taskset.runtime.controller import Controller
from tests.builders import TaskSetBuilder, pod_template
from tests.chaos.history import History
from tests.integration.conftest import CRD_FILE, install_crd, start_controller
from tests.integration.harness import TaskSets, eventually

NODES: Final = 4
NODE_GRACE: Final = 8  # seconds without heartbeats before a node is Unknown and tainted
TOLERATION: Final = 5  # seconds a Pod tolerates the unreachable taint before it is evicted
RECOVER_GRACE: Final = 10  # the TaskSets' nodeLossPolicy graceSeconds
REPLICAS: Final = 20
SLACK: Final = 30.0  # the bound past the graces
RUNNING: Final = "TaskRoleReplicaAttemptRunning"


@pytest.fixture(scope="module")
def lossy() -> Iterator[Cluster]:
    health = NodeHealth(grace_seconds=NODE_GRACE, lease_seconds=NODE_GRACE, toleration_seconds=300)
    with Cluster(Settings(nodes=NODES, node_health=health)) as running:
        install_crd(running, CRD_FILE.read_text(), c.CRD_NAME, c.PLURAL)
        yield running


@pytest.fixture
def space(lossy: Cluster) -> Iterator[str]:
    name = f"nodeloss-{uuid.uuid4().hex[:6]}"
    lossy.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    yield name
    for node in range(NODES):
        lossy.restore_node(f"kwok-node-{node}")


@pytest.fixture
def controller(lossy: Cluster, space: str) -> Iterator[Controller]:
    running = start_controller(lossy, space, workers=4)
    yield running
    running.stop(5)


def template() -> dict[str, Any]:
    """Runs until deleted; tolerates an unreachable node for TOLERATION seconds, as the issue's trial."""
    spec = pod_template()
    spec["spec"]["tolerations"] = [
        {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": TOLERATION,
        }
    ]
    return spec


def taskset(name: str, replicas: int, policy: dict[str, Any] | None) -> dict[str, Any]:
    obj = TaskSetBuilder(name).role("worker", replicas, template=template()).obj()
    if policy is not None:
        obj["spec"]["nodeLossPolicy"] = policy
    return obj


def replicas(status: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for role in status.get("roleStatus") or [] for r in role.get("replicaStatus") or []]


def all_running(ts: TaskSets, name: str, count: int) -> dict[str, Any] | None:
    status = ts.status(name)
    found = replicas(status)
    if len(found) == count and all(r.get("phase") == RUNNING for r in found):
        return status
    return None


def pods_on(ts: TaskSets, name: str, node: str) -> list[dict[str, Any]]:
    return [p for p in ts.pods(name) if p["spec"].get("nodeName") == node]


def busiest(ts: TaskSets, name: str) -> str:
    counts: dict[str, int] = {}
    for pod in ts.pods(name):
        counts[pod["spec"]["nodeName"]] = counts.get(pod["spec"]["nodeName"], 0) + 1
    return max(sorted(counts), key=lambda n: counts[n])


def running_message(status: dict[str, Any]) -> str:
    found = [cond for cond in status.get("conditions") or [] if cond["type"] == "Running"]
    return str(found[0].get("message", "")) if found else ""


def test_with_wait_the_lost_node_and_its_replicas_are_named_within_a_minute_and_nothing_else_happens(
    lossy: Cluster, space: str, controller: Controller
) -> None:
    ts = TaskSets(lossy, space)
    ts.create(taskset("gang", REPLICAS, None))
    eventually(lambda: all_running(ts, "gang", REPLICAS), 120, "every replica runs")
    node = busiest(ts, "gang")
    stranded = sorted(int(p["metadata"]["name"].rsplit("-", 1)[1]) for p in pods_on(ts, "gang", node))
    uids = {p["metadata"]["uid"] for p in ts.pods("gang")}
    lost_at = time.monotonic()
    lossy.lose_node(node)

    def named() -> dict[str, Any] | None:
        status = ts.status("gang")
        message = running_message(status)
        listed = [f"worker-{i}" for i in stranded]
        if message.startswith(f"NodeLost: node {node} unreachable") and all(n in message for n in listed):
            return status
        return None

    status = eventually(named, 60, "the Running condition names the lost node and its replicas")
    assert time.monotonic() - lost_at <= 60
    for replica in replicas(status):
        on_lost = replica["index"] in stranded
        assert (f"is on node {node}" in replica.get("phaseMessage", "")) == on_lost, replica
    eventually(lambda: any(r == "NodeLost" for r, _ in ts.events("gang")), 30, "a NodeLost event")
    # Nothing else happens: the evicted Pods stay (no kubelet confirms), none is created or force-deleted.
    time.sleep(TOLERATION + 10)
    assert {p["metadata"]["uid"] for p in ts.pods("gang")} == uids
    assert all(p["metadata"].get("deletionTimestamp") for p in pods_on(ts, "gang", node))
    assert not ts.status("gang").get("nodeRecoveries")
    # The node comes back: its kubelet confirms the deletions and the replicas run again, elsewhere or there.
    lossy.restore_node(node)

    def back() -> dict[str, Any] | None:
        status = all_running(ts, "gang", REPLICAS)
        return status if status and not running_message(status).startswith("NodeLost") else None

    eventually(back, 120, "every replica runs again, and the Running condition no longer names the node")


def test_with_recover_the_taskset_runs_again_within_the_graces_and_never_on_the_lost_node(
    lossy: Cluster, space: str, controller: Controller
) -> None:
    history = History(lossy, space).start()
    try:
        ts = TaskSets(lossy, space)
        ts.create(taskset("gang", REPLICAS, {"action": "Recover", "graceSeconds": RECOVER_GRACE}))
        eventually(lambda: all_running(ts, "gang", REPLICAS), 120, "every replica runs")
        node = busiest(ts, "gang")
        stranded = {p["metadata"]["name"] for p in pods_on(ts, "gang", node)}
        lost_at = time.monotonic()
        lossy.lose_node(node)
        # Unknown after NODE_GRACE (the lifecycle controller's pass adds up to a second or two), evicted
        # TOLERATION later; force-deleted RECOVER_GRACE after the node was marked; then replaced.
        bound = NODE_GRACE + max(TOLERATION, RECOVER_GRACE) + SLACK

        def recovered() -> dict[str, Any] | None:
            status = all_running(ts, "gang", REPLICAS)
            return status if status and not pods_on(ts, "gang", node) else None

        status = eventually(recovered, bound + 60, "the TaskSet runs again off the lost node")
        took = time.monotonic() - lost_at
        assert took <= bound, f"running again after {took:.0f} s, bound {bound} s"
        records = status["nodeRecoveries"]["recoveries"]
        assert {r["pod"] for r in records} <= stranded and all(r["node"] == node for r in records)
        assert all(r["lostAt"] and r["recoveredAt"] and r["action"] == "Recover" for r in records)
        assert not running_message(status).startswith("NodeLost")
        said = lambda: any(r == "NodeLostPodDeleted" for r, _ in ts.events("gang"))  # noqa: E731
        eventually(said, 30, "a NodeLostPodDeleted event")
    finally:
        history.stop()
    verdict = history.verdict()
    assert not verdict.violations, verdict.violations


def describe(ts: TaskSets, name: str) -> str:
    """What a wedged TaskSet's status and Pods say, for the failure's message."""
    status = ts.status(name)
    said = [(r.get("index"), r.get("phase"), r.get("phaseMessage")) for r in replicas(status)]
    pods = [
        (
            p["metadata"]["name"],
            p["spec"].get("nodeName"),
            p["status"].get("phase"),
            p["metadata"].get("deletionTimestamp"),
        )
        for p in ts.pods(name)
    ]
    return f"{status.get('state')} {status.get('phaseMessage')!r} replicas {said} pods {pods}"


def test_twenty_node_losses_over_fifty_tasksets_wedge_none_and_duplicate_nothing(
    lossy: Cluster, space: str, controller: Controller
) -> None:
    rng = random.Random(42)
    history = History(lossy, space).start()
    names = [f"ts-{i}" for i in range(50)]
    policy = {"action": "Recover", "graceSeconds": 5}
    try:
        ts = TaskSets(lossy, space)
        for name in names:
            ts.create(taskset(name, 2, policy))
        eventually(lambda: all(all_running(ts, n, 2) for n in names), 240, "all 50 TaskSets run")
        nodes = [f"kwok-node-{i}" for i in range(NODES)]
        lost: list[str] = []
        for _ in range(20):
            # At most two of the four nodes lost at a time, so the replicas always have somewhere to go.
            if len(lost) == 2 or (lost and rng.random() < 0.5):
                back = lost.pop(0)
                lossy.restore_node(back)
            node = rng.choice([n for n in nodes if n not in lost])
            lossy.lose_node(node)
            lost.append(node)
            time.sleep(rng.uniform(2, 8))
        for node in lost:
            lossy.restore_node(node)
        deadline = time.monotonic() + 300
        waiting = names
        while waiting and time.monotonic() < deadline:
            waiting = [n for n in names if not all_running(ts, n, 2)]
            time.sleep(1)
        wedged = {n: describe(ts, n) for n in waiting[:3]}
        assert not wedged, f"wedged: {wedged}"
    finally:
        history.stop()
    verdict = history.verdict()
    assert not verdict.violations, verdict.violations[:5]
