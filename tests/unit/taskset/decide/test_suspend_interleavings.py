"""Property-based: a suspension counts nothing, whatever order ``spec.suspend`` writes and the Pods'
events come in.

A TaskSet whose Pods all exit 0 is driven through random interleavings of suspend and resume writes,
passes (some of whose status writes are lost, as when a spec write makes them conflict), and what
happens to its Pods: a deleted Pod stays terminating until its kubelet removes it, may exit 0 or be
killed by its signal meanwhile, and a running one may exit 0. After every pass nothing is counted (no
retry, no failure rule matched, no ``ReplicaFailure`` event) and the TaskSet has not failed; every move
is a declared edge of its machine (``Machine.check`` raises otherwise); and once resumed for good, with
every Pod exiting 0, the TaskSet succeeds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taskset.api.constants import State, TaskSetPhase
from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import World, execute_write_lost, pass_once, settle_terminating

pytestmark = pytest.mark.unit

REPLICAS = 2
# What can happen between two passes, and the passes themselves.
FLIP, PASS, LOST, REMOVE, RUN, EXIT, KILLED = "flip", "pass", "lost", "remove", "run", "exit", "killed"
STEPS = st.tuples(
    st.sampled_from([FLIP, FLIP, PASS, PASS, PASS, LOST, REMOVE, REMOVE, RUN, EXIT, KILLED]),
    st.integers(0, REPLICAS - 1),
)


def flip(world: World) -> None:
    spec = world.taskset["spec"]
    spec["suspend"] = not spec.get("suspend", False)
    world.taskset["metadata"]["generation"] += 1


def terminating(pod: dict[str, Any]) -> bool:
    return "deletionTimestamp" in pod["metadata"]


def exited(pod: dict[str, Any]) -> bool:
    return pod["status"].get("phase") in ("Succeeded", "Failed")


def happen(world: World, step: str, which: int) -> None:
    """One step on the world; a Pod event happens to one of the Pods it can happen to, if any."""
    if step == FLIP:
        flip(world)
    elif step == PASS:
        world.reconcile()
    elif step == LOST:
        execute_write_lost(world, pass_once(world))
    else:
        able = [name for name, pod in sorted(world.pods.items()) if POSSIBLE[step](pod)]
        if able:
            EVENTS[step](world, able[which % len(able)])


def _running(world: World, name: str) -> None:
    world.run(name)


def _exit(world: World, name: str) -> None:
    world.exit(name, 0)  # its work is done, or a deleted Pod's process ends cleanly on SIGTERM


def _killed(world: World, name: str) -> None:
    world.exit(name, 143)  # the containers of a deleted Pod are stopped by SIGTERM


def _removed(world: World, name: str) -> None:
    world.remove(name)  # its containers stopped: the kubelet removes the terminating Pod


POSSIBLE: dict[str, Callable[[dict[str, Any]], bool]] = {
    REMOVE: terminating,
    RUN: lambda pod: pod["status"].get("phase") == "Pending" and not terminating(pod),
    EXIT: lambda pod: not exited(pod),
    KILLED: lambda pod: terminating(pod) and not exited(pod),
}
EVENTS: dict[str, Callable[[World, str], None]] = {
    REMOVE: _removed,
    RUN: _running,
    EXIT: _exit,
    KILLED: _killed,
}


def counted(world: World) -> list[str]:
    """Whatever the status or the events count: retries, matched failure rules, a failed TaskSet."""
    status = world.status
    found = [event for event in world.events if event.startswith("ReplicaFailure:")]
    if status is None:
        return found
    if status.total_retried_count or status.state == State.FAILED:
        found.append(f"TaskSet {status.state} after {status.total_retried_count} retries")
    for role in status.roles:
        for replica in role.replicas:
            if replica.total_retried_count or replica.failure is not None:
                found.append(f"replica {replica.index}: {replica.failure} ({replica.phase_message})")
    return found


def finish(world: World) -> None:
    """Resume for good and let every Pod exit 0 until the TaskSet ends."""
    if world.taskset["spec"].get("suspend"):
        flip(world)
    for _ in range(12):
        settle_terminating(world)
        if world.status is not None and world.status.phase == TaskSetPhase.COMPLETED:
            return
        for name, pod in list(world.pods.items()):
            if not exited(pod) and not terminating(pod):
                world.exit(name, 0)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(STEPS, min_size=1, max_size=40))
def test_any_interleaving_of_suspend_writes_and_pod_events_counts_nothing(
    steps: list[tuple[str, int]],
) -> None:
    world = World(TaskSetBuilder("job").role("r", replicas=REPLICAS).obj(), graceful=True)
    world.settle()
    for name in list(world.pods):
        world.run(name)
    world.settle()
    for step, which in steps:
        happen(world, step, which)
        assert counted(world) == [], (step, which)
    finish(world)
    assert world.status is not None
    assert (world.status.phase, world.status.state) == (TaskSetPhase.COMPLETED, State.SUCCEEDED)
    assert counted(world) == []
