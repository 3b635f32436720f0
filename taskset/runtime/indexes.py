"""The caches' indexes: how an object is related to a TaskSet, always within the object's own
``metadata.namespace`` (an annotation or an owner reference names whatever its writer wants,
a TaskSet or an owner UID of another namespace included).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from taskset.api.constants import ANNOTATION_TASKSET
from taskset.api.readers import controller_uid

POD_INDEX: Final = "taskset"  # Pods by "<metadata.namespace>/<TaskSet annotation>"
OWNER_INDEX: Final = "controller-uid"  # owned objects by "<metadata.namespace>/<controlling owner's UID>"


def taskset_index(obj: Mapping[str, Any]) -> list[str]:
    """``<metadata.namespace>/<TaskSet annotation>``: the key of the TaskSet an object of ours names,
    in the object's own namespace. The ``Namespace`` annotation is never read: anyone creating a Pod
    writes it, so it would let a Pod in one namespace join a TaskSet of another."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return []
    annotations = meta.get("annotations")
    name = annotations.get(ANNOTATION_TASKSET) if isinstance(annotations, Mapping) else None
    return _in_own_namespace(meta, name)


def controller_uid_index(obj: Mapping[str, Any]) -> list[str]:
    """``<metadata.namespace>/<controlling owner's UID>``: an owner reference may name any UID, even an
    object's in another namespace, so the UID alone would relate a stranger's object to a TaskSet."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        return []
    return _in_own_namespace(meta, controller_uid(obj))


def owner_key(namespace: str, uid: str) -> str:
    """The ``OWNER_INDEX`` key of the objects that ``uid``, an object of ``namespace``, controls."""
    return f"{namespace}/{uid}"


def _in_own_namespace(meta: Mapping[str, Any], value: object) -> list[str]:
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and namespace and isinstance(value, str) and value:
        return [f"{namespace}/{value}"]
    return []
