"""Dicts that hold their keys once, and values held once: for the many records of one shape the
controller keeps at a time (``held_once``: one object for every equal part of a cached Pod or view).

A cached Pod holds five dicts of its own, each with the same keys as every other Pod's, and a written
status holds one dict of twenty keys a replica (``ReplicaStatus._wire``, which builds its record the
same way with its own attribute names). A dict built as an object's attributes (PEP 412's key-sharing
dicts) holds only its values and points at one table of keys, kept by the object's class: a third to a
half less than a dict with a table of its own, and still a plain ``dict`` to every reader, equal to the
dict it was built from and in its order (what ``json`` and ``orjson`` write, what ``==`` and ``get``
see). ``keys_shared`` costs about 0.15 us a key: 6 us of a cached Pod's 50.

The table takes every key of its kind in one fixed order when the kind is declared. CPython adds a key
to a table only when a dict sets it after every key the table already has; a dict that sets an unknown
key earlier gets a table of its own, and so does every later dict that does the same. Without the
whole table up front, the first object seen would decide: a stranger's Pod with three metadata keys,
and no Pod after it would share.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any, ClassVar, TypeVar

_Value = TypeVar("_Value")


class KeyTable:
    """The table of keys of one kind of dict: a subclass for each kind names all its ``KEYS`` (at most
    30, CPython's bound for a table; a dict with a key not among them holds a table of its own)."""

    KEYS: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        keys_shared(dict.fromkeys(cls.KEYS), cls)  # the table, in this order, before any dict of it


def keys_shared(items: dict[str, Any], table: type[KeyTable]) -> dict[str, Any]:
    """``items`` as a dict whose keys ``table`` holds: set one by one as a new object's attributes, whose
    ``__dict__`` then outlives it. Keys are the caller's own names, never one of ``object``'s attributes
    (``__class__``)."""
    held = object.__new__(table)
    for key, value in items.items():
        setattr(held, key, value)
    shared: dict[str, Any] = held.__dict__
    return shared


def held_once(table: dict[Any, _Value], key: Hashable, value: _Value, bound: int) -> _Value:
    """What ``table`` holds under ``key``, or else ``value``, held there from now on: every equal value
    is then the one object. At ``bound`` entries the table starts again (what holds a value keeps it)."""
    known = table.get(key)
    if known is not None:
        return known
    if len(table) >= bound:
        table.clear()
    table[key] = value
    return value
