"""Every string the TaskSet controller puts on the wire, in one place.

Status consumers (the Octopus pipeline, dashboards, log queries) switch on these strings, so they are
byte-identical to the original Go controller (O) except where the spec's decision D3 fixes a typo: the
replica phase ``TaskRoleReplicaAttemptDeletionPending`` (O: ``...DeletonPending``) and the event reason
``TaskSet Succeeded`` (O: two spaces). O's other misspellings (``UnhandleSitutation``, ``beacause``,
``faild``) are kept on purpose: changing them would break the queries that match them. Spec section 3.4
lists which of these tests may assert exactly.

Families with a closed set of values are ``StrEnum``s, so ``RolePhase.COMPLETED == "TaskRoleCompleted"``
and the members serialize as plain strings; everything else is a ``Final`` string.

The controller adds no finalizers: cleanup rides on owner references and the garbage collector
(TaskSet -> ControlUnit ConfigMap -> Pods, spec section 3.2).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

# ----- resource identity (spec 2.1) -------------------------------------------------------------------
GROUP: Final = "octopus.openi.pcl.cn"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "TaskSet"
LIST_KIND: Final = "TaskSetList"
PLURAL: Final = "tasksets"
SINGULAR: Final = "taskset"
SHORT_NAMES: Final = ("ts",)
# Not "all": `kubectl delete all --all` would then delete TaskSets too, which nobody expects.
CATEGORIES: Final = ("octopus",)
CRD_NAME: Final = f"{PLURAL}.{GROUP}"

# ----- names and bounds (spec 2.2, 2.4, D2) -------------------------------------------------------------
# DNS-1123 label: what a Pod name and hostname must be, and so what TaskSet and role names are (D2).
DNS1123_LABEL_PATTERN: Final = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS1123_LABEL_MAX_LENGTH: Final = 63
# A Pod name doubles as its hostname, so it must be a DNS-1123 label too.
POD_NAME_MAX_LENGTH: Final = 63
# O's pattern for the reserved spec.queue field, unchanged.
QUEUE_PATTERN: Final = "^[a-z0-9]{1,63}$"
MIN_REPLICAS: Final = 1
MAX_REPLICAS: Final = 10_000
# The largest supported TaskSet: the status budget (taskset.api.compact) is proved for these.
MAX_TOTAL_REPLICAS: Final = 10_000  # replicas of all roles together
MAX_ROLES: Final = 100
# Retry bounds: generous for any real job, and small enough that `now + delay` can never overflow a
# datetime and `count + 1` never leaves int64. Relaxing them later is compatible; tightening is not.
MAX_RETRY_COUNT: Final = 1_000_000
MAX_RETRY_DELAY_SECONDS: Final = 366 * 24 * 3600

# ----- shared clusters ----------------------------------------------------------------------
# spec.managedBy names the controller that reconciles a TaskSet, as the Job's field of that name does: a
# multi-cluster dispatcher (MultiKueue) claims a TaskSet by writing its own name there, and this
# controller then leaves the TaskSet alone. Absent means this controller, whose name is this one.
CONTROLLER_NAME: Final = f"{GROUP}/taskset-controller"
# The Job's rule for spec.managedBy: a domain-prefixed path (at most 63 characters in all).
MANAGED_BY_PATTERN: Final = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[-a-zA-Z0-9_.~%!$&'()*+,;=:@/]+$"
MANAGED_BY_MAX_LENGTH: Final = 63
MSG_MANAGED_BY_IMMUTABLE: Final = "spec.managedBy is immutable"

POD_NAME_FORMAT: Final = "{taskset}-{role}-{index}"  # the same in every attempt (D1)
CONTROL_UNIT_NAME_FORMAT: Final = "c-{taskset}-{attempt}"

# ----- labels and annotations on the objects the controller creates (spec 3.1, 3.2) ---------------------
LABEL_TASKSET: Final = "TaskSet"
LABEL_ROLE: Final = "PodTaskRole"

ANNOTATION_REPLICA_INDEX: Final = "RoleReplicaIndex"
ANNOTATION_TASKSET: Final = "TaskSet"
ANNOTATION_NAMESPACE: Final = "Namespace"
ANNOTATION_TASKSET_UID: Final = "TSUID"
ANNOTATION_CONTROL_UNIT_UID: Final = "CID"
ANNOTATION_TASKSET_ATTEMPT_ID: Final = "TaskSetAttemptID"  # R only (D1)
ANNOTATION_REPLICA_ATTEMPT_ID: Final = "ReplicaAttemptID"  # R only (D1)
# The creation proof (taskset.observed.proof): a keyed digest only the controller can write.
ANNOTATION_CREATION_PROOF: Final = "octopus.openi.pcl.cn/creation-proof"
# The label and annotation keys the controller writes (``build_pod``, ``control_unit``, owned objects),
# the only ones the caches keep (``taskset.observed.slim``). Read today: the TaskSet annotation (routing,
# ``pod_view``), TSUID, ReplicaAttemptID and the creation proof (``pod_view``); the rest are kept
# because they are ours and small, so that a reader added later finds them. A new key the controller
# writes and reads from a cached object must be added here.
OWN_LABELS: Final = frozenset({LABEL_TASKSET, LABEL_ROLE})
OWN_ANNOTATIONS: Final = frozenset(
    {
        ANNOTATION_REPLICA_INDEX,
        ANNOTATION_TASKSET,
        ANNOTATION_NAMESPACE,
        ANNOTATION_TASKSET_UID,
        ANNOTATION_CONTROL_UNIT_UID,
        ANNOTATION_TASKSET_ATTEMPT_ID,
        ANNOTATION_REPLICA_ATTEMPT_ID,
        ANNOTATION_CREATION_PROOF,
    }
)

# The ControlUnit's data key holding the attempt's spec snapshot (W-18; taskset.objects.controlunit).
CONTROL_UNIT_SNAPSHOT_KEY: Final = "spec.json"

# ----- environment variables prepended to every container and init container, in this order (3.2) ------
ENV_TASKSET_NAMESPACE: Final = "TASKSET_NAMESPACE"
ENV_TASKSET_NAME: Final = "TASKSET_NAME"
ENV_TASKROLE_NAME: Final = "TASKROLE_NAME"
ENV_TASKROLE_REPLICA_INDEX: Final = "TASKROLE_REPLICA_INDEX"
ENV_TASKSET_ATTEMPT_ID: Final = "TASKSET_ATTEMPT_ID"  # R only (D1)
ENV_TASKROLE_REPLICA_ATTEMPT_ID: Final = "TASKROLE_REPLICA_ATTEMPT_ID"  # R only (D1)
INJECTED_ENV_ORDER: Final = (
    ENV_TASKSET_NAMESPACE,
    ENV_TASKSET_NAME,
    ENV_TASKROLE_NAME,
    ENV_TASKROLE_REPLICA_INDEX,
    ENV_TASKSET_ATTEMPT_ID,
    ENV_TASKROLE_REPLICA_ATTEMPT_ID,
)

# ----- Pod defaults (spec 2.3) ---------------------------------------------------------------------------
DEFAULT_RESTART_POLICY: Final = "Never"  # W-12: Kubernetes' own default, Always, never completes
DEFAULT_TERMINATION_MESSAGE_POLICY: Final = "FallbackToLogsOnError"

# Pod-level reasons R records in replicaStatus.podReason (spec 5.3.1, 8.7).
POD_REASON_NAME_CONFLICT: Final = "PodNameConflict"
POD_REASON_CREATION_FAILED: Final = "PodCreationFailed"


# ----- phases and states (spec 5) ---------------------------------------------------------------------
class TaskSetPhase(StrEnum):
    """The TaskSet / attempt machine (spec 5.1.1)."""

    VALIDATION = "TaskSetValidation"
    ATTEMPT_PENDING = "TaskSetAttemptPending"
    ATTEMPT_CREATION_REQUESTED = "TaskSetAttemptCreationRequested"
    ATTEMPT_PREPARING = "TaskSetAttemptPreparing"
    ATTEMPT_RUNNING = "TaskSetAttemptRunning"
    ATTEMPT_DELETION_PENDING = "TaskSetAttemptDeletionPending"
    ATTEMPT_DELETION_REQUESTED = "TaskSetAttemptDeletionRequested"
    ATTEMPT_COMPLETED = "TaskSetAttemptCompleted"
    ATTEMPT_RETRY_PENDING = "TaskSetAttemptRetryPending"
    COMPLETED = "TaskSetCompleted"


class RolePhase(StrEnum):
    """The role machine (spec 5.2.1). The initial phase is "Waiting", not "Pending"."""

    WAITING = "TaskRoleWaiting"
    RUNNING = "TaskRoleRunning"
    CLEANING_PENDING = "TaskRoleCleaningPending"
    COMPLETED = "TaskRoleCompleted"


class ReplicaPhase(StrEnum):
    """The replica machine (spec 5.3.2)."""

    ATTEMPT_PENDING = "TaskRoleReplicaAttemptPending"
    ATTEMPT_CREATION_REQUESTED = "TaskRoleReplicaAttemptCreationRequested"
    ATTEMPT_PREPARING = "TaskRoleReplicaAttemptPreparing"
    ATTEMPT_ASSIGNED = "TaskRoleReplicaAttemptAssigned"
    ATTEMPT_RUNNING = "TaskRoleReplicaAttemptRunning"
    ATTEMPT_DELETION_PENDING = "TaskRoleReplicaAttemptDeletionPending"  # O: "DeletonPending" (D3)
    ATTEMPT_DELETION_REQUESTED = "TaskRoleReplicaAttemptDeletionRequested"
    ATTEMPT_COMPLETED = "TaskRoleReplicaAttemptCompleted"
    ATTEMPT_RETRY_PENDING = "TaskRoleReplicaAttemptRetryPending"
    COMPLETED = "TaskRoleReplicaCompleted"


class State(StrEnum):
    """The human-facing state of a TaskSet or a role (spec 5.4). Replicas have none."""

    WAITING = "Waiting"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"


# ----- event policy vocabulary (spec 2.2, 6.2) -----------------------------------------------------------
class RoleEvent(StrEnum):
    ROLE_FAILED = "RoleFailed"
    ROLE_SUCCEEDED = "RoleSucceeded"
    ROLE_COMPLETED = "RoleCompleted"


class TaskSetAction(StrEnum):
    TASKSET_FAILED = "TaskSetFailed"
    TASKSET_SUCCEEDED = "TaskSetSucceeded"
    TASKSET_COMPLETED = "TaskSetCompleted"
    NO_ACTION = "NoAction"


# ----- failure rules ---------------------------------------------------------------------------
class FailureAction(StrEnum):
    """What a failure rule does with the replica attempt it matched."""

    RETRY_NOT_COUNTED = "RetryNotCounted"  # a platform failure: retry, not counted against maxRetryCount
    RETRY_COUNTED = "RetryCounted"  # today's behaviour and the default: the role's retry policy decides
    FAIL_ROLE = "FailRole"  # no retry; the role fails at once, whatever its completion policy
    FAIL_TASKSET = "FailTaskSet"  # no retry; the attempt fails at once and no TaskSet retry follows
    RESTART_TASKSET = "RestartTaskSet"  # no retry; the attempt fails at once, the TaskSet's policy decides
    # The kubelet restarts all the Pod's containers in place on a matching exit (the Pod API's
    # restartPolicyRules, RestartAllContainers); a Pod that still ends (a cluster without the feature)
    # is retried as RetryCounted.
    RESTART_IN_PLACE = "RestartInPlace"


class ExitCodeOperator(StrEnum):
    IN = "In"
    NOT_IN = "NotIn"


# At most this many rules in one list (the Job's podFailurePolicy allows 20), this many exit codes or
# ranges, reasons or conditions in one rule (the Job allows 255 exit codes).
MAX_FAILURE_RULES: Final = 20
MAX_RULE_VALUES: Final = 255
MAX_EXIT_CODE: Final = 2_147_483_647
# A replica is retried without counting at most this many times: past it, a platform failure counts like
# any other, so a node that evicts a Pod forever cannot keep a TaskSet going forever.
MAX_UNCOUNTED_RETRIES: Final = 99  # two digits in a compact status row (taskset.api.compact)
# A Pod whose phase became Unknown (spec 8.2) and names no reason is matched as this Pod reason.
POD_REASON_NODE_LOST: Final = "NodeLost"
POD_CONDITION_DISRUPTION_TARGET: Final = "DisruptionTarget"


# ----- conditions (spec 2.5.1, D6) ---------------------------------------------------------------------
class ConditionType(StrEnum):
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    # R only: an attempt's ControlUnit snapshot was changed by someone else, or could not be
    # verified; it names the ControlUnit and stays as the record once set.
    CONTROL_UNIT_TAMPERED = "ControlUnitTampered"
    # R only: the API server refused a replica's Pod for good (PodSecurity admission,
    # an invalid Pod, ...); it names the Pod and the API server's words, and goes False once a Pod of
    # this TaskSet is created again.
    POD_CREATION_REFUSED = "PodCreationRefused"
    # R only: a Pod of this TaskSet has been terminating, held by finalizers, for
    # longer than --stuck-terminating-after; True while one is, False once none is.
    PODS_STUCK_TERMINATING = "PodsStuckTerminating"
    # R only: spec.suspend is true, so the attempt has no Pods and creates none until it is
    # false again; False (reason Resumed) once it was true and is no longer.
    SUSPENDED = "Suspended"
    # R only: a replica's Pod was preempted (taskset.decide.preemption); True from the first one on,
    # its message naming the last one and what preempted it, as far as the Pod says.
    PREEMPTED = "Preempted"


class ConditionStatus(StrEnum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


class ConditionReason(StrEnum):
    """`Running` False takes the new state as its reason; `Failed` distinguishes an illegal TaskSet."""

    RUNNING = "Running"
    WAITING = "Waiting"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    VALIDATION_FAILED = "ValidationFailed"
    SUSPENDED = "Suspended"  # the Suspended condition's reasons
    RESUMED = "Resumed"
    DEADLINE_EXCEEDED = "DeadlineExceeded"  # spec.activeDeadlineSeconds passed


# ----- Kubernetes events, all recorded on the TaskSet (spec 10.1) ----------------------------------------
EVENT_SOURCE_COMPONENT: Final = "TaskSetController"


class EventReason(StrEnum):
    # O also defines "TaskRole is waiting" but never emits it; R MUST NOT emit it, so it is absent here.
    TASKSET_STATE_TRANSITION = "TaskSet State Transition"
    TASKSET_RUNNING = "TaskSet is running"
    TASKSET_SUCCEEDED = "TaskSet Succeeded"  # O: "TaskSet  Succeeded" (two spaces), fixed by D3
    TASKSET_FAILED = "TaskSet Failed"
    TASKSET_RETRY = "Retry Taskset"
    ROLE_RUNNING = "TaskRole is running"
    ROLE_SUCCEEDED = "TaskRole Succeeded"
    ROLE_FAILED = "TaskRole Failed"
    POD_CREATION_FAILED = "PodCreationFailed"
    CONTROL_UNIT_CREATION_FAILED = "ControlUnitCreationFailed"
    POD_NAME_CONFLICT = "PodNameConflict"
    CONTROL_UNIT_NAME_CONFLICT = "ControlUnitNameConflict"
    # R only: a replica's Pod waits and will not start by itself, so the TaskSet would hang
    # silently. Once per Pod and cause, when the controller first sees it.
    POD_UNSCHEDULABLE = "PodUnschedulable"
    POD_CONTAINER_WAITING = "PodContainerWaiting"
    # R only: an integration holds a role's Pods (its objects are not there yet, or its gate
    # is closed); once per role when the reason changes. And its object that the API server refused.
    ROLE_HELD = "TaskRoleHeld"
    # R only: a running role's replicas changed (from -> to), once per scale.
    ROLE_SCALED = "TaskRoleScaled"
    OWNED_OBJECT_CREATION_FAILED = "OwnedObjectCreationFailed"
    # R only: the attempt's ControlUnit snapshot does not match the digest in the status.
    CONTROL_UNIT_TAMPERED = "ControlUnitTampered"
    # R only: the API server refused a status write for good (too large, invalid), so the
    # status itself cannot say so; once per distinct refusal, naming it and the status's size.
    STATUS_WRITE_REFUSED = "StatusWriteRefused"
    # R only: Pods held in Terminating by finalizers past --stuck-terminating-after
    # (once each time the set of stuck Pods changes), and a Pod left running after its ControlUnit was
    # deleted with orphan propagation, found by the UID the status recorded and deleted.
    POD_STUCK_TERMINATING = "PodStuckTerminating"
    ORPHANED_POD_DELETED = "OrphanedPodDeleted"
    # R only: a replica attempt failed, and which failure rule matched it, why, and its action.
    REPLICA_FAILURE = "ReplicaFailure"
    # R only: spec.suspend turned true (the Pods are being deleted) or false again.
    TASKSET_SUSPENDED = "TaskSetSuspended"
    TASKSET_RESUMED = "TaskSetResumed"
    # R only: an owned object's data that follows the TaskSet (the live membership) was not written, for
    # good: too large for the API server (said once per refused content) or refused by it.
    OWNED_OBJECT_UPDATE_REFUSED = "OwnedObjectUpdateRefused"
    # R only: someone else changed a field the controller declares on an object the TaskSet owns (a
    # Service's selector, a PodGroup's minMember): patched back, or, where that is forbidden (a Kueue
    # Workload), the attempt ends naming the object.
    OWNED_OBJECT_RESTORED = "OwnedObjectRestored"
    OWNED_OBJECT_CHANGED = "OwnedObjectChanged"
    # R only: replicas' Pods are on a lost node (once each time the set of lost nodes changes), and a
    # Pod of a lost node was force-deleted by spec.nodeLossPolicy so that its replica is replaced.
    NODE_LOST = "NodeLost"
    NODE_LOST_POD_DELETED = "NodeLostPodDeleted"
    # R only: an admitting system withdrew the attempt's admission to make room for another workload
    # (Kueue evicted its Workload by preemption), counted once against spec.retryPolicy.maxPreemptions.
    TASKSET_PREEMPTED = "TaskSetPreempted"


EVENT_TYPE_NORMAL: Final = "Normal"
EVENT_TYPE_WARNING: Final = "Warning"
# The reasons marked with a dagger in spec 10.1 (W-23); everything else is Normal.
WARNING_EVENT_REASONS: Final = frozenset(
    {
        EventReason.TASKSET_FAILED,
        EventReason.ROLE_FAILED,
        EventReason.POD_CREATION_FAILED,
        EventReason.CONTROL_UNIT_CREATION_FAILED,
        EventReason.POD_NAME_CONFLICT,
        EventReason.CONTROL_UNIT_NAME_CONFLICT,
        EventReason.NODE_LOST,
        EventReason.POD_UNSCHEDULABLE,
        EventReason.POD_CONTAINER_WAITING,
        EventReason.OWNED_OBJECT_CREATION_FAILED,
        EventReason.OWNED_OBJECT_UPDATE_REFUSED,
        EventReason.CONTROL_UNIT_TAMPERED,
        EventReason.STATUS_WRITE_REFUSED,
        EventReason.POD_STUCK_TERMINATING,
        EventReason.ORPHANED_POD_DELETED,
        EventReason.REPLICA_FAILURE,
        EventReason.OWNED_OBJECT_RESTORED,
        EventReason.OWNED_OBJECT_CHANGED,
    }
)

# ----- structured log records (spec 10.2, LOG.md) ----------------------------------------------------------
LOGGER_NAME: Final = "TaskSetController"


class QueryKey(StrEnum):
    TASKSET_PHASE_TRANSITION = "TaskSetPhaseTransition"
    ROLE_TRANSITION = "TaskRoleTransition"
    REPLICA_TRANSITION = "ReplicaTransition"
    POD_HISTORY = "PodHistory"
    UNHANDLED_SITUATION = "UnhandleSitutation"  # sic, as O writes it


LOG_MSG_TASKSET_PHASE_TRANSITION: Final = "TaskSet Phase Transition"
LOG_MSG_POD_ASSIGNED: Final = "TaskRole replica is assigned to node"
LOG_MSG_POD_RETRY: Final = "TaskRole replica is going to retry,log the pod history"
LOG_MSG_POD_COMPLETED: Final = "TaskRole replica attempt completed"
LOG_MSG_SYNC_FAILED: Final = "Failed to syncTaskSet"

# Field names of the log records. Plain strings (not an enum) because they become JSON object keys.
LOG_QUERY_KEY: Final = "QueryKey"
LOG_DEBUG_KEY: Final = "DebugKey"
LOG_TASKSET: Final = "TaskSet"
LOG_NAMESPACE: Final = "Namespace"
LOG_ROLE: Final = "Role"
LOG_POD_NAME: Final = "PodName"
LOG_PRE_PHASE: Final = "PrePhase"
LOG_NEXT_PHASE: Final = "NextPhase"
LOG_REASON: Final = "Reason"
LOG_ATTEMPT_ID: Final = "AttemptID"  # the replica's attempt id, as O writes it (spec 10.2)
LOG_TASKSET_ATTEMPT_ID: Final = "TaskSetAttemptID"
LOG_REPLICA_INDEX: Final = "ReplicaIndex"
LOG_POD_REASON: Final = "PodReason"
LOG_POD_IP: Final = "PodIP"
LOG_POD_HOST_IP: Final = "PodHostIP"
LOG_CONTAINER_NAME: Final = "ContainerName"
LOG_CONTAINER_ID: Final = "ContainerID"
LOG_PHASE: Final = "Phase"
LOG_PHASE_MESSAGE: Final = "PhaseMessage"
LOG_TRANSITION_TIME: Final = "TransitionTime"
LOG_STOPPED: Final = "Stopped"
LOG_START_AT: Final = "StartAt"
LOG_FINISH_AT: Final = "FinishAt"
LOG_CONTAINER_EXIT_CODE: Final = "ContainerExitCode"
LOG_CONTAINER_EXIT_MESSAGE: Final = "ContainerExitMessage"
LOG_CONTAINER_EXIT_SIGNAL: Final = "ContainerExitSignal"
LOG_CONTAINER_EXIT_REASON: Final = "ContainerExitReason"
LOG_KEY: Final = "key"
LOG_ERROR: Final = "error"

# ----- validation messages (spec 2.4; exact, asserted by tests) -----------------------------------------
# Formatted with str.format(role=..., event=..., action=...). The same texts are the CRD's CEL messages.
MSG_ROLE_NAME_CONFLICT: Final = "TaskRole naming conflicts,name:{role}"
MSG_MAX_FAILED_BELOW_ONE: Final = "MaxFailed cannot be smaller than 1 for TaskRole:{role}"
MSG_MIN_SUCCEEDED_BELOW_ONE: Final = "MinSucceeded cannot be smaller than 1 for TaskRole:{role}"
MSG_MAX_FAILED_ABOVE_REPLICAS: Final = "MaxFailed cannot be bigger than replica amount for TaskRole:{role}"
MSG_MIN_SUCCEEDED_ABOVE_REPLICAS: Final = (
    "MinSucceeded cannot be bigger than replica amount for TaskRole:{role}"
)
MSG_POD_NAME_TOO_LONG: Final = "Pod name cannot be longer than 63 characters for TaskRole:{role}"
MSG_UNKNOWN_EVENT: Final = "Unknown event '{event}' in eventPolicy of TaskRole:{role}"
MSG_UNKNOWN_ACTION: Final = "Unknown action '{action}' in eventPolicy of TaskRole:{role}"

# ----- completion and decision messages (spec 6.1, 6.3, 7; O's texts, typos included) -------------------
MSG_ROLE_MIN_SUCCEEDED_SATISFIED: Final = "Completion policy MinSucceeded satisfied,succeeded count:{count}"
MSG_ROLE_MAX_FAILED_SATISFIED: Final = "Completion policy MaxFailed  satisfied,faild count:{count}"
MSG_ROLE_NEITHER_THRESHOLD: Final = (
    "All replicas completed but neither MinSucceeded nor MaxFailed was reached, "
    "succeeded count:{succeeded}, failed count:{failed}"
)
# O's texts: "beacause" and the trailing space after "succeeded" are O's, kept byte for byte.
MSG_TASKSET_ROLE_SUCCEEDED: Final = "TaskSet completed beacause taskrole({role}) is succeeded "
MSG_TASKSET_ROLE_FAILED: Final = "TaskSet completed beacause taskrole({role}) is failed"
MSG_TASKSET_ALL_SUCCEEDED: Final = "TaskSet succeeded beacause all taskrole are succeeded"
MSG_TASKSET_SOME_FAILED: Final = (
    "TaskSet failed beacause all taskrole are completed,but some TaskRole are failed"
)
MSG_RETRY_ALLOWED: Final = "Policy.Retry is true,and current retry time is smaller than MaxRetryCount"
MSG_RETRY_FORBIDDEN: Final = "Retry is forbidden"
MSG_RETRY_EXHAUSTED: Final = "Can't retry anymore"
MSG_TASKSET_LEGAL: Final = "TaskSet is legal"
MSG_TASKSET_RETRYING: Final = "TaskSet is going to retry"
MSG_REPLICA_STOPPED: Final = "Replica is stopped by parent TaskRole"
# R: what happened, naming the object, instead of O's "ControlUnit was deleted
# externally" and "The Pod vanished".
MSG_CONTROL_UNIT_DELETED: Final = "ControlUnit {name} was deleted"
MSG_CONTROL_UNIT_BEING_DELETED: Final = "ControlUnit {name} is being deleted"
MSG_POD_DELETED: Final = "Pod {name} was deleted"
MSG_CONTROL_UNIT_NAME_CONFLICT: Final = "ControlUnit name conflict: {name}"
# The starts of a waiting replica's phaseMessage (taskset.decide.waiting writes them): the scheduler
# found no node, a container waits (``container <name> waiting: <reason>``), an integration holds the
# Pod back. The compact status shape (taskset.api.compact) keeps a message that starts so.
WAIT_UNSCHEDULABLE_PREFIX: Final = "Pod is unschedulable: "
WAIT_CONTAINER_PREFIX: Final = "container "
WAIT_HELD_PREFIX: Final = "Held: "
WAIT_PREFIXES: Final = (WAIT_UNSCHEDULABLE_PREFIX, WAIT_CONTAINER_PREFIX, WAIT_HELD_PREFIX)

# ----- run bounds -----------------------------------------------------------------------------
# The reason of the Failed condition of a TaskSet that outlived spec.activeDeadlineSeconds, as the Job's.
DEADLINE_EXCEEDED: Final = "DeadlineExceeded"
MSG_DEADLINE_EXCEEDED: Final = (
    DEADLINE_EXCEEDED + ": the TaskSet ran longer than activeDeadlineSeconds ({seconds}s)"
)
# The Pod reason a replica records when its Pod did not run within startDeadlineSeconds; the built-in
# failure rules treat it as a platform failure (retried without counting), a user's rule may say otherwise.
POD_REASON_START_DEADLINE: Final = "StartDeadlineExceeded"


class CleanPodPolicy(StrEnum):
    """What a finished TaskSet keeps of its Pods (``spec.cleanPodPolicy``, Kubeflow's name)."""

    NONE = "None"  # every Pod stays, running ones too, until the TaskSet is deleted
    RUNNING = "Running"  # the Pods still running are deleted; the finished ones stay
    ALL = "All"  # every Pod goes (the default: the behaviour of the spec, which keeps none)
