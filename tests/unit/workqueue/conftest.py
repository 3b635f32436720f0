"""Fixtures of the workqueue tests: a fake clock, a fresh registry, queue cleanup and bounded polling."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
from prometheus_client import CollectorRegistry

from clock import FakeClock
from workqueue import DelayingQueue, Queue

# Real seconds a polled condition may take to come true before the test fails. Background threads on a
# FakeClock re-check at least every 50 ms, so anything slower than this is a hang, not a slow machine.
POLL_TIMEOUT = 10.0

Q = TypeVar("Q", bound=Queue[Any])

# Marks the end of one fake-clock step in `advance`. It is due exactly when the step ends and was added
# after every other item, so once it comes out of the queue every item due by then is ahead of it, and
# no later item can have been added (the clock no longer moves).
SENTINEL = "<end of step>"


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def closing() -> Iterator[Callable[[Q], Q]]:
    """Registers a queue to be shut down at teardown, so no timer or metrics thread outlives its test."""
    queues: list[Queue[Any]] = []

    def register(queue: Q) -> Q:
        queues.append(queue)
        return queue

    yield register
    for queue in queues:
        queue.shutdown()


WaitUntil = Callable[[Callable[[], bool], str], None]  # the wait_until fixture's type, for the tests


@pytest.fixture
def wait_until() -> WaitUntil:
    """Polls ``predicate`` in real time until it holds; fails the test after ``POLL_TIMEOUT`` seconds."""

    def wait(predicate: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + POLL_TIMEOUT
        while not predicate():
            if time.monotonic() > deadline:
                pytest.fail(f"timed out waiting until {what}")
            time.sleep(0.001)

    return wait


@pytest.fixture
def advance(
    fake_clock: FakeClock, wait_until: Callable[[Callable[[], bool], str], None]
) -> Callable[[DelayingQueue[str], float], list[str]]:
    """Steps ``fake_clock`` and returns, in hand-out order, the items of ``queue`` that became ready.

    Each item is taken with ``get`` and released with ``done`` at once, as an instant worker would.
    """

    def step(queue: DelayingQueue[str], seconds: float) -> list[str]:
        queue.add_after(SENTINEL, seconds)
        fake_clock.step(seconds)
        ready: list[str] = []
        while True:
            wait_until(lambda: queue.len() > 0, "the timer thread queues the items of the step")
            item = queue.get()
            queue.done(item)
            if item == SENTINEL:
                return ready
            ready.append(item)

    return step
