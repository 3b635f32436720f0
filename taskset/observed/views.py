"""What a reconcile sees: small frozen views over cached raw objects, built once per pass.

The machines never read raw dicts; they read these views. ``classify_pod`` sorts a Pod found under a
replica's name into the classes of spec 5.3.1, which is what makes stable names (D1) safe: only this
attempt's Pod is adopted, a previous attempt's Pod is waited for, anything else is a conflict.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final

from taskset.api.constants import (
    ANNOTATION_CREATION_PROOF,
    ANNOTATION_REPLICA_ATTEMPT_ID,
    ANNOTATION_TASKSET,
    ANNOTATION_TASKSET_UID,
    CONTROL_UNIT_SNAPSHOT_KEY,
)
from taskset.api.readers import (
    as_items,
    as_text,
    controller_ref,
    controller_uid,
    decimal_annotation,
    get_path,
    main_container,
)
from taskset.api.shared_keys import held_once
from taskset.api.status import EXIT_MESSAGE_MAX, IDENTIFIER_MAX, QUOTED_MAX, REASON_MAX, clip
from taskset.observed.nodes import NodeView
from taskset.observed.proof import ProofSubject, proves
from taskset.observed.slim import (
    CONDITIONS_KEPT,
    FINALIZER_MAX,
    FINALIZERS_KEPT,
    LIST_KEPT,
    NO_SNAPSHOT_DIGEST,
    SNAPSHOT_DIGEST_FIELD,
    declared_digests,
    snapshot_digest,
)

POD_PHASE_PENDING = "Pending"
POD_PHASE_UNKNOWN = "Unknown"  # the kubelet lost track of the Pod (node lost); O treats it as exited (8.2)
TERMINAL_POD_PHASES = frozenset({"Succeeded", "Failed", POD_PHASE_UNKNOWN})
# Container waiting reasons of a Pod that is simply starting: every other one (ErrImagePull,
# ImagePullBackOff, CreateContainerConfigError, CrashLoopBackOff of an init container, ...) means the
# Pod will not start until someone acts, which is worth telling the user.
STARTING_WAITING_REASONS = frozenset({"ContainerCreating", "PodInitializing"})


@dataclass(frozen=True, slots=True)
class Terminated:
    exit_code: int
    message: str
    signal: int
    reason: str
    finished_at: str | None


@dataclass(frozen=True, slots=True)
class ContainerExit:
    """How one container (init containers too) of a Pod ended: what failure rules match."""

    container: str
    exit_code: int
    reason: str


@dataclass(frozen=True, slots=True)
class ContainerWaiting:
    """A container of a Pending Pod that waits for something other than its normal start."""

    container: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
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
    proof: str = ""  # the creation-proof annotation (taskset.observed.proof), "" if none
    # Since when the Pod is being deleted, and the finalizers holding it (a Pod held
    # in Terminating is named with them).
    deletion_timestamp: str | None = None
    finalizers: tuple[str, ...] = ()
    # Every container's exit and the conditions the cache keeps (DisruptionTarget), as
    # (type, status), for the failure rules.
    exits: tuple[ContainerExit, ...] = ()
    conditions: tuple[tuple[str, str], ...] = ()
    ready: bool = False  # the Pod's Ready condition is True (a dependsOn ``until: Ready``)
    # The DisruptionTarget=True condition's (reason, message): who ended the Pod, e.g. the scheduler's
    # preemption (``PreemptionByScheduler``, its message naming the scheduler); None without one.
    disruption: tuple[str, str] | None = None
    # spec.nodeName: the node it was bound to, "" before scheduling (a lost node's replicas; the node a
    # failure rule may avoid next time)
    node_name: str = ""
    created_at: str | None = None  # metadata.creationTimestamp: a start deadline counts from it

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_POD_PHASES

    @property
    def assigned(self) -> bool:
        return bool(self.host_ip and self.pod_ip)

    @property
    def running(self) -> bool:
        return self.phase == "Running"


def _terminated(container: Mapping[str, Any]) -> Terminated | None:
    state = get_path(container, "state", "terminated")
    if not isinstance(state, dict) or not isinstance(state.get("exitCode"), int):
        return None
    return Terminated(  # texts bounded as the status keeps them, so logs of the exit are too
        exit_code=state["exitCode"],
        message=clip(as_text(state.get("message")), EXIT_MESSAGE_MAX),
        signal=state["signal"] if isinstance(state.get("signal"), int) else 0,
        reason=clip(as_text(state.get("reason")), REASON_MAX),
        finished_at=state.get("finishedAt") if isinstance(state.get("finishedAt"), str) else None,
    )


def _unschedulable(pod: Mapping[str, Any]) -> str:
    for condition in as_items(get_path(pod, "status", "conditions")):
        if (
            isinstance(condition, dict)
            and condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
            and condition.get("reason") == "Unschedulable"
        ):
            return clip(as_text(condition.get("message")), QUOTED_MAX) or "Unschedulable"
    return ""


def _exits(pod: Mapping[str, Any]) -> tuple[ContainerExit, ...]:
    """Every terminated container, init containers first, as the cache keeps them (bounded lists)."""
    statuses = (
        as_items(get_path(pod, "status", "initContainerStatuses"))[:LIST_KEPT]
        + as_items(get_path(pod, "status", "containerStatuses"))[:LIST_KEPT]
    )
    found = []
    for status in statuses:
        done = _terminated(status) if isinstance(status, dict) else None
        if done is not None:
            found.append(ContainerExit(as_text(status.get("name")), done.exit_code, done.reason))
    return tuple(found)


# A Pod's kept conditions, as (type, status) pairs, are one of a handful across all Pods (scheduled,
# ready, disrupted: true or false), so every view holds the tuple of them made first: a Pod's view
# 168 bytes smaller. Bounded: a stranger's Pod may say any status.
CONDITION_SETS_KEPT: Final = 64
_condition_sets: dict[tuple[tuple[str, str], ...], tuple[tuple[str, str], ...]] = {}


def _conditions(pod: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    found = tuple(
        (as_text(c.get("type")), as_text(c.get("status")))
        for c in as_items(get_path(pod, "status", "conditions"))
        if isinstance(c, dict) and isinstance(c.get("type"), str) and c["type"] in CONDITIONS_KEPT
    )
    return held_once(_condition_sets, found, found, CONDITION_SETS_KEPT)


def _disruption(pod: Mapping[str, Any]) -> tuple[str, str] | None:
    for c in as_items(get_path(pod, "status", "conditions")):
        if isinstance(c, dict) and c.get("type") == "DisruptionTarget" and c.get("status") == "True":
            return clip(as_text(c.get("reason")), REASON_MAX), clip(as_text(c.get("message")), QUOTED_MAX)
    return None


def _container_waiting(pod: Mapping[str, Any]) -> ContainerWaiting | None:
    """The first container, init containers first (they run first), stuck in a waiting state that
    will not clear by itself. Only a Pending Pod counts: a running Pod's restarts are its own business."""
    if (as_text(get_path(pod, "status", "phase")) or POD_PHASE_PENDING) != POD_PHASE_PENDING:
        return None
    statuses = as_items(get_path(pod, "status", "initContainerStatuses")) + as_items(
        get_path(pod, "status", "containerStatuses")
    )
    for status in statuses:
        waiting = get_path(status, "state", "waiting")
        reason = as_text(get_path(waiting, "reason"))
        if reason and reason not in STARTING_WAITING_REASONS:
            message = clip(as_text(get_path(waiting, "message")), QUOTED_MAX)
            return ContainerWaiting(as_text(get_path(status, "name")), clip(reason, REASON_MAX), message)
    return None


def _ready(pod: Mapping[str, Any]) -> bool:
    return any(
        isinstance(condition, dict) and condition.get("type") == "Ready" and condition.get("status") == "True"
        for condition in as_items(get_path(pod, "status", "conditions"))
    )


def pod_view(pod: Mapping[str, Any]) -> PodView:
    annotations = get_path(pod, "metadata", "annotations") or {}
    attempt = annotations.get(ANNOTATION_REPLICA_ATTEMPT_ID) if isinstance(annotations, dict) else None
    container_name, container = main_container(pod)
    return PodView(
        name=as_text(get_path(pod, "metadata", "name")),
        uid=as_text(get_path(pod, "metadata", "uid")),
        phase=as_text(get_path(pod, "status", "phase")) or POD_PHASE_PENDING,
        deleting=get_path(pod, "metadata", "deletionTimestamp") is not None,
        controller_uid=controller_uid(pod),
        taskset_uid=as_text(annotations.get(ANNOTATION_TASKSET_UID)) if isinstance(annotations, dict) else "",
        taskset_name=as_text(annotations.get(ANNOTATION_TASKSET)) if isinstance(annotations, dict) else "",
        replica_attempt_id=decimal_annotation(attempt),
        host_ip=as_text(get_path(pod, "status", "hostIP")),
        pod_ip=as_text(get_path(pod, "status", "podIP")),
        # Quoted in the replica's phaseMessage (P5): bounded so that the words after them fit.
        reason=clip(as_text(get_path(pod, "status", "reason")), REASON_MAX),
        message=clip(as_text(get_path(pod, "status", "message")), QUOTED_MAX),
        start_time=get_path(pod, "status", "startTime")
        if isinstance(get_path(pod, "status", "startTime"), str)
        else None,
        container_name=container_name,
        container_id=clip(as_text(container.get("containerID")), IDENTIFIER_MAX),
        terminated=_terminated(container),
        unschedulable_message=_unschedulable(pod),
        waiting=_container_waiting(pod),
        proof=_annotation(pod, ANNOTATION_CREATION_PROOF),
        deletion_timestamp=_timestamp(get_path(pod, "metadata", "deletionTimestamp")),
        finalizers=_finalizers(pod),
        exits=_exits(pod),
        conditions=_conditions(pod),
        ready=_ready(pod),
        disruption=_disruption(pod),
        node_name=as_text(get_path(pod, "spec", "nodeName")),
        created_at=_timestamp(get_path(pod, "metadata", "creationTimestamp")),
    )


def _timestamp(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _finalizers(obj: Mapping[str, Any]) -> tuple[str, ...]:
    """The finalizers as the caches keep them (``slim_metadata``): names of a finalizer's length, the
    first FINALIZERS_KEPT, so a live object's list is bounded the same way."""
    names = [f for f in as_items(get_path(obj, "metadata", "finalizers")) if isinstance(f, str)]
    return tuple(f for f in names if len(f) <= FINALIZER_MAX)[:FINALIZERS_KEPT]


@dataclass(frozen=True, slots=True)
class ControlUnitView:
    name: str
    uid: str
    deleting: bool
    controller_uid: str | None
    # The spec the attempt started with (W-18), if the ControlUnit carries a snapshot and its text is
    # known (``snapshot_known``): a cached ControlUnit has only its digest until the text is fetched.
    spec_snapshot: str | None = None
    controller_kind: str = ""
    controller_name: str = ""
    spec_digest: str = NO_SNAPSHOT_DIGEST  # ``snapshot_digest`` of the snapshot, known or not
    snapshot_known: bool = True


def control_unit_view(
    cm: Mapping[str, Any], snapshot_key: str = CONTROL_UNIT_SNAPSHOT_KEY
) -> ControlUnitView:
    """The view of a whole ConfigMap (a create's response, a live read), whose snapshot text is known,
    or of a cached one (``slim_config_map``), whose snapshot is known by its digest only."""
    cached = get_path(cm, SNAPSHOT_DIGEST_FIELD)
    data = get_path(cm, "data")
    snapshot = data.get(snapshot_key) if isinstance(data, dict) and not isinstance(cached, str) else None
    snapshot = snapshot if isinstance(snapshot, str) else None
    return ControlUnitView(
        name=as_text(get_path(cm, "metadata", "name")),
        uid=as_text(get_path(cm, "metadata", "uid")),
        deleting=get_path(cm, "metadata", "deletionTimestamp") is not None,
        controller_uid=controller_uid(cm),
        spec_snapshot=snapshot,
        controller_kind=as_text(controller_ref(cm).get("kind")),
        controller_name=as_text(controller_ref(cm).get("name")),
        spec_digest=cached if isinstance(cached, str) else snapshot_digest(snapshot),
        snapshot_known=not isinstance(cached, str),
    )


@dataclass(frozen=True, slots=True)
class OwnedView:
    """An object an integration asked for, as the cache shows it: enough to tell whether it exists, is
    ours (its controlling owner's UID) and is going away."""

    name: str
    uid: str
    deleting: bool
    controller_uid: str | None
    proof: str = ""  # the creation-proof annotation (taskset.observed.proof), "" if none
    # The types of its status.conditions that are "True" (a Kueue Workload's Admitted, Evicted).
    true_conditions: frozenset[str] = frozenset()
    # The reason, message and lastTransitionTime of each condition that is "True", by type (why and
    # when Kueue evicted a Workload).
    condition_words: Mapping[str, tuple[str, str, str]] = field(default_factory=dict, compare=False)
    # The rest of its status as its cache keeps it (``ObjectKind.kept``: a Workload's admission).
    status: Mapping[str, Any] = field(default_factory=dict, compare=False)
    # The digest of each field the controller declares for its kind (``ObjectKind.declared``) that it
    # holds, by dotted path: what the pass compares with the integration's declaration.
    declared: Mapping[str, str] = field(default_factory=dict, compare=False)


def _annotation(obj: Mapping[str, Any], key: str) -> str:
    annotations = get_path(obj, "metadata", "annotations")
    return as_text(annotations.get(key)) if isinstance(annotations, dict) else ""


def owned_view(obj: Mapping[str, Any], declared: tuple[tuple[str, ...], ...] = ()) -> OwnedView:
    """The view of a cached owned object, or of a whole one (a create's response, a live read) whose
    kind declares the fields ``declared``."""
    return OwnedView(
        name=as_text(get_path(obj, "metadata", "name")),
        uid=as_text(get_path(obj, "metadata", "uid")),
        deleting=get_path(obj, "metadata", "deletionTimestamp") is not None,
        controller_uid=controller_uid(obj),
        proof=_annotation(obj, ANNOTATION_CREATION_PROOF),
        true_conditions=frozenset(
            as_text(c.get("type"))
            for c in as_items(get_path(obj, "status", "conditions"))
            if isinstance(c, dict) and c.get("status") == "True"
        ),
        condition_words={
            as_text(c.get("type")): (
                as_text(c.get("reason")),
                as_text(c.get("message")),
                as_text(c.get("lastTransitionTime")),
            )
            for c in as_items(get_path(obj, "status", "conditions"))
            if isinstance(c, dict) and c.get("status") == "True"
        },
        status={k: v for k, v in status.items() if k != "conditions"}
        if isinstance(status := obj.get("status"), dict)
        else {},
        declared=declared_digests(obj, declared),
    )


class PodClass(Enum):
    """How a Pod found under a replica's name relates to that replica (spec 5.3.1)."""

    ABSENT = "absent"  # no Pod under the name
    CURRENT = "current"  # the replica's recorded Pod (UID matches)
    ADOPTABLE = "adoptable"  # this attempt's Pod, not yet recorded (lost status write, W-1)
    DUPLICATE = "duplicate"  # controlled by the current ControlUnit, but not the recorded Pod
    RESUMED = "resumed"  # this attempt's Pod made on a resume whose recording was lost: adopted, not deleted
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
    proof_key: bytes,
    namespace: str,
    taskset_name: str = "",
    deleted: Collection[str] = (),
    resumed: bool = False,
) -> PodClass:
    """Spec 5.3.1. A Pod made by an earlier TaskSet *object* of the same name (deleted and re-created,
    W-16) counts as previous too: it is on its way out with its owner, not someone else's Pod.

    Two cases come from a controller killed between an action and its status write: a Pod of a *later*
    replica attempt than the status records (the retry was started but not recorded) is the next
    attempt's, to be adopted once the retry is recorded, never deleted as a duplicate; and an unrecorded
    Pod that is already being deleted is waited for, not adopted only to be lost again. So is one whose
    delete the pass asked for (``deleted``, UIDs), which the cache does not show terminating yet: a
    suspension restarts the same replica attempt, so when the write of the pass that recreated a Pod
    after a resume is lost (a spec write made it conflict), the status still names the Pod the suspension
    deleted, the new one is a duplicate to delete, and adopting it would take that delete for someone
    else's. Unless the replica is marked ``resumed`` (its recorded Pod went away because of a
    suspension, and it waits for that Pod to be gone): then a proven Pod of the same attempt under the
    name, not being deleted, is the one the resume made, after the recorded one left the API server (the
    name held by one Pod at a time says so), and it is ``RESUMED``: the replica goes back to
    ``AttemptPending`` and adopts it there rather than deleting it and restarting the user's work.

    A Pod that claims this attempt or a later one (controlled by the ControlUnit, the attempt id in its
    annotation) is believed only with its creation proof (``taskset.observed.proof``): the claim is
    two fields any Pod writer in the namespace can copy; without the proof the Pod is a squatter."""
    if pod is None:
        return PodClass.ABSENT
    if recorded_uid and pod.uid == recorded_uid:
        return PodClass.CURRENT
    ours_now = control_unit_uid is not None and pod.controller_uid == control_unit_uid
    if ours_now and pod.replica_attempt_id is not None and pod.replica_attempt_id >= replica_attempt:
        subject = ProofSubject(namespace, pod.name, control_unit_uid or "", pod.replica_attempt_id)
        if not proves(pod.proof, proof_key, subject):
            return PodClass.FOREIGN
        if not recorded_uid:
            return PodClass.PREVIOUS if pod.deleting or pod.uid in deleted else PodClass.ADOPTABLE
        if pod.replica_attempt_id > replica_attempt:
            return PodClass.NEXT
        gone = pod.deleting or pod.uid in deleted
        return PodClass.RESUMED if resumed and not gone else PodClass.DUPLICATE
    if ours_now or (taskset_uid and pod.taskset_uid == taskset_uid):
        return PodClass.PREVIOUS
    if taskset_name and pod.taskset_name == taskset_name and pod.taskset_uid and pod.controller_uid:
        return PodClass.PREVIOUS
    return PodClass.FOREIGN


@dataclass(frozen=True, slots=True)
class Observed:
    """Everything one reconcile pass knows about the cluster besides the TaskSet itself."""

    control_unit: ControlUnitView | None  # the ConfigMap under the current attempt's name
    pods: Mapping[str, PodView] = field(default_factory=dict)  # by name, this TaskSet's replica names
    # ControlUnits controlled by this TaskSet under other names (T15 removes strays at the end).
    other_control_units: tuple[ControlUnitView, ...] = ()
    # Objects integrations own, controlled by this TaskSet or its current ControlUnit: by (kind key, name).
    owned: Mapping[tuple[str, str], OwnedView] = field(default_factory=dict)
    # The last view of this TaskSet's Pods deleted while disrupted, by name (runtime/disruptions).
    gone: Mapping[str, PodView] = field(default_factory=dict)
    # Cluster-scoped objects integrations read and do not own (a Kueue ResourceFlavor), by (kind key,
    # name), as their caches keep them (``taskset.observed.slim.slim_owned`` with the kind's ``kept``).
    read: Mapping[tuple[str, str], Mapping[str, Any]] = field(default_factory=dict)
    # The nodes this TaskSet's Pods are bound to, by name, as the node cache keeps them
    # (``taskset.observed.nodes``); a node the cache does not hold is absent.
    nodes: Mapping[str, NodeView] = field(default_factory=dict)
