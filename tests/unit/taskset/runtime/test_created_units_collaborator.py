"""``CreatedUnits`` on its own: the overlay of ControlUnits this process created until their add event,
our own delete, or the creation timeout (the reconciler's use of it: test_created_units.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from clock import FakeClock
from informers import Store
from taskset.observed.views import ControlUnitView
from taskset.runtime.created_units import CreatedUnits
from taskset.runtime.expectations import Expectations

STORE_KEY = "ns/c-job-0"
TIMEOUT = 300.0
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
