"""What a pass reads of each cached Pod (``PodView``), made once per version of the Pod.

A pass of a TaskSet views all its Pods, and an event of any one of them brings a pass: a role of 400
replicas made 400 views per event, a seventh of the controller's CPU on the bench's ``large``.
A Pod's content is fixed by its UID and resourceVersion, so a view made from one version serves every
later pass until the Pod changes. The views are bounded (least recently used go first): a view no pass
asks for again is a Pod that changed or went.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, Final

import cachetools

from taskset.observed.views import PodView, pod_view

VIEWS_KEPT: Final = 16384  # about 400 bytes each: a few MiB, more than the largest TaskSet's Pods


class PodViews:
    """``pod_view`` memoised by (UID, resourceVersion); shared by the workers, hence the lock."""

    def __init__(self, size: int = VIEWS_KEPT) -> None:
        self._lock = threading.Lock()
        self._views: cachetools.LRUCache[tuple[str, str], PodView] = cachetools.LRUCache(size)

    def of(self, pod: Mapping[str, Any]) -> PodView:
        meta = pod.get("metadata") or {}
        key = (str(meta.get("uid") or ""), str(meta.get("resourceVersion") or ""))
        if not key[0] or not key[1]:  # not a stored version of an object: nothing to key it by
            return pod_view(pod)
        with self._lock:
            view = self._views.get(key)
        if view is None:
            view = pod_view(pod)
            with self._lock:
                self._views[key] = view
        return view
