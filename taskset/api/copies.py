"""The copies a pass makes of the recorded status (``TaskSetStatus.copy``): records copied one level down,
their immutable leaves shared."""

from __future__ import annotations

from typing import TypeVar

_Node = TypeVar("_Node")


def shallow(node: _Node) -> _Node:
    """A new record with the same field values: a dataclass's ``__dict__`` copied and set as the new one's
    (frozen records too), no ``__init__``; half the time of filling it, for every replica of a pass."""
    fresh: _Node = object.__new__(type(node))
    object.__setattr__(fresh, "__dict__", node.__dict__.copy())
    return fresh


def with_records_copied(node: _Node, but: str = "") -> _Node:
    """``shallow(node)`` with each field that holds a record (a dataclass: ``lastScale``, ``membership``)
    or a list (of records or not) copied too, one level down: at the TaskSet's and the roles' level,
    where records are few and fields get added. ``but``: a field the caller copies itself."""
    fresh = shallow(node)
    for key, value in node.__dict__.items():
        if key == but:
            continue
        if hasattr(type(value), "__dataclass_fields__"):
            setattr(fresh, key, shallow(value))
        elif isinstance(value, list):
            setattr(
                fresh, key, [shallow(v) if hasattr(type(v), "__dataclass_fields__") else v for v in value]
            )
    return fresh
