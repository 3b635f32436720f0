"""The base work queue: fair, stingy, many producers and consumers, shutdown notification.

State is three collections under one lock (client-go ``queue.go``):

* the hand-out order: two FIFO lanes, ``_urgent`` before ``_normal``, and ``_entries``, which names the
  one live lane entry of every waiting item;
* ``_dirty``: items that need processing (waiting in a lane, or re-added while being processed);
* ``_processing``: items handed out by ``get`` whose ``done`` has not been called yet.

An item re-added while it is processing is only marked dirty; ``done`` moves it back into a lane.
That is the whole trick that keeps one key away from two workers at once.

The urgent lane is controller-runtime's priority queue in its smallest form: ``add(item, urgent=True)``
jumps the items that only need a status brought up to date, so a burst of new work is started before
the bookkeeping of work already running. An urgent add of an item already waiting in the normal lane
moves it: it gets a fresh urgent entry, and the old entry goes stale (``_entries`` no longer names it)
and is dropped when it reaches the head of its lane.
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
        # Hand-out order: the urgent lane first. A lane entry is live if _entries maps its item to its
        # number; every live entry's item is in _dirty and not in _processing. Guarded by _lock.
        self._urgent: deque[tuple[int, T]] = deque()
        self._normal: deque[tuple[int, T]] = deque()
        self._entries: dict[T, tuple[int, bool]] = {}  # waiting item -> (its live entry's number, urgent)
        self._entry_count = 0  # numbers the lane entries
        # Items re-added urgently while processing: done() puts them in the urgent lane. Guarded by _lock.
        self._urgent_on_done: set[T] = set()
        # Items that need processing: everything waiting in a lane, plus items re-added while processing.
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

    def add(self, item: T, *, urgent: bool = False) -> None:
        """Mark ``item`` as needing processing; ignored once shutting down, coalesced if already waiting.

        ``urgent`` items are handed out before the others, each lane in order of arrival; an urgent add
        of an item waiting in the normal lane moves it to the urgent one.
        """
        with self._lock:
            if self._shutting_down:
                return
            if item in self._dirty:
                if urgent:
                    self._hurry_locked(item)
                return
            self._metrics.add(item)
            self._dirty.add(item)
            if item in self._processing:
                # done() queues it again; queuing it now would let a second worker take it.
                if urgent:
                    self._urgent_on_done.add(item)
                return
            self._enqueue_locked(item, urgent=urgent)

    def _hurry_locked(self, item: T) -> None:
        """An urgent add of an item already dirty: waiting in the normal lane, or processing."""
        if item in self._processing:
            self._urgent_on_done.add(item)
        elif not self._entries[item][1]:  # dirty, not processing: it is waiting in one of the lanes
            self._enqueue_locked(item, urgent=True, new=False)

    def _enqueue_locked(self, item: T, *, urgent: bool, new: bool = True) -> None:
        """Give ``item`` a live entry at the tail of its lane; a ``new`` waiting item wakes one getter."""
        self._entry_count += 1
        self._entries[item] = (self._entry_count, urgent)
        (self._urgent if urgent else self._normal).append((self._entry_count, item))
        if new:
            self._item_ready.notify()

    def _pop_locked(self) -> T:
        """The head live entry, urgent lane first; stale entries on the way are dropped."""
        for lane in (self._urgent, self._normal):
            while lane:
                seq, item = lane.popleft()
                if self._entries.get(item, (0, False))[0] == seq:
                    del self._entries[item]
                    return item
        raise AssertionError("no live entry although _entries is not empty")

    def len(self) -> int:
        """Items waiting now. Informational only: it may change before the caller acts on it."""
        with self._lock:
            return len(self._entries)

    def get(self) -> T:
        """Block until an item is available and hand it out; the caller must call ``done`` with it.

        Items still queued at shutdown are handed out; ``QueueShutDown`` is raised only once the queue
        is shutting down and empty.
        """
        with self._lock:
            while not self._entries and not self._shutting_down:
                self._item_ready.wait()
            if not self._entries:
                raise QueueShutDown(self.name)
            item = self._pop_locked()
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
            urgent = item in self._urgent_on_done
            self._urgent_on_done.discard(item)
            if item in self._dirty:
                self._enqueue_locked(item, urgent=urgent)
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
