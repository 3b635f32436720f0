"""The nodes that stopped answering, as the node cache last showed them, for the passes to read.

The node informer's handlers keep here only the lost nodes (``NodeView.lost``): a healthy cluster holds
none, so a pass asks nothing of its Pods' nodes (``of_pods`` returns at once), and a node's heartbeats,
which change nothing the views keep, wake no TaskSet. ``observe`` answers whether a node's health
changed, which is when the TaskSets with Pods on it are woken (``taskset.runtime.controller``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any, Final

from taskset.observed.nodes import NodeView, node_view
from taskset.observed.views import PodView

NODE_INDEX: Final = "node"  # Pods by the node they are bound to


def pod_node_index(obj: Mapping[str, Any]) -> list[str]:
    """The node a Pod is bound to (``spec.nodeName``, which the Pod cache keeps), if any."""
    spec = obj.get("spec")
    name = spec.get("nodeName") if isinstance(spec, Mapping) else None
    return [name] if isinstance(name, str) and name else []


class LostNodes:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lost: dict[str, NodeView] = {}

    def observe(self, node: Mapping[str, Any]) -> bool:
        """Take a node's new version; whether its health changed (lost, back, or lost differently)."""
        view = node_view(node)
        with self._lock:
            before = self._lost.get(view.name)
            if view.lost:
                self._lost[view.name] = view
            else:
                self._lost.pop(view.name, None)
        return before != (view if view.lost else None)

    def forget(self, name: str) -> bool:
        """A node was deleted: a Pod bound to it is then removed by the Pod garbage collector."""
        with self._lock:
            return self._lost.pop(name, None) is not None

    def of_pods(self, pods: Iterable[PodView]) -> dict[str, NodeView]:
        """The lost nodes the given Pods are bound to, by name."""
        with self._lock:
            if not self._lost:
                return {}
            lost = dict(self._lost)
        return {pod.node_name: lost[pod.node_name] for pod in pods if pod.node_name in lost}
