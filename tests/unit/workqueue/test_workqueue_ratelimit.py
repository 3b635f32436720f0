"""Exact delays of every rate limiter, driven by scripts of calls on a fake clock."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

import pytest

from clock import FakeClock
from workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    RateLimiterSettings,
    default_controller_rate_limiter,
)

pytestmark = pytest.mark.unit


@dataclass(frozen=True)
class When:
    item: str
    delay: float


@dataclass(frozen=True)
class Forget:
    item: str


@dataclass(frozen=True)
class Requeues:
    item: str
    count: int


@dataclass(frozen=True)
class Step:
    seconds: float


Call = When | Forget | Requeues | Step
MakeLimiter = Callable[[FakeClock], RateLimiter[Hashable]]


def whens(item: str, *delays: float) -> list[Call]:
    return [When(item, delay) for delay in delays]


def burst(count: int, delay: float = 0.0) -> list[Call]:
    """``count`` first calls on distinct items, each expected to wait ``delay``."""
    return [When(f"burst-{n}", delay) for n in range(count)]


def run(limiter: RateLimiter[Hashable], clock: FakeClock, calls: list[Call]) -> None:
    for number, call in enumerate(calls):
        if isinstance(call, When):
            assert limiter.when(call.item) == call.delay, f"call {number}: when({call.item!r})"
        elif isinstance(call, Forget):
            limiter.forget(call.item)
        elif isinstance(call, Requeues):
            assert limiter.num_requeues(call.item) == call.count, f"call {number}: num_requeues"
        else:
            clock.step(call.seconds)


def exponential(base_delay: float = 0.005, max_delay: float = 1000.0) -> MakeLimiter:
    return lambda _: ItemExponentialFailureRateLimiter(base_delay=base_delay, max_delay=max_delay)


def bucket(qps: float = 10.0, burst: int = 100) -> MakeLimiter:
    return lambda clock: BucketRateLimiter(qps=qps, burst=burst, clock=clock)


def fast_slow(fast: float, slow: float, max_fast: int) -> MakeLimiter:
    return lambda _: ItemFastSlowRateLimiter(fast_delay=fast, slow_delay=slow, max_fast_attempts=max_fast)


def max_of(*makers: MakeLimiter) -> MakeLimiter:
    return lambda clock: MaxOfRateLimiter(*(make(clock) for make in makers))


@pytest.mark.parametrize(
    ("make", "calls"),
    [
        pytest.param(
            exponential(),
            [*whens("a", 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32), Requeues("a", 7)],
            id="exponential doubles from the 5 ms base",
        ),
        pytest.param(
            exponential(),
            [
                *whens("a", *(0.005 * 2**n for n in range(18))),
                When("a", 1000.0),
                When("a", 1000.0),
                Requeues("a", 20),
            ],
            id="exponential reaches the 1000 s cap on the 19th failure (after 655.36 s)",
        ),
        pytest.param(
            exponential(base_delay=1.0, max_delay=10.0),
            whens("a", 1.0, 2.0, 4.0, 8.0, 10.0, 10.0),
            id="exponential is capped at max_delay",
        ),
        pytest.param(
            exponential(),
            [When("a", 0.005), When("b", 0.005), When("a", 0.01), Requeues("a", 2), Requeues("b", 1)],
            id="exponential counts failures per item",
        ),
        pytest.param(
            exponential(),
            [*whens("a", 0.005, 0.01, 0.02), Forget("a"), Requeues("a", 0), When("a", 0.005)],
            id="exponential forget restarts the sequence",
        ),
        pytest.param(
            exponential(),
            [*whens("a", 0.005, 0.01), Forget("b"), Requeues("a", 2), When("a", 0.02)],
            id="exponential forget of another item leaves the item alone",
        ),
        pytest.param(
            exponential(),
            [
                *whens("a", *(0.005 * 2**n for n in range(18))),
                *whens("a", *[1000.0] * 1082),
                Requeues("a", 1100),
            ],
            id="exponential stays at the cap where base times 2**n overflows a float",
        ),
        pytest.param(
            bucket(),
            [*burst(100), When("x", 0.1), When("y", 0.2), When("x", 0.3), Requeues("x", 0)],
            id="bucket passes a burst of 100, then spaces requeues 0.1 s apart",
        ),
        pytest.param(
            bucket(),
            [*burst(100), When("x", 0.1), When("x", 0.2), Step(1.0), *burst(8), When("x", 0.1)],
            id="bucket refills 10 tokens a second, first repaying what was borrowed",
        ),
        pytest.param(
            bucket(qps=10.0, burst=2),
            [*burst(2), Step(100.0), *burst(2), When("x", 0.1)],
            id="bucket never holds more than the burst",
        ),
        pytest.param(
            bucket(qps=1.0, burst=1),
            [When("x", 0.0), Forget("x"), When("x", 1.0), Requeues("x", 0)],
            id="bucket forget is a no-op and it counts no requeues",
        ),
        pytest.param(
            fast_slow(fast=0.1, slow=5.0, max_fast=2),
            [*whens("a", 0.1, 0.1, 5.0, 5.0), When("b", 0.1), Requeues("a", 4), Forget("a"), When("a", 0.1)],
            id="fast-slow retries fast max_fast times per item, then slowly",
        ),
        pytest.param(
            max_of(exponential(), bucket(qps=1.0, burst=2)),
            [When("a", 0.005), When("b", 0.005), When("c", 1.0), When("a", 2.0), Requeues("a", 2)],
            id="max-of returns the longest delay, and every limiter records each call",
        ),
        pytest.param(
            max_of(exponential(base_delay=1.0, max_delay=100.0), fast_slow(fast=0.1, slow=5.0, max_fast=3)),
            [
                *whens("a", 1.0, 2.0, 4.0, 8.0),
                Requeues("a", 4),
                Forget("a"),
                Requeues("a", 0),
                When("a", 1.0),
            ],
            id="max-of reports the most requeues and forgets in every limiter",
        ),
        pytest.param(
            lambda clock: default_controller_rate_limiter(clock=clock),
            [
                *burst(99, 0.005),
                When("a", 0.005),
                When("a", 0.1),
                When("b", 0.2),
                When("a", 0.3),
                Requeues("a", 3),
            ],
            id="controller default is the max of exponential 5 ms and a 10 qps bucket of 100",
        ),
        pytest.param(
            lambda clock: default_controller_rate_limiter(
                settings=RateLimiterSettings(base_delay=1.0, max_delay=60.0, qps=100.0, burst=1000),
                clock=clock,
            ),
            [*whens("a", 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0)],
            id="controller default takes its knobs from the settings",
        ),
    ],
)
def test_rate_limiter_delays(make: MakeLimiter, calls: list[Call], fake_clock: FakeClock) -> None:
    run(make(fake_clock), fake_clock, calls)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        pytest.param(lambda: BucketRateLimiter(qps=0.0), "qps", id="a bucket with no refill"),
        pytest.param(lambda: BucketRateLimiter(qps=float("inf")), "qps", id="a bucket with infinite refill"),
        pytest.param(lambda: BucketRateLimiter(burst=0), "burst", id="a bucket that holds no token"),
        pytest.param(
            lambda: ItemExponentialFailureRateLimiter(base_delay=-1.0), "negative", id="a negative base delay"
        ),
        pytest.param(MaxOfRateLimiter, "at least one", id="a max-of over nothing"),
    ],
)
def test_limiters_reject_impossible_settings(make: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_settings_defaults_are_client_go_values() -> None:
    assert RateLimiterSettings() == RateLimiterSettings(
        base_delay=0.005, max_delay=1000.0, qps=10.0, burst=100
    )
