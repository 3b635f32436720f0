"""The ControlUnit ConfigMap of one TaskSet attempt (spec 3.1): its shape and its spec snapshot.

The snapshot is the TaskSet's spec as the attempt started (W-18): an edit while it runs never changes
the replicas or policies of the running attempt; the next attempt picks the edit up (and validates it).

Anyone who may write ConfigMaps in the namespace may also write the snapshot, so the controller records
its digest (``taskset.observed.views.snapshot_digest``) in the TaskSet's status, which only it writes, and
uses a snapshot only while the two agree (``taskset.decide.snapshot``). The ConfigMap cache
keeps that digest instead of the data; the text is fetched once per ControlUnit, when it is to be used
(``taskset.runtime.snapshot_texts``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any, Final

import cachetools
import orjson

from taskset.api.constants import (
    ANNOTATION_NAMESPACE,
    ANNOTATION_TASKSET,
    API_VERSION,
    CONTROL_UNIT_SNAPSHOT_KEY,
    KIND,
    LABEL_TASKSET,
)
from taskset.api.live_fields import without_live_fields
from taskset.api.spec import ParsedTaskSet, SpecCheck, TaskSetSpec, parse_taskset

SNAPSHOT_KEY: Final = CONTROL_UNIT_SNAPSHOT_KEY
# ConfigMaps hold at most 1 MiB; a larger spec runs without a snapshot (the live spec is used instead),
# as does one too deeply nested to encode.
MAX_SNAPSHOT_BYTES: Final = 900 * 1024
# Parsed snapshots remembered, bounded by the bytes of their texts (the key holds its text, and a parse
# is a few times its text): one per running attempt in the common case; least recently used go first, so a
# finished attempt's parse is dropped as others come, and only parsed again if it is read again.
PARSED_SNAPSHOT_BYTES: Final = 16 * 1024 * 1024


def build_control_unit(taskset: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The ConfigMap for one attempt, controlled by the TaskSet (TaskSet -> ControlUnit -> Pods)."""
    meta = taskset["metadata"]
    data = {SNAPSHOT_KEY: snapshot} if (snapshot := _snapshot(taskset.get("spec") or {})) else {}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": name,
            "namespace": meta["namespace"],
            "labels": {LABEL_TASKSET: meta["name"]},
            "annotations": {ANNOTATION_TASKSET: meta["name"], ANNOTATION_NAMESPACE: meta["namespace"]},
            "ownerReferences": [
                {
                    "apiVersion": API_VERSION,
                    "kind": KIND,
                    "name": meta["name"],
                    "uid": meta["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "data": data,
    }


def snapshot_of(spec: object) -> str:
    """The exact ``spec.json`` text ``build_control_unit`` writes for ``spec``, "" when it writes none."""
    return _snapshot(spec) or ""


def _snapshot(spec: object) -> str | None:
    """The spec as the snapshot keeps it, or None when it cannot be kept: larger than a ConfigMap holds,
    or nested deeper than JSON encoding allows (decisions build this, so it must not raise). The fields
    that steer the attempt from outside (``spec.suspend``) are left out: they are read live."""
    if isinstance(spec, Mapping):
        spec = without_live_fields(spec)
    try:
        encoded = orjson.dumps(spec)
    except orjson.JSONEncodeError:
        return None
    return encoded.decode() if len(encoded) <= MAX_SNAPSHOT_BYTES else None


def parse_snapshot(
    snapshot: str, name: str, namespace: str, uid: str, checks: Sequence[SpecCheck] = ()
) -> TaskSetSpec | None:
    """The attempt's spec from a ControlUnit, or None if the snapshot is unreadable or illegal (to the
    integrations' ``checks`` too).

    Every pass of a running attempt reads the same snapshot, so the parse is remembered by its inputs
    (the spec is frozen, so passes may share it); a check that cannot be hashed is parsed each time."""
    key = (snapshot, name, namespace, uid, tuple(checks))
    try:
        with _parsed_lock:
            found = _parsed.get(key)
    except TypeError:  # an unhashable check
        return _parse_snapshot(snapshot, name, namespace, uid, checks)
    if found is not None:
        return found[1]
    spec = _parse_snapshot(snapshot, name, namespace, uid, checks)
    with _parsed_lock:  # a text is at most a ConfigMap's 1 MiB: never above the bound on its own
        _parsed[key] = (len(snapshot), spec)
    return spec


_parsed_lock = threading.Lock()  # the workers parse side by side
_parsed: cachetools.LRUCache[tuple[Any, ...], tuple[int, TaskSetSpec | None]] = cachetools.LRUCache(
    PARSED_SNAPSHOT_BYTES, getsizeof=lambda entry: max(1, entry[0])
)


def _parse_snapshot(
    snapshot: str, name: str, namespace: str, uid: str, checks: Sequence[SpecCheck]
) -> TaskSetSpec | None:
    try:
        spec = orjson.loads(snapshot)
    except orjson.JSONDecodeError:
        return None
    parsed = parse_taskset(
        {"metadata": {"name": name, "namespace": namespace, "uid": uid}, "spec": spec}, checks
    )
    return parsed.spec if isinstance(parsed, ParsedTaskSet) else None
