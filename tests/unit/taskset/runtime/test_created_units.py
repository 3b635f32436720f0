"""The pass that creates a ControlUnit goes on to create the Pods (spec 5: R MAY chain), on the create's
response rather than the cache's sight of the ConfigMap (T5). Until the cache shows it, the reconciler
shows the later passes the ControlUnit it created, as client-go's MutationCache overlays a controller's
own writes: a watch that lags past the expectations' TTL (an API server restart) must not read as the
ControlUnit deleted externally (T11). The overlay ends at the ConfigMap's add event, at our own delete
of it, or after ``cache_creation_timeout``, the patience T4 gives a ControlUnit never seen.

``CreatedUnits``, the overlay itself, is also tested on its own: what it shows until the ControlUnit's
add event, our own delete, or the creation timeout.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from clock import FakeClock
from informers import Store
from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import TaskSetPhase as T
from taskset.observed.views import ControlUnitView
from taskset.runtime.created_units import CreatedUnits
from taskset.runtime.expectations import EXPECTATIONS_TTL, Expectations
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


# ----- the overlay on its own -------------------------------------------------------------------------------

STORE_KEY = "ns/c-job-0"
VIEW = ControlUnitView(name="c-job-0", uid="u1", deleting=False, controller_uid="ts-1")


def overlay() -> tuple[CreatedUnits, Expectations, FakeClock]:
    clock = FakeClock()
    expectations = Expectations([Store()], clock)
    return CreatedUnits(expectations, clock, timeout=TIMEOUT), expectations, clock


Step = Callable[[CreatedUnits, FakeClock], None]


def remember(units: CreatedUnits, _: FakeClock) -> None:
    units.remember(STORE_KEY, "u1", VIEW)


def add_event(uid: str) -> Step:
    return lambda units, _: units.creation_observed(STORE_KEY, uid)


def our_delete(units: CreatedUnits, _: FakeClock) -> None:
    units.forget(STORE_KEY)


def wait(seconds: float) -> Step:
    return lambda _, clock: clock.step(seconds)


@pytest.mark.parametrize(
    ("steps", "shown"),
    [
        pytest.param([], None, id="nothing created shows nothing"),
        pytest.param([remember], VIEW, id="a created ControlUnit is shown as the create's response had it"),
        pytest.param([remember, add_event("u1")], None, id="its add event ends the overlay"),
        pytest.param(
            [add_event("u1"), remember], None, id="an add event that beat the create's response is respected"
        ),
        pytest.param(
            [remember, add_event("u0")],
            VIEW,
            id="the add event of another object under the name does not end it",
        ),
        pytest.param([remember, our_delete], None, id="our own delete ends the overlay"),
        pytest.param([remember, wait(TIMEOUT - 1)], VIEW, id="it is shown until the creation timeout"),
        pytest.param(
            [remember, wait(TIMEOUT)], None, id="the cache's silence is its absence from the timeout on"
        ),
    ],
)
def test_the_overlay_shows_a_created_control_unit_until_the_cache_can_speak_for_it(
    steps: list[Step], shown: ControlUnitView | None
) -> None:
    units, _, clock = overlay()
    for step in steps:
        step(units, clock)

    assert units.get(STORE_KEY) is shown


def test_an_add_event_is_noted_for_the_expectations_too() -> None:
    units, expectations, _ = overlay()

    units.creation_observed("ns/job-r-0", "pod-1")  # a Pod's: no overlay entry, still an add event

    assert expectations.observed("pod-1")


def test_an_add_event_arriving_while_a_response_is_being_remembered_is_not_lost() -> None:
    """The overlay shares the expectations' lock: a ``remember`` that has to wait for it sees the add event
    that came meanwhile, so no entry outlives its add event."""
    units, expectations, _ = overlay()
    with expectations.lock:
        remembering = threading.Thread(target=units.remember, args=(STORE_KEY, "u1", VIEW))
        remembering.start()
        remembering.join(0.05)
        assert remembering.is_alive()
        expectations.creation_observed("u1")
    remembering.join()

    assert units.get(STORE_KEY) is None
