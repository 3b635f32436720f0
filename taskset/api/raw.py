"""The raw shapes of a TaskSet: what the API server sends and stores, as ``TypedDict``s whose keys are
the exact JSON names. The parsed, defaulted views are in ``spec`` and ``status``; these say what the
JSON looks like, for the code and the tests that read or write it as dicts."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


class RawBackoff(TypedDict, total=False):
    """Exponential retry delays, in seconds; ``initialDelay`` required."""

    initialDelay: int
    factor: int
    maxDelay: int
    jitterPercent: int


class RawRetryPolicy(TypedDict, total=False):
    retry: bool
    maxRetryCount: int
    delay: int  # seconds
    backoff: RawBackoff


class RawExitCodes(TypedDict, total=False):
    containerName: str
    operator: str  # In | NotIn
    values: list[int | str]  # an exit code, or "low-high"


class RawPodCondition(TypedDict, total=False):
    type: str
    status: str  # default "True"


class RawFailureRule(TypedDict, total=False):
    """Its criteria (``taskset.api.failures``): every criterion given must hold; at least one is."""

    name: str
    action: str
    onExitCodes: RawExitCodes
    onTerminatedReasons: list[str]
    onPodReasons: list[str]
    onPodConditions: list[RawPodCondition]


class RawCompletionPolicy(TypedDict, total=False):
    minSucceeded: int
    maxFailed: int


class RawEventPolicy(TypedDict, total=False):
    event: str
    action: str


class RawRole(TypedDict, total=False):
    name: str
    replicas: int
    completionPolicy: RawCompletionPolicy
    retryPolicy: RawRetryPolicy
    eventPolicy: list[RawEventPolicy]  # singular JSON name, list value
    template: dict[str, Any]  # core/v1 PodTemplateSpec
    failureRules: list[RawFailureRule]  # matched before the TaskSet's defaults


class RawTaskSetSpec(TypedDict, total=False):
    retryPolicy: RawRetryPolicy
    roles: list[RawRole]
    failureRules: list[RawFailureRule]  # every role's, after its own
    queue: str  # reserved: accepted, preserved, ignored
    priority: int  # reserved: accepted, preserved, ignored


class RawObjectMeta(TypedDict, total=False):
    name: str
    namespace: str
    uid: str
    generation: int
    resourceVersion: str
    creationTimestamp: str
    deletionTimestamp: str
    labels: dict[str, str]
    annotations: dict[str, str]


class RawTerminatedInfo(TypedDict):
    exitCode: int
    exitMessage: str
    signal: int
    reason: str


class RawFailureRecord(TypedDict):
    """The failure rule the current attempt matched, its action and why."""

    rule: str
    action: str
    message: str


class RawReplicaStatus(TypedDict):
    index: int
    name: str  # the role's name, not the Pod's
    phase: str
    phaseMessage: str
    stopped: bool
    transitionTime: str
    startAt: str | None
    finishAt: str | None
    totalRetriedCount: int
    podName: str
    podReason: str
    podUID: str | None
    podIP: str
    podHostIP: str
    containerName: str
    containerID: str
    terminatedInfo: RawTerminatedInfo | None
    uncountedRetries: NotRequired[int]  # retries a failure rule did not count
    failure: NotRequired[RawFailureRecord | None]  # the failure rule its failed attempt matched
    nextRetryAt: NotRequired[str | None]  # when the retry is due (backoff)


class RawReplicaCounts(TypedDict):
    """A role's replicas by what they do (``taskset.api.compact.replica_counts``)."""

    waiting: int  # AttemptPending, CreationRequested, Preparing, Assigned
    running: int  # AttemptRunning, or ending the attempt (DeletionPending/Requested, AttemptCompleted)
    succeeded: int  # TaskRoleReplicaCompleted with exit code 0
    failed: int  # TaskRoleReplicaCompleted otherwise, not stopped
    retrying: int  # AttemptRetryPending
    stopped: int  # TaskRoleReplicaCompleted, stopped by its role's or the TaskSet's end, no exit code 0


class RawReplicaTexts(TypedDict, total=False):
    """One distinct combination of replica texts in the compact shape; absent keys are empty."""

    phaseMessage: str
    podReason: str
    podHostIP: str
    containerName: str
    exitCode: int  # present when the container ended, with signal and reason
    signal: int
    reason: str
    failureRule: str  # the failure rule that matched
    failureMessage: str


class RawReplicaRows(TypedDict):
    """A role's replicas in the compact shape (``taskset.api.compact``)."""

    podNamePrefix: str  # "<taskset>-<role>-"
    texts: list[RawReplicaTexts]
    rows: list[str]  # "<phase letter><flags> <retries> <transition epoch> <podUID> <texts index>"


class RawRoleStatus(TypedDict):
    name: str
    phase: str
    phaseMessage: str
    transitionTime: str
    state: str
    stateMessage: str
    replicaCounts: RawReplicaCounts
    # Full shape: every replica. Compact shape: the replicas that are not fine, by index order.
    replicaStatus: list[RawReplicaStatus]
    replicaRows: NotRequired[RawReplicaRows]  # the compact shape only


class RawCondition(TypedDict):
    type: str
    status: str
    reason: str
    message: str
    lastTransitionTime: str
    observedGeneration: NotRequired[int]


class RawStatusSummary(TypedDict):
    """Progress strings for ``kubectl get`` columns, which can only show values, not compute them."""

    roles: str  # "<roles in TaskRoleCompleted>/<roles>", e.g. "1/2"
    replicas: str  # "<replicas in TaskRoleReplicaCompleted>/<replicas>", e.g. "5/8"
    # The roles' replicaCounts added up.
    waiting: int
    running: int
    succeeded: int
    failed: int
    retrying: int
    stopped: int


class RawAttemptResult(TypedDict):
    """R only: the current attempt's outcome once decided, kept past its ControlUnit (spec snapshot)."""

    succeeded: bool
    reason: str
    final: NotRequired[bool]  # no TaskSet retry may follow
    replica: NotRequired[RawEndedBy]  # the replica whose failure ended the attempt


class RawEndedBy(TypedDict):
    role: str
    index: int


class RawAttemptRecord(TypedDict):
    """One ended attempt in the attempt history (taskset.api.history)."""

    attempt: int
    startAt: str | None
    finishAt: str | None
    outcome: str  # Succeeded or Failed
    reason: str
    replica: str  # <role>-<index>, or "" when no replica's failure ended it
    exitCode: int | None
    rule: str
    action: str  # "" when no rule
    counted: bool  # a TaskSet retry was charged for it


class RawAttemptHistory(TypedDict):
    attempts: list[RawAttemptRecord]
    dropped: int


class RawTaskSetStatus(TypedDict):
    """The full status shape of spec 2.5: R writes every key, with null for unset pointers."""

    phase: str
    phaseMessage: str
    transitionTime: str
    state: str
    stateMessage: str
    controlUnitUID: str | None
    attemptSpecDigest: NotRequired[str | None]  # R only
    createdAt: str
    startAt: str | None
    finishAt: str | None
    totalRetriedCount: int
    preemptCount: int
    roleStatus: list[RawRoleStatus]
    observedGeneration: int
    attemptResult: RawAttemptResult | None
    nextRetryAt: NotRequired[str | None]  # when the retry is due (backoff)
    attemptStartAt: NotRequired[str | None]  # when the current attempt began
    attemptHistory: NotRequired[RawAttemptHistory]  # the last attempts, bounded
    conditions: list[RawCondition]
    summary: NotRequired[RawStatusSummary]


class RawTaskSet(TypedDict, total=False):
    apiVersion: str
    kind: str
    metadata: RawObjectMeta
    spec: RawTaskSetSpec
    status: RawTaskSetStatus
