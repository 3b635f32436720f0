"""The rate-limiting queue: requeues wait as long as the limiter says, and forget resets the backoff."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import pytest

from clock import FakeClock
from workqueue import DelayingQueue, ItemExponentialFailureRateLimiter, Queue, RateLimitingQueue

pytestmark = [pytest.mark.unit, pytest.mark.timeout(30)]

Advance = Callable[[DelayingQueue[str], float], list[str]]
Q = TypeVar("Q", bound=Queue[Any])


class Closing(Protocol):
    """The ``closing`` fixture: registers a queue for shutdown at teardown and returns it."""

    def __call__(self, queue: Q, /) -> Q: ...


def test_requeues_wait_as_the_limiter_says_and_forget_resets_them(
    fake_clock: FakeClock, closing: Closing, advance: Advance
) -> None:
    limiter = ItemExponentialFailureRateLimiter[str](base_delay=1.0, max_delay=100.0)
    queue = closing(RateLimitingQueue[str](rate_limiter=limiter, clock=fake_clock))

    queue.add_rate_limited("a")
    assert queue.num_requeues("a") == 1
    assert advance(queue, 0.5) == []
    assert advance(queue, 0.5) == ["a"]

    queue.add_rate_limited("a")
    assert queue.num_requeues("a") == 2
    assert advance(queue, 1.5) == []
    assert advance(queue, 0.5) == ["a"]

    queue.forget("a")
    assert queue.num_requeues("a") == 0
    queue.add_rate_limited("a")
    assert advance(queue, 1.0) == ["a"]


def test_default_limiter_runs_on_the_queue_clock(
    fake_clock: FakeClock, closing: Closing, advance: Advance
) -> None:
    queue = closing(RateLimitingQueue[str](clock=fake_clock))
    items = [f"item-{n:03}" for n in range(101)]

    for item in items:
        queue.add_rate_limited(item)

    # The first 100 spend the bucket's burst and wait only their 5 ms backoff; the 101st waits for a
    # token, 0.1 s at 10 qps, which only the fake clock can grant.
    assert advance(queue, 0.005) == items[:100]
    assert advance(queue, 0.09) == []
    assert advance(queue, 0.01) == items[100:]
