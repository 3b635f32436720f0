"""``roles[].dependsOn``, the start order (``taskset.integrations.start_order``): a role's Pods are created
only once the roles it names have reached a point. Bounds and the points come from that integration.
"""

from __future__ import annotations

from hack.crd.fields import Schema
from taskset.api import constants as c
from taskset.integrations import start_order


def schema() -> Schema:
    return {
        "type": "array",
        "maxItems": start_order.MAX_DEPENDENCIES,
        "description": "Start order: the role's Pods are created only once these roles have reached a point.",
        "items": {
            "type": "object",
            "required": ["role"],
            "properties": {
                "role": {
                    "type": "string",
                    "maxLength": c.DNS1123_LABEL_MAX_LENGTH,
                    "description": "Another role of the TaskSet.",
                },
                "until": {
                    "type": "string",
                    "enum": [str(u) for u in start_order.Until],
                    "description": "Running (default), Ready or Succeeded.",
                },
                "minReplicas": {
                    "type": "integer",
                    "format": "int32",
                    "minimum": 1,
                    "description": "How many of its replicas must have reached it (default all; for "
                    "Succeeded, its completionPolicy.minSucceeded).",
                },
            },
        },
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["role"],
    }


def self_dependency_rule() -> Schema:
    """CEL on a role: it does not wait for itself."""
    return {
        "rule": "!has(self.dependsOn) || !self.dependsOn.exists(d, d.role == self.name)",
        "message": "a role cannot depend on itself",
        "fieldPath": ".dependsOn",
        "reason": "FieldValueInvalid",
    }


def named_roles_rule() -> Schema:
    """CEL on the spec: every role a dependsOn names is a role of the TaskSet (cycles: the controller)."""
    return {
        "rule": "!has(self.roles) || self.roles.all(r, !has(r.dependsOn) || "
        "r.dependsOn.all(d, self.roles.exists(o, o.name == d.role)))",
        "message": "dependsOn must name roles of the TaskSet",
        "fieldPath": ".roles",
        "reason": "FieldValueInvalid",
    }
