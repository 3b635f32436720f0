"""Object identity in the cache: ``namespace/name`` keys, and the tombstone of a delete we did not see.

UID is deliberately not part of the key (client-go ``MetaNamespaceKeyFunc``): when an object is deleted and
another one with the same name is created while the watch is down, handlers may only see an update from the
first to the second. Handlers that care compare ``metadata.uid`` in ``on_update``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NewType, cast

from .listwatch import RawMeta, RawObject

__all__ = [
    "DeletedFinalStateUnknown",
    "KeyFunc",
    "ObjectKey",
    "deletion_handling_key",
    "meta_namespace_key",
    "object_meta",
    "resource_version",
    "split_key",
]

ObjectKey = NewType("ObjectKey", str)
"""``"<namespace>/<name>"`` for namespaced objects, ``"<name>"`` for cluster-scoped ones."""

KeyFunc = Callable[[RawObject], ObjectKey]


@dataclass(frozen=True, slots=True)
class DeletedFinalStateUnknown:
    """Handed to ``on_delete`` when an object vanished while the watch was down (seen only by a relist).

    ``obj`` is the last state the cache held, which may be stale: the object may have changed any number
    of times between that state and its deletion.
    """

    key: ObjectKey
    obj: RawObject


def object_meta(obj: RawObject) -> RawMeta:
    """The object's ``metadata``, or an empty mapping when it has none."""
    meta = obj.get("metadata")
    return cast(RawMeta, meta) if isinstance(meta, dict) else RawMeta()


def resource_version(obj: RawObject) -> str:
    """``metadata.resourceVersion``, or ``""`` when unset. Opaque: compare for equality only."""
    return object_meta(obj).get("resourceVersion", "")


def meta_namespace_key(obj: RawObject) -> ObjectKey:
    """The cache key of ``obj``; raises ``ValueError`` when it has no ``metadata.name``."""
    meta = object_meta(obj)
    name = meta.get("name")
    if not name:
        raise ValueError("object has no metadata.name")
    namespace = meta.get("namespace")
    return ObjectKey(f"{namespace}/{name}" if namespace else name)


def deletion_handling_key(obj: RawObject | DeletedFinalStateUnknown) -> ObjectKey:
    """Like ``meta_namespace_key``, but also accepts the tombstone that ``on_delete`` may receive."""
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    return meta_namespace_key(obj)


def split_key(key: str) -> tuple[str, str]:
    """``(namespace, name)`` of a key; the namespace is ``""`` for cluster-scoped objects."""
    namespace, sep, name = key.partition("/")
    if not sep:
        return "", namespace
    if not namespace or not name or "/" in name:
        raise ValueError(f"unexpected key format: {key!r}")
    return namespace, name
