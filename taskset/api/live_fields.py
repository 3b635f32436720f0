"""The two spec fields a shared cluster's other controllers write: ``suspend`` and ``managedBy``.

Both are read from the raw TaskSet, before and apart from parsing, because both must hold whatever the
rest of the spec is: a TaskSet another controller manages is never parsed, let alone failed, here; and a
running attempt whose live spec became illegal (it keeps running on its snapshot, W-18) can still be
suspended. ``suspend`` is mutable and is left out of the attempt's snapshot
(``taskset.objects.controlunit``); ``managedBy`` is immutable (the CRD's transition rule).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from taskset.api.constants import CONTROLLER_NAME

SUSPEND_FIELD: Final = "suspend"
MANAGED_BY_FIELD: Final = "managedBy"
# Spec fields that steer the attempt from outside rather than describe it: never in its snapshot.
LIVE_ONLY_FIELDS: Final = (SUSPEND_FIELD,)


def _spec(obj: object) -> Mapping[str, Any]:
    spec = obj.get("spec") if isinstance(obj, Mapping) else None
    return spec if isinstance(spec, Mapping) else {}


def suspended(obj: object) -> bool:
    """Whether the TaskSet asks to be suspended: only a JSON ``true`` does (parsing refuses any other
    non-null value, naming ``spec.suspend``)."""
    return _spec(obj).get(SUSPEND_FIELD) is True


def managed_here(obj: object) -> bool:
    """Whether this controller reconciles the TaskSet: ``spec.managedBy`` is absent, null or our own
    name. Anything else, even a value the CRD would refuse, belongs to someone else, as with the Job."""
    value = _spec(obj).get(MANAGED_BY_FIELD)
    return value is None or value == CONTROLLER_NAME


def without_live_fields(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """The spec as an attempt's snapshot keeps it: without the fields that steer it from outside, so a
    suspend and resume never make the live spec differ from the snapshot it was started with."""
    if not any(key in spec for key in LIVE_ONLY_FIELDS):
        return spec
    return {key: value for key, value in spec.items() if key not in LIVE_ONLY_FIELDS}
