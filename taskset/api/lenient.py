"""Reading stored JSON leniently: a field of the wrong type reads as absent, never as an error.

What the controller reads back (its status, an object's fields) was written by this controller, by an
older one, or by hand by anyone with the right to write it; a parse of it never raises. Each reader says
what it accepts; anything else is the default.
"""

from __future__ import annotations

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
