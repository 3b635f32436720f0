"""The reflector: keep a store equal to one collection on the API server, by LIST then WATCH, forever.

It copies client-go's ``reflector.go`` rules, which encode years of production lessons:

* The first LIST asks for resource version ``"0"`` (any cached state: cheap for the API server's watch
  cache); the watch then continues from the RV the list returned, so nothing is missed.
* Every event moves ``last_sync_resource_version`` forward, BOOKMARKs included (they exist only for that).
* A watch that ends with 410 Expired/Gone is answered by a relist *at the last RV*
  (``resourceVersionMatch=NotOlderThan``: still served from the watch cache). Only when that LIST itself
  fails with 410 (or "too large resource version") does the next one fall back to ``""``, a consistent read
  from etcd that always makes progress.
* 429 and transport errors when opening a watch mean "the server is busy or away": back off, then re-watch
  from the same RV; a relist would only add load.
* A watch that closes normally (the server's ``timeoutSeconds``) is reopened at once; one that closes within
  a second with no event at all is treated as an error (something between us and the server is wrong).
* Between two LIST+WATCH rounds there is always a backoff (0.8 s doubling to 30 s, jittered, reset after two
  quiet minutes), but for a relist the lister-watcher asked for (``SelectionChangedError``: its selection
  changed, e.g. the held shard buckets): that one comes at once, or a replica that gains a bucket a few
  times in a row would wait half a minute to act for it.
* When the lister-watcher says how its selection moved (a ``SelectionChange``), the store follows it:
  what left the selection is forgotten locally, and only what entered it is listed, consistently (as it
  is now, not as it was at the store's RV, which may be minutes old), in pages; the watch then continues
  from the store's RV, and the lister-watcher passes on no event of the entered part that its list already
  holds. A sharded replica gaining one bucket of 32 so receives and decodes one bucket's objects, not all
  it holds in one response. A failure of that list, or resource versions that do not compare (a server
  older than Kubernetes 1.35), falls back to a full relist.

Anything unexpected escaping the loop (a bug, a store error) is logged with its traceback and the loop
starts over, with backoff, from a LIST: the reflector never dies silently.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Final, Protocol

from clock import Clock, RealClock

from .backoff import BackoffSettings, ExponentialBackoff
from .keys import object_meta, resource_version
from .listwatch import (
    RESOURCE_VERSION_MATCH_NOT_OLDER_THAN,
    ApiError,
    EventType,
    ListerWatcher,
    ListOptions,
    RawObject,
    RawStatus,
    SelectionChange,
    SelectionChangedError,
    TransportError,
    WatchStream,
    comparable_resource_version,
)
from .logs import Logger, default_logger
from .metrics import InformerMetrics, NoopInformerMetrics

__all__ = ["DEFAULT_PAGE_SIZE", "Reflector", "ReflectorSettings", "ReflectorStore", "VeryShortWatchError"]

# client-go pager.defaultPageSize: small enough to keep each response bounded, large enough to be few calls.
DEFAULT_PAGE_SIZE: Final = 500


class ReflectorStore(Protocol):
    """Where a reflector writes: ``Store`` itself, or an informer that also notifies handlers."""

    def add(self, obj: RawObject) -> object: ...

    def update(self, obj: RawObject) -> object: ...

    def delete(self, obj: RawObject) -> object: ...

    def replace(self, items: list[RawObject], resource_version: str) -> object: ...

    def list(self) -> list[RawObject]: ...


@dataclass(frozen=True, kw_only=True)
class ReflectorSettings:
    """Knobs of one reflector; defaults are client-go's."""

    min_watch_timeout: float = 300.0
    """Seconds; each watch asks the server to end it after a random time in ``[min, 2 * min)``, spreading
    reconnects of many clients over time (client-go ``defaultMinWatchTimeout``, 5 min)."""

    page_size: int | None = None
    """LIST page size. ``None`` follows client-go: pages of ``DEFAULT_PAGE_SIZE`` for RV ``""`` and ``"0"``,
    and no paging for a specific RV so the watch cache can serve it (paged lists at an RV go to etcd).
    ``0`` never pages; a positive value always pages."""

    backoff: BackoffSettings = field(default_factory=BackoffSettings)
    """Delays between LIST+WATCH rounds, and before re-watching after 429 or a transport error."""

    very_short_watch: float = 1.0
    """Seconds; a watch closed sooner than this without a single event counts as an error (client-go)."""

    max_internal_error_retry: float = 0.0
    """Seconds during which a watch ending in 500 InternalError is reopened at once instead of relisting;
    0 (client-go's default) relists after backoff."""

    join_timeout: float = 10.0
    """Seconds ``stop`` waits for the reflector thread to finish."""

    def __post_init__(self) -> None:
        if self.min_watch_timeout < 1:
            raise ValueError("min_watch_timeout must be at least 1 second")
        if self.page_size is not None and self.page_size < 0:
            raise ValueError("page_size must be None, 0 or positive")


class VeryShortWatchError(Exception):
    """The watch closed almost immediately without delivering anything."""


class _StoppedError(Exception):
    """Internal: stop() was called; unwinds the reflector thread."""


class Reflector:
    """Runs LIST+WATCH for one ``ListerWatcher`` into one ``ReflectorStore``, on its own thread."""

    def __init__(
        self,
        *,
        name: str,
        lister_watcher: ListerWatcher,
        store: ReflectorStore,
        settings: ReflectorSettings | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        logger: Logger | None = None,
        metrics: InformerMetrics | None = None,
    ) -> None:
        self.name: Final = name
        self._lw: Final = lister_watcher
        self._store: Final = store
        self._settings: Final = settings or ReflectorSettings()
        self._clock: Final[Clock] = clock or RealClock()
        self._rng: Final = rng or random.Random()
        self._log: Final = (logger or default_logger()).bind(reflector=name)
        self._metrics: Final[InformerMetrics] = metrics or NoopInformerMetrics()
        self._backoff: Final = ExponentialBackoff(
            settings=self._settings.backoff, clock=self._clock, rng=self._rng
        )
        # One lock for the shared state below; waits (backoff) sleep on it so stop() wakes them.
        self._cond: Final = threading.Condition()
        self._stopped = False  # guarded by _cond; once true, never false again
        self._stream: WatchStream | None = None  # the open watch, closed by stop(); guarded by _cond
        self._last_sync_rv = ""  # RV of the last list or event applied to the store; guarded by _cond
        # The last LIST at _last_sync_rv failed as expired/too large: list with RV "" next. guarded by _cond
        self._last_sync_rv_unavailable = False
        self._thread: threading.Thread | None = None
        # Only touched by the reflector thread:
        self._paginated_result = False  # the initial RV "0" list came back in pages: keep paging

    # ----- lifecycle -------------------------------------------------------------------------------------

    def start(self) -> None:
        """Run the reflector on a daemon thread."""
        if self._thread is not None:
            raise RuntimeError(f"reflector {self.name} already started")
        self._thread = threading.Thread(target=self.run, name=f"reflector-{self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop listing and watching, unblocking a watch read in progress, and wait for the thread."""
        with self._cond:
            self._stopped = True
            stream = self._stream
            self._cond.notify_all()
        if stream is not None:
            stream.close()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(self._settings.join_timeout)
            if thread.is_alive():
                self._log.warning(
                    "reflector thread did not stop in time", seconds=self._settings.join_timeout
                )

    def run(self) -> None:
        """LIST+WATCH until ``stop`` (blocks). Every round that ends, however it ends, is then backed off."""
        self._log.debug("reflector started")
        try:
            change: SelectionChange | None = None
            while True:
                try:
                    followed, change = change, None
                    if followed is None or not self._follow(followed):
                        self._list()
                    self._watch_until_relist()
                except _StoppedError:
                    raise
                except SelectionChangedError as why:
                    self._log.info("following a change of the selection", reason=str(why))
                    self._metrics.watch_restarted(self.name, "relist_requested")
                    change = why.change
                    continue
                except (ApiError, TransportError) as err:
                    self._log.warning("list and watch failed", error=str(err), error_type=type(err).__name__)
                except Exception:
                    self._log.exception("reflector loop crashed; restarting from a list")
                    self._metrics.watch_restarted(self.name, "crash")
                delay = self._backoff.next_delay()
                self._log.debug("backing off before relisting", delay=delay)
                self._sleep(delay)
        except _StoppedError:
            self._log.debug("reflector stopped")

    def is_stopped(self) -> bool:
        with self._cond:
            return self._stopped

    def last_sync_resource_version(self) -> str:
        """The RV of the last list or event written to the store; ``""`` before the first list."""
        with self._cond:
            return self._last_sync_rv

    # ----- one round: list, then watch until a relist is needed ------------------------------------------

    def _list(self) -> None:
        started = self._clock.now()
        rv = self._relist_resource_version()
        try:
            items, list_rv, paginated = self._list_pages(rv)
        except ApiError as err:
            if not (err.is_expired or err.is_too_large_resource_version):
                raise
            self._log.info(
                "list at resource version unavailable; listing consistently", rv=rv, error=str(err)
            )
            with self._cond:
                self._last_sync_rv_unavailable = True
            rv = self._relist_resource_version()
            items, list_rv, paginated = self._list_pages(rv)
        if rv == "0" and paginated:
            # The watch cache ignores limit for RV "0"; pages mean it is off for this resource, so there is
            # no cache to protect and paging keeps responses small (client-go paginatedResult).
            self._paginated_result = True
        self._check_stopped()
        well_formed = list(self._well_formed(items))
        self._store.replace(well_formed, list_rv)
        with self._cond:
            self._last_sync_rv_unavailable = False
            self._last_sync_rv = list_rv
        self._metrics.listed(self.name, len(well_formed), self._clock.now() - started)
        self._metrics.resource_version(self.name, list_rv)
        self._log.debug("listed", items=len(well_formed), rv=list_rv, requested_rv=rv)

    def _follow(self, change: SelectionChange) -> bool:
        """Make the store hold the new selection: what stays at the store's own RV, what entered it as it
        is now (module docstring). False when that cannot be done; the caller then lists everything."""
        with self._cond:
            rv = "" if self._last_sync_rv_unavailable else self._last_sync_rv
        since = comparable_resource_version(rv)
        if since is None:  # nothing listed yet, or a server whose RVs do not compare
            return False
        started = self._clock.now()
        options = ListOptions(limit=DEFAULT_PAGE_SIZE)  # a consistent read: the added part as it is now
        added: list[RawObject] = []
        fresh = ""
        try:
            while change.gains:
                self._check_stopped()
                page = change.list_added(options)
                added.extend(page.items)
                fresh = fresh or page.resource_version  # every page of one list is at the first's RV
                if not page.continue_token:
                    break
                options = ListOptions(limit=DEFAULT_PAGE_SIZE, continue_token=page.continue_token)
        except (ApiError, TransportError) as err:
            self._log.info("cannot list what entered the selection; listing all", rv=rv, error=str(err))
            return False
        through = comparable_resource_version(fresh) if change.gains else since
        if through is None or through < since:  # the store's events up to ``rv`` would be missing from it
            self._log.info(
                "what entered the selection is older than the cache; listing all", rv=rv, fresh=fresh
            )
            return False
        self._check_stopped()
        kept = [obj for obj in self._store.list() if change.keeps(obj)]
        well_formed = list(self._well_formed(added))
        self._store.replace(kept + well_formed, rv)
        change.commit(fresh or rv)
        self._log.debug(
            "followed the selection",
            kept=len(kept),
            added=len(well_formed),
            rv=rv,
            fresh=fresh,
            seconds=round(self._clock.now() - started, 3),
        )
        return True

    def _list_pages(self, rv: str) -> tuple[list[RawObject], str, bool]:
        """All items at ``rv``, following continue tokens; returns (items, list RV, whether it was paged)."""
        options = ListOptions(
            resource_version=rv,
            resource_version_match=RESOURCE_VERSION_MATCH_NOT_OLDER_THAN if rv not in ("", "0") else None,
            limit=self._page_size(rv),
        )
        items: list[RawObject] = []
        page_options = options
        while True:
            self._check_stopped()
            try:
                page = self._lw.list(page_options)
            except ApiError as err:
                if page_options is options or not err.is_expired:
                    raise
                # The continue token outlived etcd's compaction: fall back to one unpaged list at the
                # original RV rather than failing the whole round (client-go pager FullListIfExpired).
                self._log.info("list continuation expired; listing without pages", rv=rv)
                page = self._lw.list(replace(options, limit=0))
                return page.items, page.resource_version, False
            items.extend(page.items)
            if not page.continue_token:
                return items, page.resource_version, page_options is not options
            # Continuations carry the snapshot in the token; the server rejects an RV alongside it.
            page_options = ListOptions(limit=options.limit, continue_token=page.continue_token)

    def _page_size(self, rv: str) -> int:
        if self._settings.page_size is not None:
            return self._settings.page_size
        if self._paginated_result or rv in ("", "0"):
            return DEFAULT_PAGE_SIZE
        return 0

    def _relist_resource_version(self) -> str:
        with self._cond:
            if self._last_sync_rv_unavailable:
                return ""
            return self._last_sync_rv or "0"

    def _watch_until_relist(self) -> None:
        """Watch from the last RV, reopening the watch as long as no relist is needed."""
        internal_errors_since: float | None = None
        while True:
            self._check_stopped()
            # Timed from before the request: some proxies hold the headers back until the first event.
            started = self._clock.now()
            rv = self.last_sync_resource_version()
            timeout_seconds = int(self._settings.min_watch_timeout * (1.0 + self._rng.random()))
            try:
                stream = self._lw.watch(
                    resource_version=rv, timeout_seconds=timeout_seconds, allow_bookmarks=True
                )
            except (ApiError, TransportError) as err:
                if isinstance(err, TransportError) or err.is_too_many_requests:
                    # The server is away or busy; our RV is still good, so come back to it (no relist).
                    self._back_off_before_rewatch(err)
                    continue
                self._log_watch_end(err)
                return
            ended_with = self._consume(stream, started, rv)
            if not (isinstance(ended_with, ApiError) and ended_with.is_internal_error):
                internal_errors_since = None
            if ended_with is None:
                self._metrics.watch_restarted(self.name, "closed")
                continue
            if isinstance(ended_with, ApiError):
                if ended_with.is_too_many_requests:
                    self._back_off_before_rewatch(ended_with)
                    continue
                if ended_with.is_internal_error and self._settings.max_internal_error_retry > 0:
                    now = self._clock.now()
                    if internal_errors_since is None:
                        internal_errors_since = now
                    if now - internal_errors_since <= self._settings.max_internal_error_retry:
                        self._log.info("watch internal error; rewatching", error=str(ended_with), rv=rv)
                        self._metrics.watch_restarted(self.name, "internal_error")
                        continue
            self._log_watch_end(ended_with)
            return

    def _consume(self, stream: WatchStream, started: float, started_rv: str) -> Exception | None:
        """Apply the stream's events to the store until it ends; returns why it ended (``None``: normally)."""
        with self._cond:
            if self._stopped:
                stream.close()
                raise _StoppedError
            self._stream = stream
        # Watches from "" or "0" open with synthetic ADDED events in no RV order: only trust the RV once
        # something else arrived (client-go handleAnyWatch).
        trust_rv = started_rv not in ("", "0")
        events = 0
        try:
            for event in stream:
                # Unlocked read of a flag that only turns true: at worst one more event is applied.
                if self._stopped:
                    raise _StoppedError
                event_type = event.get("type")
                obj = event.get("object")
                self._metrics.event_received(self.name, str(event_type))
                if event_type == EventType.ERROR:
                    status: RawStatus = obj if isinstance(obj, dict) else {}  # type: ignore[assignment]
                    return ApiError.from_status(status)
                if not isinstance(obj, dict):
                    self._log.error("watch event without an object", event_type=event_type)
                    continue
                if event_type == EventType.ADDED and self._has_name(obj):
                    self._store.add(obj)
                elif event_type == EventType.MODIFIED and self._has_name(obj):
                    self._store.update(obj)
                    trust_rv = True
                elif event_type == EventType.DELETED and self._has_name(obj):
                    self._store.delete(obj)
                    trust_rv = True
                elif event_type == EventType.BOOKMARK:
                    trust_rv = True
                else:
                    self._log.error("unusable watch event", event_type=event_type, rv=resource_version(obj))
                    continue
                events += 1
                rv = resource_version(obj)
                if trust_rv and rv:
                    with self._cond:
                        self._last_sync_rv = rv
                    self._metrics.resource_version(self.name, rv)
        except TransportError as err:
            # A dropped connection or read timeout: like the server closing the stream, re-watch from the last
            # RV (client-go's stream watcher just closes its channel here).
            self._check_stopped()
            self._log.info("watch stream broke", error=str(err), events=events)
        finally:
            with self._cond:
                self._stream = None
            stream.close()
        self._check_stopped()
        if events == 0 and self._clock.now() - started < self._settings.very_short_watch:
            return VeryShortWatchError("watch closed within a second without any event")
        return None

    def _back_off_before_rewatch(self, err: Exception) -> None:
        delay = self._backoff.next_delay()
        self._log.info(
            "backing off before rewatching", delay=delay, error=str(err), rv=self.last_sync_resource_version()
        )
        self._metrics.watch_restarted(self.name, "backoff")
        self._sleep(delay)

    def _log_watch_end(self, err: Exception) -> None:
        """Log why a relist comes next; an expired RV is routine, anything else deserves a warning."""
        rv = self.last_sync_resource_version()
        if isinstance(err, ApiError) and err.is_expired:
            self._log.info("watch expired; relisting", rv=rv, error=str(err))
            self._metrics.watch_restarted(self.name, "expired")
        else:
            self._log.warning("watch failed; relisting", rv=rv, error=str(err), error_type=type(err).__name__)
            self._metrics.watch_restarted(self.name, "error")

    # ----- helpers ---------------------------------------------------------------------------------------

    def _well_formed(self, items: Iterable[RawObject]) -> Iterable[RawObject]:
        for item in items:
            if isinstance(item, dict) and self._has_name(item):
                yield item
            else:
                self._log.error("list item without metadata.name skipped")

    @staticmethod
    def _has_name(obj: RawObject) -> bool:
        return bool(object_meta(obj).get("name"))

    def _check_stopped(self) -> None:
        with self._cond:
            if self._stopped:
                raise _StoppedError

    def _sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of clock time; raises ``_StoppedError`` as soon as ``stop`` is called."""
        deadline = self._clock.now() + seconds
        with self._cond:
            while not self._stopped:
                remaining = deadline - self._clock.now()
                if remaining <= 0:
                    return
                self._clock.wait(self._cond, remaining)
            raise _StoppedError
