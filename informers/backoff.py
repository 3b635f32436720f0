"""Exponential backoff with jitter that forgets after a quiet period (client-go ``wait.BackoffManager``)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Final

from clock import Clock

__all__ = ["BackoffSettings", "ExponentialBackoff"]


@dataclass(frozen=True, kw_only=True)
class BackoffSettings:
    """Defaults are the reflector's (client-go ``NewReflectorWithOptions``): against an unhealthy API server
    they cut a 1 QPS retry loop by ~98%, settling at one attempt every [30, 60) s."""

    initial: float = 0.8
    """Seconds before the first retry, before jitter."""

    cap: float = 30.0
    """Largest delay in seconds, before jitter."""

    factor: float = 2.0
    """Growth of the delay per consecutive backoff."""

    jitter: float = 1.0
    """A delay ``d`` becomes uniform in ``[d, d * (1 + jitter))``, so restarted clients spread out."""

    reset_after: float = 120.0
    """Seconds without any backoff after which the delay starts again from ``initial``."""

    def __post_init__(self) -> None:
        if self.initial <= 0 or self.cap < self.initial:
            raise ValueError("backoff needs 0 < initial <= cap")
        if self.factor < 1 or self.jitter < 0 or self.reset_after <= 0:
            raise ValueError("backoff needs factor >= 1, jitter >= 0 and reset_after > 0")


class ExponentialBackoff:
    """Hands out successive delays; owned by one thread (not thread-safe)."""

    def __init__(self, *, settings: BackoffSettings, clock: Clock, rng: random.Random) -> None:
        self._settings: Final = settings
        self._clock: Final = clock
        self._rng: Final = rng
        self._next_base = settings.initial  # the un-jittered delay the next call returns
        self._last_call: float | None = None  # clock time of the previous next_delay()

    def next_delay(self) -> float:
        """The delay to wait now; each call (within ``reset_after`` of the previous one) grows the next."""
        now = self._clock.now()
        if self._last_call is not None and now - self._last_call > self._settings.reset_after:
            self._next_base = self._settings.initial
        self._last_call = now
        base = self._next_base
        self._next_base = min(base * self._settings.factor, self._settings.cap)
        return base + self._rng.random() * self._settings.jitter * base
