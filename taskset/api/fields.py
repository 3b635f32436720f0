"""Reading fields of raw API objects that may be malformed: what a stranger wrote is read defensively,
never trusted to have the shape its type promises. Shared by the cache transforms (``taskset.observed.slim``)
and the views a pass reads (``taskset.observed.views``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def get_path(obj: Any, *path: str) -> Any:
    """The value at ``path`` in nested dicts, or None where a step is missing or not a dict."""
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def text(value: object) -> str:
    return value if isinstance(value, str) else ""


def items(value: object) -> list[Any]:
    """A list field as a list, whatever a malformed object holds there."""
    return value if isinstance(value, list) else []


def count(value: object) -> int | None:
    """A decimal annotation as an int; ``isdigit`` alone admits digits ``int`` rejects (e.g. "²")."""
    return int(value) if isinstance(value, str) and value.isascii() and value.isdigit() else None


def controller_ref(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The object's controlling owner reference, or an empty mapping."""
    for ref in items(get_path(obj, "metadata", "ownerReferences")):
        if isinstance(ref, dict) and ref.get("controller") is True and isinstance(ref.get("uid"), str):
            return ref
    return {}


def controller_uid(obj: Mapping[str, Any]) -> str | None:
    """UID of the object's controlling owner, if any."""
    uid = controller_ref(obj).get("uid")
    return str(uid) if uid else None


def main_container(pod: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """The first container declared in the spec is the workload (W-13), with its status if reported."""
    containers = items(get_path(pod, "spec", "containers"))
    name = text(containers[0].get("name")) if containers and isinstance(containers[0], dict) else ""
    for status in items(get_path(pod, "status", "containerStatuses")):
        if isinstance(status, dict) and (not name or status.get("name") == name):
            return name or text(status.get("name")), status
    return name, {}
