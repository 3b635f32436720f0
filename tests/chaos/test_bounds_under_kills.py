"""The timed run bounds pass while the controller is down: it is SIGKILLed a few seconds into a small
workload and kept down while deadlines pass (over running Pods, a retrying replica and a TaskSet retry
wait), a TTL passes and backoff waits run out; then it starts again. The status is its only memory of
those moments: every TaskSet must end as the fault-free run of the same shapes ends (DeadlineExceeded,
deleted, retried after the full delay), with no Pod created after its deadline, no wait cut short, and
every one of those moments must indeed have passed while no controller ran.

The controller-kill test mixes the same shapes into random kills; this one makes sure the moments fall
into the downtime, which random kills only make likely."""

from __future__ import annotations

import random
import time

from devcluster import Cluster, sim
from tests.builders import TaskSetBuilder, pod_template
from tests.chaos import run
from tests.chaos.history import History
from tests.chaos.invariants import Outcome
from tests.chaos.timing import seconds, timed_waits
from tests.chaos.workload import (
    FAIL,
    Planned,
    deadline_in_backoff,
    deadline_retrying,
    deadline_running,
    replica_backoff,
    taskset_backoff,
    ttl,
)
from tests.integration.daemon import Daemon
from tests.integration.harness import TaskSets, eventually

SEED = 25
UP = 4.0  # seconds the controller runs the timed shapes before the kill
DOWN = 12.0  # seconds it stays down
DEADLINE = 7  # activeDeadlineSeconds: counted from createdAt, so it passes 3 s after the kill, while down
# The TaskSets that must have moved before the kill run first, and the kill waits for them (ARMED): the
# TTL TaskSet has finished, the long wait has begun. Their clocks start there, so they do not depend on
# how fast a loaded machine runs a Pod (at 4 s after the creates, a clean-clone run under load had not
# finished the TTL TaskSet yet).
ARMED = ("ttl", "long-wait")
ARM_TIMEOUT = 120.0
TTL = 10  # ttlSecondsAfterFinished: passes UP + 6 s after the finish was seen, less the creates: while down
LONG_WAIT = 30  # a TaskSet retry delay that starts before the kill and ends after the restart

history = run.history  # the shared fixtures, bound by name
daemon = run.daemon


def long_wait() -> Planned:
    """Attempt 0 fails at once and the TaskSet retry waits LONG_WAIT s: the restarted controller can only
    know how much of it is left from the status."""
    annotations = {**sim.outcome(duration=1.0), sim.attempt_exit_code(0, 0, 0): FAIL}
    obj = (
        TaskSetBuilder("long-wait")
        .spec_field(
            "retryPolicy", {"retry": True, "maxRetryCount": 1, "backoff": {"initialDelay": LONG_WAIT}}
        )
        .role("r", 1, template=pod_template(annotations=annotations))
        .obj()
    )
    return Planned(obj, Outcome("Succeeded", 1, (("r", 0, 0, 0),)))


def bounded(rng: random.Random) -> list[Planned]:
    shapes = (deadline_running, deadline_in_backoff, deadline_retrying, ttl, replica_backoff, taskset_backoff)
    planned = [shape(shape.__name__.replace("_", "-"), rng) for shape in shapes] + [long_wait()]
    for plan in planned:
        spec = plan.obj["spec"]
        if "activeDeadlineSeconds" in spec:
            spec["activeDeadlineSeconds"] = DEADLINE
        if "ttlSecondsAfterFinished" in spec:  # finished well before the kill
            spec["ttlSecondsAfterFinished"] = TTL
            for role in spec["roles"]:
                role["template"]["metadata"]["annotations"][sim.DURATION] = "1s"
    return planned


def has_finished(api: TaskSets, name: str) -> bool:
    return bool(api.status(name).get("finishAt"))


def waiting(api: TaskSets, name: str) -> bool:
    """In a TaskSet retry wait: the attempt ended and the next one is due later."""
    return bool(api.status(name).get("nextRetryAt"))


def test_deadlines_ttl_and_backoff_that_pass_while_the_controller_is_down(
    cluster: Cluster, namespace: str, history: History, daemon: Daemon
) -> None:
    api, planned = TaskSets(cluster, namespace), bounded(random.Random(SEED))
    daemon.start()
    armed = [plan for plan in planned if plan.obj["metadata"]["name"] in ARMED]
    assert len(armed) == len(ARMED)
    for plan in armed:
        api.create(plan.obj)
    eventually(
        lambda: has_finished(api, "ttl") and waiting(api, "long-wait"), ARM_TIMEOUT, "ttl and long-wait armed"
    )
    for plan in planned:
        if plan not in armed:
            api.create(plan.obj)
    time.sleep(UP)
    killed = time.time()
    daemon.kill()
    time.sleep(DOWN)
    restarted = time.time()
    daemon.start()
    summary = run.finish(api, history, planned)
    deadlines = history.deadlines()
    assert len(deadlines) == 3, deadlines
    early_or_late = {label: due for label, due in deadlines.items() if not killed < due < restarted}
    assert early_or_late == {}, (
        f"deadlines outside the downtime {killed:.0f}..{restarted:.0f}: {early_or_late}"
    )
    (ttl_record,) = [r for r in history.tasksets().values() if r.spec.get("ttlSecondsAfterFinished")]
    finished = seconds(ttl_record.statuses[-1].get("finishAt"))
    assert finished is not None and killed < finished + TTL < restarted, (finished, killed, restarted)
    waits = timed_waits(history.retry_waits())
    held = [wait for wait in waits if wait.start < killed < wait.end]
    due_after = [wait for wait in held if wait.start + wait.shortest > restarted]
    assert due_after, f"no retry wait was still due when the controller came back: {waits}"
    print(
        f"bounds while down: {summary}; {len(held)} of {len(waits)} timed retry waits held the kill, "
        f"{len(due_after)} still due at the restart"
    )
