"""An in-memory API server for one collection, for tests (client-go ``FakeControllerSource``).

``FakeSource`` is a ``ListerWatcher`` with real resource-version semantics: every write gets the next RV,
watches replay history after their RV and then stream live, a watch from before ``compact()`` gets
410 Expired, and pages follow ``limit``/``continue``. On top, tests script failures (``fail_list``,
``fail_watch``), pause delivery to open watches (``paused``) to simulate a disconnection, and end or break
open watches. Every call is recorded with the clock time it was made at.

Objects are copied through JSON on the way in and out, as a real server would, so tests never share
dicts with the informer under test.
"""

from __future__ import annotations

import builtins
import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final, TypeVar

import orjson

from clock import Clock, RealClock

from .keys import ObjectKey, meta_namespace_key
from .listwatch import (
    RESOURCE_VERSION_MATCH_EXACT,
    ApiError,
    EventType,
    ListOptions,
    ListResult,
    RawObject,
    RawStatus,
    TransportError,
    WatchEvent,
)

__all__ = [
    "FakeSource",
    "FakeWatch",
    "LogRecord",
    "RecordingLogger",
    "WatchCall",
    "eventually",
    "expired_status",
    "status_of",
]

T = TypeVar("T")

# Real seconds a test waits for another thread to get somewhere before giving up.
EVENTUALLY_TIMEOUT: Final = 5.0
EVENTUALLY_POLL: Final = 0.005
# Marks a continue token of a list at an exact resource version, whose pages come from that snapshot.
EXACT_TOKEN_SUFFIX: Final = "@exact"


def eventually(predicate: Callable[[], T], *, timeout: float = EVENTUALLY_TIMEOUT) -> T:
    """Poll ``predicate`` in real time until it returns something truthy, and return that; raise
    ``AssertionError`` after ``timeout`` seconds. For waiting on other threads, never for fake time."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(EVENTUALLY_POLL)


@dataclass(frozen=True)
class LogRecord:
    level: str
    event: str
    fields: dict[str, Any]
    exc_info: bool = False


class RecordingLogger:
    """A ``Logger`` that keeps every record (bound fields included) for assertions. Thread-safe."""

    def __init__(
        self, *, _records: list[LogRecord] | None = None, _context: dict[str, Any] | None = None
    ) -> None:
        self.records: Final[list[LogRecord]] = _records if _records is not None else []
        self._context: Final = _context or {}

    def bind(self, **kw: Any) -> RecordingLogger:
        child = RecordingLogger(_records=self.records, _context={**self._context, **kw})
        return child

    def debug(self, event: str, **kw: Any) -> None:
        self._record("debug", event, kw)

    def info(self, event: str, **kw: Any) -> None:
        self._record("info", event, kw)

    def warning(self, event: str, **kw: Any) -> None:
        self._record("warning", event, kw)

    def error(self, event: str, **kw: Any) -> None:
        self._record("error", event, kw)

    def exception(self, event: str, **kw: Any) -> None:
        self._record("error", event, kw, exc_info=True)

    def named(self, event: str) -> list[LogRecord]:
        """Records with this event name, oldest first."""
        return [r for r in list(self.records) if r.event == event]

    def _record(self, level: str, event: str, kw: dict[str, Any], *, exc_info: bool = False) -> None:
        # list.append is atomic; the copy in named() tolerates concurrent appends.
        self.records.append(LogRecord(level, event, {**self._context, **kw}, exc_info))


def status_of(error: ApiError) -> RawStatus:
    """The ``Status`` object a server would send for ``error`` (e.g. in a watch ``ERROR`` event)."""
    return RawStatus(
        kind="Status",
        apiVersion="v1",
        status="Failure",
        code=error.code,
        reason=error.reason,
        message=error.message,
    )


def expired_status(message: str = "too old resource version") -> RawStatus:
    return status_of(ApiError(code=410, reason="Expired", message=message))


@dataclass(frozen=True, kw_only=True)
class WatchCall:
    resource_version: str
    timeout_seconds: int
    allow_bookmarks: bool
    at: float
    """Clock time of the call."""


class _End:
    """Queue sentinel: the stream ends (server closed it, or the client closed it)."""


_END: Final = _End()


class FakeWatch:
    """One open watch. The source feeds it; the consumer iterates it; ``close`` ends it from any thread."""

    def __init__(self, source: FakeSource) -> None:
        self._source: Final = source
        self._queue: queue.Queue[WatchEvent | TransportError | _End] = queue.Queue()
        self._closed = threading.Event()

    def __iter__(self) -> Iterator[WatchEvent]:
        try:
            while True:
                item = self._queue.get()
                if isinstance(item, _End) or self._closed.is_set():
                    return
                if isinstance(item, TransportError):
                    raise item
                yield item
        finally:
            self.close()

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            self._queue.put(_END)
            self._source._forget(self)

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def send(self, event: WatchEvent) -> None:
        self._queue.put(event)

    def end(self) -> None:
        """The server closes the stream normally (its ``timeoutSeconds`` passed)."""
        self._queue.put(_END)

    def fail(self, message: str = "connection reset by peer") -> None:
        """The connection breaks: the consumer's read raises ``TransportError``."""
        self._queue.put(TransportError(message))


class FakeSource:
    """A fake API server for one collection. Thread-safe."""

    def __init__(self, *, clock: Clock | None = None, start_rv: int = 100) -> None:
        self._clock: Final[Clock] = clock or RealClock()
        self._lock: Final = threading.Lock()
        self._rv = start_rv  # the latest RV handed out; guarded by _lock
        self._objects: dict[ObjectKey, bytes] = {}  # key -> encoded object; guarded by _lock
        self._history: list[tuple[int, bytes]] = []  # (rv, encoded event), ascending rv; guarded by _lock
        self._compacted_rv = 0  # watches from an RV below this get 410; guarded by _lock
        self._compacted_objects: dict[ObjectKey, bytes] = {}  # the objects at _compacted_rv; guarded by _lock
        self._watches: list[FakeWatch] = []  # open watches receiving live events; guarded by _lock
        self._paused = False  # writes are not sent to open watches; guarded by _lock
        self._list_failures: list[Exception] = []  # guarded by _lock
        self._watch_failures: list[Exception] = []  # guarded by _lock
        self.list_calls: list[ListOptions] = []  # guarded by _lock (read after the fact by tests)
        self.watch_calls: list[WatchCall] = []  # guarded by _lock
        self.honor_limit_at_rv0 = False
        """A real watch cache ignores ``limit`` for RV "0" lists; set True to page them anyway."""

    # ----- writes, as a client of the API server would make them -----------------------------------------

    def create(self, obj: RawObject) -> RawObject:
        return self._write(EventType.ADDED, obj)

    def update(self, obj: RawObject) -> RawObject:
        return self._write(EventType.MODIFIED, obj)

    def delete(self, obj: RawObject) -> RawObject:
        return self._write(EventType.DELETED, obj)

    def get(self, key: str) -> RawObject | None:
        with self._lock:
            data = self._objects.get(ObjectKey(key))
        return None if data is None else _decode(data)

    @property
    def resource_version(self) -> str:
        with self._lock:
            return str(self._rv)

    # ----- fault injection -------------------------------------------------------------------------------

    def fail_list(self, *errors: Exception) -> None:
        """The next LIST calls raise these, one each, in order."""
        with self._lock:
            self._list_failures.extend(errors)

    def fail_watch(self, *errors: Exception) -> None:
        """The next WATCH calls raise these, one each, in order."""
        with self._lock:
            self._watch_failures.extend(errors)

    def compact(self) -> None:
        """Forget history up to now: a watch from an older RV than the current one gets 410 Expired."""
        with self._lock:
            self._compacted_rv = self._rv
            self._compacted_objects = dict(self._objects)
            self._history.clear()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Within the block, writes happen but open watches hear nothing of them (a stalled connection)."""
        with self._lock:
            self._paused = True
        try:
            yield
        finally:
            with self._lock:
                self._paused = False

    def open_watches(self) -> list[FakeWatch]:
        with self._lock:
            return list(self._watches)

    def end_watches(self) -> None:
        """The server closes every open watch normally."""
        for watch in self.open_watches():
            watch.end()

    def break_watches(self, message: str = "connection reset by peer") -> None:
        """The connection of every open watch breaks (the reader gets ``TransportError``)."""
        for watch in self.open_watches():
            watch.fail(message)

    def expire_watches(self) -> None:
        """Every open watch receives ``ERROR 410 Expired`` and ends."""
        for watch in self.open_watches():
            watch.send(WatchEvent(type=EventType.ERROR, object=dict(expired_status())))
            watch.end()

    def send_error(self, error: ApiError) -> None:
        """Every open watch receives an ``ERROR`` event carrying ``error``'s Status, and ends."""
        for watch in self.open_watches():
            watch.send(WatchEvent(type=EventType.ERROR, object=dict(status_of(error))))
            watch.end()

    def bookmark(self) -> str:
        """Every open watch receives a BOOKMARK at a fresh RV (the RV moved on elsewhere); returns the RV."""
        with self._lock:
            self._rv += 1
            rv = str(self._rv)
            watches = [] if self._paused else list(self._watches)
        event = WatchEvent(
            type=EventType.BOOKMARK, object={"kind": "Pod", "metadata": {"resourceVersion": rv}}
        )
        for watch in watches:
            watch.send(event)
        return rv

    # ----- ListerWatcher ---------------------------------------------------------------------------------

    def list(self, options: ListOptions) -> ListResult:
        with self._lock:
            self.list_calls.append(options)
            if self._list_failures:
                raise self._list_failures.pop(0)
            exact = options.resource_version_match == RESOURCE_VERSION_MATCH_EXACT
            if options.continue_token:
                offset_text, _, rv_text = options.continue_token.partition(":")
                exact = rv_text.endswith(EXACT_TOKEN_SUFFIX)
                list_rv = rv_text.removesuffix(EXACT_TOKEN_SUFFIX)
                offset = int(offset_text)
                snapshot = sorted(self._objects_at_locked(int(list_rv)) if exact else self._objects.items())
            elif exact:
                offset, list_rv = 0, options.resource_version
                snapshot = sorted(self._objects_at_locked(int(list_rv)))
            else:
                offset, list_rv = 0, str(self._rv)
                snapshot = sorted(self._objects.items())
            limit = options.limit
            if options.resource_version == "0" and not options.continue_token and not self.honor_limit_at_rv0:
                limit = 0
        page = snapshot[offset : offset + limit] if limit else snapshot[offset:]
        next_offset = offset + len(page)
        suffix = EXACT_TOKEN_SUFFIX if exact else ""
        token = f"{next_offset}:{list_rv}{suffix}" if limit and next_offset < len(snapshot) else ""
        return ListResult(
            items=[_decode(data) for _, data in page], resource_version=list_rv, continue_token=token
        )

    def watch(self, *, resource_version: str, timeout_seconds: int, allow_bookmarks: bool) -> FakeWatch:
        with self._lock:
            self.watch_calls.append(
                WatchCall(
                    resource_version=resource_version,
                    timeout_seconds=timeout_seconds,
                    allow_bookmarks=allow_bookmarks,
                    at=self._clock.now(),
                )
            )
            if self._watch_failures:
                raise self._watch_failures.pop(0)
            watch = FakeWatch(self)
            if resource_version in ("", "0"):
                for data in self._objects.values():
                    watch.send(WatchEvent(type=EventType.ADDED, object=_decode(data)))
            elif int(resource_version) < self._compacted_rv:
                watch.send(WatchEvent(type=EventType.ERROR, object=dict(expired_status())))
                watch.end()
                return watch
            else:
                since = int(resource_version)
                for rv, data in self._history:
                    if rv > since:
                        watch.send(_decode_event(data))
            self._watches.append(watch)
        return watch

    # ----- internals -------------------------------------------------------------------------------------

    def _write(self, event_type: EventType, obj: RawObject) -> RawObject:
        key = meta_namespace_key(obj)
        with self._lock:
            exists = key in self._objects
            if event_type is EventType.ADDED and exists:
                raise ApiError(code=409, reason="AlreadyExists", message=f"{key} already exists")
            if event_type is not EventType.ADDED and not exists:
                raise ApiError(code=404, reason="NotFound", message=f"{key} not found")
            self._rv += 1
            stored = _decode(orjson.dumps(obj))
            stored.setdefault("metadata", {})["resourceVersion"] = str(self._rv)
            data = orjson.dumps(stored)
            if event_type is EventType.DELETED:
                del self._objects[key]
            else:
                self._objects[key] = data
            event = orjson.dumps({"type": event_type.value, "object": stored})
            self._history.append((self._rv, event))
            watches = [] if self._paused else list(self._watches)
        for watch in watches:
            watch.send(_decode_event(event))
        return stored

    def _objects_at_locked(self, rv: int) -> builtins.list[tuple[ObjectKey, bytes]]:
        """The collection as it was at ``rv`` (a LIST with ``resourceVersionMatch=Exact``), replayed from the
        last compaction; 410 Expired before it, as the server answers once etcd compacted the revision."""
        if rv < self._compacted_rv:
            raise ApiError(code=410, reason="Expired", message=f"resource version {rv} is compacted")
        if rv > self._rv:
            raise ApiError(code=504, reason="Timeout", message=f"Too large resource version: {rv}")
        objects = dict(self._compacted_objects)
        for event_rv, data in self._history:
            if event_rv > rv:
                break
            event = _decode_event(data)
            key = meta_namespace_key(event["object"])
            if event["type"] == EventType.DELETED:
                objects.pop(key, None)
            else:
                objects[key] = orjson.dumps(event["object"])
        return list(objects.items())

    def _forget(self, watch: FakeWatch) -> None:
        with self._lock:
            if watch in self._watches:
                self._watches.remove(watch)


def _decode(data: bytes) -> RawObject:
    obj: RawObject = orjson.loads(data)
    return obj


def _decode_event(data: bytes) -> WatchEvent:
    event: WatchEvent = orjson.loads(data)
    return event
