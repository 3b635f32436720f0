"""List and watch only the held shard buckets: the server's ``shardSelector`` where it applies one, the
same filter client-side always.

A ``ShardView`` is what one process holds now (a set of buckets, ``informers.shards``) and a generation
that moves on every change. ``sharded_factory`` wraps a ``ListerWatcherFactory`` so the targets it is
told to shard list and watch with the selector of the held buckets:

* Every LIST and WATCH asks the server for ``shardSelector`` and then filters what comes back by the
  namespace's hash anyway. Servers without the gate ignore the parameter (everything arrives and the
  filter drops the rest: counted as ``dropped``); v1.36.3 filters custom resources without echoing
  ``shardInfo``, so the echo is reported (``server_filtered``) but never trusted for correctness.
* A change of the held buckets closes every open watch, which then ends with ``SelectionChangedError`` (as
  does a watch asked for after the change), carrying how the selection moved since the last complete
  list (a ``SelectionChange``). The reflector follows at once, without backing off: the objects of the
  lost buckets leave the cache as deletes without a request, and only the gained buckets are listed, as
  they are now and in pages, arriving as adds; then one watch with the new selector continues from the
  cache's resource version, and passes on no event of a gained bucket that its list already held (resource
  versions compare since Kubernetes 1.35). (Listing everything again at each change cost a replica
  holding 10,000 Pods one unpaged response of all of them, decoded whole, per change. Listing the gained
  buckets at the cache's own resource version instead showed them as they were when that replica last
  heard an event, which for a replica that held nothing is when it started: a TaskSet whose Pods were
  created since then looked as if its Pods had been deleted.)
* A generation counts as *listed* once every sharded collection has been listed with it and its watch
  reopened (so the store already holds the list): ``ShardView.listed_generation``. The caller acts for a
  gained bucket only from then on: the new holder relists before acting.
* Holding no bucket, a collection watches one hash value out of 2^64 rather than everything.

Nothing here knows about Leases or TaskSets; the caller decides what is held (``ShardView.hold``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Final

from .listwatch import (
    ApiError,
    EventType,
    ListerWatcher,
    ListerWatcherFactory,
    ListOptions,
    ListResult,
    RawObject,
    SelectionChange,
    SelectionChangedError,
    TransportError,
    WatchEvent,
    WatchStream,
    WatchTarget,
    comparable_resource_version,
)
from .shards import NAMESPACE_FIELD, Buckets, ShardFilter, selector_for

__all__ = ["ShardCounts", "ShardView", "ShardedListerWatcher", "sharded_factory"]

# The selector of a replica holding nothing: one hash value of 2^64, so practically nothing is sent
# (the server refuses an empty selector, and no selector at all would mean everything).
NOTHING_SELECTOR: Final = f"shardRange({NAMESPACE_FIELD}, '0x0000000000000000', '0x0000000000000001')"


@dataclass
class ShardCounts:
    """What one collection received: objects and events from the server, and those the filter dropped."""

    received: int = 0
    dropped: int = 0
    lists: int = 0
    server_filtered: bool = False
    follows: int = 0
    """Changes of the held buckets followed by listing only the gained ones."""
    replays_dropped: int = 0
    """Events of a gained bucket that its list already held, dropped from the watch resumed after it."""
    follows_refused: int = 0
    """Lists of gained buckets the server refused: each cost a full relist."""


class ShardView:
    """The buckets this process holds, shared by its sharded collections. Thread-safe."""

    def __init__(self, buckets: Buckets) -> None:
        self.buckets: Final = buckets
        self._lock = threading.Lock()
        self._held: frozenset[int] = frozenset()
        self._generation = 0
        self._filter = ShardFilter(buckets, ())
        self._streams: set[_FilteredStream] = set()
        self._listed: dict[int, int] = {}  # id of a sharded collection -> generation it last listed with
        self._counts: dict[str, ShardCounts] = {}

    def hold(self, held: frozenset[int]) -> int:
        """Hold exactly ``held`` from now on; returns the generation that holds it. Open watches close."""
        with self._lock:
            if held == self._held:
                return self._generation
            self._held = held
            self._generation += 1
            self._filter = ShardFilter(self.buckets, held)
            streams = list(self._streams)
            generation = self._generation
        for stream in streams:
            stream.supersede()
        return generation

    @property
    def held(self) -> frozenset[int]:
        with self._lock:
            return self._held

    @property
    def generation(self) -> int:
        with self._lock:
            return self._generation

    def current(self) -> tuple[int, ShardFilter, str]:
        """The generation, its filter and the selector to ask the server for."""
        with self._lock:
            selector = selector_for(self.buckets, self._held) or NOTHING_SELECTOR
            return self._generation, self._filter, selector

    def admits(self, namespace: str) -> bool:
        with self._lock:
            filter_ = self._filter
        return filter_.admits(namespace)

    def listed_generation(self) -> int:
        """The newest generation every sharded collection has listed with (0: not all have listed)."""
        with self._lock:
            return min(self._listed.values(), default=0)

    def counts(self) -> dict[str, ShardCounts]:
        with self._lock:
            return {name: replace(counts) for name, counts in self._counts.items()}

    # ----- for ShardedListerWatcher ---------------------------------------------------------------------
    def _register(self, key: int, name: str) -> ShardCounts:
        with self._lock:
            self._listed.setdefault(key, 0)
            return self._counts.setdefault(name, ShardCounts())

    def _mark_listed(self, key: int, generation: int) -> None:
        with self._lock:
            self._listed[key] = max(self._listed.get(key, 0), generation)

    def _open(self, stream: _FilteredStream, generation: int) -> bool:
        with self._lock:
            if generation != self._generation:
                return False
            self._streams.add(stream)
            return True

    def _closed(self, stream: _FilteredStream) -> None:
        with self._lock:
            self._streams.discard(stream)


def _namespace(obj: RawObject) -> str:
    meta = obj.get("metadata")
    return str(meta.get("namespace") or "") if isinstance(meta, dict) else ""


class ShardedListerWatcher:
    """One collection, listed and watched for the held buckets only (module docstring)."""

    def __init__(self, *, inner: ListerWatcherFactory, target: WatchTarget, view: ShardView) -> None:
        self._inner: Final = inner
        self._target: Final = target
        self._view: Final = view
        self._counts: Final = view._register(id(self), str(target))
        self._lock = threading.Lock()
        self._paging: tuple[int, ShardFilter, str] | None = None  # the generation a paged list started at
        self._listed: tuple[int, ShardFilter, str] | None = None  # that of the last complete list
        # Gained buckets whose list the cache holds as of a resource version newer than the one its watch
        # resumes from: bucket -> that version. Their events up to it are replays of what the list held.
        self._fresh: dict[int, int] = {}

    def list(self, options: ListOptions) -> ListResult:
        with self._lock:
            state = self._paging if options.continue_token and self._paging else self._view.current()
        _generation, filter_, selector = state
        result = self._list_filtered(options, filter_, selector)
        with self._lock:
            if result.continue_token:
                self._paging = state
            else:
                self._paging = None
                self._listed = state
                self._fresh = {}  # a full list and the watch after it start at the same version
        return result

    def _list_filtered(self, options: ListOptions, filter_: ShardFilter, selector: str) -> ListResult:
        """One page asked with ``selector`` and filtered by ``filter_`` anyway, counted."""
        result = self._inner(replace(self._target, shard_selector=selector)).list(options)
        kept = [item for item in result.items if filter_.admits(_namespace(item))]
        with self._lock:
            self._counts.received += len(result.items)
            self._counts.dropped += len(result.items) - len(kept)
            self._counts.lists += 1
            self._counts.server_filtered = result.shard_selector == selector
        return replace(result, items=kept)

    def watch(self, *, resource_version: str, timeout_seconds: int, allow_bookmarks: bool) -> WatchStream:
        with self._lock:
            listed = self._listed
        if listed is None or listed[0] != self._view.generation:
            raise SelectionChangedError("the held shard buckets changed", self._change())
        generation, filter_, selector = listed
        with self._lock:
            fresh = dict(self._fresh)
        stream = self._inner(replace(self._target, shard_selector=selector)).watch(
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            allow_bookmarks=allow_bookmarks,
        )
        filtered = _FilteredStream(
            stream,
            filter_,
            self._counts,
            self._lock,
            on_end=self._view._closed,
            change=self._change,
            replayed=_Replayed(self._view.buckets, fresh, self._caught_up) if fresh else None,
        )
        if not self._view._open(filtered, generation):
            filtered.close()
            raise SelectionChangedError("the held shard buckets changed", self._change())
        # The reflector replaced its store with the list before it watches: this generation is in the cache.
        self._view._mark_listed(id(self), generation)
        return filtered

    def _change(self) -> SelectionChange | None:
        """How the held buckets moved since the last complete list (``None``: nothing listed yet)."""
        with self._lock:
            listed = self._listed
        if listed is None:
            return None
        state = self._view.current()
        new_filter = state[1]
        gained = new_filter.held - listed[1].held
        gained_filter = ShardFilter(self._view.buckets, gained)
        gained_selector = selector_for(self._view.buckets, gained)

        def keeps(obj: RawObject) -> bool:  # the store holds only the listed buckets' objects
            return new_filter.admits(_namespace(obj))

        def list_added(options: ListOptions) -> ListResult:
            try:
                return self._list_filtered(options, gained_filter, gained_selector)
            except (ApiError, TransportError):
                with self._lock:
                    self._counts.follows_refused += 1
                raise

        def commit(fresh: str) -> None:
            through = comparable_resource_version(fresh)
            with self._lock:
                self._listed = state
                self._paging = None
                self._counts.follows += 1
                self._fresh = {bucket: rv for bucket, rv in self._fresh.items() if bucket in new_filter.held}
                if through is not None:  # the reflector follows only when it compares
                    self._fresh.update(dict.fromkeys(gained, through))

        return SelectionChange(keeps=keeps, list_added=list_added, commit=commit, gains=bool(gained))

    def _caught_up(self, rv: int) -> None:
        """The watch passed ``rv``: a bucket listed as of ``rv`` or before has nothing left to replay."""
        with self._lock:
            self._fresh = {bucket: through for bucket, through in self._fresh.items() if through > rv}


class _Replayed:
    """Which events of a watch resumed from an older version replay what a gained bucket's list already
    held: those of that bucket not newer than its list. Events come in version order, so once one is newer
    than every such list, none is left to drop."""

    def __init__(self, buckets: Buckets, fresh: dict[int, int], caught_up: Callable[[int], None]) -> None:
        self._buckets = buckets
        self._fresh = fresh
        self._newest = max(fresh.values())
        self._caught_up = caught_up
        self.done = False

    def drops(self, event: WatchEvent) -> bool:
        obj = event["object"]
        meta = obj.get("metadata")
        text = meta.get("resourceVersion") if isinstance(meta, dict) else None
        rv = comparable_resource_version(text) if isinstance(text, str) else None
        if rv is None:
            return False
        if rv > self._newest:
            self.done = True
            self._caught_up(rv)
            return False
        if event["type"] == EventType.BOOKMARK:
            return False
        through = self._fresh.get(self._buckets.of_namespace(_namespace(obj)))
        return through is not None and rv <= through


class _FilteredStream:
    """A watch stream passing on only the held buckets' events (bookmarks and errors always)."""

    def __init__(
        self,
        inner: WatchStream,
        filter_: ShardFilter,
        counts: ShardCounts,
        lock: threading.Lock,
        *,
        on_end: Callable[[_FilteredStream], None],
        change: Callable[[], SelectionChange | None],
        replayed: _Replayed | None = None,
    ) -> None:
        self._inner = inner
        self._replayed = replayed
        self._filter = filter_
        self._counts = counts
        self._lock = lock
        self._on_end = on_end
        self._change = change
        self._superseded = threading.Event()

    def __iter__(self) -> Iterator[WatchEvent]:
        replayed = self._replayed
        try:
            for event in self._inner:
                if self._superseded.is_set():
                    break
                if replayed is not None:
                    if replayed.done:
                        replayed = None
                    elif replayed.drops(event):
                        with self._lock:
                            self._counts.received += 1
                            self._counts.replays_dropped += 1
                        continue
                if event["type"] in (EventType.BOOKMARK, EventType.ERROR):
                    yield event
                    continue
                admitted = self._filter.admits(_namespace(event["object"]))
                with self._lock:
                    self._counts.received += 1
                    self._counts.dropped += 0 if admitted else 1
                if admitted:
                    yield event
        finally:
            self._on_end(self)
        if self._superseded.is_set():
            raise SelectionChangedError("the held shard buckets changed", self._change())

    def supersede(self) -> None:
        """The held buckets changed: end the stream, and ask the reader for a relist."""
        self._superseded.set()
        self.close()

    def close(self) -> None:
        self._inner.close()
        self._on_end(self)


def sharded_factory(
    inner: ListerWatcherFactory, view: ShardView, *, shard: Callable[[WatchTarget], bool]
) -> ListerWatcherFactory:
    """A factory whose targets ``shard`` accepts list and watch the held buckets only; the rest (e.g.
    cluster-scoped kinds, which have no namespace to hash) are built by ``inner`` unchanged."""

    def build(target: WatchTarget) -> ListerWatcher:
        if not shard(target):
            return inner(target)
        return ShardedListerWatcher(inner=inner, target=target, view=view)

    return build
