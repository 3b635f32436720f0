"""``failureRules`` (``taskset.api.failures``), on each role and on the TaskSet: ordered, first match wins.

A rule matches a failed replica by its exit codes, its containers' terminated reasons, its Pod's reason or
conditions, and says what the failure costs (``action``). The patterns and bounds are the ones the
controller's own parser uses, imported from it.
"""

from __future__ import annotations

from hack.crd.fields import Schema
from taskset.api import constants as c
from taskset.api.failures import (
    EXIT_CODE_RANGE_PATTERN,
    REASON_TEXT_MAX,
    RULE_NAME_MAX,
    RULE_NAME_PATTERN,
)
from taskset.api.retry_effects import MAX_AVOIDED_NODES, MAX_MEMORY_FACTOR, QUANTITY_PATTERN


def schema(scope: str) -> Schema:
    """The list of rules ``scope`` names (the role's own, or the TaskSet's for every role)."""
    return {
        "type": "array",
        "description": f"Failure rules {scope}, first match wins; then the built-in rules "
        "(disruption, eviction, node loss, preemption: RetryNotCounted); no match: RetryCounted.",
        "maxItems": c.MAX_FAILURE_RULES,
        "items": _rule(),
    }


def _rule() -> Schema:
    return {
        "type": "object",
        "required": ["action"],
        "properties": {
            "name": {"type": "string", "maxLength": RULE_NAME_MAX, "pattern": RULE_NAME_PATTERN},
            "action": {"type": "string", "enum": [str(a) for a in c.FailureAction]},
            "onExitCodes": _on_exit_codes(),
            "onTerminatedReasons": _words(),
            "onPodReasons": _words(),
            "onPodConditions": _on_pod_conditions(),
            "nextAttempt": _next_attempt(),
        },
        "x-kubernetes-validations": [
            {
                "rule": "has(self.onExitCodes) || has(self.onTerminatedReasons) || has(self.onPodReasons) || "
                "has(self.onPodConditions)",
                "message": "a failure rule must give at least one of onExitCodes, onTerminatedReasons, "
                "onPodReasons, onPodConditions",
            },
            {
                # The kubelet applies it through the Pod's container restart rules, which match exit codes.
                "rule": "self.action != 'RestartInPlace' || (has(self.onExitCodes) && "
                "!has(self.onTerminatedReasons) && !has(self.onPodReasons) && !has(self.onPodConditions))",
                "message": "a RestartInPlace rule matches exit codes only (onExitCodes)",
            },
        ],
    }


def _words() -> Schema:
    """A list of reasons; a new dict each time: a shared one would become a YAML anchor."""
    item = {"type": "string", "minLength": 1, "maxLength": REASON_TEXT_MAX}
    return {"type": "array", "minItems": 1, "maxItems": c.MAX_RULE_VALUES, "items": item}


def _on_exit_codes() -> Schema:
    # An exit code or a range "low-high". No CEL here: per value of 20 rules of 100 roles it would pass
    # the API server's cost budget; low <= high is the controller's check (taskset.api.failures).
    code = {
        "x-kubernetes-int-or-string": True,
        # Each keyword applies to its own type only: the bounds to an integer, the pattern to a string.
        "minimum": 0,
        "maximum": c.MAX_EXIT_CODE,
        "pattern": EXIT_CODE_RANGE_PATTERN,
    }
    return {
        "type": "object",
        "required": ["operator", "values"],
        "properties": {
            "containerName": {"type": "string", "minLength": 1, "maxLength": REASON_TEXT_MAX},
            "operator": {"type": "string", "enum": [str(o) for o in c.ExitCodeOperator]},
            "values": {"type": "array", "minItems": 1, "maxItems": c.MAX_RULE_VALUES, "items": code},
        },
    }


def _on_pod_conditions() -> Schema:
    return {
        "type": "array",
        "minItems": 1,
        "maxItems": c.MAX_RULE_VALUES,
        "items": {
            "type": "object",
            "required": ["type"],
            "properties": {
                "type": {"type": "string", "minLength": 1, "maxLength": REASON_TEXT_MAX},
                "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            },
        },
    }


def _next_attempt() -> Schema:
    """What the replica's next attempt changes after a failure this rule matched (a retry follows)."""
    return {
        "type": "object",
        "description": "Change the replica's next Pods after a failure this rule matched and retried; "
        "the template is never edited (replicaStatus[].nextAttempt says what changed and why).",
        "properties": {
            "avoidFailedNodes": {
                "type": "boolean",
                "description": "Keep the next Pods off the node(s) the failed attempts ran on (the last "
                f"{MAX_AVOIDED_NODES}): a required node anti-affinity on kubernetes.io/hostname.",
            },
            "memory": {
                "type": "object",
                "required": ["factor", "ceiling"],
                "description": "After a container was OOMKilled: its memory request and limit times factor, "
                "at most ceiling (not below the template's memory: the controller refuses it).",
                "properties": {
                    "factor": {
                        "type": "number",
                        "minimum": 1,
                        "exclusiveMinimum": True,
                        "maximum": MAX_MEMORY_FACTOR,
                    },
                    "ceiling": {"type": "string", "pattern": QUANTITY_PATTERN, "maxLength": 64},
                },
            },
        },
    }


def next_attempt_status() -> Schema:
    """``replicaStatus[].nextAttempt``: what the replica's next Pods change, and why."""
    memory = {"type": "string", "nullable": True, "maxLength": 64}
    return {
        "type": "object",
        "properties": {
            "afterAttempt": {"type": "integer", "format": "int32"},
            "avoidNodes": {"type": "array", "items": {"type": "string", "maxLength": 253}},
            "memory": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"container": {"type": "string"}, "request": memory, "limit": dict(memory)},
                },
            },
            "reason": {"type": "string"},
        },
    }
