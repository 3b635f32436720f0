"""Flapping suspension: ``spec.suspend`` written true and false tens of times, at random moments, on
running TaskSets whose Pods all exit 0. A suspension counts nothing, so each flip lands somewhere in a
Pod's life (just created, running, being deleted by the last suspension, gone) and none may matter: every
TaskSet ends ``Succeeded`` with no retry counted, no failure recorded, no ``ReplicaFailure`` event, and
the history shows at most one Pod per replica alive at any revision (the Pod a suspension is still
deleting is never taken for the resumed replica's new one)."""

from __future__ import annotations

import random
import time
from typing import Any

from devcluster import Cluster, sim
from taskset.api import constants as c
from tests.builders import TaskSetBuilder, pod_template
from tests.chaos import run
from tests.chaos.history import History
from tests.chaos.invariants import Outcome
from tests.chaos.workload import Planned
from tests.integration.daemon import Daemon
from tests.integration.harness import TaskSets

history = run.history  # the shared fixtures, bound by name
daemon = run.daemon

TASKSETS, REPLICAS, FLIPS, SEED = 6, 3, 40, 37
# Long enough that most flips land on a running Pod, short enough that the run stays under two minutes.
RUN_SECONDS = 3.0


def set_suspend(api: TaskSets, name: str, value: bool) -> None:
    api.custom.patch_namespaced_custom_object(
        c.GROUP, c.VERSION, api.namespace, c.PLURAL, name, {"spec": {"suspend": value}}
    )


def failures_seen(statuses: dict[str, list[dict[str, Any]]]) -> list[str]:
    """Every status that counts or records anything: a retry, a failure rule's match."""
    found = []
    for name, seen in statuses.items():
        for status in seen:
            if status.get("totalRetriedCount"):
                found.append(f"{name}: totalRetriedCount {status.get('totalRetriedCount')}")
            for role in status.get("roleStatus") or []:
                for replica in role.get("replicaStatus") or []:
                    index = replica.get("index")
                    if replica.get("totalRetriedCount") or replica.get("failure"):
                        found.append(
                            f"{name}: replica {index} retries {replica.get('totalRetriedCount')} "
                            f"failure {replica.get('failure')} ({replica.get('phaseMessage')})"
                        )
    return found


def test_flapping_suspend_on_running_tasksets_counts_nothing_and_every_one_succeeds(
    cluster: Cluster, namespace: str, history: History, daemon: Daemon
) -> None:
    api, rng = TaskSets(cluster, namespace), random.Random(SEED)
    names = [f"f{i:02d}" for i in range(TASKSETS)]
    template = pod_template("exit 0", annotations=sim.outcome(duration=RUN_SECONDS, exit_code=0))
    daemon.start()
    for name in names:
        api.create(TaskSetBuilder(name).role("w", REPLICAS, template=template).obj())
    time.sleep(1.0)  # the first Pods start
    suspended = dict.fromkeys(names, False)
    for _ in range(FLIPS):
        for name in rng.sample(names, TASKSETS // 2 + 1):
            suspended[name] = not suspended[name]
            set_suspend(api, name, suspended[name])
        time.sleep(rng.uniform(0.05, 0.5))
    for name in names:
        set_suspend(api, name, False)
    planned = [
        Planned(
            {"metadata": {"name": name}},
            Outcome("Succeeded", 0, tuple(("w", i, 0, 0) for i in range(REPLICAS))),
        )
        for name in names
    ]
    summary = run.finish(api, history, planned, run.FINAL_TIMEOUT)
    assert failures_seen(history.statuses()) == []
    counted = {name: api.reasons(name) & {c.EventReason.REPLICA_FAILURE} for name in names}
    assert all(not reasons for reasons in counted.values()), counted
    flapped = [name for name in names if c.EventReason.TASKSET_RESUMED in api.reasons(name)]
    assert len(flapped) >= TASKSETS // 2, "the flips reached running TaskSets"
    assert summary["pods"] > TASKSETS * REPLICAS, "the suspensions deleted running Pods"
    print(f"{FLIPS} rounds of suspend flips: {summary}")
