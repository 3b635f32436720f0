"""Injected time, so every wait, delay and backoff can be tested without sleeping.

Components that schedule or wait take a ``Clock``. ``RealClock`` is the process's monotonic clock;
``FakeClock`` only moves when a test calls ``step``/``set``, and wakes every thread blocked in
``wait`` on it so they re-check their deadlines against the new time.

Contract for waiters: ``wait(cond, timeout)`` must be called with ``cond`` held, may return early
(spuriously, or because time moved), and callers always re-check their predicate and ``now()`` in a loop.
"""

from __future__ import annotations

import threading
import time
import weakref
from datetime import UTC, datetime, timedelta
from typing import Protocol

__all__ = ["Clock", "FakeClock", "RealClock"]

# A fake-time waiter still wakes up this often in real time, so a test that forgets to step the
# clock fails on its own timeout instead of hanging forever inside a Condition.wait().
_FAKE_WAIT_SLICE = 0.05


class Clock(Protocol):
    def now(self) -> float:
        """Monotonic seconds; only differences are meaningful."""

    def wall(self) -> datetime:
        """Timezone-aware UTC wall time, for timestamps written to the API server."""

    def sleep(self, seconds: float) -> None: ...

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        """Block on ``cond`` (held by the caller) for at most ``timeout`` seconds of this clock's time."""


class RealClock:
    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        cond.wait(None if timeout is None else max(0.0, timeout))


class FakeClock:
    """A clock that moves only when told to; ``sleep`` blocks until someone steps past the deadline."""

    def __init__(self, start: float = 1000.0, wall_start: datetime | None = None) -> None:
        self._lock = threading.Condition()
        self._now = start  # guarded by _lock
        self._wall_start = wall_start or datetime(2026, 1, 1, tzinfo=UTC)
        self._start = start
        # Conditions that threads are waiting on, notified whenever time moves.
        self._waiting: weakref.WeakSet[threading.Condition] = weakref.WeakSet()  # guarded by _lock
        self._blocked = 0  # threads inside wait(); guarded by _lock

    def now(self) -> float:
        with self._lock:
            return self._now

    def wall(self) -> datetime:
        return self._wall_start + timedelta(seconds=self.now() - self._start)

    def step(self, seconds: float) -> None:
        with self._lock:
            self._now += seconds
            self._lock.notify_all()
        self._wake_waiters()

    def set(self, value: float) -> None:
        with self._lock:
            self._now = value
            self._lock.notify_all()
        self._wake_waiters()

    def sleep(self, seconds: float) -> None:
        with self._lock:
            deadline = self._now + seconds
            while self._now < deadline:
                self._lock.wait(_FAKE_WAIT_SLICE)

    def wait(self, cond: threading.Condition, timeout: float | None) -> None:
        with self._lock:
            self._waiting.add(cond)
            self._blocked += 1
        try:
            cond.wait(_FAKE_WAIT_SLICE)
        finally:
            with self._lock:
                self._blocked -= 1

    def blocked_waiters(self) -> int:
        """How many threads sit in ``wait`` now; lets a test step time only once a timer is armed."""
        with self._lock:
            return self._blocked

    def _wake_waiters(self) -> None:
        with self._lock:
            waiting = list(self._waiting)
        for cond in waiting:
            with cond:
                cond.notify_all()
