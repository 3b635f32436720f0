"""A delaying queue whose requeues are paced by a ``RateLimiter`` (client-go ``rate_limiting_queue.go``).

The worker loop it is made for::

    key = queue.get()            # QueueShutDown: exit
    try:
        sync(key)
    except Exception:
        queue.add_rate_limited(key)
    else:
        queue.forget(key)
    finally:
        queue.done(key)
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Final, TypeVar

from clock import Clock

from .delaying import DelayingQueue
from .metrics import MetricsProvider
from .queue import QueueSettings
from .ratelimit import RateLimiter, default_controller_rate_limiter

__all__ = ["RateLimitingQueue"]

T = TypeVar("T", bound=Hashable)


class RateLimitingQueue(DelayingQueue[T]):
    """A ``DelayingQueue`` plus ``add_rate_limited``, ``forget`` and ``num_requeues``.

    Without ``rate_limiter`` it uses ``default_controller_rate_limiter`` on the queue's clock.
    """

    def __init__(
        self,
        *,
        rate_limiter: RateLimiter[T] | None = None,
        name: str = "",
        clock: Clock | None = None,
        metrics_provider: MetricsProvider | None = None,
        settings: QueueSettings | None = None,
    ) -> None:
        super().__init__(name=name, clock=clock, metrics_provider=metrics_provider, settings=settings)
        self._rate_limiter: Final[RateLimiter[T]] = rate_limiter or default_controller_rate_limiter(
            clock=self._clock
        )

    def add_rate_limited(self, item: T) -> None:
        """Add ``item`` after the delay the rate limiter decides (which records one more requeue)."""
        self.add_after(item, self._rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Clear the limiter's memory of ``item``; ``done`` must still be called.

        Remember to call it when an item succeeds or is given up: otherwise its failures are tracked
        forever and its next failure backs off from where the old ones left.
        """
        self._rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self._rate_limiter.num_requeues(item)
