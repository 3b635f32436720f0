"""Elastic scaling under faults: elastic TaskSets scaled up and down at random moments while the controller
process is SIGKILLed and restarted. No scale may be lost (each TaskSet settles at the count last asked
for, in its status, its Pods and its live membership), no scaled-down replica may be retried (no retry is
ever counted: the workload's Pods fail nothing), and the history must show at most one Pod per replica
index alive at any revision, and one attempt per TaskSet."""

from __future__ import annotations

import functools
import json
import random
import time

from devcluster import Cluster
from taskset.api import constants as c
from tests.builders import TaskSetBuilder
from tests.chaos import run
from tests.chaos.history import History
from tests.chaos.invariants import Outcome
from tests.chaos.workload import Planned
from tests.integration.daemon import Daemon
from tests.integration.harness import TaskSets, eventually

history = run.history  # the shared fixtures, bound by name
daemon = run.daemon

TASKSETS, ROUNDS, SEED = 8, 10, 26
MAX_REPLICAS = 4
SETTLE_TIMEOUT = 120.0  # seconds for every TaskSet to settle at its last count once the kills are over


def describe(api: TaskSets, name: str) -> str:
    """What a TaskSet shows of its count, for a failure message."""
    status = api.status(name)
    replicas = [
        (r.get("index"), r.get("phase"), r.get("stopped"), r.get("totalRetriedCount"))
        for role in status.get("roleStatus") or []
        for r in role.get("replicaStatus") or []
    ]
    roles = [(role.get("targetReplicas"), role.get("lastScale")) for role in status.get("roleStatus") or []]
    pods = [(p["metadata"]["name"], (p.get("status") or {}).get("phase")) for p in api.live_pods(name)]
    cm = api.configmap(f"{name}-membership")
    generation = (cm or {}).get("data", {}).get("generation")
    return f"{name}: {status.get('phase')} {roles} {replicas} pods {pods} membership {generation}"


def settled(api: TaskSets, name: str, count: int) -> bool:
    """The count asked for, everywhere: replicas in the status, Pods running, peers in the membership."""
    status = api.status(name)
    [role] = status.get("roleStatus") or [{}]
    replicas = role.get("replicaStatus") or []
    pods = api.live_pods(name)
    cm = api.configmap(f"{name}-membership")
    peers = json.loads(cm["data"]["membership.json"])["roles"]["w"]["peers"] if cm else []
    return (
        status.get("phase") == c.TaskSetPhase.ATTEMPT_RUNNING
        and [r.get("index") for r in replicas] == list(range(count))
        and all(r.get("phase") == c.ReplicaPhase.ATTEMPT_RUNNING and not r.get("stopped") for r in replicas)
        and len(pods) == count
        and all((p.get("status") or {}).get("phase") == "Running" for p in pods)
        and len(peers) == count
    )


def test_scales_under_sigkill_lose_no_scale_retry_nothing_and_duplicate_no_pod(
    cluster: Cluster, namespace: str, history: History, daemon: Daemon
) -> None:
    api, rng = TaskSets(cluster, namespace), random.Random(SEED)
    names = [f"e{i:02d}" for i in range(TASKSETS)]
    wanted = dict.fromkeys(names, 2)
    daemon.start()
    for name in names:  # Pods run until ended; a failure would be retried (so a wrong retry would show)
        api.create(
            TaskSetBuilder(name)
            .role("w", 2, minReplicas=1, maxReplicas=MAX_REPLICAS, retry=(True, 2, 0))
            .obj()
        )
    for _ in range(ROUNDS):
        for name in rng.sample(names, TASKSETS // 2):
            wanted[name] = rng.randint(1, MAX_REPLICAS)
            api.set_replicas(name, wanted[name])
        time.sleep(rng.uniform(0.2, 2.0))
        daemon.kill()
        daemon.start(wait_ready=False)
    daemon.wait_ready()
    for name in names:  # no lost scale
        try:
            eventually(functools.partial(settled, api, name, wanted[name]), SETTLE_TIMEOUT, f"{name} settled")
        except AssertionError as err:
            raise AssertionError(f"{err}; wanted {wanted[name]}; {describe(api, name)}") from None
    for name in names:
        for pod in api.live_pods(name):
            api.end_pod(pod["metadata"]["name"], 0)
    planned = [
        Planned(
            {"metadata": {"name": name}},
            Outcome("Succeeded", 0, tuple(("w", i, 0, 0) for i in range(wanted[name]))),
        )
        for name in names
    ]
    summary = run.finish(api, history, planned, run.FINAL_TIMEOUT)
    assert daemon.starts == ROUNDS + 1
    retried = [
        (name, status.get("totalRetriedCount"), r.get("index"), r.get("totalRetriedCount"))
        for name, statuses in history.statuses().items()
        for status in statuses
        for role in status.get("roleStatus") or []
        for r in role.get("replicaStatus") or []
        if status.get("totalRetriedCount") or r.get("totalRetriedCount")
    ]
    assert retried == [], f"a scaled-down replica or an attempt was retried: {retried[:5]}"
    scaled = sum(1 for name in names if any(r == c.EventReason.ROLE_SCALED for r, _ in api.events(name)))
    assert scaled >= TASKSETS // 2, "the scales reached running TaskSets"
    print(f"{ROUNDS} rounds of scales and kills: {summary}")
