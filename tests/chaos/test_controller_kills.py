"""Fault 1 of issue 8: the controller process is SIGKILLed at random moments and restarted, while a
workload with replica- and TaskSet-level retries runs. Nothing may be lost or done twice: every TaskSet
ends as the fault-free run of the same workload ends, with the same retry counts, and the history shows
at most one Pod per replica and one attempt per TaskSet alive at any revision.

CI runs the bounded form (50 TaskSets, 20 kills); ``make chaos`` sets ``CHAOS_SCALE=long``.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from devcluster import Cluster
from tests.chaos.history import History
from tests.chaos.invariants import FINAL_STATES, same_outcomes
from tests.chaos.workload import Planned, workload
from tests.integration.daemon import Daemon
from tests.integration.harness import TaskSets

LONG = os.environ.get("CHAOS_SCALE") == "long"
TASKSETS = 200 if LONG else 50
KILLS = 100 if LONG else 20
SEED = int(os.environ.get("CHAOS_SEED", "8"))
FINAL_TIMEOUT = 600.0 if LONG else 120.0


@pytest.fixture
def history(cluster: Cluster, namespace: str, crd_installed: None) -> Iterator[History]:
    recorded = History(cluster, namespace).start()
    yield recorded
    recorded.stop()


@pytest.fixture
def daemon(cluster: Cluster, namespace: str, tmp_path: Path) -> Iterator[Daemon]:
    process = Daemon(cluster, namespace, tmp_path, "--workers=4")
    yield process
    if process.running():
        process.stop()


def unfinished(api: TaskSets, planned: list[Planned]) -> list[str]:
    """The TaskSets not final yet, each with its phase and its replicas' phases (the failure message)."""
    found = []
    for plan in planned:
        status = (api.get(plan.name) or {}).get("status") or {}
        if status.get("state") not in FINAL_STATES:
            replicas = [
                f"{role.get('name')}-{r.get('index')}:{r.get('phase')}/{r.get('podUID')}"
                for role in status.get("roleStatus") or []
                for r in role.get("replicaStatus") or []
            ]
            found.append(f"{plan.name} {status.get('phase')} {status.get('controlUnitUID')} {replicas}")
    return found


def finish(api: TaskSets, history: History, planned: list[Planned]) -> dict[str, int]:
    """Wait for the end, then hold the record to the invariants and the fault-free outcomes."""
    deadline = time.monotonic() + FINAL_TIMEOUT
    while (left := unfinished(api, planned)) and time.monotonic() < deadline:
        time.sleep(1.0)
    assert not left, f"not final after {FINAL_TIMEOUT}s: {left}"
    time.sleep(1.0)  # the record's watches catch up with the last writes
    history.stop()
    expected = {p.name: p.expected for p in planned}
    assert same_outcomes(expected, history.final_outcomes()) == []
    verdict = history.verdict()
    assert verdict.violations == []
    summary = history.summary()
    assert summary["unverifiable"] <= summary["pods"] // 10, verdict.unverifiable
    return summary


def test_the_workload_without_faults_ends_as_declared(
    cluster: Cluster, namespace: str, history: History, daemon: Daemon
) -> None:
    """The baseline: the outcomes the workload declares are what a fault-free run produces."""
    api = TaskSets(cluster, namespace)
    planned = workload(TASKSETS, SEED)
    daemon.start()
    for plan in planned:
        api.create(plan.obj)
    summary = finish(api, history, planned)
    assert daemon.running()
    print(f"fault-free: {summary}")


def test_sigkill_at_random_moments_loses_nothing_and_repeats_nothing(
    cluster: Cluster, namespace: str, history: History, daemon: Daemon
) -> None:
    api = TaskSets(cluster, namespace)
    planned = workload(TASKSETS, SEED)
    rng = random.Random(SEED)
    batches = [planned[i::KILLS] for i in range(KILLS)]  # TaskSets keep arriving while the kills go on
    daemon.start()
    for batch in batches:
        for plan in batch:
            api.create(plan.obj)
        time.sleep(rng.uniform(0.2, 2.5))
        daemon.kill()
        daemon.start(wait_ready=False)
    daemon.wait_ready()
    summary = finish(api, history, planned)
    assert daemon.starts == KILLS + 1
    print(f"{KILLS} kills: {summary}")
