"""What a reconcile sees: small frozen views over cached raw objects, built once per pass.

The machines never read raw dicts; they read these views. ``classify_pod`` sorts a Pod found under a
replica's name into the classes of spec 5.3.1, which is what makes stable names (D1) safe: only this
attempt's Pod is adopted, a previous attempt's Pod is waited for, anything else is a conflict.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from informers import strip_managed_fields
from taskset.api.constants import (
    ANNOTATION_CONTROL_UNIT_UID,
    ANNOTATION_NAMESPACE,
    ANNOTATION_REPLICA_ATTEMPT_ID,
    ANNOTATION_REPLICA_INDEX,
    ANNOTATION_TASKSET,
    ANNOTATION_TASKSET_ATTEMPT_ID,
    ANNOTATION_TASKSET_UID,
    LABEL_ROLE,
    LABEL_TASKSET,
)
from taskset.api.status import EXIT_MESSAGE_MAX, QUOTED_MAX, REASON_MAX, clip

POD_PHASE_PENDING = "Pending"
POD_PHASE_UNKNOWN = "Unknown"  # the kubelet lost track of the Pod (node lost); O treats it as exited (8.2)
TERMINAL_POD_PHASES = frozenset({"Succeeded", "Failed", POD_PHASE_UNKNOWN})
# Container waiting reasons of a Pod that is simply starting: every other one (ErrImagePull,
# ImagePullBackOff, CreateContainerConfigError, CrashLoopBackOff of an init container, ...) means the
# Pod will not start until someone acts, which is worth telling the user (issue 8).
STARTING_WAITING_REASONS = frozenset({"ContainerCreating", "PodInitializing"})


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
# The label and annotation keys the controller writes (``build_pod``, ``control_unit``, owned objects),
# the only ones a cache keeps (issue 30: anyone may label a Pod ``TaskSet`` and annotate it with 256 KB).
# Read today: the TaskSet annotation (``taskset_index``, ``pod_view``), TSUID and ReplicaAttemptID
# (``pod_view``); the rest are kept because they are ours and small, so that a reader added later finds
# them. A new key the controller writes and reads from a cached object must be added here.
OWN_LABELS = frozenset({LABEL_TASKSET, LABEL_ROLE})
OWN_ANNOTATIONS = frozenset(
    {
        ANNOTATION_REPLICA_INDEX,
        ANNOTATION_TASKSET,
        ANNOTATION_NAMESPACE,
        ANNOTATION_TASKSET_UID,
        ANNOTATION_CONTROL_UNIT_UID,
        ANNOTATION_TASKSET_ATTEMPT_ID,
        ANNOTATION_REPLICA_ATTEMPT_ID,
    }
)
# Every value the controller writes into a kept label, annotation or owner reference is a name (a
# TaskSet's or a ControlUnit's: a DNS subdomain, at most 253 characters), a namespace (63), a UID (36),
# a kind or an API version, or a decimal count below MAX_RETRY_COUNT. A longer value is therefore not
# ours, and it is dropped rather than clipped: a clipped value is another value, which could name a
# real TaskSet (its first 253 characters) or change a count; a dropped one leaves the object looking
# like what it is, an object this controller did not write that key on.
OWN_VALUE_MAX = 253
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
CONDITIONS_KEPT = frozenset({"PodScheduled"})  # its False/Unschedulable is the only one read


def slim_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod informer's transform: a cached Pod holds only what the controller reads (see the sets
    above), so 10,000 Pods fit in the memory target. The spec, half of a recorded Pod once managedFields
    are gone, shrinks to its container names; the metadata to ``slim_metadata``'s, so that a stranger's
    Pod labelled ``TaskSet`` costs a bounded amount whatever its annotations (issue 30).

    The informer contract: idempotent (``slim_pod(slim_pod(p)) == slim_pod(p)``, as a relist stores
    again what a watch stored) and it never changes ``pod`` (every value it keeps is either immutable
    or a new container built here)."""
    slim: dict[str, Any] = {key: pod[key] for key in ("apiVersion", "kind") if key in pod}
    if "metadata" in pod:
        slim["metadata"] = slim_metadata(pod["metadata"])
    spec = pod.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("containers"), list):
        slim["spec"] = {"containers": [_only(c, {"name"}) for c in spec["containers"]]}
    elif spec is not None:
        slim["spec"] = spec
    status = pod.get("status")
    if isinstance(status, dict):
        kept = _only(status, POD_STATUS_KEPT)
        for key in ("containerStatuses", "initContainerStatuses"):
            if isinstance(kept.get(key), list):
                kept[key] = [_only(c, CONTAINER_STATUS_KEPT) for c in kept[key]]
        if isinstance(kept.get("conditions"), list):
            kept["conditions"] = [c for c in kept["conditions"] if _get(c, "type") in CONDITIONS_KEPT]
        slim["status"] = kept
    elif status is not None:
        slim["status"] = status
    shared: dict[str, Any] = _shared(slim)
    return shared


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
        names = [f for f in _items(slim["finalizers"]) if isinstance(f, str) and len(f) <= FINALIZER_MAX]
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


def slim_config_map(obj: dict[str, Any]) -> dict[str, Any]:
    """The ConfigMap informer's transform (ControlUnits and ConfigMaps integrations own): the metadata
    as ``slim_metadata`` keeps it, without ``binaryData``, which nobody reads. ``data`` is kept as it
    is: the ControlUnit's ``spec.json`` snapshot is read from it. Idempotent, and it never changes
    ``obj``."""
    slim: dict[str, Any] = {key: value for key, value in obj.items() if key not in ("metadata", "binaryData")}
    if "metadata" in obj:
        slim["metadata"] = slim_metadata(obj["metadata"])
    return slim


def slim_taskset(obj: dict[str, Any]) -> dict[str, Any]:
    """The TaskSet informer's transform: without managed fields, and with its strings interned. A
    status repeats most of its strings in every replica (phase, message, role, node, timestamps to the
    second), and TaskSets of one job kind repeat their templates: 20 TaskSets of 500 running replicas
    took 13.4 MiB decoded, 7.6 interned. Idempotent, and it never changes ``obj``."""
    shared: dict[str, Any] = _shared(strip_managed_fields(obj))
    return shared


def _shared(value: Any) -> Any:
    """``value`` with its strings interned. Most strings of a cached Pod repeat across the Pods of a
    TaskSet (namespace, labels, owner, phase, node, timestamps to the second): one copy of each took a
    running slim Pod from 5.7 to 4.0 KB (3.4 with the conditions dropped). An interned string is freed
    with its last Pod."""
    if isinstance(value, str):
        return sys.intern(value)
    if isinstance(value, dict):
        return {key: _shared(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shared(item) for item in value]
    return value


def _only(value: Any, keys: frozenset[str] | set[str]) -> Any:
    """A dict's entries under ``keys``; anything else unchanged (a malformed field stays malformed)."""
    return {k: v for k, v in value.items() if k in keys} if isinstance(value, dict) else value


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _items(value: object) -> list[Any]:
    """A list field as a list, whatever a malformed object holds there."""
    return value if isinstance(value, list) else []


def _count(value: object) -> int | None:
    """A decimal annotation as an int; ``isdigit`` alone admits digits ``int`` rejects (e.g. "²")."""
    return int(value) if isinstance(value, str) and value.isascii() and value.isdigit() else None


def controller_ref(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """The object's controlling owner reference, or an empty mapping."""
    for ref in _items(_get(obj, "metadata", "ownerReferences")):
        if isinstance(ref, dict) and ref.get("controller") is True and isinstance(ref.get("uid"), str):
            return ref
    return {}


def controller_uid(obj: Mapping[str, Any]) -> str | None:
    """UID of the object's controlling owner, if any."""
    uid = controller_ref(obj).get("uid")
    return str(uid) if uid else None


@dataclass(frozen=True)
class Terminated:
    exit_code: int
    message: str
    signal: int
    reason: str
    finished_at: str | None


@dataclass(frozen=True)
class ContainerWaiting:
    """A container of a Pending Pod that waits for something other than its normal start."""

    container: str
    reason: str
    message: str


@dataclass(frozen=True)
class PodView:
    """The facts about one Pod that the replica machine and status capture need."""

    name: str
    uid: str
    phase: str
    deleting: bool
    controller_uid: str | None
    taskset_uid: str
    replica_attempt_id: int | None
    taskset_name: str = ""  # the TaskSet annotation: which TaskSet (by name) made this Pod
    host_ip: str = ""
    pod_ip: str = ""
    reason: str = ""
    message: str = ""
    start_time: str | None = None
    container_name: str = ""
    container_id: str = ""
    terminated: Terminated | None = None
    unschedulable_message: str = ""
    waiting: ContainerWaiting | None = None  # only for a Pending Pod
    # Since when the Pod is being deleted, and the finalizers holding it (issue 30, item 6: a Pod held
    # in Terminating is named with them).
    deletion_timestamp: str | None = None
    finalizers: tuple[str, ...] = ()

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_POD_PHASES

    @property
    def assigned(self) -> bool:
        return bool(self.host_ip and self.pod_ip)

    @property
    def running(self) -> bool:
        return self.phase == "Running"


def _main_container(pod: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]]:
    """The first container declared in the spec is the workload (W-13), with its status if reported."""
    containers = _items(_get(pod, "spec", "containers"))
    name = _str(containers[0].get("name")) if containers and isinstance(containers[0], dict) else ""
    for status in _items(_get(pod, "status", "containerStatuses")):
        if isinstance(status, dict) and (not name or status.get("name") == name):
            return name or _str(status.get("name")), status
    return name, {}


def _terminated(container: Mapping[str, Any]) -> Terminated | None:
    state = _get(container, "state", "terminated")
    if not isinstance(state, dict) or not isinstance(state.get("exitCode"), int):
        return None
    return Terminated(  # texts bounded as the status keeps them, so logs of the exit are too (issue 30)
        exit_code=state["exitCode"],
        message=clip(_str(state.get("message")), EXIT_MESSAGE_MAX),
        signal=state["signal"] if isinstance(state.get("signal"), int) else 0,
        reason=clip(_str(state.get("reason")), REASON_MAX),
        finished_at=state.get("finishedAt") if isinstance(state.get("finishedAt"), str) else None,
    )


def _unschedulable(pod: Mapping[str, Any]) -> str:
    for condition in _items(_get(pod, "status", "conditions")):
        if (
            isinstance(condition, dict)
            and condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
            and condition.get("reason") == "Unschedulable"
        ):
            return _str(condition.get("message")) or "Unschedulable"
    return ""


def _container_waiting(pod: Mapping[str, Any]) -> ContainerWaiting | None:
    """The first container, init containers first (they run first), stuck in a waiting state that
    will not clear by itself. Only a Pending Pod counts: a running Pod's restarts are its own business."""
    if (_str(_get(pod, "status", "phase")) or POD_PHASE_PENDING) != POD_PHASE_PENDING:
        return None
    statuses = _items(_get(pod, "status", "initContainerStatuses")) + _items(
        _get(pod, "status", "containerStatuses")
    )
    for status in statuses:
        waiting = _get(status, "state", "waiting")
        reason = _str(_get(waiting, "reason"))
        if reason and reason not in STARTING_WAITING_REASONS:
            return ContainerWaiting(_str(_get(status, "name")), reason, _str(_get(waiting, "message")))
    return None


def pod_view(pod: Mapping[str, Any]) -> PodView:
    annotations = _get(pod, "metadata", "annotations") or {}
    attempt = annotations.get(ANNOTATION_REPLICA_ATTEMPT_ID) if isinstance(annotations, dict) else None
    container_name, container = _main_container(pod)
    return PodView(
        name=_str(_get(pod, "metadata", "name")),
        uid=_str(_get(pod, "metadata", "uid")),
        phase=_str(_get(pod, "status", "phase")) or POD_PHASE_PENDING,
        deleting=_get(pod, "metadata", "deletionTimestamp") is not None,
        controller_uid=controller_uid(pod),
        taskset_uid=_str(annotations.get(ANNOTATION_TASKSET_UID)) if isinstance(annotations, dict) else "",
        taskset_name=_str(annotations.get(ANNOTATION_TASKSET)) if isinstance(annotations, dict) else "",
        replica_attempt_id=_count(attempt),
        host_ip=_str(_get(pod, "status", "hostIP")),
        pod_ip=_str(_get(pod, "status", "podIP")),
        # Quoted in the replica's phaseMessage (P5): bounded so that the words after them fit (issue 30).
        reason=clip(_str(_get(pod, "status", "reason")), REASON_MAX),
        message=clip(_str(_get(pod, "status", "message")), QUOTED_MAX),
        start_time=_get(pod, "status", "startTime")
        if isinstance(_get(pod, "status", "startTime"), str)
        else None,
        container_name=container_name,
        container_id=_str(container.get("containerID")),
        terminated=_terminated(container),
        unschedulable_message=_unschedulable(pod),
        waiting=_container_waiting(pod),
        deletion_timestamp=_timestamp(_get(pod, "metadata", "deletionTimestamp")),
        finalizers=_finalizers(pod),
    )


def _timestamp(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _finalizers(obj: Mapping[str, Any]) -> tuple[str, ...]:
    """The finalizers as the caches keep them (``slim_metadata``): names of a finalizer's length, the
    first FINALIZERS_KEPT, so a live object's list is bounded the same way."""
    names = [f for f in _items(_get(obj, "metadata", "finalizers")) if isinstance(f, str)]
    return tuple(f for f in names if len(f) <= FINALIZER_MAX)[:FINALIZERS_KEPT]


@dataclass(frozen=True)
class ControlUnitView:
    name: str
    uid: str
    deleting: bool
    controller_uid: str | None
    # The spec the attempt started with (W-18), if the ControlUnit carries a snapshot.
    spec_snapshot: str | None = None
    controller_kind: str = ""
    controller_name: str = ""


def control_unit_view(cm: Mapping[str, Any], snapshot_key: str) -> ControlUnitView:
    data = _get(cm, "data") or {}
    snapshot = data.get(snapshot_key) if isinstance(data, dict) else None
    return ControlUnitView(
        name=_str(_get(cm, "metadata", "name")),
        uid=_str(_get(cm, "metadata", "uid")),
        deleting=_get(cm, "metadata", "deletionTimestamp") is not None,
        controller_uid=controller_uid(cm),
        spec_snapshot=snapshot if isinstance(snapshot, str) else None,
        controller_kind=_str(controller_ref(cm).get("kind")),
        controller_name=_str(controller_ref(cm).get("name")),
    )


@dataclass(frozen=True)
class OwnedView:
    """An object an integration asked for, as the cache shows it: enough to tell whether it exists, is
    ours (its controlling owner's UID) and is going away."""

    name: str
    uid: str
    deleting: bool
    controller_uid: str | None


def owned_view(obj: Mapping[str, Any]) -> OwnedView:
    return OwnedView(
        name=_str(_get(obj, "metadata", "name")),
        uid=_str(_get(obj, "metadata", "uid")),
        deleting=_get(obj, "metadata", "deletionTimestamp") is not None,
        controller_uid=controller_uid(obj),
    )


class PodClass(Enum):
    """How a Pod found under a replica's name relates to that replica (spec 5.3.1)."""

    ABSENT = "absent"  # no Pod under the name
    CURRENT = "current"  # the replica's recorded Pod (UID matches)
    ADOPTABLE = "adoptable"  # this attempt's Pod, not yet recorded (lost status write, W-1)
    DUPLICATE = "duplicate"  # controlled by the current ControlUnit, but not the recorded Pod
    NEXT = "next"  # a later attempt's Pod, made by a controller that died before recording the retry
    PREVIOUS = "previous"  # an earlier attempt's Pod of this replica, still going away
    FOREIGN = "foreign"  # someone else's Pod holds the name


def classify_pod(
    pod: PodView | None,
    *,
    recorded_uid: str | None,
    control_unit_uid: str | None,
    taskset_uid: str,
    replica_attempt: int,
    taskset_name: str = "",
) -> PodClass:
    """Spec 5.3.1. A Pod made by an earlier TaskSet *object* of the same name (deleted and re-created,
    W-16) counts as previous too: it is on its way out with its owner, not someone else's Pod.

    Two cases come from a controller killed between an action and its status write: a Pod of a *later*
    replica attempt than the status records (the retry was started but not recorded) is the next
    attempt's, to be adopted once the retry is recorded, never deleted as a duplicate; and an unrecorded
    Pod that is already being deleted is waited for, not adopted only to be lost again."""
    if pod is None:
        return PodClass.ABSENT
    if recorded_uid and pod.uid == recorded_uid:
        return PodClass.CURRENT
    ours_now = control_unit_uid is not None and pod.controller_uid == control_unit_uid
    if ours_now and pod.replica_attempt_id is not None and pod.replica_attempt_id >= replica_attempt:
        if not recorded_uid:
            return PodClass.PREVIOUS if pod.deleting else PodClass.ADOPTABLE
        return PodClass.NEXT if pod.replica_attempt_id > replica_attempt else PodClass.DUPLICATE
    if ours_now or (taskset_uid and pod.taskset_uid == taskset_uid):
        return PodClass.PREVIOUS
    if taskset_name and pod.taskset_name == taskset_name and pod.taskset_uid and pod.controller_uid:
        return PodClass.PREVIOUS
    return PodClass.FOREIGN


@dataclass(frozen=True)
class Observed:
    """Everything one reconcile pass knows about the cluster besides the TaskSet itself."""

    control_unit: ControlUnitView | None  # the ConfigMap under the current attempt's name
    pods: Mapping[str, PodView] = field(default_factory=dict)  # by name, this TaskSet's replica names
    # ControlUnits controlled by this TaskSet under other names (T15 removes strays at the end).
    other_control_units: tuple[ControlUnitView, ...] = ()
    # Objects integrations own, controlled by this TaskSet or its current ControlUnit: by (kind key, name).
    owned: Mapping[tuple[str, str], OwnedView] = field(default_factory=dict)
