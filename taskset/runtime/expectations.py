"""Expectations, as the Job controller's ``ControllerExpectations``: the creates and deletes a pass made that
the caches have not shown yet, so that the next pass of the same TaskSet waits for them instead of acting
on a cache that lags behind our own requests (and creating a Pod twice, or deleting a Pod again).

An expectation is satisfied when the cache shows it (a created object with its UID; a deleted one gone,
or at least being deleted), or when its add event came at all, or after ``EXPECTATIONS_TTL``: a cache
that never shows an object must not hold a TaskSet up for good; the machines' own timeouts take over.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import cachetools

from clock import Clock

EXPECTATIONS_TTL: Final = 15.0  # seconds to trust our own creates/deletes before the cache shows them
OBSERVED_CREATIONS: Final = 65536  # UIDs of Pods and ControlUnits whose add event came within the TTL


class Cache(Protocol):
    """The part of an informer's store expectations read (``informers.Store`` is one)."""

    def get_by_key(self, key: str) -> Mapping[str, Any] | None: ...


@dataclass
class _Expected:
    """Objects a pass created or deleted that the cache has not shown yet, by store key."""

    deadline: float  # clock time after which the whole set counts as satisfied
    creates: dict[str, str] = field(default_factory=dict)  # store key -> uid that must appear
    deletes: dict[str, str] = field(default_factory=dict)  # store key -> uid that must disappear


class Expectations:
    """What each TaskSet's last pass is still waiting to see in the caches, by TaskSet key.

    State, all guarded by ``lock``:
    - ``_expected``: TaskSet key -> its outstanding creates and deletes. A key is present only while
      something is outstanding and its deadline has not been checked past; every ``expect_*`` moves the
      deadline to ``EXPECTATIONS_TTL`` from now.
    - ``_observed``: UIDs whose add event the caches delivered, kept for the TTL. A create counts as seen
      once its add event came, whatever happens to the object next (a retry Pod the same pass's TaskSet
      end deleted is gone before the next pass could see it in the cache).

    ``lock`` is re-entrant and public because ``CreatedUnits`` shares it: its overlay must record an add
    event, and check one against a create's response, in the same step as this record (created_units.py).
    The caches are read under ``lock``; they take their own lock after it, never the other way round.
    """

    def __init__(
        self,
        caches: Sequence[Cache],
        clock: Clock,
        *,
        ttl: float = EXPECTATIONS_TTL,
        capacity: int = OBSERVED_CREATIONS,
    ) -> None:
        self.lock = threading.RLock()
        self._caches = tuple(caches)
        self._clock = clock
        self._ttl = ttl
        self._expected: dict[str, _Expected] = {}  # guarded by lock
        self._observed: cachetools.TTLCache[str, bool] = cachetools.TTLCache(
            capacity, ttl, timer=clock.now
        )  # guarded by lock

    def expect_create(self, key: str, store_key: str, uid: str) -> None:
        """TaskSet ``key``'s pass created the object ``store_key`` and the API server gave it ``uid``."""
        with self.lock:
            self._renewed(key).creates[store_key] = uid

    def expect_delete(self, key: str, store_key: str, uid: str) -> None:
        """TaskSet ``key``'s pass had the object ``store_key`` with ``uid`` deleted."""
        with self.lock:
            self._renewed(key).deletes[store_key] = uid

    def creation_observed(self, uid: str) -> None:
        """The caches' add event for ``uid`` came: client-go's ``CreationObserved``."""
        with self.lock:
            self._observed[uid] = True

    def observed(self, uid: str) -> bool:
        """Whether the add event for ``uid`` came within the TTL."""
        with self.lock:
            return uid in self._observed

    def seconds_to_wait(self, key: str) -> float | None:
        """Seconds to wait for the caches to show TaskSet ``key``'s last actions, or None when they do (or
        the TTL passed). Satisfied expectations are dropped here, so an answer of None forgets the key."""
        with self.lock:
            expected = self._expected.get(key)
            if expected is None:
                return None
            remaining = expected.deadline - self._clock.now()
            for store_key, uid in list(expected.creates.items()):
                if uid in self._observed or self._shown(store_key, uid):
                    del expected.creates[store_key]
            for store_key, uid in list(expected.deletes.items()):
                if not self._shown(store_key, uid, alive=True):
                    del expected.deletes[store_key]
            if remaining <= 0 or not (expected.creates or expected.deletes):
                del self._expected[key]
                return None
            return remaining

    def forget(self, key: str) -> None:
        """Drop TaskSet ``key``'s expectations: it is gone, or its next pass starts over from the live one."""
        with self.lock:
            self._expected.pop(key, None)

    def _renewed(self, key: str) -> _Expected:
        """``key``'s expectations with the deadline moved to a TTL from now; the caller holds ``lock``."""
        expected = self._expected.setdefault(key, _Expected(deadline=0.0))
        expected.deadline = self._clock.now() + self._ttl
        return expected

    def _shown(self, store_key: str, uid: str, *, alive: bool = False) -> bool:
        """Whether a cache shows the object with this UID (``alive``: and not yet being deleted, since a
        graceful deletion can take the whole grace period and must not hold the TaskSet up meanwhile)."""
        for cache in self._caches:
            obj = cache.get_by_key(store_key)
            if obj is not None and obj["metadata"].get("uid") == uid:
                return not (alive and obj["metadata"].get("deletionTimestamp"))
        return False
