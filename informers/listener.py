"""Per-handler delivery: a buffer and a thread for each registered event handler (client-go
``processorListener``), so a slow or failing handler delays only itself.

A handler sees its notifications one at a time, in the order the informer produced them. A handler that
raises is logged and given the next notification; the failed one is not retried (level-triggered
controllers recover on the next event or resync).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Final

from .keys import DeletedFinalStateUnknown
from .listwatch import RawObject
from .logs import Logger

__all__ = ["EventHandler", "Listener", "Notification", "NotificationKind"]


@dataclass(frozen=True, kw_only=True)
class EventHandler:
    """What to call for each kind of change; a missing callback ignores that kind."""

    on_add: Callable[[RawObject], None] | None = None
    on_update: Callable[[RawObject, RawObject], None] | None = None
    """Called with (old, new). Periodic resyncs call it with the same object twice."""

    on_delete: Callable[[RawObject | DeletedFinalStateUnknown], None] | None = None
    """Called with the final state, or a ``DeletedFinalStateUnknown`` for deletes seen only by a relist."""


class NotificationKind(Enum):
    ADD = "add"
    UPDATE = "update"
    DELETE = "delete"


@dataclass(frozen=True, slots=True)
class Notification:
    kind: NotificationKind
    obj: RawObject | DeletedFinalStateUnknown
    old: RawObject | None = None


class Listener:
    """One handler's buffer and delivery thread.

    ``batch_interval`` (seconds, 0 by default as client-go) lets the delivery thread rest that long after
    each batch before it looks for the next, so the notifications that arrive meanwhile are delivered
    together. Waking a thread for each notification is cheap for a goroutine but not for a Python
    thread: each wake is a futex call and a hand-over of the GIL, by both threads. A handler that only
    queues keys (a controller's) loses nothing by hearing of a change a few milliseconds later, and the
    producer never wakes a resting thread: it notifies only one that waits for work.

    ``max_buffered=None`` (the default, as client-go) never blocks the producer: a stuck handler grows
    memory instead. With a bound, a full buffer makes ``push`` wait, which stalls the informer's watch and
    every other handler of that informer: choose a bound only to trade liveness for memory on purpose.
    (The delivery thread takes the whole buffer at once, so up to twice the bound may be held.)
    """

    def __init__(
        self,
        *,
        name: str,
        handler: EventHandler,
        resync_period: float | None,
        max_buffered: int | None,
        logger: Logger,
        batch_interval: float = 0.0,
    ) -> None:
        if max_buffered is not None and max_buffered < 1:
            raise ValueError("max_buffered must be None or positive")
        if batch_interval < 0:
            raise ValueError("batch_interval must be >= 0")
        self.name: Final = name
        self.resync_period: Final = resync_period
        self.next_resync = 0.0  # clock time of the next resync; owned by the informer (under its lock)
        self._handler: Final = handler
        self._max_buffered: Final = max_buffered
        self._batch_interval: Final = batch_interval
        self._log: Final = logger
        self._cond: Final = threading.Condition()
        # Notifications not yet handed to the handler, oldest first. guarded by _cond
        self._buffer: deque[Notification] = deque()
        self._pushed = 0  # notifications ever pushed; guarded by _cond
        self._delivered = 0  # notifications the handler has returned from (or raised on); guarded by _cond
        # _pushed right after the initial list was pushed; None until then. guarded by _cond
        self._synced_at: int | None = None
        self._stopped = False  # guarded by _cond
        # The delivery thread waits for work: not delivering, not resting. guarded by _cond
        self._idle = False
        self._thread = threading.Thread(target=self._run, name=f"handler-{name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop delivering, dropping buffered notifications, and release a producer waiting for room.
        Returns at once; a handler call in progress finishes (see ``join``)."""
        with self._cond:
            self._stopped = True
            self._buffer.clear()
            self._cond.notify_all()

    def join(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the delivery thread to end after ``stop``."""
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def push(self, notification: Notification) -> None:
        with self._cond:
            while (
                self._max_buffered is not None
                and len(self._buffer) >= self._max_buffered
                and not self._stopped
            ):
                self._cond.wait()
            if self._stopped:
                return
            self._buffer.append(notification)
            self._pushed += 1
            if self._idle:  # else it is delivering or resting, and looks at the buffer next anyway
                self._idle = False
                self._cond.notify_all()

    def mark_synced(self) -> None:
        """Everything pushed so far is the initial state; ``has_synced`` turns true once it is delivered."""
        with self._cond:
            self._synced_at = self._pushed

    def has_synced(self) -> bool:
        with self._cond:
            return self._synced_at is not None and self._delivered >= self._synced_at

    def pending(self) -> int:
        """Notifications waiting in the buffer (informational)."""
        with self._cond:
            return len(self._buffer)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._buffer and not self._stopped:
                    self._idle = True
                    self._cond.wait()
                self._idle = False
                if self._stopped:
                    return
                # Take everything queued: one wake-up per batch instead of per notification.
                batch = list(self._buffer)
                self._buffer.clear()
                self._cond.notify_all()  # a producer may wait for room
            for notification in batch:
                try:
                    self._deliver(notification)
                except Exception:
                    self._log.exception(
                        "event handler raised", handler=self.name, kind=notification.kind.value
                    )
                with self._cond:
                    self._delivered += 1
                    if self._stopped:
                        return
            if self._batch_interval:
                with self._cond:  # rests unwoken by pushes (``_idle`` is false); ``stop`` wakes it
                    if not self._stopped:
                        self._cond.wait(self._batch_interval)

    def _deliver(self, notification: Notification) -> None:
        handler = self._handler
        obj = notification.obj
        if notification.kind is NotificationKind.ADD:
            if handler.on_add is not None:
                assert not isinstance(obj, DeletedFinalStateUnknown)
                handler.on_add(obj)
        elif notification.kind is NotificationKind.UPDATE:
            if handler.on_update is not None:
                assert notification.old is not None and not isinstance(obj, DeletedFinalStateUnknown)
                handler.on_update(notification.old, obj)
        elif handler.on_delete is not None:
            handler.on_delete(obj)
