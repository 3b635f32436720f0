"""The shared informer: one reflector feeding one cache, fanned out to any number of event handlers.

Ordering, in the modern client-go model (in-order informers, no DeltaFIFO compression): each watch event,
in arrival order, is applied to the store and then queued to every handler, both under the informer's one
lock. Hence:

* a handler is called only after the store holds the state it is told about;
* one handler sees one object's states in order (some states may be skipped, never reordered);
* a resync, which replays the store to handlers whose period is due, is taken under the same lock, so it
  can never overtake a newer event with an older state;
* an update whose resourceVersion equals the cached one is a no-op (a relist finds most objects unchanged)
  and reaches nobody; identical-RV updates are sent only by resyncs.
"""

from __future__ import annotations

import itertools
import random
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from clock import Clock, RealClock

from .keys import DeletedFinalStateUnknown, resource_version
from .listener import EventHandler, Listener, Notification, NotificationKind
from .listwatch import ListerWatcher, RawObject
from .logs import Logger, default_logger
from .metrics import InformerMetrics, NoopInformerMetrics
from .reflector import Reflector, ReflectorSettings
from .store import NAMESPACE_INDEX, Change, ChangeType, ForgetHook, IndexFunc, Store, namespace_index
from .transform import Transform, strip_managed_fields

__all__ = [
    "HandlerRegistration",
    "InformerSettings",
    "SharedInformer",
    "wait_for_cache_sync",
]

# client-go minimumResyncPeriod: more often than this is a busy loop, not a safety net.
MIN_RESYNC_PERIOD: Final = 1.0
# client-go syncedPollPeriod: how often wait_for_cache_sync re-checks.
SYNC_POLL_INTERVAL: Final = 0.1


@dataclass(frozen=True, kw_only=True)
class InformerSettings:
    reflector: ReflectorSettings = field(default_factory=ReflectorSettings)

    default_resync_period: float = 0.0
    """Seconds between resyncs for handlers registered without their own period; 0 turns resync off."""

    handler_buffer: int | None = None
    """Most notifications buffered per handler; ``None`` is unbounded (client-go). A bound makes a slow
    handler stall the whole informer when its buffer is full (see ``Listener``)."""

    handler_batch_interval: float = 0.0
    """Seconds each handler's thread rests after a batch, gathering the next (``Listener``); 0 delivers
    each notification at once, as client-go does."""

    stop_timeout: float = 5.0
    """Seconds ``stop`` waits for each handler's call in progress to return."""

    def __post_init__(self) -> None:
        if self.default_resync_period < 0:
            raise ValueError("default_resync_period must be >= 0")
        if self.handler_batch_interval < 0:
            raise ValueError("handler_batch_interval must be >= 0")


class HandlerRegistration:
    """Returned by ``add_event_handler``; pass it to ``remove_event_handler`` to unregister."""

    def __init__(self, listener: Listener) -> None:
        self._listener: Final = listener

    def has_synced(self) -> bool:
        """True once the informer has synced *and* this handler has returned from every notification of
        the initial state (for a handler added later: of the cache content at the time it was added)."""
        return self._listener.has_synced()


class SharedInformer:
    """Keeps a ``Store`` in sync with one collection and notifies handlers of every change.

    ``store`` is the cache to read from (``get_by_key``, ``by_index``, ...). Objects in it are shared:
    never modify them; copy first. Indexes: ``"namespace"`` always, plus ``indexers``.
    """

    def __init__(
        self,
        *,
        name: str,
        lister_watcher: ListerWatcher,
        indexers: Mapping[str, IndexFunc] | None = None,
        transform: Transform | None = strip_managed_fields,
        settings: InformerSettings | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        logger: Logger | None = None,
        metrics: InformerMetrics | None = None,
    ) -> None:
        self.name: Final = name
        self._settings: Final = settings or InformerSettings()
        self._clock: Final[Clock] = clock or RealClock()
        self._log: Final = (logger or default_logger()).bind(informer=name)
        self.store: Final = Store(
            indexers={NAMESPACE_INDEX: namespace_index, **(indexers or {})}, transform=transform
        )
        self._reflector: Final = Reflector(
            name=name,
            lister_watcher=lister_watcher,
            store=_StoreWriter(self),
            settings=self._settings.reflector,
            clock=self._clock,
            rng=rng,
            logger=logger,
            metrics=metrics or NoopInformerMetrics(),
        )
        # The informer's one lock: store writes + queueing to handlers happen atomically under it, and the
        # resync thread and sync waiters sleep on it.
        self._cond: Final = threading.Condition()
        self._listeners: list[Listener] = []  # guarded by _cond
        self._synced = False  # the first list is in the store and queued to handlers; guarded by _cond
        self._started = False  # guarded by _cond
        self._stopped = False  # guarded by _cond
        self._resync_thread: threading.Thread | None = None
        self._handler_ids: Final = itertools.count(1)

    @property
    def settings(self) -> InformerSettings:
        """What this informer was created with (its list paging, resync, handler bounds)."""
        return self._settings

    # ----- handlers --------------------------------------------------------------------------------------

    def add_event_handler(
        self,
        *,
        on_add: Callable[[RawObject], None] | None = None,
        on_update: Callable[[RawObject, RawObject], None] | None = None,
        on_delete: Callable[[RawObject | DeletedFinalStateUnknown], None] | None = None,
        resync_period: float | None = None,
    ) -> HandlerRegistration:
        """Register callbacks, each run on this handler's own thread (never on the watch thread).

        A handler added after the informer synced first gets ``on_add`` for everything in the cache.
        ``resync_period`` (seconds; ``None``: the informer default, 0: never) replays the cache to this
        handler as ``on_update(obj, obj)``; it is at least one second.
        """
        period = self._settings.default_resync_period if resync_period is None else resync_period
        if 0 < period < MIN_RESYNC_PERIOD:
            self._log.warning("resync period raised to the minimum", requested=period, used=MIN_RESYNC_PERIOD)
            period = MIN_RESYNC_PERIOD
        listener = Listener(
            name=f"{self.name}-{next(self._handler_ids)}",
            handler=EventHandler(on_add=on_add, on_update=on_update, on_delete=on_delete),
            resync_period=period if period > 0 else None,
            max_buffered=self._settings.handler_buffer,
            logger=self._log,
            batch_interval=self._settings.handler_batch_interval,
        )
        with self._cond:
            if self._stopped:
                raise RuntimeError(f"informer {self.name} is stopped; handler not added")
            if self._synced:
                for obj in self.store.list():
                    listener.push(Notification(NotificationKind.ADD, obj))
                listener.mark_synced()
            listener.next_resync = self._clock.now() + (listener.resync_period or 0.0)
            self._listeners.append(listener)
            if self._started:
                listener.start()
            self._cond.notify_all()  # the resync thread may have a new earliest deadline
        return HandlerRegistration(listener)

    def remove_event_handler(self, registration: HandlerRegistration) -> None:
        listener = registration._listener
        with self._cond:
            if listener not in self._listeners:
                return
            self._listeners.remove(listener)
        listener.stop()
        listener.join(self._settings.stop_timeout)

    def add_forget_hook(self, hook: ForgetHook) -> None:
        """See ``Store.add_forget_hook``: told of an object while readers of ``store`` still find it."""
        self.store.add_forget_hook(hook)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add indexes to the store, also after start; existing objects are indexed at once."""
        self.store.add_indexers(indexers)

    # ----- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the reflector, the resync timer and the handler threads; returns at once."""
        with self._cond:
            if self._stopped:
                raise RuntimeError(f"informer {self.name} is stopped and cannot start again")
            if self._started:
                return
            self._started = True
            for listener in self._listeners:
                listener.start()
            self._resync_thread = threading.Thread(
                target=self._resync_loop, name=f"resync-{self.name}", daemon=True
            )
            self._resync_thread.start()
        self._reflector.start()

    def run(self) -> None:
        """``start``, then block until ``stop`` is called (from another thread)."""
        self.start()
        with self._cond:
            while not self._stopped:
                self._clock.wait(self._cond, None)

    def stop(self) -> None:
        """Stop watching and delivering; calls in progress finish, queued notifications are dropped."""
        # Listeners first, without the lock: with bounded buffers the watch thread may hold the lock while
        # it waits for room in a stuck handler's buffer, and only stopping that listener releases it.
        for listener in list(self._listeners):  # a copy of the list; additions are caught below
            listener.stop()
        with self._cond:
            if self._stopped:
                return
            self._stopped = True
            listeners = list(self._listeners)
            self._cond.notify_all()
        for listener in listeners:
            listener.stop()
        self._reflector.stop()
        resync_thread = self._resync_thread
        if resync_thread is not None:
            resync_thread.join(self._settings.stop_timeout)
        for listener in listeners:
            listener.join(self._settings.stop_timeout)

    def has_synced(self) -> bool:
        """True once the first complete LIST has been written to the store."""
        with self._cond:
            return self._synced

    def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        """Block until ``has_synced`` (True), or the informer stops or ``timeout`` seconds pass (False)."""
        deadline = None if timeout is None else self._clock.now() + timeout
        with self._cond:
            while not self._synced and not self._stopped:
                remaining = None if deadline is None else deadline - self._clock.now()
                if remaining is not None and remaining <= 0:
                    return False
                self._clock.wait(self._cond, remaining)
            return self._synced

    def last_sync_resource_version(self) -> str:
        return self._reflector.last_sync_resource_version()

    # ----- applying changes (called by the reflector thread through _StoreWriter) ------------------------

    def _upsert(self, obj: RawObject) -> None:
        with self._cond:
            self._distribute_locked(self.store.add(obj))

    def _delete(self, obj: RawObject) -> None:
        with self._cond:
            change = self.store.delete(obj)
            if change is not None:
                self._distribute_locked(change)

    def _replace(self, items: list[RawObject], resource_version: str) -> None:
        with self._cond:
            for change in self.store.replace(items, resource_version):
                self._distribute_locked(change)
            if not self._synced:
                self._synced = True
                for listener in self._listeners:
                    listener.mark_synced()
                self._cond.notify_all()
                self._log.info("informer synced", objects=len(items), rv=resource_version)

    def _distribute_locked(self, change: Change) -> None:
        if change.type is ChangeType.ADDED:
            notification = Notification(NotificationKind.ADD, change.obj)
        elif change.type is ChangeType.UPDATED:
            assert change.old is not None and not isinstance(change.obj, DeletedFinalStateUnknown)
            rv = resource_version(change.obj)
            if rv and rv == resource_version(change.old):
                return
            notification = Notification(NotificationKind.UPDATE, change.obj, change.old)
        else:
            notification = Notification(NotificationKind.DELETE, change.obj)
        for listener in self._listeners:
            listener.push(notification)

    # ----- resync ----------------------------------------------------------------------------------------

    def _resync_loop(self) -> None:
        """Replay the cache to each handler whose resync period is due. Never calls the API server."""
        with self._cond:
            while not self._stopped:
                now = self._clock.now()
                timed = [lst for lst in self._listeners if lst.resync_period is not None]
                if not self._synced or not timed:
                    self._clock.wait(self._cond, None)
                    continue
                due = [lst for lst in timed if lst.next_resync <= now]
                if not due:
                    self._clock.wait(self._cond, min(lst.next_resync for lst in timed) - now)
                    continue
                objects = self.store.list()
                for listener in due:
                    assert listener.resync_period is not None
                    for obj in objects:
                        listener.push(Notification(NotificationKind.UPDATE, obj, obj))
                    listener.next_resync = now + listener.resync_period
                self._log.debug("resynced", handlers=len(due), objects=len(objects))


class _StoreWriter:
    """The reflector's view of the informer: its writes go through the informer's notify path."""

    def __init__(self, informer: SharedInformer) -> None:
        self._informer: Final = informer

    def add(self, obj: RawObject) -> None:
        self._informer._upsert(obj)

    def update(self, obj: RawObject) -> None:
        self._informer._upsert(obj)

    def delete(self, obj: RawObject) -> None:
        self._informer._delete(obj)

    def replace(self, items: list[RawObject], resource_version: str) -> None:
        self._informer._replace(items, resource_version)

    def list(self) -> list[RawObject]:
        return self._informer.store.list()


def wait_for_cache_sync(
    checks: Iterable[Callable[[], bool]], *, timeout: float | None = None, clock: Clock | None = None
) -> bool:
    """Poll ``has_synced``-style checks every 100 ms until all pass (True) or ``timeout`` runs out (False).

    Controllers call this with every informer and handler registration they use before starting workers.
    """
    clock = clock or RealClock()
    pending = list(checks)
    deadline = None if timeout is None else clock.now() + timeout
    cond = threading.Condition()
    with cond:
        while True:
            pending = [check for check in pending if not check()]
            if not pending:
                return True
            remaining = None if deadline is None else deadline - clock.now()
            if remaining is not None and remaining <= 0:
                return False
            clock.wait(cond, SYNC_POLL_INTERVAL if remaining is None else min(SYNC_POLL_INTERVAL, remaining))
