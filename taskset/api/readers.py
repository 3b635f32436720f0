"""Reading stored JSON and raw API objects defensively: a field of the wrong type reads as absent, never
as an error.

What the controller reads back (its status, an object's fields) was written by this controller, by an
older one, or by hand by anyone with the right to write it; what a stranger wrote into a cached object is
never trusted to have the shape its type promises. A parse of either never raises. Each reader says what
it accepts; anything else is the default. Shared by the status codecs, the cache transforms
(``taskset.observed.slim``) and the views a pass reads (``taskset.observed.views``).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, TypeVar

E = TypeVar("E", bound=StrEnum)


def as_enum(kind: type[E], value: object, default: E) -> E:
    """``value`` as a member of ``kind`` when it names one, else ``default``."""
    if not isinstance(value, str):
        return default
    try:
        return kind(value)
    except ValueError:
        return default


def as_text(value: object, default: str = "") -> str:
    return value if isinstance(value, str) else default


def as_opt_text(value: object) -> str | None:
    """A non-empty string, or None."""
    return value if isinstance(value, str) and value else None


def as_int(value: object) -> int | None:
    """An integer (a JSON boolean is not one), or None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_count(value: object, default: int = 0) -> int:
    """A non-negative integer, else ``default``."""
    number = as_int(value)
    return number if number is not None and number >= 0 else default


def as_opt_count(value: object) -> int | None:
    """A non-negative integer, or None."""
    number = as_int(value)
    return number if number is not None and number >= 0 else None


def as_items(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def as_mapping(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def get_path(obj: Any, *path: str) -> Any:
    """The value at ``path`` in nested dicts, or None where a step is missing or not a dict."""
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def decimal_annotation(value: object) -> int | None:
    """A decimal annotation as an int; ``isdigit`` alone admits digits ``int`` rejects (e.g. "²")."""
    return int(value) if isinstance(value, str) and value.isascii() and value.isdigit() else None


def controller_ref(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The object's controlling owner reference, or an empty mapping."""
    for ref in as_items(get_path(obj, "metadata", "ownerReferences")):
        if isinstance(ref, dict) and ref.get("controller") is True and isinstance(ref.get("uid"), str):
            return ref
    return {}


def controller_uid(obj: Mapping[str, Any]) -> str | None:
    """UID of the object's controlling owner, if any."""
    uid = controller_ref(obj).get("uid")
    return str(uid) if uid else None


def main_container(pod: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """The first container declared in the spec is the workload (W-13), with its status if reported."""
    containers = as_items(get_path(pod, "spec", "containers"))
    name = as_text(containers[0].get("name")) if containers and isinstance(containers[0], dict) else ""
    for status in as_items(get_path(pod, "status", "containerStatuses")):
        if isinstance(status, dict) and (not name or status.get("name") == name):
            return name or as_text(status.get("name")), status
    return name, {}
