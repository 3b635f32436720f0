"""The texts of ControlUnits' spec snapshots, by ControlUnit UID: what the ConfigMap cache no longer keeps.

The ConfigMap informer keeps a ControlUnit's metadata and the digest of its snapshot, not its data
(``taskset.observed.views.slim_config_map``), so that a stranger's labelled ConfigMap of 1 MB costs what an
empty one costs. The snapshot's verdict needs only the digest (``taskset.decide.snapshot``);
its text is needed to run the attempt, and comes from here:

- a ControlUnit this process created or read whole (a create's response, a live read after a name
  conflict) is remembered with its text: no request;
- else, when a pass asks for it (``Plan.snapshot_wanted``), the reconciler first builds the snapshot of
  the TaskSet's spec as cached, which is the attempt's whenever the spec was not edited since the
  attempt started (W-18): no request either (a restarted controller rebuilds every running TaskSet's
  so); else it reads the ControlUnit once (``Reconciler._fetch_snapshot``).

An entry holds its text with the text's digest, and is used only for a ControlUnit whose cached digest
is that one: a ControlUnit edited since, or another ControlUnit under the UID (there is none), never
gets an old text. Entries are bounded in number (least recently used go first: an evicted text is only
fetched again) and dropped when the cache reports the ControlUnit deleted.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Final

import cachetools

from taskset.observed.slim import snapshot_digest
from taskset.observed.views import ControlUnitView

# Texts kept at most: one per running attempt in the common case, as many as the parsed specs the
# reconciler keeps (PARSE_CACHE_SIZE). Each text is a TaskSet spec, which the TaskSet cache holds too.
SNAPSHOT_CACHE_SIZE: Final = 4096


class Snapshots:
    """Thread-safe: the workers share it, and the cache's delete handler drops entries."""

    def __init__(self, size: int = SNAPSHOT_CACHE_SIZE) -> None:
        self._lock = threading.Lock()
        self._texts: cachetools.LRUCache[str, tuple[str, str]] = cachetools.LRUCache(size)  # guarded

    def known(self, view: ControlUnitView) -> ControlUnitView:
        """``view`` with its snapshot's text, when it is remembered for the ControlUnit's UID and digest."""
        if view.snapshot_known:
            return view
        with self._lock:
            entry = self._texts.get(view.uid)
        if entry is None or entry[0] != view.spec_digest:
            return view
        return replace(view, spec_snapshot=entry[1], snapshot_known=True)

    def remember(self, uid: str, text: str) -> None:
        """The ControlUnit ``uid`` holds the snapshot ``text`` ("": none)."""
        entry = (snapshot_digest(text), text)
        with self._lock:
            self._texts[uid] = entry

    def forget(self, uid: str) -> None:
        """The ControlUnit ``uid`` is gone."""
        with self._lock:
            self._texts.pop(uid, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._texts)
