"""``status.attemptHistory`` (``taskset.api.history``): the last attempts that ended, oldest first, each
entry's texts bounded in bytes, and how many older ones are no longer listed."""

from __future__ import annotations

from hack.crd.fields import Schema, count, enum, kept_last, string, time
from taskset.api import constants as c
from taskset.api.history import FAILED, HISTORY_MAX_ATTEMPTS, SUCCEEDED


def schema() -> Schema:
    return kept_last(
        f"The last {HISTORY_MAX_ATTEMPTS} ended attempts, oldest first, and how many older ones are no "
        "longer listed.",
        "attempts",
        HISTORY_MAX_ATTEMPTS,
        _entry(),
    )


def _entry() -> Schema:
    """One ended attempt: when, how it ended, and the replica, rule and action that ended it."""
    return {
        "type": "object",
        "properties": {
            "attempt": {**count(), "description": "The attempt's number (totalRetriedCount then)."},
            "startAt": time(nullable=True),
            "finishAt": time(nullable=True),
            "outcome": {"type": "string", "enum": [SUCCEEDED, FAILED]},
            "reason": string(),
            "replica": {**string(), "description": "<role>-<index> of the replica whose failure ended it."},
            "exitCode": {"type": "integer", "format": "int32", "nullable": True},
            "rule": {**string(), "description": "The failure rule that replica's failure matched."},
            # "" when no rule: the API server refuses a null for an enum, even a nullable one listing it.
            "action": {"type": "string", "enum": ["", *enum(c.FailureAction)["enum"]]},
            "counted": {
                "type": "boolean",
                "description": "A TaskSet retry was charged for it against retryPolicy.maxRetryCount.",
            },
            "preemptCount": {
                **count(),
                "description": "The TaskSet's preemptions so far when it ended (status.preemptCount).",
            },
        },
    }
