"""The cluster-scoped objects integrations read and never own (``Integration.reads``: Kueue's
ResourceFlavors), as a pass sees them: ``Observed.read``, a read-only mapping by (kind key,
name) over their caches. A lookup reads the cache when a hook asks, so a pass costs nothing for the
objects it does not need, and the caches' transforms (``slim_owned`` with the kind's ``kept``) bound
what each costs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from informers import Store


class ReadObjects(Mapping[tuple[str, str], Mapping[str, Any]]):
    """``Observed.read`` over the caches of the read kinds, by ``ObjectKind.key``."""

    def __init__(self, stores: Mapping[str, Store]) -> None:
        self._stores = dict(stores)

    def __getitem__(self, key: tuple[str, str]) -> Mapping[str, Any]:
        kind, name = key
        store = self._stores.get(kind)
        found = store.get_by_key(name) if store is not None else None  # cluster-scoped: keyed by name
        if found is None:
            raise KeyError(key)
        return found

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return ((kind, str(name)) for kind, store in self._stores.items() for name in store.list_keys())

    def __len__(self) -> int:
        return sum(len(store) for store in self._stores.values())
