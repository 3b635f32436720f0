"""The delaying queue on a fake clock: deadline order, earliest deadline wins, heartbeat, shutdown."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import pytest
from pytest_mock import MockerFixture

from clock import FakeClock
from tests.unit.workqueue.conftest import WaitUntil
from workqueue import DelayingQueue, Queue, QueueSettings, QueueShutDown

pytestmark = [pytest.mark.unit, pytest.mark.timeout(30)]


Advance = Callable[[DelayingQueue[str], float], list[str]]
Q = TypeVar("Q", bound=Queue[Any])


class Closing(Protocol):
    """The ``closing`` fixture: registers a queue for shutdown at teardown and returns it."""

    def __call__(self, queue: Q, /) -> Q: ...


@dataclass(frozen=True)
class Step:
    adds: list[tuple[str, float]]
    """``add_after(item, delay)`` calls made at the start of the step."""
    advance: float
    """Seconds the fake clock moves."""
    ready: list[str]
    """Items handed out after the move, in order."""


@pytest.mark.parametrize(
    "steps",
    [
        pytest.param(
            [Step(adds=[("a", 3), ("b", 1), ("c", 2)], advance=5, ready=["b", "c", "a"])],
            id="items come out in deadline order, not add order",
        ),
        pytest.param(
            [Step(adds=[("a", 1), ("b", 1), ("c", 1)], advance=1, ready=["a", "b", "c"])],
            id="equal deadlines come out in add order",
        ),
        pytest.param(
            [
                Step(adds=[("a", 10)], advance=9.5, ready=[]),
                Step(adds=[], advance=0.5, ready=["a"]),
            ],
            id="an item is not added before its deadline and is added at it",
        ),
        pytest.param(
            [
                Step(adds=[("a", 10), ("a", 2)], advance=2, ready=["a"]),
                Step(adds=[], advance=8, ready=[]),
            ],
            id="a re-add with a shorter delay moves the item earlier and the old deadline never fires",
        ),
        pytest.param(
            [
                Step(adds=[("a", 2), ("a", 10)], advance=2, ready=["a"]),
                Step(adds=[], advance=8, ready=[]),
            ],
            id="a re-add with a longer delay neither postpones nor duplicates the item",
        ),
        pytest.param(
            [
                Step(adds=[("a", 5), ("b", 3)], advance=2, ready=[]),
                Step(adds=[("a", 0.5)], advance=1, ready=["a", "b"]),
            ],
            id="moving an item earlier puts it ahead of items it used to follow",
        ),
        pytest.param(
            [Step(adds=[("a", 0), ("b", -5), ("c", 1)], advance=1, ready=["a", "b", "c"])],
            id="zero and negative delays add at once, ahead of the timer",
        ),
        pytest.param(
            [
                Step(adds=[("a", 1)], advance=1, ready=["a"]),
                Step(adds=[("a", 1)], advance=1, ready=["a"]),
            ],
            id="an item that fired can wait again",
        ),
    ],
)
def test_delayed_adds(steps: list[Step], fake_clock: FakeClock, closing: Closing, advance: Advance) -> None:
    queue = closing(DelayingQueue[str](clock=fake_clock))

    for number, step in enumerate(steps):
        for item, delay in step.adds:
            queue.add_after(item, delay)
        assert advance(queue, step.advance) == step.ready, f"step {number}"

    assert queue.len() == 0


def test_only_a_new_earliest_deadline_wakes_the_timer(
    fake_clock: FakeClock, closing: Closing, advance: Advance, mocker: MockerFixture
) -> None:
    """The timer sleeps until the earliest deadline, so a later one need not wake it: a wake that
    changes nothing costs a thread switch, and most requeues come after the earliest one."""
    queue = closing(DelayingQueue[str](clock=fake_clock))
    wakes = mocker.spy(queue._waiting_cond, "notify_all")

    queue.add_after("b", 5)  # the first deadline: wake
    queue.add_after("c", 8)  # later than the earliest
    queue.add_after("b", 7)  # later than b's own: ignored
    queue.add_after("a", 2)  # a new earliest: wake
    queue.add_after("c", 3)  # c earlier, but not the earliest

    assert wakes.call_count == 2
    assert advance(queue, 8) == ["a", "c", "b"]


class RecordingClock(FakeClock):
    """A fake clock that remembers the timeout of every ``wait``."""

    def __init__(self) -> None:
        super().__init__()
        self.timeouts: list[float | None] = []

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        self.timeouts.append(timeout)
        super().wait(cond, timeout)


@pytest.mark.parametrize(
    ("settings", "delays", "expected_wait"),
    [
        pytest.param(None, [], 10.0, id="with nothing waiting the timer still wakes every 10 s"),
        pytest.param(None, [60.0], 10.0, id="a far deadline is re-checked on the 10 s heartbeat"),
        pytest.param(None, [60.0, 3.0], 3.0, id="the nearest deadline bounds the wait"),
        pytest.param(
            QueueSettings(max_delay_wait=2.0), [60.0], 2.0, id="the heartbeat comes from the settings"
        ),
    ],
)
def test_timer_wait_is_bounded_by_the_heartbeat(
    settings: QueueSettings | None,
    delays: list[float],
    expected_wait: float,
    closing: Closing,
    wait_until: WaitUntil,
) -> None:
    clock = RecordingClock()
    queue = closing(DelayingQueue[str](clock=clock, settings=settings))

    for number, delay in enumerate(delays):
        queue.add_after(f"item-{number}", delay)

    wait_until(lambda: clock.timeouts[-1:] == [expected_wait], f"the timer waits {expected_wait} s")


@pytest.mark.parametrize(
    "shut_down",
    [
        pytest.param(DelayingQueue.shutdown, id="shutdown"),
        pytest.param(DelayingQueue.shutdown_with_drain, id="shutdown with drain"),
    ],
)
def test_shutdown_stops_the_timer_thread_and_drops_waiting_items(
    shut_down: Callable[[DelayingQueue[str]], None], fake_clock: FakeClock
) -> None:
    queue = DelayingQueue[str](name="delays", clock=fake_clock)
    timers = [t for t in threading.enumerate() if t.name == "workqueue-delay-delays"]
    assert [t.is_alive() for t in timers] == [True]
    queue.add_after("a", 1)

    shut_down(queue)
    queue.add_after("b", 0)
    queue.add_after("c", 1)
    fake_clock.step(5)

    assert not timers[0].is_alive()
    assert queue.len() == 0
    with pytest.raises(QueueShutDown):
        queue.get()


def test_shutdown_is_idempotent(fake_clock: FakeClock) -> None:
    queue = DelayingQueue[str](clock=fake_clock)

    queue.shutdown()
    queue.shutdown_with_drain()
    queue.shutdown()

    assert queue.shutting_down()


def test_real_clock_delivers_an_item_no_sooner_than_its_delay(closing: Closing) -> None:
    queue = closing(DelayingQueue[str]())
    started = time.monotonic()

    queue.add_after("a", 0.05)

    assert queue.get() == "a"  # bounded by the module's 30 s timeout
    assert time.monotonic() - started >= 0.05
