"""The base work queue: fair, stingy, many producers and consumers, shutdown notification.

State is three collections under one lock (client-go ``queue.go``):

* ``_queue``: the FIFO order in which items are handed out;
* ``_dirty``: items that need processing (waiting in ``_queue``, or re-added while being processed);
* ``_processing``: items handed out by ``get`` whose ``done`` has not been called yet.

An item re-added while it is processing is only marked dirty; ``done`` moves it back into ``_queue``.
That is the whole trick that keeps one key away from two workers at once.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

from clock import Clock, RealClock

from .metrics import MetricsProvider, NoopMetricsProvider, QueueMetrics

__all__ = ["Queue", "QueueSettings", "QueueShutDown"]

T = TypeVar("T", bound=Hashable)

# client-go defaultUnfinishedWorkUpdatePeriod: often enough for a scrape interval, cheap enough to ignore.
DEFAULT_UNFINISHED_WORK_UPDATE_PERIOD: Final = 0.5
# client-go delaying_queue.go maxWait: "insurance against weird things happening"; a missed wake-up can
# leave a ready item unqueued for at most this long, and waking every 10 s costs nothing.
DEFAULT_MAX_DELAY_WAIT: Final = 10.0


@dataclass(frozen=True, kw_only=True)
class QueueSettings:
    """Timing knobs of the queue stack; the defaults are client-go's and rarely need changing."""

    unfinished_work_update_period: float = DEFAULT_UNFINISHED_WORK_UPDATE_PERIOD
    """Seconds between refreshes of the unfinished-work and longest-running-processor gauges."""

    max_delay_wait: float = DEFAULT_MAX_DELAY_WAIT
    """Seconds the delaying queue's timer thread sleeps at most before re-checking its deadlines."""

    def __post_init__(self) -> None:
        if self.unfinished_work_update_period <= 0:
            raise ValueError("unfinished_work_update_period must be positive")
        if self.max_delay_wait <= 0:
            raise ValueError("max_delay_wait must be positive")


class QueueShutDown(Exception):  # noqa: N818 - a signal like queue.ShutDown (3.13), not an error
    """Raised by ``get`` once the queue is shutting down and no item is left: the worker should exit."""


class Queue(Generic[T]):
    """A work queue of hashable keys, with client-go's guarantees (see the package docstring).

    The worker contract: every item returned by ``get`` must be passed to ``done`` exactly once,
    typically in a ``finally`` block; otherwise the item is never handed out again and
    ``shutdown_with_drain`` blocks forever.
    """

    def __init__(
        self,
        *,
        name: str = "",
        clock: Clock | None = None,
        metrics_provider: MetricsProvider | None = None,
        settings: QueueSettings | None = None,
    ) -> None:
        self.name: Final = name
        self._clock: Final[Clock] = clock or RealClock()
        self._settings: Final = settings or QueueSettings()
        # The one lock of the queue, and a condition per kind of waiter, so that a wake goes only where it
        # is needed: an item wakes one getter, an empty _processing the drainers, a shutdown all. (With one
        # condition every add and done woke all idle workers: 6% of the controller's samples in a burst.)
        self._lock: Final = threading.Lock()
        self._item_ready: Final = threading.Condition(self._lock)  # getters
        self._idle: Final = threading.Condition(self._lock)  # shutdown_with_drain
        self._stopping: Final = threading.Condition(self._lock)  # the metrics thread
        # Hand-out order. Invariant: every element is in _dirty, not in _processing, and appears once.
        # Guarded by _lock.
        self._queue: deque[T] = deque()
        # Items that need processing: everything in _queue, plus items re-added while processing.
        # Guarded by _lock.
        self._dirty: set[T] = set()
        # Items handed out by get() and not yet done(). Guarded by _lock.
        self._processing: set[T] = set()
        # Set once, by shutdown() or shutdown_with_drain(); add() is ignored from then on. Guarded by _lock.
        self._shutting_down = False
        # True while shutdown_with_drain() waits for _processing to empty; shutdown() clears it to cut
        # the wait short. Guarded by _lock.
        self._drain = False
        # Fed only with _lock held.
        self._metrics: Final = QueueMetrics[T](
            provider=metrics_provider or NoopMetricsProvider(), name=name, clock=self._clock
        )
        self._metrics_thread: threading.Thread | None = None
        if self._metrics.enabled:
            # Not started for unmetered queues, like client-go, so they cost no thread.
            self._metrics_thread = threading.Thread(
                target=self._update_unfinished_work_loop, name=f"workqueue-metrics-{name}", daemon=True
            )
            self._metrics_thread.start()

    def add(self, item: T) -> None:
        """Mark ``item`` as needing processing; ignored once shutting down, coalesced if already waiting."""
        with self._lock:
            if self._shutting_down or item in self._dirty:
                return
            self._metrics.add(item)
            self._dirty.add(item)
            if item in self._processing:
                # done() queues it again; queuing it now would let a second worker take it.
                return
            self._queue.append(item)
            self._item_ready.notify()

    def len(self) -> int:
        """Items waiting now. Informational only: it may change before the caller acts on it."""
        with self._lock:
            return len(self._queue)

    def get(self) -> T:
        """Block until an item is available and hand it out; the caller must call ``done`` with it.

        Items still queued at shutdown are handed out; ``QueueShutDown`` is raised only once the queue
        is shutting down and empty.
        """
        with self._lock:
            while not self._queue and not self._shutting_down:
                self._item_ready.wait()
            if not self._queue:
                raise QueueShutDown(self.name)
            item = self._queue.popleft()
            self._metrics.get(item)
            self._processing.add(item)
            self._dirty.discard(item)
            return item

    def done(self, item: T) -> None:
        """Finish processing ``item``; if it was re-added meanwhile, queue it again.

        Raises ``ValueError`` for an item that is not being processed: in client-go that mistake could
        queue a key twice, breaking the one-worker-per-key guarantee.
        """
        with self._lock:
            if item not in self._processing:
                raise ValueError(f"done({item!r}) called for an item that is not being processed")
            self._metrics.done(item)
            self._processing.remove(item)
            if item in self._dirty:
                self._queue.append(item)
                self._item_ready.notify()
            elif not self._processing:
                self._idle.notify_all()

    def shutdown(self) -> None:
        """Ignore further adds and let workers exit once the queued items are gone; does not wait.

        Also cuts short a ``shutdown_with_drain`` waiting in another thread.
        """
        with self._lock:
            self._begin_shutdown_locked(drain=False)
        self._stop_background()

    def shutdown_with_drain(self) -> None:
        """Like ``shutdown``, then block until every handed-out item is ``done``.

        Workers must keep calling ``done`` after the shutdown begins, or this never returns; a
        ``shutdown()`` from another thread ends the wait early.
        """
        with self._lock:
            self._begin_shutdown_locked(drain=True)
        self._stop_background()
        with self._lock:
            while self._processing and self._drain:
                self._idle.wait()

    def shutting_down(self) -> bool:
        with self._lock:
            return self._shutting_down

    def _begin_shutdown_locked(self, *, drain: bool) -> None:
        self._shutting_down = True
        self._drain = drain
        for condition in (self._item_ready, self._idle, self._stopping):
            condition.notify_all()

    def _stop_background(self) -> None:
        """Join the queue's own threads; each exits on its own once ``_shutting_down`` is set.

        Subclasses that own threads extend this. Called without the lock held.
        """
        self._join_background_thread(self._metrics_thread)

    @staticmethod
    def _join_background_thread(thread: threading.Thread | None) -> None:
        # A background thread never shuts its own queue down today; the guard keeps that from deadlocking.
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _update_unfinished_work_loop(self) -> None:
        period = self._settings.unfinished_work_update_period
        with self._lock:
            next_update = self._clock.now() + period
            while not self._shutting_down:
                now = self._clock.now()
                if now < next_update:
                    self._clock.wait(self._stopping, next_update - now)
                    continue
                self._metrics.update_unfinished_work()
                next_update += period
                if next_update <= now:
                    # Time jumped past several periods: one refresh covers them all, as a dropped tick would.
                    next_update = now + period
