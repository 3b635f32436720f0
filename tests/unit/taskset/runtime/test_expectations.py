"""Expectations (client-go's ControllerExpectations): a pass waits until the caches have shown the
creates of the last one, so a lagging cache never causes a duplicate action. A create counts as shown
once its add event came, even when the object is gone again by the next pass: a full-scale churn run had
a TaskSet create a replica's retry Pod in the same pass that ended it, the ControlUnit's deletion took
the Pod away at once, and the TaskSet then waited out the whole 15 s TTL before finishing."""

from __future__ import annotations

import pytest

from clock import FakeClock
from informers import Store
from taskset.runtime.expectations import EXPECTATIONS_TTL
from taskset.runtime.reconciler import Reconciler
from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import (
    RecordingClient,
    World,
    cached_taskset,
    control_unit_ready,
    reconciler_over,
)

KEY = "ns/job"


def pod_created_scene() -> tuple[Reconciler, RecordingClient, Store]:
    """A pass has just created the Pod of a one-replica TaskSet; the caches have not shown it yet."""
    world = control_unit_ready(World(TaskSetBuilder("job").role("r").obj()))
    client = RecordingClient(cached_taskset(world))
    reconciler, caches = reconciler_over(world, client, clock=FakeClock(wall_start=world.now))
    reconciler.reconcile(KEY)
    assert [c["kind"] for c in client.created] == ["Pod"]
    return reconciler, client, caches.pods


@pytest.mark.parametrize(
    ("add_event", "in_cache", "waits"),
    [
        pytest.param(False, False, True, id="not shown yet: the pass waits for the cache"),
        pytest.param(True, True, False, id="shown: the pass goes on"),
        pytest.param(False, True, False, id="in the cache before its handler ran: the pass goes on"),
        pytest.param(True, False, False, id="shown and gone again: the pass goes on"),
    ],
)
def test_a_pass_waits_only_for_creates_the_caches_never_showed(
    add_event: bool, in_cache: bool, waits: bool
) -> None:
    reconciler, client, pods = pod_created_scene()
    pod = client.created[0]
    if in_cache:
        pods.add(pod)
    if add_event:
        reconciler.creation_observed(pod)

    result = reconciler.reconcile(KEY)

    # The clock stands still, so only the expectation wait is exactly the TTL (the machines' own
    # waits are 10 s or less).
    assert (result.requeue_after == EXPECTATIONS_TTL) is waits
    reconciler.close()
