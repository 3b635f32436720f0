"""Objects a TaskSet owns besides its Pods: the ControlUnit of each attempt, and whatever an integration
asks for (a headless Service, a hostfile ConfigMap, a PodGroup, a Kueue Workload).

Each is described as data, ``OwnedObject``: where it lives in the API (``ObjectKind``), its name, what
it belongs to (``Scope``: the TaskSet itself, or the current attempt) and its body. ``manifest`` turns
that into the object to create, adding what the controller owns about it: name, namespace, the
controlling owner (the TaskSet, or the attempt's ControlUnit, so the garbage collector takes it away
with its owner), and the TaskSet label and annotations the controller's caches select and route by,
as on its Pods. Label and annotations only narrow what is cached and which TaskSet looks again; what
the TaskSet owns is decided by the controlling owner's UID.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from taskset.api.constants import (
    ANNOTATION_CREATION_PROOF,
    ANNOTATION_NAMESPACE,
    ANNOTATION_TASKSET,
    API_VERSION,
    KIND,
    LABEL_TASKSET,
)
from taskset.observed.slim import CONFIG_MAP_DECLARED


@dataclass(frozen=True)
class ObjectKind:
    """Where a kind of object lives in the API; ``group`` is empty for the core group."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    # Fields its cache keeps besides the metadata and which status conditions hold, as (top-level
    # field, field in it): a Kueue Workload's ``("status", "admission")``, a ResourceFlavor's
    # ``("spec", "nodeLabels")``. Each is bounded (``taskset.observed.slim.KEPT_FIELD_MAX``).
    kept: tuple[tuple[str, str], ...] = ()
    # The fields the controller declares for an object of the kind and keeps as declared, as paths
    # (``taskset.observed.slim.EVERY_ITEM`` maps over a list): its cache keeps their digests, and a pass
    # compares them with what the integration's body declares. Only the fields the body holds are
    # compared, so what the API server or another controller adds beside them is never drift.
    declared: tuple[tuple[str, ...], ...] = ()
    # What a pass does when a declared field drifted: patch the declared value back (True), or, where
    # writing it is forbidden or unsafe, end the attempt naming the object (False). docs/design.md,
    # "Owned objects are kept as declared", says why for each kind.
    restorable: bool = True
    # Of those, the ones an object that follows the TaskSet (``OwnedObject.updates``) changes as the
    # TaskSet moves, written over without a word; empty: all of them (the live membership's data).
    followed: tuple[tuple[str, ...], ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> str:
        """A short unique name of the kind, for maps and metrics: ``configmaps``, ``services``, ..."""
        return f"{self.plural}.{self.group}" if self.group else self.plural


# A ConfigMap's data (the live membership, an MPI hostfile) is only ever the controller's to write.
CONFIGMAPS = ObjectKind(
    group="", version="v1", plural="configmaps", kind="ConfigMap", declared=CONFIG_MAP_DECLARED
)


class Scope(StrEnum):
    """What an owned object belongs to, and so when it goes away."""

    TASKSET = "TaskSet"  # as long as the TaskSet, owned by it: a Service keeps its name across attempts
    ATTEMPT = "Attempt"  # lives as long as one attempt: owned by that attempt's ControlUnit


@dataclass(frozen=True)
class Owner:
    """The object that controls an owned object: the TaskSet, or one attempt's ControlUnit."""

    api_version: str
    kind: str
    name: str
    uid: str


def taskset_owner(name: str, uid: str) -> Owner:
    return Owner(API_VERSION, KIND, name, uid)


def control_unit_owner(name: str, uid: str) -> Owner:
    return Owner(CONFIGMAPS.api_version, CONFIGMAPS.kind, name, uid)


@dataclass(frozen=True)
class OwnedObject:
    """One object an integration wants while its scope lasts. ``body`` holds everything but the
    metadata the controller sets (``manifest``); its own ``metadata`` may carry labels and annotations."""

    kind: ObjectKind
    name: str
    scope: Scope
    body: Mapping[str, Any]
    integration: str  # which integration asked for it: named in the status when it cannot be made
    # Whether the roles' Pods wait until it is there and ours. False for what only names or describes
    # the Pods (a headless Service): they start with it, and one in a stranger's hands still holds them.
    holds: bool = True
    # Whether its ``data`` follows the TaskSet (the live membership): once it exists and is
    # ours, a pass that wants other data than the cache shows (by digest) writes it over.
    updates: bool = False


@dataclass(frozen=True)
class OwnedStatus:
    """Part of the status of an object the TaskSet owns that an integration has the controller apply
    (server-side apply, the controller's field manager): a Kueue Workload's ``Finished`` condition."""

    kind: ObjectKind
    name: str
    status: Mapping[str, Any]

    def body(self, uid: str) -> dict[str, Any]:
        """The apply request's body: only the fields the controller means to own, for the object of
        ``uid`` only (another object of the name makes the API server refuse it)."""
        meta = {"name": self.name, "uid": uid}
        return {
            "apiVersion": self.kind.api_version,
            "kind": self.kind.kind,
            "metadata": meta,
            "status": copy.deepcopy(dict(self.status)),  # the caller may complete it (a condition's time)
        }


def manifest(obj: OwnedObject, *, taskset: str, namespace: str, owner: Owner, proof: str) -> dict[str, Any]:
    """The object to create for ``obj``, controlled by ``owner``, with its creation ``proof``
    (``taskset.observed.proof.owned_subject``)."""
    own = obj.body.get("metadata")
    own_meta: Mapping[str, Any] = own if isinstance(own, Mapping) else {}
    labels = own_meta.get("labels")
    annotations = own_meta.get("annotations")
    metadata: dict[str, Any] = {
        "name": obj.name,
        "namespace": namespace,
        "labels": {**(labels if isinstance(labels, Mapping) else {}), LABEL_TASKSET: taskset},
        "ownerReferences": [
            {
                "apiVersion": owner.api_version,
                "kind": owner.kind,
                "name": owner.name,
                "uid": owner.uid,
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }
    metadata["annotations"] = {
        **(annotations if isinstance(annotations, Mapping) else {}),
        ANNOTATION_TASKSET: taskset,
        ANNOTATION_NAMESPACE: namespace,
        ANNOTATION_CREATION_PROOF: proof,
    }
    rest = {key: value for key, value in obj.body.items() if key != "metadata"}
    return {"apiVersion": obj.kind.api_version, "kind": obj.kind.kind, "metadata": metadata, **rest}
