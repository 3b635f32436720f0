"""Nodes, as little of them as a lost node needs: whether the node answers and since when.

The controller watches Nodes only to tell a replica waiting on a lost node from one waiting on nothing.
A Node is large (images, addresses, capacity, every condition) and its status changes often on a busy
cluster; the cache keeps its name, its version, its ``Ready`` condition's status and transition time,
and the three taints of node health (``unreachable``, ``not-ready``, ``out-of-service``) with their
effect and time. ``health_key`` is what of it may wake a TaskSet: a heartbeat changes none of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from taskset.api.readers import as_items, as_text, get_path

UNREACHABLE_TAINT: Final = "node.kubernetes.io/unreachable"
NOT_READY_TAINT: Final = "node.kubernetes.io/not-ready"
OUT_OF_SERVICE_TAINT: Final = "node.kubernetes.io/out-of-service"
HEALTH_TAINTS: Final = frozenset({UNREACHABLE_TAINT, NOT_READY_TAINT, OUT_OF_SERVICE_TAINT})
# Keys a cached Node keeps; ``slim_node`` builds new containers for the rest.
_META_KEPT: Final = ("name", "uid", "resourceVersion")


def slim_node(node: dict[str, Any]) -> dict[str, Any]:
    """The node informer's transform: idempotent, and it never changes ``node``."""
    raw_meta = node.get("metadata")
    meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
    slim: dict[str, Any] = {"metadata": {key: meta[key] for key in _META_KEPT if key in meta}}
    taints = [
        {key: taint[key] for key in ("key", "effect", "timeAdded") if key in taint}
        for taint in as_items(get_path(node, "spec", "taints"))
        if isinstance(taint, dict) and taint.get("key") in HEALTH_TAINTS
    ]
    slim["spec"] = {"taints": taints}
    ready = [
        {key: condition[key] for key in ("type", "status", "lastTransitionTime") if key in condition}
        for condition in as_items(get_path(node, "status", "conditions"))
        if isinstance(condition, dict) and condition.get("type") == "Ready"
    ]
    slim["status"] = {"conditions": ready[:1]}
    return slim


def health_key(node: Mapping[str, Any]) -> tuple[object, ...]:
    """What of a cached Node a TaskSet cares about; a TaskSet is woken only when this changes."""
    view = node_view(node)
    return (view.ready, view.unreachable, view.out_of_service)


@dataclass(frozen=True)
class NodeView:
    name: str
    ready: str  # the Ready condition's status: "True", "False", "Unknown", or "" when it has none
    ready_since: str | None  # its lastTransitionTime
    unreachable: bool  # Ready Unknown, or the unreachable taint
    unreachable_since: str | None  # the earliest of the Unknown transition and the taint's timeAdded
    out_of_service: bool  # tainted node.kubernetes.io/out-of-service by an operator

    @property
    def lost(self) -> bool:
        return self.unreachable or self.out_of_service


def node_view(node: Mapping[str, Any]) -> NodeView:
    name = as_text(get_path(node, "metadata", "name"))
    ready_status, ready_since = "", None
    for condition in as_items(get_path(node, "status", "conditions")):
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            ready_status = as_text(condition.get("status"))
            since = condition.get("lastTransitionTime")
            ready_since = since if isinstance(since, str) else None
    taints = {
        taint.get("key"): taint
        for taint in as_items(get_path(node, "spec", "taints"))
        if isinstance(taint, dict) and isinstance(taint.get("key"), str)
    }
    unreachable_taint = taints.get(UNREACHABLE_TAINT)
    times = [ready_since] if ready_status == "Unknown" else []
    if unreachable_taint is not None and isinstance(unreachable_taint.get("timeAdded"), str):
        times.append(unreachable_taint["timeAdded"])
    return NodeView(
        name=name,
        ready=ready_status,
        ready_since=ready_since,
        unreachable=ready_status == "Unknown" or unreachable_taint is not None,
        unreachable_since=min((t for t in times if t), key=_instant, default=None),
        out_of_service=OUT_OF_SERVICE_TAINT in taints,
    )


def _instant(text: str) -> float:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return float("inf")
