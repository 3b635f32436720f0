"""Whether the TaskSet runs now and which controller runs it: ``spec.suspend``, which may change at any
time, and ``spec.managedBy``, fixed at creation (a CEL transition rule keeps it so)."""

from __future__ import annotations

from hack.crd.fields import Schema
from taskset.api import constants as c


def properties() -> Schema:
    return {
        "suspend": {
            "type": "boolean",
            "description": "Mutable. While true, the attempt's running Pods are deleted without "
            "counting a failure or a retry, and no Pod (nor, before the attempt started, its "
            "ControlUnit) is created; setting it false again recreates what the attempt still needs.",
        },
        "managedBy": {
            "type": "string",
            "maxLength": c.MANAGED_BY_MAX_LENGTH,
            "pattern": c.MANAGED_BY_PATTERN,
            "description": "Immutable. The controller that reconciles this TaskSet, a domain-prefixed "
            f"path; absent means {c.CONTROLLER_NAME}. Any other value, and this controller leaves the "
            "TaskSet alone (as the Job controller does with its spec.managedBy).",
        },
    }


def managed_by_rule() -> Schema:
    """CEL transition rule: spec.managedBy may be neither set, changed nor removed after creation."""
    return {
        "rule": "has(self.managedBy) == has(oldSelf.managedBy) && "
        "(!has(self.managedBy) || self.managedBy == oldSelf.managedBy)",
        "message": c.MSG_MANAGED_BY_IMMUTABLE,
        "fieldPath": ".managedBy",
        "reason": "FieldValueInvalid",
    }
