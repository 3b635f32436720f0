"""What the informers' caches keep of an object: the transforms (``slim_pod``, ``slim_config_map``,
``slim_owned``, ``slim_taskset``) that trim every listed or watched object before it is stored.

A cache holds what the controller reads and nothing else, so that 10,000 Pods fit in the memory target
and a stranger's labelled object costs a small, bounded amount whatever it carries: only the
controller's own labels and annotations, the controlling owner reference, a few finalizers, clipped
texts, and of a ConfigMap's data only the digest of a ControlUnit's snapshot. Every transform is
idempotent (a relist stores again what a watch stored) and never changes the object it is given.
"""

from __future__ import annotations

import copy
import hashlib
import json
import sys
from collections.abc import Iterable, Mapping
from typing import Any, Final, TypedDict

from informers import strip_managed_fields
from taskset.api.constants import CONTROL_UNIT_SNAPSHOT_KEY, OWN_ANNOTATIONS, OWN_LABELS
from taskset.api.readers import as_items, controller_ref, get_path, main_container
from taskset.api.scale import scale_entries
from taskset.api.shared_keys import KeyTable, held_once, keys_shared
from taskset.api.status import EXIT_MESSAGE_MAX, IDENTIFIER_MAX, QUOTED_MAX, REASON_MAX, clip

# What the pod cache keeps of a Pod (``slim_pod``): everything ``pod_view``, the expectations, the
# indexers and the event handlers read, and nothing else.
POD_METADATA_KEPT = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",  # only OWN_LABELS
        "annotations",  # only OWN_ANNOTATIONS
        "ownerReferences",  # only the controlling one
        "finalizers",  # at most FINALIZERS_KEPT
    }
)
# The only label and annotation keys a cache keeps are the controller's own (``OWN_LABELS``,
# ``OWN_ANNOTATIONS`` in ``taskset.api.constants``; anyone may label a Pod ``TaskSet`` and
# annotate it with 256 KB).
# Every value the controller writes into a kept label, annotation or owner reference is a name (a
# TaskSet's or a ControlUnit's: a DNS subdomain, at most 253 characters), a namespace (63), a UID (36),
# a kind or an API version, or a decimal count below MAX_RETRY_COUNT. A longer value is therefore not
# ours, and it is dropped rather than clipped: a clipped value is another value, which could name a
# real TaskSet (its first 253 characters) or change a count; a dropped one leaves the object looking
# like what it is, an object this controller did not write that key on.
OWN_VALUE_MAX = 253
NODE_NAME_MAX = 253  # a DNS subdomain
OWNER_REFERENCE_KEPT = frozenset({"apiVersion", "kind", "name", "uid", "controller"})
# A finalizer is a qualified name (253 + "/" + 63). Only their presence and names matter (a Pod held
# in Terminating); eight name any real Pod's and bound a stranger's list.
FINALIZER_MAX = 317
FINALIZERS_KEPT = 8
POD_STATUS_KEPT = frozenset(
    {
        "phase",
        "reason",
        "message",
        "hostIP",
        "podIP",
        "startTime",
        "conditions",
        "containerStatuses",
        "initContainerStatuses",
    }
)
CONTAINER_STATUS_KEPT = frozenset({"name", "state", "containerID"})
# PodScheduled's False/Unschedulable says why a Pod waits; DisruptionTarget (preemption, eviction, a
# drain) is what failure rules match; Ready: a dependsOn ``until: Ready``. Each is
# one entry of a bounded size.
CONDITIONS_KEPT = frozenset({"PodScheduled", "DisruptionTarget", "Ready"})
CONDITION_FIELDS_KEPT = frozenset({"type", "status", "reason", "message"})
# Of a container's state, what ``pod_view`` reads: why it waits, and how it exited.
STATE_FIELDS_KEPT: Mapping[str, frozenset[str]] = {
    "waiting": frozenset({"reason", "message"}),
    "terminated": frozenset({"exitCode", "signal", "reason", "message", "finishedAt"}),
}
# A Pod may declare any number of containers, and each one's status carries texts (a termination message
# of up to 4 KiB, the kubelet's maximum): a cached Pod keeps this many entries of each list (spec
# containers, container and init container statuses, conditions), and the workload's status (the first
# spec container's, W-13) wherever it is. Every real Pod of ours is far below it.
LIST_KEPT = 16
# Each text a cached Pod keeps, clipped where it is stored to the bound ``pod_view`` (and so the status)
# copies it with: a stranger's Pod costs a bounded amount whatever its status says. ``clip``
# is idempotent, so the transform stays so.
MESSAGE_KEPT: Mapping[str, int] = {"waiting": QUOTED_MAX, "terminated": EXIT_MESSAGE_MAX}


def slim_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod informer's transform: a cached Pod holds only what the controller reads (see the sets
    above), so 10,000 Pods fit in the memory target. The spec, half of a recorded Pod once managedFields
    are gone, shrinks to its container names; the metadata to ``slim_metadata``'s, so that a stranger's
    Pod labelled ``TaskSet`` costs a bounded amount whatever its annotations. Its strings are interned
    (``_shared``) as each kept value is copied, in the one pass that builds it: a second walk that copied
    the slim Pod again to intern it was half of the transform's cost, which runs on every watch event.
    The texts it holds alone (name, UID, version, IP, container ID) are kept as they came.

    The informer contract: idempotent (``slim_pod(slim_pod(p)) == slim_pod(p)``, as a relist stores
    again what a watch stored) and it never changes ``pod`` (every value it keeps is either immutable
    or a new container built here)."""
    slim: dict[str, Any] = {key: _shared(pod[key]) for key in ("apiVersion", "kind") if key in pod}
    if "metadata" in pod:
        slim["metadata"] = _shared_metadata(pod["metadata"])
    spec = pod.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("containers"), list):
        slim["spec"] = {"containers": [_kept(c, _NAME) for c in spec["containers"][:LIST_KEPT]]}
    elif isinstance(spec, dict):
        slim["spec"] = {}  # nothing else in it is read
    if isinstance(spec, dict) and isinstance(spec.get("nodeName"), str):
        # The node it is bound to: a lost node holds its Pods (observed.nodes), and a failure rule may
        # avoid the node a failed attempt ran on.
        slim["spec"]["nodeName"] = _shared(spec["nodeName"][:NODE_NAME_MAX])
    if "spec" in slim:
        slim["spec"] = _one_of(slim["spec"])
    if isinstance(pod.get("status"), dict):
        slim["status"] = _slim_pod_status(pod["status"], main_container(pod)[0])
    return keys_shared(slim, _PodKeys)


_NAME: Final = frozenset({"name"})
# The status fields ``_slim_pod_status`` rebuilds entry by entry when they are lists.
_REBUILT: Final = frozenset({"conditions", "containerStatuses", "initContainerStatuses"})


# What ``slim_pod`` reads of a Pod, as the shape the Pod watch decodes each event into
# (``informers.pruned``): built from the sets above, so what the cache keeps is said once. Only the
# controller's own label and annotation keys, only the fields of an owner reference, a container, a
# condition and a container state that are kept; ``Any`` wherever ``slim_pod`` judges a value's type
# itself. ``tests/unit/taskset/observed/test_pod_shape.py`` proves ``slim_pod`` of the pruned Pod equals
# ``slim_pod`` of the whole one, whatever the Pod.
def _fields(name: str, keys: Iterable[str], **nested: Any) -> Any:
    """A ``TypedDict`` of ``keys`` (``Any``), some of them ``nested`` shapes, none required."""
    return _typed_dict(name, {key: nested.get(key, Any) for key in keys} | nested, total=False)


_typed_dict: Final[Any] = TypedDict  # built from the sets, which a type checker cannot follow
_CONTAINER_STATUS_SHAPE: Final = _fields(
    "ContainerStatus",
    CONTAINER_STATUS_KEPT,
    state=_fields("State", (), **{name: _fields(name, keys) for name, keys in STATE_FIELDS_KEPT.items()}),
)
POD_SHAPE: Final = _fields(
    "Pod",
    ("apiVersion", "kind"),
    metadata=_fields(
        "Metadata",
        POD_METADATA_KEPT,
        labels=_fields("Labels", OWN_LABELS),
        annotations=_fields("Annotations", OWN_ANNOTATIONS),
        ownerReferences=list[_fields("OwnerReference", OWNER_REFERENCE_KEPT)],  # type: ignore[misc]
    ),
    spec=_fields("Spec", ("nodeName",), containers=list[_fields("Container", _NAME)]),  # type: ignore[misc]
    status=_fields(
        "Status",
        POD_STATUS_KEPT,
        conditions=list[_fields("Condition", CONDITION_FIELDS_KEPT)],  # type: ignore[misc]
        containerStatuses=list[_CONTAINER_STATUS_SHAPE],  # type: ignore[valid-type]
        initContainerStatuses=list[_CONTAINER_STATUS_SHAPE],  # type: ignore[valid-type]
    ),
)


def _slim_pod_status(status: dict[str, Any], main: str) -> dict[str, Any]:
    """A Pod's status as the cache keeps it: ``POD_STATUS_KEPT``, each list bounded (``LIST_KEPT``, the
    ``main`` container's status kept wherever it is) and each text clipped as ``pod_view`` clips it."""
    kept: dict[str, Any] = {
        k: v if (k in _REBUILT and isinstance(v, list)) or _own_text(k, v, _OWN_STATUS_TEXTS) else _shared(v)
        for k, v in status.items()
        if k in POD_STATUS_KEPT
    }
    for key, limit in (("reason", REASON_MAX), ("message", QUOTED_MAX)):
        if isinstance(kept.get(key), str):
            kept[key] = _clipped(kept[key], limit)
    for key in ("containerStatuses", "initContainerStatuses"):
        if isinstance(kept.get(key), list):
            entries = _bounded(kept[key], main if key == "containerStatuses" else None)
            kept[key] = [_slim_container_status(entry) for entry in entries]
    if isinstance(kept.get("conditions"), list):
        scheduled = [c for c in kept["conditions"] if _kept_type(get_path(c, "type"))][:LIST_KEPT]
        kept["conditions"] = _one_of(
            [_clip_texts(_kept(c, CONDITION_FIELDS_KEPT), QUOTED_MAX) for c in scheduled]
        )
    return keys_shared(kept, _StatusKeys)


def _bounded(statuses: list[Any], main: str | None) -> list[Any]:
    """The container statuses a cached Pod keeps: the first ``LIST_KEPT``, and the one ``pod_view``
    takes for the workload's (the first named ``main``, or the first of all) if it comes later."""
    kept = [entry for entry in statuses[:LIST_KEPT] if isinstance(entry, dict)]
    if main is None:
        return kept
    chosen = next((s for s in statuses if isinstance(s, dict) and (not main or s.get("name") == main)), None)
    return kept if chosen is None or any(entry is chosen for entry in kept) else [*kept, chosen]


def _slim_container_status(entry: dict[str, Any]) -> dict[str, Any]:
    """One container's status: its name, ID, and the waiting or terminated state with clipped texts."""
    kept: dict[str, Any] = {
        k: v
        if (k == "state" and isinstance(v, dict)) or _own_text(k, v, _OWN_CONTAINER_TEXTS)
        else _shared(v)
        for k, v in entry.items()
        if k in CONTAINER_STATUS_KEPT
    }
    if isinstance(kept.get("containerID"), str):
        kept["containerID"] = _clipped(kept["containerID"], IDENTIFIER_MAX)
    state = kept.get("state")
    if isinstance(state, dict):
        kept["state"] = _one_of(
            {
                name: _clip_texts(_kept(value, STATE_FIELDS_KEPT[name]), MESSAGE_KEPT[name])
                for name, value in state.items()
                if name in STATE_FIELDS_KEPT
            }
        )
    return keys_shared(kept, _ContainerStatusKeys)


def _clip_texts(value: Any, message_max: int) -> Any:
    """A condition's or a container state's ``reason`` and ``message`` clipped (anything else as it is)."""
    if not isinstance(value, dict):
        return value
    limits = {"reason": REASON_MAX, "message": message_max}
    return {k: _clipped(v, limits[k]) if k in limits and isinstance(v, str) else v for k, v in value.items()}


def _clipped(text: str, limit: int) -> str:
    """``clip``, interned: a clipped text is a new string."""
    clipped = clip(text, limit)
    return clipped if clipped is text else _shared(clipped)


def _kept(value: Any, keys: frozenset[str]) -> Any:
    """``_only``, its kept values interned (``_shared``)."""
    if not isinstance(value, dict):
        return _shared(value)
    return {k: _shared(v) for k, v in value.items() if k in keys}


def _shared_metadata(meta: Any) -> Any:
    """``slim_metadata`` with its strings interned, once it has dropped what it drops (a stranger's
    annotations may be 256 KB: they are never copied)."""
    slim = slim_metadata(meta)
    if not isinstance(slim, dict):
        return _shared(slim)
    shared = {k: v if _own_text(k, v, _OWN_METADATA_TEXTS) else _shared(v) for k, v in slim.items()}
    for key in ("labels", "ownerReferences"):  # a Pod's annotations are its own (its index, its proof)
        if key in shared:
            shared[key] = _one_of(shared[key])
    if type(shared.get("annotations")) is dict:
        shared["annotations"] = keys_shared(shared["annotations"], _AnnotationKeys)
    return keys_shared(shared, _MetadataKeys)


def slim_metadata(meta: Any) -> Any:
    """An object's metadata as a cache keeps it: ``POD_METADATA_KEPT``, with only the controller's own
    labels and annotations, only the controlling owner reference (the one ``controller_ref`` finds: the
    API server admits one per object, and it is the only one any reader asks for), each of them only
    with string values of at most ``OWN_VALUE_MAX`` characters, and at most ``FINALIZERS_KEPT``
    finalizers. Fields of the wrong type are dropped (the API server never sends them), so every
    reader sees the same as in the whole object. Idempotent, and it never changes ``meta``."""
    if not isinstance(meta, dict):
        return meta
    slim = _only(meta, POD_METADATA_KEPT)
    for key, own in (("labels", OWN_LABELS), ("annotations", OWN_ANNOTATIONS)):
        if key in slim:
            slim[key] = _own_values(slim[key], own)
    if "ownerReferences" in slim:
        ref = _own_values(controller_ref({"metadata": slim}), OWNER_REFERENCE_KEPT)
        slim["ownerReferences"] = [ref] if isinstance(ref.get("uid"), str) else []
    if "finalizers" in slim:
        names = [f for f in as_items(slim["finalizers"]) if isinstance(f, str) and len(f) <= FINALIZER_MAX]
        slim["finalizers"] = names[:FINALIZERS_KEPT]
    return slim


def _own_values(value: Any, keys: frozenset[str]) -> dict[str, Any]:
    """A mapping's entries under ``keys`` whose value is a string of at most ``OWN_VALUE_MAX``
    characters, or ``True`` (an owner reference's ``controller``)."""
    if not isinstance(value, Mapping):
        return {}
    return {
        k: v
        for k, v in value.items()
        if k in keys and (v is True or (isinstance(v, str) and len(v) <= OWN_VALUE_MAX))
    }


def snapshot_digest(snapshot: str | None) -> str:
    """The digest the status records for a ControlUnit's snapshot: sha256 of its exact bytes (UTF-8).
    A ControlUnit without a snapshot digests as the empty text, so adding one later is a change too."""
    return "sha256:" + hashlib.sha256((snapshot or "").encode()).hexdigest()


NO_SNAPSHOT_DIGEST: Final = snapshot_digest(None)
# What a cached ConfigMap keeps instead of its data: the digest of its ``spec.json``, under a
# key no ConfigMap has (the API server drops unknown fields, so it never sends one): only
# ``slim_config_map`` writes it. A snapshot is judged by this digest; its text is fetched only to be
# used (``taskset.decide.snapshot``, ``taskset.runtime.snapshot_texts``).
SNAPSHOT_DIGEST_FIELD: Final = "snapshotDigest"


def slim_config_map(obj: dict[str, Any]) -> dict[str, Any]:
    """The ConfigMap informer's transform (ControlUnits and ConfigMaps integrations own): the metadata
    as ``slim_metadata`` keeps it and, of its data, only the digest of the ControlUnit's snapshot
    (``SNAPSHOT_DIGEST_FIELD``): a stranger's labelled ConfigMap of 1 MB costs what an empty one costs.
    Idempotent, and it never changes ``obj``."""
    slim = slim_owned(obj, declared=CONFIG_MAP_DECLARED)
    kept = obj.get(SNAPSHOT_DIGEST_FIELD)
    slim[SNAPSHOT_DIGEST_FIELD] = kept if isinstance(kept, str) and "data" not in obj else _digest_of(obj)
    return slim


# What the controller declares of a ConfigMap it owns: its whole data (``ObjectKind.declared``).
CONFIG_MAP_DECLARED: Final = (("data",),)
# What a cache keeps of the fields the controller declares for an owned object (``ObjectKind.declared``):
# one digest per field, by its dotted path, under a key no object has (the API server drops unknown
# fields, so it never sends one): only ``slim_owned`` writes it. A stranger's edit of a declared field
# changes its digest, which a pass compares with the digest of what the integration declares
# (``taskset.decide.owned_sync``); the values themselves are not kept, so a Workload's pod templates
# or a 1 MiB membership cost 64 characters a field.
DECLARED_DIGESTS_FIELD: Final = "declaredDigests"
# A path step that stands for every item of a list (a Workload's ``podSets``): the field's value is
# then the list of what each item holds there (None where it holds nothing).
EVERY_ITEM: Final = "*"


def value_digest(value: object) -> str:
    """sha256 of ``value`` as canonical JSON (keys sorted)."""
    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def path_label(path: tuple[str, ...]) -> str:
    """A declared field's name in the cache and in messages: ``spec.selector``, ``spec.podSets.*.count``."""
    return ".".join(path)


def declared_value(obj: object, path: tuple[str, ...]) -> Any:
    """What ``obj`` holds at ``path`` (``EVERY_ITEM`` maps over a list), or None where it holds nothing."""
    if not path:
        return obj
    head, rest = path[0], path[1:]
    if head == EVERY_ITEM:
        return [declared_value(item, rest) for item in obj] if isinstance(obj, list) else None
    return declared_value(obj.get(head), rest) if isinstance(obj, Mapping) and head in obj else None


def declared_digests(obj: Mapping[str, Any], declared: tuple[tuple[str, ...], ...]) -> dict[str, str]:
    """The digest of each ``declared`` field ``obj`` holds, by ``path_label``: from the fields when it is
    a whole object, else the digests its cache kept. A field it does not hold has no digest."""
    kept = obj.get(DECLARED_DIGESTS_FIELD)
    if isinstance(kept, Mapping):
        return {k: v for k, v in kept.items() if isinstance(k, str) and isinstance(v, str)}
    found: dict[str, str] = {}
    for path in declared:
        value = declared_value(obj, path)
        if value is not None:
            found[path_label(path)] = value_digest(value)
    return found


def _digest_of(cm: Mapping[str, Any]) -> str:
    """The digest of a whole ConfigMap's snapshot (the shared ``NO_SNAPSHOT_DIGEST`` when it has none)."""
    snapshot = _snapshot_text(cm)
    return snapshot_digest(snapshot) if snapshot else NO_SNAPSHOT_DIGEST


def _snapshot_text(cm: Mapping[str, Any]) -> str | None:
    data = get_path(cm, "data")
    snapshot = data.get(CONTROL_UNIT_SNAPSHOT_KEY) if isinstance(data, dict) else None
    return snapshot if isinstance(snapshot, str) else None


# What the TaskSet cache keeps besides the status's ``state`` (the API server prunes any other field).
_TASKSET_KEPT: Final = frozenset({"apiVersion", "kind", "metadata", "spec"})
# What the TaskSet watch builds of a TaskSet (``informers.pruned``): what ``slim_taskset`` keeps. Each
# status write comes back as an event carrying the whole status (a 2,000-replica one is some hundred
# KB), which was decoded only to be dropped. ``tests/unit/taskset/observed/test_taskset_shape.py``
# keeps the two equal.
TASKSET_SHAPE: Final = _fields("TaskSet", _TASKSET_KEPT, status=_fields("TaskSetStatus", ("state",)))


def slim_taskset(obj: dict[str, Any]) -> dict[str, Any]:
    """The TaskSet informer's transform: its ``_TASKSET_KEPT`` fields and of its status only ``state`` (the
    gauge of TaskSets by state), without managed fields but for the entries that own a count, reduced
    (``taskset.api.scale.scale_entries``: who asked for a scale), with its strings interned. A
    pass builds on the status it wrote or read live (``taskset.runtime.records``), never the cached one,
    so the cache keeps none of it: interning a 400-replica status on each of its writes' echoes was 6%
    of the controller's CPU on the bench's ``large``, and a 10,000-replica one is a MiB.
    TaskSets of one job kind repeat their templates, hence the interning. Idempotent, and it never
    changes ``obj``."""
    slim = {key: value for key, value in strip_managed_fields(obj).items() if key in _TASKSET_KEPT}
    entries = scale_entries(get_path(obj, "metadata", "managedFields"))
    if entries:
        slim = {**slim, "metadata": {**slim["metadata"], "managedFields": entries}}
    shared: dict[str, Any] = _shared(slim)
    status = obj.get("status")
    if isinstance(status, dict) and "state" in status:
        shared["status"] = {"state": _shared(status["state"])}
    return shared


def _shared(value: Any) -> Any:
    """``value`` with its strings interned. Most strings of a cached Pod repeat across the Pods of a
    TaskSet (namespace, labels, owner, phase, node, timestamps to the second): one copy of each took a
    running slim Pod from 5.7 to 4.0 KB (3.4 with the conditions dropped). An interned string is freed
    with its last Pod."""
    if type(value) is str:
        return _intern(value)
    if isinstance(value, dict):
        return {key: _intern(item) if type(item) is str else _shared(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_intern(item) if type(item) is str else _shared(item) for item in value]
    return value


_intern: Final = sys.intern

# The texts each Pod holds alone, by part: its name, UID and version, its IP, its container's ID.
# Interning one only adds an entry (some 50 bytes, never given back: the table does not shrink) to the
# interpreter's table of interned strings, and a look-up to every event.
_OWN_METADATA_TEXTS: Final = frozenset({"name", "uid", "resourceVersion"})
_OWN_STATUS_TEXTS: Final = frozenset({"podIP"})
_OWN_CONTAINER_TEXTS: Final = frozenset({"containerID"})


def _own_text(key: str, value: Any, own: frozenset[str]) -> bool:
    return type(value) is str and key in own


# A cached Pod's parts that the Pods of a TaskSet hold alike are held once: its labels, its controlling
# owner, its spec (container names and node), its conditions (their times are not kept) and a running
# or waiting container's state. Held once each, they took a running Pod in the store from 3.3 KiB to
# 1.9 (``python -m bench.cache_memory``). A part is a dict or a list, so a reader that changed
# it would change it in every Pod: no reader changes a cached object (the informers' contract; the
# slim Pod is never written back). Only parts whose every value is a short string or ``true`` are
# shared, keyed by their items in order, so a shared part equals the part it stands for to the type
# (an exit code, an integer, is never keyed: ``1`` would equal ``true``). The table is bounded: reaching
# ``SHARED_PARTS_KEPT`` parts drops them all (the Pods keep theirs, later Pods share anew), so what it
# holds past the Pods that hold them is at most that many parts of at most ``SHARED_PART_CHARS``.
SHARED_PARTS_KEPT: Final = 512
SHARED_PART_CHARS: Final = 512
_SHARED_LIST_MAX: Final = 4  # entries of a shared list: a Pod's one owner, its two or three conditions
_parts: dict[tuple[Any, ...], Any] = {}


def _one_of(part: Any) -> Any:
    """``part``, or the equal part kept before (the same object, shared by every Pod holding it)."""
    keyed = _part_key(part)
    if keyed is None:
        return part
    return held_once(_parts, keyed[1], part, SHARED_PARTS_KEPT)


# Each cached Pod holds five dicts of its own (the Pod, its metadata, its annotations, its status, its
# container's status) with the same few keys in every Pod: each kind holds its keys once
# (``taskset.api.shared_keys``), about 450 bytes less a Pod: the sets above are every key each may hold.
class _PodKeys(KeyTable):
    KEYS = ("apiVersion", "kind", "metadata", "spec", "status")


class _MetadataKeys(KeyTable):
    KEYS = tuple(sorted(POD_METADATA_KEPT))


class _AnnotationKeys(KeyTable):
    KEYS = tuple(sorted(OWN_ANNOTATIONS))


class _StatusKeys(KeyTable):
    KEYS = tuple(sorted(POD_STATUS_KEPT))


class _ContainerStatusKeys(KeyTable):
    KEYS = tuple(sorted(CONTAINER_STATUS_KEPT))


def _part_key(part: Any, depth: int = 2) -> tuple[int, tuple[Any, ...]] | None:
    """Its characters, and what equal parts (to the type) share and no other part has; None for a part
    that is not a dict of short strings and ``true`` or a list of at most ``_SHARED_LIST_MAX`` of them
    (``depth`` levels of them within each other), or longer than ``SHARED_PART_CHARS`` characters."""
    chars = 0
    items: list[Any]
    if type(part) is dict:
        items = ["d"]
        for name, value in part.items():
            if type(value) is str:
                chars += len(value)
                items.append((name, value))
            elif value is True:
                items.append((name, value))
            else:
                inner = _part_key(value, depth - 1) if depth else None
                if inner is None:
                    return None
                chars += inner[0]
                items.append((name, inner[1]))
    elif type(part) is list and len(part) <= _SHARED_LIST_MAX:
        items = ["l"]
        for entry in part:
            inner = _part_key(entry, depth - 1) if depth and type(entry) is dict else None
            if inner is None:
                return None
            chars += inner[0]
            items.append(inner[1])
    else:
        return None
    return (chars, tuple(items)) if chars <= SHARED_PART_CHARS else None


def _only(value: Any, keys: frozenset[str] | set[str]) -> Any:
    """A dict's entries under ``keys``; anything else unchanged (a malformed field stays malformed)."""
    return {k: v for k, v in value.items() if k in keys} if isinstance(value, dict) else value


def slim_owned(
    obj: dict[str, Any],
    kept: tuple[tuple[str, str], ...] = (),
    declared: tuple[tuple[str, ...], ...] = (),
) -> dict[str, Any]:
    """The transform of the caches of the kinds integrations own or read (besides ConfigMaps): the
    metadata as ``slim_metadata`` keeps it, which status conditions hold, and the fields ``kept`` names
    (``ObjectKind.kept``: a Kueue Workload's admission, a ResourceFlavor's node labels), each only
    while it is at most ``KEPT_FIELD_MAX`` characters of JSON: a stranger's labelled object of any kind
    costs a bounded amount. Of the fields the controller ``declared`` (``ObjectKind.declared``), only
    their digests (``DECLARED_DIGESTS_FIELD``). Idempotent, never changes ``obj``."""
    slim: dict[str, Any] = {key: obj[key] for key in ("apiVersion", "kind") if key in obj}
    if "metadata" in obj:
        slim["metadata"] = slim_metadata(obj["metadata"])
    if declared:
        slim[DECLARED_DIGESTS_FIELD] = declared_digests(obj, declared)
    conditions = get_path(obj, "status", "conditions")
    if isinstance(conditions, list):  # which conditions hold, and the words of those that do
        held = [_owned_condition(c) for c in conditions[:OWNED_CONDITIONS_MAX] if isinstance(c, dict)]
        slim["status"] = {"conditions": held}
    for top, name in kept:
        value = get_path(obj, top, name)
        if value is not None and len(json.dumps(value, separators=(",", ":"))) <= KEPT_FIELD_MAX:
            slim.setdefault(top, {})[name] = copy.deepcopy(value)
    return slim


# Of an owned object's status.conditions, what ``owned_view`` reads (Kueue's Admitted and
# Evicted), bounded like the rest of a stranger's object.
OWNED_CONDITIONS_MAX = 16
_CONDITION_TEXT_MAX = 316  # a condition type's longest legal form
# Of a condition that holds, its reason, message and time too: Kueue says there why it evicted a
# Workload (``Preempted``, and by whom), which decides whether the eviction counts as a preemption, and
# the time tells one eviction of a Workload from the next. The message to a quoted text's bound, as the
# status quotes it.
_CONDITION_MESSAGE_MAX = QUOTED_MAX


def _owned_condition(condition: dict[str, Any]) -> dict[str, str]:
    kept = {key: clip(str(condition.get(key, "")), _CONDITION_TEXT_MAX) for key in ("type", "status")}
    if kept["status"] == "True":
        for key, limit in (
            ("reason", _CONDITION_TEXT_MAX),
            ("message", _CONDITION_MESSAGE_MAX),
            ("lastTransitionTime", _CONDITION_TEXT_MAX),
        ):
            if isinstance(text := condition.get(key), str) and text:
                kept[key] = clip(text, limit)
    return kept


# The largest field ``slim_owned`` keeps, in characters of compact JSON. A Workload's admission of 8
# pod sets with a few flavors each, or its admission checks' pod set updates (8 per check, each bounded
# by Kueue's CRD), take a few KB; a ResourceFlavor's 8 node labels and 8 tolerations under 4 KB. A field
# past it is dropped, and its reader says what it misses.
KEPT_FIELD_MAX = 32 * 1024


def _kept_type(kind: object) -> bool:
    """A condition's type the controller reads; a type that is no string (a stranger's object) is not
    one, and must not reach a set lookup, where an unhashable value would raise."""
    return isinstance(kind, str) and kind in CONDITIONS_KEPT
