"""Rate limiters: how long to hold back an item being requeued (client-go ``default_rate_limiters.go``).

``when(item)`` both answers and records: each call counts one more requeue of ``item``. ``forget(item)``
clears that memory once the item succeeded (or was given up); a limiter that is never told to forget
tracks failures forever. All delays are float seconds. All limiters are thread-safe.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Generic, Protocol, TypeVar

from clock import Clock, RealClock

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "RateLimiterSettings",
    "default_controller_rate_limiter",
]

T = TypeVar("T", bound=Hashable)
T_contra = TypeVar("T_contra", bound=Hashable, contravariant=True)

# client-go DefaultControllerRateLimiter, per item: the first retry comes after 5 ms, so a conflict on a
# write is retried almost at once, and doubling reaches the cap after about 18 failures.
DEFAULT_BASE_DELAY: Final = 0.005
# The per-item cap, 1000 s (~17 min): a persistently failing key still gets retried a few times an hour.
DEFAULT_MAX_DELAY: Final = 1000.0
# client-go's overall token bucket: "only for retry speed and its only the overall factor (not per item)".
# 10 requeues per second across all keys once a burst of 100 is spent, so a mass failure (e.g. the API
# server going away) cannot turn into a hot loop.
DEFAULT_QPS: Final = 10.0
DEFAULT_BURST: Final = 100


class RateLimiter(Protocol[T_contra]):
    def when(self, item: T_contra) -> float:
        """Seconds ``item`` should wait before its next try; records one more requeue of it."""

    def forget(self, item: T_contra) -> None:
        """Stop tracking ``item`` (it succeeded, or retrying was given up)."""

    def num_requeues(self, item: T_contra) -> int:
        """Requeues recorded for ``item`` since it was last forgotten."""


class ItemExponentialFailureRateLimiter(Generic[T]):
    """Per item, ``base_delay * 2**failures`` capped at ``max_delay``; the first retry waits base_delay."""

    def __init__(
        self, *, base_delay: float = DEFAULT_BASE_DELAY, max_delay: float = DEFAULT_MAX_DELAY
    ) -> None:
        if base_delay < 0 or max_delay < 0:
            raise ValueError("delays must not be negative")
        self._base_delay: Final = base_delay
        self._max_delay: Final = max_delay
        self._lock = threading.Lock()
        # Requeues recorded per item since it was last forgotten. Guarded by _lock.
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        with self._lock:
            exponent = self._failures.get(item, 0)
            self._failures[item] = exponent + 1
        try:
            backoff = math.ldexp(self._base_delay, exponent)  # exact: scales the float by a power of two
        except OverflowError:
            # Thousands of failures in a row: the product no longer fits a float, and the cap applies anyway.
            return self._max_delay
        return min(backoff, self._max_delay)

    def forget(self, item: T) -> None:
        with self._lock:
            self._failures.pop(item, None)

    def num_requeues(self, item: T) -> int:
        with self._lock:
            return self._failures.get(item, 0)


class ItemFastSlowRateLimiter(Generic[T]):
    """Per item, ``fast_delay`` for the first ``max_fast_attempts`` requeues, then ``slow_delay``."""

    def __init__(self, *, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        self._fast_delay: Final = fast_delay
        self._slow_delay: Final = slow_delay
        self._max_fast_attempts: Final = max_fast_attempts
        self._lock = threading.Lock()
        # Requeues recorded per item since it was last forgotten. Guarded by _lock.
        self._failures: dict[T, int] = {}

    def when(self, item: T) -> float:
        with self._lock:
            failures = self._failures.get(item, 0) + 1
            self._failures[item] = failures
        return self._fast_delay if failures <= self._max_fast_attempts else self._slow_delay

    def forget(self, item: T) -> None:
        with self._lock:
            self._failures.pop(item, None)

    def num_requeues(self, item: T) -> int:
        with self._lock:
            return self._failures.get(item, 0)


class BucketRateLimiter:
    """One token bucket shared by all items; ``when`` reserves a token and returns the wait for it.

    Same arithmetic as ``golang.org/x/time/rate``'s ``Reserve().Delay()``: the bucket starts full with
    ``burst`` tokens and refills at ``qps`` per second of the clock; a reservation may drive the balance
    negative, and the wait is the time the refill needs to bring it back to zero. It never forgets and
    counts no requeues: it only bounds the overall retry rate.
    """

    def __init__(
        self, *, qps: float = DEFAULT_QPS, burst: int = DEFAULT_BURST, clock: Clock | None = None
    ) -> None:
        if not 0 < qps < math.inf:
            raise ValueError("qps must be positive and finite")
        if burst < 1:
            raise ValueError("burst must be at least 1, or no reservation could ever succeed")
        self._qps: Final = qps
        self._burst: Final = burst
        self._clock: Final[Clock] = clock or RealClock()
        self._lock = threading.Lock()
        # Token balance as of _last; below zero while reservations are outstanding. Guarded by _lock.
        self._tokens = float(burst)
        # Clock time _tokens was computed at. Guarded by _lock.
        self._last = self._clock.now()

    def when(self, item: object) -> float:
        with self._lock:
            now = self._clock.now()
            # A clock that went backwards refills nothing, as in x/time/rate.
            elapsed = max(0.0, now - self._last)
            tokens = min(float(self._burst), self._tokens + elapsed * self._qps) - 1.0
            self._tokens = tokens
            self._last = now
        return 0.0 if tokens >= 0 else -tokens / self._qps

    def forget(self, item: object) -> None:
        pass

    def num_requeues(self, item: object) -> int:
        return 0


class MaxOfRateLimiter(Generic[T]):
    """Asks every limiter (each records the call) and returns the longest delay.

    Combined with a token bucket, the burst can seem to be exceeded: items held back longer by a per-item
    limiter still consumed bucket tokens early (client-go's caveat).
    """

    def __init__(self, *limiters: RateLimiter[T]) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self._limiters: Final = limiters

    def when(self, item: T) -> float:
        return max(limiter.when(item) for limiter in self._limiters)

    def forget(self, item: T) -> None:
        for limiter in self._limiters:
            limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return max(limiter.num_requeues(item) for limiter in self._limiters)


@dataclass(frozen=True, kw_only=True)
class RateLimiterSettings:
    """Knobs of ``default_controller_rate_limiter``; defaults are client-go's DefaultControllerRateLimiter."""

    base_delay: float = DEFAULT_BASE_DELAY
    """Seconds before an item's first retry; doubles with each further failure."""

    max_delay: float = DEFAULT_MAX_DELAY
    """Seconds an item's backoff is capped at."""

    qps: float = DEFAULT_QPS
    """Requeues per second allowed across all items once the burst is spent."""

    burst: int = DEFAULT_BURST
    """Requeues allowed back to back before the qps limit applies."""


def default_controller_rate_limiter(
    *, settings: RateLimiterSettings | None = None, clock: Clock | None = None
) -> RateLimiter[Hashable]:
    """Max of a per-item exponential backoff and an overall token bucket (client-go's controller default).

    Note: controller-runtime v0.23+ drops the bucket when it uses its priority queue; we keep client-go's
    pair, whose bucket only matters during mass failures.
    """
    settings = settings or RateLimiterSettings()
    return MaxOfRateLimiter[Hashable](
        ItemExponentialFailureRateLimiter(base_delay=settings.base_delay, max_delay=settings.max_delay),
        BucketRateLimiter(qps=settings.qps, burst=settings.burst, clock=clock),
    )


if TYPE_CHECKING:
    # Static conformance checks, like client-go's `var _ RateLimiter = &BucketRateLimiter{}`.
    _EXPONENTIAL_CONFORMS: type[RateLimiter[str]] = ItemExponentialFailureRateLimiter[str]
    _FAST_SLOW_CONFORMS: type[RateLimiter[str]] = ItemFastSlowRateLimiter[str]
    _BUCKET_CONFORMS: type[RateLimiter[str]] = BucketRateLimiter
    _MAX_OF_CONFORMS: type[RateLimiter[str]] = MaxOfRateLimiter[str]
