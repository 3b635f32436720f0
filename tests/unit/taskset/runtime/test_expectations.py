"""Expectations (client-go's ControllerExpectations): a pass waits until the caches have shown the
creates of the last one, so a lagging cache never causes a duplicate action. A create counts as shown
once its add event came, even when the object is gone again by the next pass: a full-scale churn run had
a TaskSet create a replica's retry Pod in the same pass that ended it, the ControlUnit's deletion took
the Pod away at once, and the TaskSet then waited out the whole 15 s TTL before finishing.

``Expectations`` is also tested on its own, read against a real informer store and a fake clock:
what a TaskSet's next pass waits for after its creates and deletes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from clock import FakeClock
from informers import Store
from taskset.runtime.expectations import EXPECTATIONS_TTL, Expectations
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


# ----- Expectations on its own ------------------------------------------------------------------------------


def obj(name: str, uid: str, *, deleting: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": "ns", "name": name, "uid": uid}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta}


def expectations() -> tuple[Expectations, Store, FakeClock]:
    cache, clock = Store(), FakeClock()
    return Expectations([Store(), cache], clock), cache, clock


@dataclass(frozen=True)
class Case:
    creates: tuple[tuple[str, str], ...] = ()  # (name, uid) the pass created
    deletes: tuple[tuple[str, str], ...] = ()  # (name, uid) the pass deleted
    cached: tuple[dict[str, Any], ...] = ()  # what the cache shows by the next pass
    add_events: tuple[str, ...] = ()  # UIDs whose add event came
    elapsed: float = 0.0
    waits: bool = True


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(Case(waits=False), id="a TaskSet that did nothing waits for nothing"),
        pytest.param(Case(creates=(("a", "u1"),)), id="a create the cache has not shown holds the pass"),
        pytest.param(
            Case(creates=(("a", "u1"),), cached=(obj("a", "u1"),), waits=False),
            id="a create the cache shows releases the pass",
        ),
        pytest.param(
            Case(creates=(("a", "u1"),), add_events=("u1",), waits=False),
            id="a create whose add event came releases the pass even when the cache no longer has it",
        ),
        pytest.param(
            Case(creates=(("a", "u1"),), cached=(obj("a", "u0"),)),
            id="an older object under the created name does not count as the create",
        ),
        pytest.param(
            Case(creates=(("a", "u1"), ("b", "u2")), cached=(obj("a", "u1"),)),
            id="one create shown of two still holds the pass",
        ),
        pytest.param(
            Case(deletes=(("a", "u1"),), cached=(obj("a", "u1"),)),
            id="a delete the cache has not shown holds the pass",
        ),
        pytest.param(
            Case(deletes=(("a", "u1"),), cached=(obj("a", "u1", deleting=True),), waits=False),
            id="a delete shown as a deletion in progress releases the pass without waiting for grace",
        ),
        pytest.param(Case(deletes=(("a", "u1"),), waits=False), id="a deleted object gone releases the pass"),
        pytest.param(
            Case(deletes=(("a", "u1"),), cached=(obj("a", "u2"),), waits=False),
            id="a newer object under the deleted name does not hold the pass",
        ),
        pytest.param(
            Case(creates=(("a", "u1"),), elapsed=EXPECTATIONS_TTL, waits=False),
            id="a cache that never shows the create is given up on after the TTL",
        ),
        pytest.param(
            Case(creates=(("a", "u1"),), elapsed=EXPECTATIONS_TTL - 1),
            id="a moment before the TTL the pass still waits",
        ),
    ],
)
def test_a_pass_waits_until_the_cache_shows_the_last_passes_actions_or_the_ttl_ends(case: Case) -> None:
    expected, cache, clock = expectations()
    for name, uid in case.creates:
        expected.expect_create(KEY, f"ns/{name}", uid)
    for name, uid in case.deletes:
        expected.expect_delete(KEY, f"ns/{name}", uid)
    for cached in case.cached:
        cache.add(cached)
    for uid in case.add_events:
        expected.creation_observed(uid)
    clock.step(case.elapsed)

    waiting = expected.seconds_to_wait(KEY)

    assert waiting == (EXPECTATIONS_TTL - case.elapsed if case.waits else None)


def test_every_new_expectation_moves_the_deadline_of_the_taskset() -> None:
    expected, _, clock = expectations()
    expected.expect_create(KEY, "ns/a", "u1")
    clock.step(10)
    expected.expect_delete(KEY, "ns/b", "u2")
    clock.step(10)

    assert expected.seconds_to_wait(KEY) == EXPECTATIONS_TTL - 10


def test_a_create_once_shown_stays_satisfied_when_its_object_goes_again() -> None:
    expected, cache, _ = expectations()
    expected.expect_create(KEY, "ns/a", "u1")
    expected.expect_create(KEY, "ns/b", "u2")
    cache.add(obj("a", "u1"))
    assert expected.seconds_to_wait(KEY) is not None
    cache.delete(obj("a", "u1"))
    cache.add(obj("b", "u2"))

    assert expected.seconds_to_wait(KEY) is None


def test_the_tasksets_wait_independently() -> None:
    expected, cache, _ = expectations()
    expected.expect_create(KEY, "ns/a", "u1")
    expected.expect_create("ns/other", "ns/b", "u2")
    cache.add(obj("a", "u1"))

    assert (expected.seconds_to_wait(KEY), expected.seconds_to_wait("ns/other")) == (None, EXPECTATIONS_TTL)


def test_a_forgotten_taskset_waits_for_nothing() -> None:
    expected, _, _ = expectations()
    expected.expect_create(KEY, "ns/a", "u1")

    expected.forget(KEY)

    assert expected.seconds_to_wait(KEY) is None


@pytest.mark.parametrize(
    ("elapsed", "remembered"),
    [
        pytest.param(EXPECTATIONS_TTL - 1, True, id="an add event is remembered within the TTL"),
        pytest.param(EXPECTATIONS_TTL, False, id="an add event is forgotten once the TTL has passed"),
    ],
)
def test_add_events_are_remembered_for_the_ttl(elapsed: float, remembered: bool) -> None:
    expected, _, clock = expectations()
    expected.creation_observed("u1")

    clock.step(elapsed)

    assert expected.observed("u1") is remembered
