"""``status`` (spec 2.5). The controller writes every key; pointers are null until set. Every status
timestamp is nullable, as Go's zero metav1.Time was for O: a null in a non-nullable field would be pruned
silently, losing the key, not rejected. Status must be written with PUT (or a JSON patch): a merge patch
treats null as "delete this key".

The TaskSet's own fields are here; a role's status is ``hack.crd.role_status``, the attempt history
``hack.crd.history``, and what scaling reads ``hack.crd.scale``.
"""

from __future__ import annotations

from hack.crd import failure_rules, history, node_loss, role_status, scale
from hack.crd.fields import Schema, count, enum, string, time
from taskset.api import constants as c
from taskset.api.compact import BUCKETS
from taskset.api.counted_eviction import COUNTED_EVICTION, COUNTED_EVICTION_KEY_BYTES
from taskset.api.retry_effects import MAX_AVOIDED_NODES


def schema() -> Schema:
    return {
        "type": "object",
        "properties": {
            **_state(),
            **_attempt(),
            "roleStatus": {
                "type": "array",
                "items": role_status.schema(),
                "x-kubernetes-list-type": "atomic",
            },
            "observedGeneration": count(),
            "attemptResult": _attempt_result(),
            **_retry_times(),
            "attemptHistory": history.schema(),
            **node_loss.status_properties(),
            "nextAttempt": {
                **failure_rules.next_attempt_status(),
                "description": "What every Pod of the next attempts changes after a failed attempt "
                "whose failures asked nextAttempt.avoidFailedNodes and a TaskSet retry followed: the "
                f"last {MAX_AVOIDED_NODES} nodes avoided (avoidNodes), after which attempt, and why.",
            },
            "conditions": {
                "type": "array",
                "items": _condition_schema(),
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"],
            },
            **scale.status_properties(),
            "summary": _summary(),
        },
    }


def _state() -> Schema:
    """The TaskSet's phase (where its attempt is) and state (what a user sees), each with its message."""
    return {
        "phase": enum(c.TaskSetPhase),
        "phaseMessage": string(),
        "transitionTime": time(nullable=True),
        "state": enum(c.State),
        "stateMessage": string(),
    }


def _attempt() -> Schema:
    """The current attempt's ControlUnit and spec snapshot, the TaskSet's times, and its retry count."""
    return {
        "controlUnitUID": string(nullable=True),
        "attemptSpecDigest": {
            **string(nullable=True),
            "description": "R only: sha256 of the current attempt's ControlUnit spec snapshot, as the "
            "controller wrote it; a snapshot that does not match is never used.",
        },
        "createdAt": time(nullable=True),
        "startAt": time(nullable=True),
        "finishAt": time(nullable=True),
        "totalRetriedCount": {**count(), "description": "TaskSet retries started; the attempt id."},
        "preemptCount": {
            **count(),
            "description": "Preemptions of the TaskSet's Pods so far, across its attempts "
            "(bounded by spec.retryPolicy.maxPreemptions).",
        },
        COUNTED_EVICTION: {
            **string(),
            "maxLength": COUNTED_EVICTION_KEY_BYTES,
            "description": "R only: the last Kueue eviction of the TaskSet's Workload by preemption that "
            "preemptCount counts, as <Workload UID>@<eviction time>, so it is counted once.",
        },
    }


def _attempt_result() -> Schema:
    """The current attempt's outcome, kept in the status so it outlives the ControlUnit."""
    return {
        "type": "object",
        "nullable": True,
        "description": "R only: the current attempt's outcome once its policies decided it, kept so "
        "the final state survives the ControlUnit (and its spec snapshot) going away.",
        "properties": {
            "succeeded": {"type": "boolean"},
            "reason": string(),
            "final": {"type": "boolean", "description": "No TaskSet retry may follow."},
            "replica": {
                "type": "object",
                "description": "The replica whose failure ended the attempt.",
                "properties": {"role": string(), "index": count()},
            },
        },
    }


def _retry_times() -> Schema:
    return {
        "nextRetryAt": {
            **time(nullable=True),
            "description": "When the pending retry is due.",
        },
        "attemptStartAt": {
            **time(nullable=True),
            "description": "When the current attempt began (entered AttemptPending).",
        },
    }


def _condition_schema() -> Schema:
    """metav1.Condition with the validations Kubernetes' own types carry."""
    return {
        "type": "object",
        "required": ["lastTransitionTime", "message", "reason", "status", "type"],
        "properties": {
            "lastTransitionTime": time(),
            "message": {"type": "string", "maxLength": 32768},
            "observedGeneration": count(),
            "reason": {
                "type": "string",
                "minLength": 1,
                "maxLength": 1024,
                "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
            },
            "status": enum(c.ConditionStatus),
            "type": {
                "type": "string",
                "maxLength": 316,
                "pattern": r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
            },
        },
    }


def _summary() -> Schema:
    """Progress for ``kubectl get`` (the printer columns read it)."""
    return {
        "type": "object",
        "description": "Progress for kubectl get.",
        "properties": {
            "roles": {"type": "string", "description": "Completed roles / roles, e.g. 1/2."},
            "replicas": {"type": "string", "description": "Completed replicas / replicas, e.g. 5/8."},
            **{bucket: count() for bucket in BUCKETS},
        },
    }
