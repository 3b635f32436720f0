"""Completion thresholds as counts or percentages of a role's replicas.

``completionPolicy.minSucceeded`` and ``maxFailed`` take an integer, as in the spec, or a string
``"<p>%"`` with ``p`` a whole number from 1 to 100. A percentage is turned into a count of replicas by
rounding **up**: ``ceil(p * replicas / 100)``. Rounding up keeps the count at or above the stated share
(``"50%"`` of 3 replicas is 2: at least half must succeed) and at least 1 for any ``p >= 1``, so a
percentage never yields a threshold that the spec's checks 2.1 to 2.4 would reject. This extends the spec
(``../shared/spec/TASKSET_SPEC.md`` has integers only).
"""

from __future__ import annotations

import re
from typing import Final

from taskset.api.failures import FieldError

PERCENT_PATTERN: Final = "^(100|[1-9][0-9]?)%$"
_PERCENT: Final = re.compile(PERCENT_PATTERN.removeprefix("^").removesuffix("$"))
THRESHOLD_PROBLEM: Final = 'must be an integer or a percentage from "1%" to "100%"'


def percent_of(percent: int, replicas: int) -> int:
    """``ceil(percent * replicas / 100)`` in integers."""
    return -(-percent * replicas // 100)


def percentage(value: object) -> int | None:
    """``p`` of a threshold given as ``"<p>%"``, else None: a scaled role re-reads it at its new count
    instead of being clamped as a count is."""
    return int(value[:-1]) if isinstance(value, str) and _PERCENT.fullmatch(value) else None


def at_count(declared: int | None, percent: int | None, count: int) -> int | None:
    """A threshold at a scaled role's ``count``: a percentage re-read against it, else the
    declared count (which the completion policy then clamps to ``count``)."""
    return declared if percent is None else percent_of(percent, count)


def parse_threshold(value: object, path: str, replicas: int) -> int | None:
    """A threshold as a count of replicas; None when absent. Raises :class:`FieldError` naming ``path``."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value  # range checks are the spec's (2.4, check 2), with its own messages
    if isinstance(value, str) and _PERCENT.fullmatch(value):
        return percent_of(int(value[:-1]), replicas)
    raise FieldError(path, f"{path}: {THRESHOLD_PROBLEM}")
