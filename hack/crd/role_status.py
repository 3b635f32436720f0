"""``status.roleStatus[]``: a role's phase and state, its replicas counted by what they do, and each
replica's status, in the full shape (``replicaStatus``) or, for a large TaskSet, the compact one
(``replicaRows``, ``taskset.api.compact``); and the role's target count and last scale.

Every timestamp that may be unset is nullable (see ``hack.crd.status``).
"""

from __future__ import annotations

from hack.crd import failure_rules
from hack.crd.fields import Schema, count, enum, string, time
from taskset.api import constants as c
from taskset.api.compact import BUCKETS


def schema() -> Schema:
    return {
        "type": "object",
        "properties": {
            "name": string(),
            "phase": enum(c.RolePhase),
            "phaseMessage": string(),
            "transitionTime": time(nullable=True),
            "state": enum(c.State),
            "stateMessage": string(),
            "replicaCounts": _replica_counts("The role's replicas by what they do."),
            # Atomic, not a list-map: one entry per spec.roles entry, whatever the names.
            "replicaStatus": {
                "type": "array",
                "description": "Every replica; in the compact shape (replicaRows present), only the replicas "
                "that are not fine (failed, retried, a Pod reason, waiting for something), by index.",
                "items": _replica_schema(),
                "x-kubernetes-list-type": "atomic",
            },
            "replicaRows": _replica_rows(),
            "targetReplicas": {
                **count(),
                "description": "The replicas this attempt runs the role with, once it was scaled.",
            },
            "lastScale": _last_scale(),
        },
    }


def _replica_counts(description: str) -> Schema:
    """The role's replicas counted per bucket (waiting, running, succeeded, ...)."""
    return {
        "type": "object",
        "description": description,
        "properties": {bucket: count() for bucket in BUCKETS},
    }


def _last_scale() -> Schema:
    return {
        "type": "object",
        "description": "The role's last scale in this attempt: from, to, at, who asked "
        "(the manager that last wrote the count, best effort) and the membership generation.",
        "properties": {
            "from": count(),
            "to": count(),
            "at": time(),
            "by": string(),
            "generation": count(),
        },
    }


def _replica_schema() -> Schema:
    """One replica in the full shape: its phase, its current Pod, how its container ended, its retries."""
    return {
        "type": "object",
        "properties": {
            **_replica_phase(),
            **_replica_pod(),
            "terminatedInfo": {
                "type": "object",
                "nullable": True,
                "properties": {
                    "exitCode": {"type": "integer", "format": "int32"},
                    "exitMessage": string(),
                    "signal": {"type": "integer", "format": "int32"},
                    "reason": string(),
                },
            },
            **_replica_failure(),
            "nextAttempt": failure_rules.next_attempt_status(),
        },
    }


def _replica_phase() -> Schema:
    return {
        "index": count(),
        "name": {"type": "string", "description": "The role's name, not the Pod's."},
        "phase": enum(c.ReplicaPhase),
        "phaseMessage": string(),
        "stopped": {"type": "boolean"},
        "suspended": {"type": "boolean"},
        "transitionTime": time(nullable=True),
        "startAt": time(nullable=True),
        "finishAt": time(nullable=True),
        "totalRetriedCount": {
            **count(),
            "description": "Replica retries started; the replica attempt id.",
        },
    }


def _replica_pod() -> Schema:
    return {
        "podName": string(),
        "podReason": string(),
        "podUID": string(nullable=True),
        "podIP": string(),
        "podHostIP": string(),
        "containerName": string(),
        "containerID": string(),
    }


def _replica_failure() -> Schema:
    """What the replica's last failure matched and when its retry is due."""
    return {
        "uncountedRetries": {
            **count(),
            "description": "Retries not counted (platform failures).",
        },
        "failure": {
            "type": "object",
            "nullable": True,
            "description": "The failure rule the current attempt's failure matched, and why.",
            "properties": {"rule": string(), "action": enum(c.FailureAction), "message": string()},
        },
        "nextRetryAt": {
            **time(nullable=True),
            "description": "When the pending retry is due.",
        },
    }


def _replica_rows() -> Schema:
    """The compact shape of a role's replicas (taskset.api.compact), written only when the full shape
    would not fit in the status budget."""
    texts = {
        "type": "object",
        "properties": {
            "phaseMessage": string(),
            "podReason": string(),
            "podHostIP": string(),
            "containerName": string(),
            "exitCode": {"type": "integer", "format": "int32"},
            "signal": {"type": "integer", "format": "int32"},
            "reason": string(),
            # The failure rule's name and why go with the texts (its action is a row flag).
            "failureRule": string(),
            "failureMessage": string(),
        },
    }
    return {
        "type": "object",
        "description": "Compact shape of a large status: one row per replica, "
        "'<phase letter><flags> <retries> <transition epoch> <podUID> <texts index>'. See docs/status.md.",
        "properties": {
            "podNamePrefix": string(),
            "texts": {"type": "array", "items": texts, "x-kubernetes-list-type": "atomic"},
            "rows": {"type": "array", "items": string(), "x-kubernetes-list-type": "atomic"},
        },
    }
