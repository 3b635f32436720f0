"""Suspension under faults: TaskSets suspended and resumed at random moments while the controller process
is SIGKILLed and restarted. Suspension counts nothing, so every TaskSet must still end exactly as the
fault-free run of the same workload ends, with the same retry counts, and the history must show at most
one Pod per replica and one attempt per TaskSet alive at any revision: no duplicate or stray Pod from a
suspend, a resume or a kill in between."""

from __future__ import annotations

import random
import time

from devcluster import Cluster
from taskset.api import constants as c
from tests.chaos import run
from tests.chaos.history import History
from tests.chaos.workload import workload
from tests.integration.daemon import Daemon
from tests.integration.harness import TaskSets, eventually

TASKSETS = 24
ROUNDS = 8
SEED = 24
START_TIMEOUT = 120.0  # seconds for a third of the TaskSets to run before the first suspension

history = run.history  # the shared fixtures, bound by name
daemon = run.daemon


def running(api: TaskSets, names: list[str]) -> int:
    return sum(api.status(name).get("phase") == c.TaskSetPhase.ATTEMPT_RUNNING for name in names)


def set_suspend(api: TaskSets, name: str, value: bool) -> None:
    api.custom.patch_namespaced_custom_object(
        c.GROUP, c.VERSION, api.namespace, c.PLURAL, name, {"spec": {"suspend": value}}
    )


def test_suspend_and_resume_under_sigkill_count_nothing_and_duplicate_nothing(
    cluster: Cluster, namespace: str, history: History, daemon: Daemon
) -> None:
    api, planned, rng = TaskSets(cluster, namespace), workload(TASKSETS, SEED), random.Random(SEED)
    daemon.start()
    for index, plan in enumerate(planned):
        plan.obj["spec"]["suspend"] = index % 3 == 0  # a third start suspended
        api.create(plan.obj)
    names = [plan.name for plan in planned]
    # The rounds begin once a third of the TaskSets run, so that suspensions meet running attempts however
    # slowly a loaded machine starts Pods (a clean-clone run under load reached only 6 of the 8 asked).
    eventually(lambda: running(api, names) >= TASKSETS // 3, START_TIMEOUT, "a third of the TaskSets running")
    for _ in range(ROUNDS):
        paused = rng.sample(names, TASKSETS // 4)
        for name in paused:
            set_suspend(api, name, True)
        time.sleep(rng.uniform(0.2, 2.0))
        daemon.kill()
        daemon.start(wait_ready=False)
        time.sleep(rng.uniform(0.2, 1.5))
        for name in rng.sample(names, TASKSETS // 3):
            set_suspend(api, name, False)
    daemon.wait_ready()
    for name in names:
        set_suspend(api, name, False)
    summary = run.finish(api, history, planned, run.FINAL_TIMEOUT)
    assert daemon.starts == ROUNDS + 1
    suspended = [name for name in names if "TaskSetSuspended" in api.reasons(name)]
    assert len(suspended) >= TASKSETS // 3, "the suspensions reached running TaskSets"
    print(f"{ROUNDS} rounds of suspensions and kills: {summary}")
