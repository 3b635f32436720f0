"""The reconciler remembers how many replicas each TaskSet's last pass saw, which sets how long the
changes of its objects are batched (``taskset.runtime.controller.batch_window``), and forgets it with
the TaskSet."""

from __future__ import annotations

import pytest

from tests.unit.taskset.decide.scenes import running, single
from tests.unit.taskset.world import RecordingClient, cached_taskset, reconciler_over

pytestmark = pytest.mark.unit


def test_a_pass_remembers_the_replicas_it_saw_and_forgets_them_with_the_taskset() -> None:
    world = running(single(replicas=7))
    reconciler, caches = reconciler_over(world, RecordingClient(cached_taskset(world)))
    assert reconciler.replicas_seen("ns/job") == 0  # before its first pass
    reconciler.reconcile("ns/job")
    assert reconciler.replicas_seen("ns/job") == 7
    assert reconciler.replicas_seen("ns/other") == 0
    caches.tasksets.delete(cached_taskset(world))
    reconciler.reconcile("ns/job")
    assert reconciler.replicas_seen("ns/job") == 0
