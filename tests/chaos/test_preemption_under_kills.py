"""Preemption under faults: the real Kueue preempts running low-priority TaskSets for higher-priority ones
while the controller process is SIGKILLed and restarted at random moments (between an eviction and the
Pods' deletion, between the deletion and the evicted Workload's, around a re-admission). A preemption
counts nothing, so every TaskSet must still succeed with no retry counted, as the fault-free run does,
and the history must show at most one Pod per replica and one attempt per TaskSet alive at any
revision: a preempted replica's Pod is gone before its next one exists."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from devcluster import Cluster, sim
from devcluster.kueue import Kueue
from taskset.integrations.kueue import QUEUE_LABEL, WORKLOADS
from tests.builders import TaskSetBuilder, pod_template
from tests.chaos import run
from tests.chaos.history import History
from tests.chaos.invariants import Outcome
from tests.chaos.workload import Planned
from tests.integration.daemon import Daemon
from tests.integration.harness import TaskSets

LOW, HIGH, QUOTA = 6, 4, 3  # one-CPU TaskSets, and CPUs of quota: half the low ones run at once
ROUNDS = 6
SEED = 2424

history = run.history  # the shared fixture, bound by name


@pytest.fixture
def daemon(cluster: Cluster, namespace: str, tmp_path: Path, kueue: Kueue) -> Iterator[Daemon]:
    process = Daemon(cluster, namespace, tmp_path, "--workers=4", "--kueue")
    yield process
    if process.running():
        process.stop()


@pytest.fixture
def preempting_queue(cluster: Cluster, namespace: str, kueue: Kueue) -> Iterator[str]:
    """``QUOTA`` CPUs in which a higher priority preempts a lower one, and a LocalQueue ``team``."""
    api = client.CustomObjectsApi(cluster.api_client())
    group, version = WORKLOADS.group, WORKLOADS.version
    meta = {"apiVersion": f"{group}/{version}"}
    flavor = {**meta, "kind": "ResourceFlavor", "metadata": {"name": "default"}}
    try:
        api.create_cluster_custom_object(group, version, "resourceflavors", flavor)
    except client.ApiException as err:
        if err.status != 409:
            raise
    resources = [{"name": "cpu", "nominalQuota": str(QUOTA)}]
    spec = {
        "namespaceSelector": {},
        "resourceGroups": [
            {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": resources}]}
        ],
        "preemption": {"withinClusterQueue": "LowerPriority"},
    }
    queue = {**meta, "kind": "ClusterQueue", "metadata": {"name": namespace}, "spec": spec}
    api.create_cluster_custom_object(group, version, "clusterqueues", queue)
    local = {**meta, "kind": "LocalQueue", "metadata": {"name": "team"}, "spec": {"clusterQueue": namespace}}
    api.create_namespaced_custom_object(group, version, namespace, "localqueues", local)
    yield "team"
    api.delete_cluster_custom_object(group, version, "clusterqueues", namespace)


def queued(name: str, priority: int, seconds: float, queue: str) -> Planned:
    """One replica of one CPU that succeeds ``seconds`` after it starts, in ``queue`` at ``priority``."""
    template = pod_template("exit 0", annotations=sim.outcome(duration=seconds, exit_code=0))
    template["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    obj = TaskSetBuilder(name).role("r", 1, template=template).priority(priority).obj()
    obj["metadata"]["labels"] = {QUEUE_LABEL: queue}
    return Planned(obj, Outcome("Succeeded", 0, (("r", 0, 0, 0),)))


def test_preemption_under_sigkill_counts_nothing_and_duplicates_nothing(
    cluster: Cluster, namespace: str, history: History, daemon: Daemon, preempting_queue: str
) -> None:
    api, rng = TaskSets(cluster, namespace), random.Random(SEED)
    lows = [queued(f"low-{i}", 0, rng.uniform(6.0, 10.0), preempting_queue) for i in range(LOW)]
    highs = [queued(f"high-{i}", 100, rng.uniform(1.5, 3.0), preempting_queue) for i in range(HIGH)]
    daemon.start()
    for plan in lows:
        api.create(plan.obj)
    time.sleep(3.0)  # the first lows admitted and running
    waiting = list(highs)
    for _ in range(ROUNDS):
        if waiting:
            api.create(waiting.pop(0).obj)
        time.sleep(rng.uniform(0.2, 2.5))
        daemon.kill()
        daemon.start(wait_ready=False)
        time.sleep(rng.uniform(0.2, 1.5))
    for plan in waiting:
        api.create(plan.obj)
    daemon.wait_ready()
    summary = run.finish(api, history, [*lows, *highs], run.FINAL_TIMEOUT + 60)
    assert daemon.starts == ROUNDS + 1
    pods_of = {plan.name: 0 for plan in lows}
    for life in history.lifetimes("Pod"):
        if life.name.startswith("low-"):
            pods_of[life.name.rsplit("-r-", 1)[0]] += 1
    preempted = [name for name, count in pods_of.items() if count > 1]
    assert preempted, f"a running low-priority TaskSet was preempted and ran again: {pods_of}"
    print(f"{ROUNDS} rounds of kills, preempted {preempted}: {summary}")
