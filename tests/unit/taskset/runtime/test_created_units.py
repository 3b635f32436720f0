"""The pass that creates a ControlUnit goes on to create the Pods (spec 5: R MAY chain), on the create's
response rather than the cache's sight of the ConfigMap (T5). Until the cache shows it, the reconciler
shows the later passes the ControlUnit it created, as client-go's MutationCache overlays a controller's
own writes: a watch that lags past the expectations' TTL (an API server restart) must not read as the
ControlUnit deleted externally (T11). The overlay ends at the ConfigMap's add event, at our own delete
of it, or after ``cache_creation_timeout``, the patience T4 gives a ControlUnit never seen."""

from __future__ import annotations

from typing import Any

import pytest

from clock import FakeClock
from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import TaskSetPhase as T
from taskset.runtime.expectations import EXPECTATIONS_TTL
from taskset.runtime.reconciler import Reconciler
from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import Caches, RecordingClient, World, cached_taskset, reconciler_over

pytestmark = pytest.mark.unit

KEY = "ns/job"
TIMEOUT = 300.0  # Settings().cache_creation_timeout


def chained_first_pass() -> tuple[Reconciler, RecordingClient, Caches, FakeClock]:
    """A new one-replica TaskSet after its first pass: ControlUnit and Pod created, status Preparing,
    and neither object in the caches yet."""
    world = World(TaskSetBuilder("job").role("r").obj())
    client = RecordingClient(cached_taskset(world))
    clock = FakeClock(wall_start=world.now)
    reconciler, caches = reconciler_over(world, client, clock=clock)
    reconciler.reconcile(KEY)
    assert client.calls == [
        ("create", "c-job-0"),
        ("create", "job-r-0"),
        ("status", P.ATTEMPT_CREATION_REQUESTED),
    ]
    assert client.live["status"]["phase"] == T.ATTEMPT_PREPARING
    caches.tasksets.update(client.live)  # our status write's watch event
    client.calls.clear()
    return reconciler, client, caches, clock


def unit(client: RecordingClient) -> dict[str, Any]:
    return next(obj for obj in client.created if obj["kind"] == "ConfigMap")


def test_a_control_unit_the_cache_has_not_shown_yet_is_still_seen_after_the_expectations_expire() -> None:
    reconciler, client, _, clock = chained_first_pass()
    clock.step(EXPECTATIONS_TTL + 1)

    reconciler.reconcile(KEY)

    assert client.calls == []  # no T11: nothing deleted, no status moved
    assert client.live["status"]["phase"] == T.ATTEMPT_PREPARING


def test_once_the_cache_has_shown_it_the_cache_alone_decides() -> None:
    reconciler, client, caches, clock = chained_first_pass()
    caches.units.add(unit(client))
    reconciler.creation_observed(unit(client))
    caches.units.delete(unit(client))  # then deleted from outside, and its deletion seen
    clock.step(EXPECTATIONS_TTL + 1)

    reconciler.reconcile(KEY)

    status = client.live["status"]
    assert (status["phase"], status["state"]) == (T.COMPLETED, "Failed")  # T11, and no retry allowed


def test_a_control_unit_never_shown_counts_as_gone_after_the_creation_timeout() -> None:
    reconciler, client, _, clock = chained_first_pass()
    clock.step(TIMEOUT - 1)
    reconciler.reconcile(KEY)
    assert client.live["status"]["phase"] == T.ATTEMPT_PREPARING

    clock.step(2)
    reconciler.reconcile(KEY)

    status = client.live["status"]
    assert (status["phase"], status["state"]) == (T.COMPLETED, "Failed")


def test_our_own_delete_of_the_control_unit_ends_the_overlay() -> None:
    """The Pod's informer is ahead of the ConfigMap's: the Pod ran and succeeded, so the attempt is over
    and T10 deletes the ControlUnit the cache still has not shown. The pass after that must not see it."""
    reconciler, client, caches, clock = chained_first_pass()
    pod = next(obj for obj in client.created if obj["kind"] == "Pod")
    caches.pods.add(succeeded(pod))
    reconciler.creation_observed(pod)
    clock.step(EXPECTATIONS_TTL + 1)  # the ControlUnit's add event is overdue
    reconciler.reconcile(KEY)
    assert client.calls[-1] == ("delete", "job-r-0")  # P9: the finished Pod goes first
    caches.pods.delete(pod)
    caches.tasksets.update(client.live)
    reconciler.reconcile(KEY)
    assert client.calls[-1] == ("delete", "c-job-0")  # T10

    caches.tasksets.update(client.live)
    reconciler.reconcile(KEY)

    status = client.live["status"]
    assert (status["phase"], status["state"]) == (T.COMPLETED, "Succeeded")


def succeeded(pod: dict[str, Any]) -> dict[str, Any]:
    container = pod["spec"]["containers"][0]["name"]
    terminated = {"exitCode": 0, "reason": "Completed", "finishedAt": "2026-01-01T00:00:09Z"}
    status = {
        "phase": "Succeeded",
        "hostIP": "10.0.0.1",
        "podIP": "10.0.1.1",
        "startTime": "2026-01-01T00:00:01Z",
        "containerStatuses": [
            {"name": container, "containerID": "kwok://c", "state": {"terminated": terminated}}
        ],
    }
    return {**pod, "status": status}
