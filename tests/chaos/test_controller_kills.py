"""The controller process is SIGKILLed at random moments and restarted, while a
workload with replica- and TaskSet-level retries runs. Nothing may be lost or done twice: every TaskSet
ends as the fault-free run of the same workload ends, with the same retry counts, and the history shows
at most one Pod per replica and one attempt per TaskSet alive at any revision.

Failure rules are in the mix (``workload.MIXED``): failure rules of every action, exponential backoff
at both retry levels, deadlines that pass while Pods run, retry or wait, TTLs and percentage thresholds.
The kills then land inside backoff waits and around deadlines, and the record shows that no wait was cut
short, no not-counted failure was counted, and nothing was created after a deadline or an end.

CI runs the bounded form (50 TaskSets, 20 kills); ``make chaos`` sets ``CHAOS_SCALE=long``.
"""

from __future__ import annotations

import os
import random
import time
from typing import Any, cast

from devcluster import Cluster
from taskset.api import constants as c
from tests.chaos import run
from tests.chaos.history import History
from tests.chaos.timing import seconds, timed_waits
from tests.chaos.workload import MIXED, workload
from tests.integration.daemon import Daemon
from tests.integration.harness import TaskSets, eventually

LONG = os.environ.get("CHAOS_SCALE") == "long"
TASKSETS = 200 if LONG else 50
KILLS = 100 if LONG else 20
SEED = int(os.environ.get("CHAOS_SEED", "8"))
DOWN = 1.0  # seconds after a kill during which the next controller surely is not serving yet
# After the random kills, if none landed inside a retry wait (on a loaded machine the Pods fail late, after
# the kills), one more kill is aimed at the first wait the statuses show open with a second or more to go.
HUNT_TIMEOUT = 120.0
FINAL_TIMEOUT = 600.0 if LONG else 120.0

history = run.history  # the shared fixtures, bound by name
daemon = run.daemon


def test_the_workload_without_faults_ends_as_declared(
    cluster: Cluster, namespace: str, history: History, daemon: Daemon
) -> None:
    """The baseline: the outcomes the workload declares are what a fault-free run produces."""
    api = TaskSets(cluster, namespace)
    planned = workload(TASKSETS, SEED, shapes=MIXED)
    daemon.start()
    for plan in planned:
        api.create(plan.obj)
    summary = run.finish(api, history, planned, FINAL_TIMEOUT)
    assert daemon.running()
    print(f"fault-free: {summary}")


def open_wait(api: TaskSets) -> bool:
    """Whether a TaskSet or one of its replicas waits for a retry now, due a second or more from now."""
    listed = cast(
        "dict[str, Any]",
        api.custom.list_namespaced_custom_object(c.GROUP, c.VERSION, api.namespace, c.PLURAL),
    )
    later = time.time() + 1.0
    for obj in listed.get("items") or []:
        status = obj.get("status") or {}
        replicas = [r for role in status.get("roleStatus") or [] for r in role.get("replicaStatus") or []]
        for due in [status.get("nextRetryAt"), *(r.get("nextRetryAt") for r in replicas)]:
            when = seconds(due)
            if when is not None and when > later:
                return True
    return False


def test_sigkill_at_random_moments_loses_nothing_and_repeats_nothing(
    cluster: Cluster, namespace: str, history: History, daemon: Daemon
) -> None:
    api = TaskSets(cluster, namespace)
    planned = workload(TASKSETS, SEED, shapes=MIXED)
    rng = random.Random(SEED)
    batches = [planned[i::KILLS] for i in range(KILLS)]  # TaskSets keep arriving while the kills go on
    kills: list[float] = []
    daemon.start()
    for batch in batches:
        for plan in batch:
            api.create(plan.obj)
        time.sleep(rng.uniform(0.2, 2.5))
        kills.append(time.time())
        daemon.kill()
        daemon.start(wait_ready=False)
    daemon.wait_ready()
    if not any(wait.start < kill < wait.end for wait in history.retry_waits() for kill in kills):
        eventually(lambda: open_wait(api), HUNT_TIMEOUT, "a retry wait open with a second to go")
        kills.append(time.time())
        daemon.kill()
        daemon.start()
    summary = run.finish(api, history, planned, FINAL_TIMEOUT)
    assert daemon.starts == len(kills) + 1
    waits = timed_waits(history.retry_waits())
    cut = sum(any(wait.start < kill < wait.end for kill in kills) for wait in waits)
    assert cut > 0, f"no kill landed inside one of the {len(waits)} retry waits"
    deadlines = [due for due in history.deadlines().values() if any(0 <= due - kill < DOWN for kill in kills)]
    print(
        f"{KILLS} kills: {summary}; {cut} of {len(waits)} timed retry waits held a kill; "
        f"{len(deadlines)} deadlines passed within {DOWN}s after a kill"
    )
