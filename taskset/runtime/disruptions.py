"""The last view of Pods deleted while they carried ``DisruptionTarget=True``.

An eviction through the Eviction API, a preemption or a drain first writes the ``DisruptionTarget``
condition on the Pod, then deletes it, and a kubelet (or kwok) removes a terminating Pod within its grace
period. A pass that comes after (Pod events are batched, ``taskset.runtime.batching``) finds the Pod gone, and
what the status recorded of it says nothing of the disruption: the failure rules would count the end as
the workload's. So the Pod cache keeps the last state of such a Pod here, told by its forget hook before
the Pod leaves the cache (a delete handler runs later, on its own thread: a pass queued earlier could
find the Pod gone and its disruption not yet kept), and the next passes of its TaskSet see it
(``Observed.gone``) to match the failure rules on (``observe_end``).

Bounded (``KEPT``, oldest dropped first) and in memory only: a controller restarted between the deletion
and the pass that matches it no longer knows, and the end counts as it did before (docs/user-manual.md).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Final

from informers import DeletedFinalStateUnknown
from taskset.api.constants import POD_CONDITION_DISRUPTION_TARGET
from taskset.observed.views import PodView, pod_view

KEPT: Final = 4096  # Pods remembered at most, over every TaskSet
_DISRUPTED: Final = (POD_CONDITION_DISRUPTION_TARGET, "True")


class Disruptions:
    """Thread-safe: the Pod cache's writer thread writes, the workers read."""

    def __init__(self, kept: int = KEPT, view: Callable[[Mapping[str, Any]], PodView] = pod_view) -> None:
        """``view``: how a Pod is viewed; the reconciler's memo (``PodViews.of``), which has usually seen
        the deleted version already, so a deletion costs no second view of it."""
        self._kept = kept
        self._view = view
        self._lock = threading.Lock()
        # (namespace, TaskSet name) -> Pod name -> its last view; and the entries in age order.
        self._views: dict[tuple[str, str], dict[str, PodView]] = {}
        self._order: OrderedDict[tuple[str, str, str], None] = OrderedDict()

    def pod_deleted(self, obj: Mapping[str, Any] | DeletedFinalStateUnknown) -> None:
        """A Pod leaves the cache: keep its last state if it carried the condition."""
        raw = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        if not isinstance(raw, Mapping):
            return
        view = self._view(raw)
        namespace = (raw.get("metadata") or {}).get("namespace")
        if _DISRUPTED not in view.conditions or not view.taskset_name or not isinstance(namespace, str):
            return
        owner, entry = (namespace, view.taskset_name), (namespace, view.taskset_name, view.name)
        with self._lock:
            self._views.setdefault(owner, {})[view.name] = view
            self._order[entry] = None
            self._order.move_to_end(entry)
            while len(self._order) > self._kept:
                self._drop(self._order.popitem(last=False)[0])

    def _drop(self, entry: tuple[str, str, str]) -> None:
        namespace, taskset, name = entry
        views = self._views.get((namespace, taskset), {})
        views.pop(name, None)
        if not views:
            self._views.pop((namespace, taskset), None)

    def of(self, namespace: str, taskset: str) -> Mapping[str, PodView]:
        """The TaskSet's disrupted, deleted Pods by name (a copy: the pass reads it unlocked)."""
        with self._lock:
            return dict(self._views.get((namespace, taskset), {}))

    def __len__(self) -> int:
        with self._lock:
            return len(self._order)
