"""A thread-safe object cache keyed ``namespace/name``, with named secondary indexes (an "Indexer").

Objects are shared, never copied and never modified: a write replaces the stored reference, so an object a
reader holds keeps the state it had when read. Every query answers from one consistent moment.

Writes report what they changed (``Change``), so the informer can notify handlers without a second lookup
that might race with the next write.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from .keys import DeletedFinalStateUnknown, KeyFunc, ObjectKey, meta_namespace_key, object_meta
from .listwatch import RawObject
from .transform import Transform

__all__ = [
    "NAMESPACE_INDEX",
    "Change",
    "ChangeType",
    "ForgetHook",
    "IndexConflictError",
    "IndexFunc",
    "Store",
    "namespace_index",
]

IndexFunc = Callable[[RawObject], list[str]]
"""The values under which an object is indexed; an object may have none, one or several."""

ForgetHook = Callable[[RawObject], None]
"""Told of an object the store is about to drop (its final state, or its last cached one), while every
reader still finds it: what a reader must not miss once the object is gone is kept by the hook first."""

NAMESPACE_INDEX: Final = "namespace"


def namespace_index(obj: RawObject) -> list[str]:
    """Index by ``metadata.namespace`` (``""`` for cluster-scoped objects), as client-go's default index."""
    return [object_meta(obj).get("namespace", "")]


class ChangeType(StrEnum):
    ADDED = "Added"
    UPDATED = "Updated"
    DELETED = "Deleted"


@dataclass(frozen=True, slots=True)
class Change:
    """One change a write made to the store."""

    type: ChangeType
    key: ObjectKey
    obj: RawObject | DeletedFinalStateUnknown
    """The state after the change; for ``DELETED`` the object's final state, or a tombstone holding the
    last cached state when the delete was inferred by ``replace``."""

    old: RawObject | None = None
    """The state before the change, for ``UPDATED``."""


class IndexConflictError(ValueError):
    """``add_indexers`` was given a name that already indexes with a different function."""


class Store:
    """The cache of one informer (client-go ``threadSafeStore`` + ``Indexer``). All methods are thread-safe.

    ``transform`` (e.g. ``strip_managed_fields``) runs on every object a write brings in, before it is
    stored or reported; it runs outside the lock.
    """

    def __init__(
        self,
        *,
        key_func: KeyFunc = meta_namespace_key,
        indexers: Mapping[str, IndexFunc] | None = None,
        transform: Transform | None = None,
    ) -> None:
        self._key_func: Final = key_func
        self._transform: Final = transform
        self._lock: Final = threading.Lock()
        # key -> object. Invariant: obj is stored under key_func(obj); stored objects are never modified.
        self._items: dict[ObjectKey, RawObject] = {}  # guarded by _lock
        # index name -> function. Only grows. guarded by _lock
        self._indexers: dict[str, IndexFunc] = {}
        # index name -> indexed value -> keys. Invariant: key is in _indices[n][v] iff v is among
        # _indexers[n](_items[key]); no empty key sets are kept. guarded by _lock
        self._indices: dict[str, dict[str, set[ObjectKey]]] = {}
        # Called in order before an object leaves the store; only grows. Read by the one writer thread.
        self._forget_hooks: list[ForgetHook] = []
        if indexers:
            self.add_indexers(indexers)

    def add_forget_hook(self, hook: ForgetHook) -> None:
        """Call ``hook`` with each object before a delete or a replace drops it, on the writer's thread
        (unlike a handler's ``on_delete``, which runs later on its own thread, after readers already miss
        the object). A hook must be quick and must not raise."""
        with self._lock:
            self._forget_hooks.append(hook)

    # ----- writes ----------------------------------------------------------------------------------------

    def add(self, obj: RawObject) -> Change:
        """Insert or replace ``obj``. Same as ``update``: whether it is new is decided by the store."""
        obj = self._transformed(obj)
        key = self._key_func(obj)
        values = self._index_values(obj)
        with self._lock:
            old = self._items.get(key)
            self._items[key] = obj
            self._reindex_locked(key, old, values)
        if old is None:
            return Change(ChangeType.ADDED, key, obj)
        return Change(ChangeType.UPDATED, key, obj, old)

    def update(self, obj: RawObject) -> Change:
        """Insert or replace ``obj`` (the watch's ADDED/MODIFIED label is not trusted; see ``add``)."""
        return self.add(obj)

    def delete(self, obj: RawObject) -> Change | None:
        """Remove the object with ``obj``'s key; ``None`` when the store did not hold it.

        The change carries ``obj`` (transformed): a watch delete brings the object's final state, which is
        fresher than what the cache held.
        """
        obj = self._transformed(obj)
        key = self._key_func(obj)
        if self._forget_hooks and key in self._items:
            for hook in self._forget_hooks:
                hook(obj)
        with self._lock:
            old = self._items.pop(key, None)
            if old is None:
                return None
            self._reindex_locked(key, old, {})
        return Change(ChangeType.DELETED, key, obj)

    def replace(self, items: Iterable[RawObject], resource_version: str) -> list[Change]:
        """Make the store hold exactly ``items`` (a full LIST result), and report the difference.

        Listed objects come back as ``ADDED`` or ``UPDATED`` (even when unchanged: callers compare
        resource versions). Objects no longer listed come back as ``DELETED`` with a
        ``DeletedFinalStateUnknown`` tombstone: they were deleted while nobody watched. ``resource_version``
        is the list's; the store does not use it.
        """
        del resource_version  # kept for the client-go Store.Replace shape; the reflector tracks it
        fresh: dict[ObjectKey, RawObject] = {}
        for item in items:
            obj = self._transformed(item)
            fresh[self._key_func(obj)] = obj
        if self._forget_hooks:
            for key, last in list(self._items.items()):
                if key not in fresh:
                    for hook in self._forget_hooks:
                        hook(last)
        with self._lock:
            indices = {name: self._build_index(func, fresh) for name, func in self._indexers.items()}
            old_items = self._items
            self._items = fresh
            self._indices = indices
        changes: list[Change] = []
        for key, obj in fresh.items():
            old = old_items.get(key)
            if old is None:
                changes.append(Change(ChangeType.ADDED, key, obj))
            else:
                changes.append(Change(ChangeType.UPDATED, key, obj, old))
        for key, old in old_items.items():
            if key not in fresh:
                changes.append(Change(ChangeType.DELETED, key, DeletedFinalStateUnknown(key=key, obj=old)))
        return changes

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add named indexes, indexing what is already stored. Re-adding the same function is a no-op."""
        with self._lock:
            for name, func in indexers.items():
                existing = self._indexers.get(name)
                if existing is not None and existing is not func:
                    raise IndexConflictError(f"index {name!r} already exists with another function")
            for name, func in indexers.items():
                if name not in self._indexers:
                    self._indexers[name] = func
                    self._indices[name] = self._build_index(func, self._items)

    # ----- reads -----------------------------------------------------------------------------------------

    def get(self, obj: RawObject) -> RawObject | None:
        """The stored object with ``obj``'s key."""
        return self.get_by_key(self._key_func(obj))

    def get_by_key(self, key: str) -> RawObject | None:
        with self._lock:
            return self._items.get(ObjectKey(key))

    def list(self) -> list[RawObject]:
        with self._lock:
            return list(self._items.values())

    def list_keys(self) -> builtins.list[ObjectKey]:
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._items

    def by_index(self, index_name: str, value: str) -> builtins.list[RawObject]:
        """Objects indexed under ``value`` by index ``index_name``; ``KeyError`` for an unknown index."""
        with self._lock:
            keys = self._index_locked(index_name).get(value, ())
            return [self._items[k] for k in keys]

    def index_keys(self, index_name: str, value: str) -> builtins.list[ObjectKey]:
        with self._lock:
            return list(self._index_locked(index_name).get(value, ()))

    def index_len(self, index_name: str, value: str) -> int:
        """How many objects are indexed under ``value`` (``KeyError`` for an unknown index), without
        listing them."""
        with self._lock:
            return len(self._index_locked(index_name).get(value, ()))

    def index(self, index_name: str, obj: RawObject) -> builtins.list[RawObject]:
        """Objects sharing at least one value of index ``index_name`` with ``obj``."""
        with self._lock:
            index = self._index_locked(index_name)
            values = self._indexers[index_name](obj)
            keys: set[ObjectKey] = set()
            for value in values:
                keys.update(index.get(value, ()))
            return [self._items[k] for k in keys]

    def list_index_values(self, index_name: str) -> builtins.list[str]:
        with self._lock:
            return list(self._index_locked(index_name))

    # ----- internals -------------------------------------------------------------------------------------

    def _transformed(self, obj: RawObject) -> RawObject:
        return obj if self._transform is None else self._transform(obj)

    def _index_values(self, obj: RawObject) -> dict[str, set[str]]:
        """Index values of ``obj``, computed before taking the lock so a raising index function leaves the
        store untouched. Reads ``_indexers`` without the lock: the dict only grows, and an index added
        meanwhile is filled from ``_items`` by ``add_indexers`` (``_reindex_locked`` fixes up the rest)."""
        return {name: set(func(obj)) for name, func in list(self._indexers.items())}

    def _index_locked(self, index_name: str) -> dict[str, set[ObjectKey]]:
        try:
            return self._indices[index_name]
        except KeyError:
            raise KeyError(f"no index named {index_name!r}") from None

    def _reindex_locked(self, key: ObjectKey, old: RawObject | None, new_values: dict[str, set[str]]) -> None:
        """Move ``key`` from the index values of ``old`` to ``new_values`` (empty when deleting)."""
        for name, func in self._indexers.items():
            index = self._indices[name]
            before = set(func(old)) if old is not None else set()
            after = new_values.get(name)
            if after is None:  # index added between _index_values and now; the object is stored already
                after = set(func(self._items[key])) if key in self._items else set()
            if before == after:
                continue
            for value in before - after:
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]
            for value in after - before:
                index.setdefault(value, set()).add(key)

    @staticmethod
    def _build_index(func: IndexFunc, items: Mapping[ObjectKey, RawObject]) -> dict[str, set[ObjectKey]]:
        index: dict[str, set[ObjectKey]] = {}
        for key, obj in items.items():
            for value in func(obj):
                index.setdefault(value, set()).add(key)
        return index
