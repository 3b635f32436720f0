"""What a pass reads of each cached Pod (``PodView``), made once per version of the Pod.

A pass of a TaskSet views all its Pods, and an event of any one of them brings a pass: a role of 400
replicas made 400 views per event, a seventh of the controller's CPU on the bench's ``large``.
A Pod's content is fixed by its UID and resourceVersion, so a view made from one version serves every
later pass until the Pod changes.

One view is kept per Pod, by UID, with the version it was made from: a newer version replaces it, and
the Pod cache's forget hook drops it when the Pod leaves the cache (``forget``), so the views are as many
as the cached Pods. A hit is one dict lookup and a comparison, without a lock (a least-recently-used
cache of versions, with its lock, cost a 2,000-replica pass 4 ms and held up to 16,384 views, most of
them of versions no pass would ask for again); only a miss takes the lock.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Final

from taskset.observed.views import PodView, pod_view

# A bound that views missed by ``forget`` (a pass viewing a Pod just as it leaves the cache) cannot
# outgrow: reaching it drops every view, and the next passes make them again. Far above the Pods one
# controller caches (the bench's largest is 10,000), so it never drops views still in use.
VIEWS_KEPT: Final = 1 << 18


class PodViews:
    """``pod_view`` memoised by UID and resourceVersion; shared by the workers and the Pod watch."""

    def __init__(self, size: int = VIEWS_KEPT) -> None:
        if size < 1:
            raise ValueError("size must be positive")
        self._size = size
        self._lock = threading.Lock()  # every write; a read needs none (one dict lookup)
        self._views: dict[str, tuple[str, PodView]] = {}  # UID -> (the version viewed last, its view)

    def of(self, pod: Mapping[str, Any]) -> PodView:
        meta = pod.get("metadata") or {}
        uid, version = meta.get("uid"), meta.get("resourceVersion")
        if not uid or not version:  # not a stored version of an object: nothing to key it by
            return pod_view(pod)
        uid, version = str(uid), str(version)
        known = self._views.get(uid)
        if known is not None and known[0] == version:
            return known[1]
        view = pod_view(pod)
        with self._lock:
            if len(self._views) >= self._size:
                self._views.clear()
            self._views[uid] = (version, view)
        return view

    def forget(self, pod: Mapping[str, Any]) -> None:
        """The Pod left the cache: its view is not asked for again."""
        meta = pod.get("metadata")
        uid = meta.get("uid") if isinstance(meta, Mapping) else None
        if uid:
            with self._lock:
                self._views.pop(str(uid), None)

    def __len__(self) -> int:
        return len(self._views)
