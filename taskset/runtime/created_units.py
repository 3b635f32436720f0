"""The ControlUnits this process created whose add event has not come yet: an overlay on the ControlUnit
cache, as client-go's ``MutationCache`` overlays a controller's own writes on its informer's cache.

A pass that creates a ControlUnit goes on to T5 on the create's word (decide, ``_go_on_with_created_unit``),
so until the cache shows the ControlUnit the next passes must see it here: a watch that lags past the
expectations' TTL (an API server restart) must not read as the ControlUnit deleted externally (T11). An
entry ends at the ControlUnit's add event, at our own delete of it, or at its deadline, the patience T4
gives a ControlUnit never seen (``cache_creation_timeout``); after that the cache's silence is its absence.
"""

from __future__ import annotations

from dataclasses import dataclass

from clock import Clock
from taskset.observed.views import ControlUnitView
from taskset.runtime.expectations import Expectations


@dataclass(frozen=True)
class _CreatedUnit:
    """A ControlUnit this process created, as the create's response showed it."""

    uid: str
    view: ControlUnitView
    deadline: float  # clock time after which the cache's silence counts as the object's absence


class CreatedUnits:
    """The overlay, by store key (``<namespace>/<name>``).

    ``_units`` is guarded by the lock of ``expectations``, not by one of its own, because its add events
    are the ones ``expectations`` records: ``remember`` must not keep a ControlUnit whose add event beat
    the create's response, and ``creation_observed`` records an add event and ends its entry in one step.
    With two locks an add event landing between ``remember``'s check and its insert would leave an entry
    that hides an external deletion from the next passes until its deadline.
    Invariant: no entry is for a UID whose add event came.
    """

    def __init__(self, expectations: Expectations, clock: Clock, *, timeout: float) -> None:
        self._expectations = expectations
        self._lock = expectations.lock
        self._clock = clock
        self._timeout = timeout
        self._units: dict[str, _CreatedUnit] = {}  # guarded by _lock

    def remember(self, store_key: str, uid: str, view: ControlUnitView) -> None:
        """Our create of ``store_key`` was accepted as ``uid`` and showed ``view``."""
        entry = _CreatedUnit(uid, view, self._clock.now() + self._timeout)
        with self._lock:
            if not self._expectations.observed(uid):  # its add event may have beaten the response
                self._units[store_key] = entry

    def get(self, store_key: str) -> ControlUnitView | None:
        """The ControlUnit created under ``store_key`` while the cache has yet to show it; None once its
        deadline has passed (and the entry is dropped) or when there is none."""
        with self._lock:
            created = self._units.get(store_key)
            if created is not None and created.deadline <= self._clock.now():
                del self._units[store_key]
                return None
        return created.view if created is not None else None

    def creation_observed(self, store_key: str, uid: str) -> None:
        """The caches' add event for the object ``store_key`` with ``uid`` (a Pod or a ControlUnit): noted
        in the expectations, and the end of this ControlUnit's entry, atomically (see the class)."""
        with self._lock:
            self._expectations.creation_observed(uid)
            created = self._units.get(store_key)
            if created is not None and created.uid == uid:
                del self._units[store_key]

    def forget(self, store_key: str) -> None:
        """Our own delete of ``store_key`` was accepted or found it gone: the cache's word is the one to
        wait for now."""
        with self._lock:
            self._units.pop(store_key, None)
