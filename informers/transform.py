"""Transforms: slim an object once, as it enters the cache, so every later reader pays less memory.

A transform takes an object fresh from the API server and returns what the cache keeps. It runs once per
object on the watch thread (keep it cheap), also on the final state of deletes, and it must be
idempotent. It may return its argument unchanged; it must not modify it in place, because a test fake (or
a caller) may still hold it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from .listwatch import RawObject

__all__ = ["LAST_APPLIED_ANNOTATION", "Transform", "strip_managed_fields"]

Transform = Callable[[RawObject], RawObject]

# Written by `kubectl apply`: a full JSON copy of the applied manifest, often the largest annotation.
LAST_APPLIED_ANNOTATION: Final = "kubectl.kubernetes.io/last-applied-configuration"


def strip_managed_fields(obj: RawObject) -> RawObject:
    """Drop ``metadata.managedFields`` and the last-applied annotation (~20% of a typical pod's size).

    Controllers read neither: server-side apply bookkeeping matters only to the writer that sent it.
    Copies the top level and ``metadata`` only; everything else is shared with ``obj``.
    """
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return obj
    annotations = meta.get("annotations")
    has_last_applied = isinstance(annotations, dict) and LAST_APPLIED_ANNOTATION in annotations
    if "managedFields" not in meta and not has_last_applied:
        return obj
    slim_meta = {k: v for k, v in meta.items() if k != "managedFields"}
    if has_last_applied:
        assert isinstance(annotations, dict)
        kept = {k: v for k, v in annotations.items() if k != LAST_APPLIED_ANNOTATION}
        if kept:
            slim_meta["annotations"] = kept
        else:
            del slim_meta["annotations"]
    slim = dict(obj)
    slim["metadata"] = slim_meta
    return slim
