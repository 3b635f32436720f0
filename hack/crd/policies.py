"""The policies of a role and of the TaskSet: when a replica or an attempt is retried and how long it waits
(``retryPolicy``, with its exponential ``backoff``), when a role completes (``completionPolicy``, its
thresholds a count or a percentage) and what a role's completion means for the TaskSet (``eventPolicy``).

``retryPolicy`` appears twice, on each role and on the TaskSet; each call builds a new schema.
"""

from __future__ import annotations

from hack.crd.fields import Schema, cel_prefix
from taskset.api import constants as c
from taskset.api.spec import MAX_BACKOFF_FACTOR
from taskset.api.thresholds import PERCENT_PATTERN


def retry_policy(scope: str, *, preemptions: bool = False) -> Schema:
    """``preemptions``: the TaskSet's policy, which also bounds the preemptions of its Pods."""
    schema: Schema = {
        "type": "object",
        "description": f"Retry policy {scope}. Absent: no retry.",
        "properties": {
            "retry": {"type": "boolean", "description": "Retries are allowed only if true."},
            "maxRetryCount": {
                "type": "integer",
                "format": "int32",
                "minimum": 0,
                "maximum": c.MAX_RETRY_COUNT,
                "description": "Retry while fewer retries than this were started: at most "
                "maxRetryCount + 1 attempts.",
            },
            "delay": {
                "type": "integer",
                "format": "int32",
                "minimum": 0,
                "maximum": c.MAX_RETRY_DELAY_SECONDS,
                "description": "Seconds to wait before the next attempt.",
            },
            "backoff": _backoff_schema(),
        },
    }
    if preemptions:
        schema["properties"]["maxPreemptions"] = {
            "type": "integer",
            "format": "int32",
            "minimum": 0,
            "maximum": c.MAX_RETRY_COUNT,
            "description": "Preemptions of the TaskSet's Pods it survives, each retried without counting "
            "against maxRetryCount; the next one fails the TaskSet. Absent: any number.",
        }
    return schema


def _backoff_schema() -> Schema:
    """``retryPolicy.backoff``: exponential delays instead of the fixed ``delay``."""

    def seconds(low: int, description: str) -> Schema:
        top = c.MAX_RETRY_DELAY_SECONDS
        return {
            "type": "integer",
            "format": "int32",
            "minimum": low,
            "maximum": top,
            "description": description,
        }

    return {
        "type": "object",
        "description": "Exponential delays, initialDelay * factor^n seconds before retry n + 1, "
        "at most maxDelay, lengthened by up to jitterPercent percent (deterministic per TaskSet UID, "
        "replica and retry). Replaces delay when given.",
        "required": ["initialDelay"],
        "properties": {
            "initialDelay": seconds(1, "Seconds before the first retry."),
            "factor": {
                "type": "integer",
                "format": "int32",
                "minimum": 1,
                "maximum": MAX_BACKOFF_FACTOR,
                "description": "Each delay is the previous one times this (default 2).",
            },
            "maxDelay": seconds(1, "The longest delay, in seconds (default: the longest delay allowed)."),
            "jitterPercent": {
                "type": "integer",
                "format": "int32",
                "minimum": 0,
                "maximum": 100,
                "description": "Lengthen each delay by up to this percent (default 0).",
            },
        },
        "x-kubernetes-validations": [
            {
                "rule": "!has(self.maxDelay) || self.maxDelay >= self.initialDelay",
                "message": "maxDelay must not be below initialDelay",
                "fieldPath": ".maxDelay",
            }
        ],
    }


def completion_policy() -> Schema:
    """``roles[].completionPolicy``: the role's success and failure thresholds."""
    return {
        "type": "object",
        "description": "When the role completes. Absent fields: minSucceeded = replicas, maxFailed = 1.",
        "properties": {
            "minSucceeded": _threshold("The role succeeds once this many replicas succeeded (1..replicas)."),
            "maxFailed": _threshold("The role fails once this many replicas failed for good (1..replicas)."),
        },
    }


def _threshold(description: str) -> Schema:
    """A completion threshold (``taskset.api.thresholds``): a count, or a percentage of the replicas
    rounded up."""
    return {
        "x-kubernetes-int-or-string": True,
        "description": f'{description} Or a percentage of replicas, "1%" to "100%", rounded up.',
        # Plain value validations, not CEL (a regex over an int-or-string is priced beyond the API server's
        # budget) nor a typed anyOf (not structural): minimum applies to integers only, pattern to strings.
        "minimum": 1,
        "pattern": PERCENT_PATTERN,
        "maxLength": 4,
    }


def completion_rules() -> list[Schema]:
    """CEL on a role: neither explicit completion count may exceed its replicas."""
    return [
        _completion_rule("minSucceeded", c.MSG_MIN_SUCCEEDED_ABOVE_REPLICAS),
        _completion_rule("maxFailed", c.MSG_MAX_FAILED_ABOVE_REPLICAS),
    ]


def _completion_rule(field: str, message_format: str) -> Schema:
    """CEL: an explicit completion count must not exceed replicas (D4, D7), or maxReplicas when the role
    has one (the threshold is then clamped to the current count); the path names the field. A percentage
    never does."""
    ceiling = "(has(self.maxReplicas) ? self.maxReplicas : self.replicas)"
    return {
        "rule": f"!has(self.completionPolicy) || !has(self.completionPolicy.{field}) || "
        f"type(self.completionPolicy.{field}) != int || "
        f"!has(self.replicas) || self.completionPolicy.{field} <= {ceiling}",
        "message": f"{field} must not exceed replicas",
        "messageExpression": f"{cel_prefix(message_format)} + self.name",
        "fieldPath": f".completionPolicy.{field}",
        "reason": "FieldValueInvalid",
    }


def event_policy() -> Schema:
    """``roles[].eventPolicy``: what the role's success or failure does to the TaskSet."""
    return {
        "type": "array",
        "description": "What the role's completion means for the TaskSet, first match wins. "
        "Absent or empty: [{RoleFailed, TaskSetFailed}, {RoleSucceeded, NoAction}].",
        "items": {
            "type": "object",
            "required": ["event", "action"],
            "properties": {
                "event": {"type": "string", "enum": [str(e) for e in c.RoleEvent]},
                "action": {"type": "string", "enum": [str(a) for a in c.TaskSetAction]},
            },
        },
    }
