"""``spec.roles``: each role's name, its replicas and their bounds, and the role's blocks (its policies,
start order, Pod template, failure rules and start deadline), assembled here from their modules; and the
CEL rules that bound the replicas of a role and of the whole TaskSet.
"""

from __future__ import annotations

from hack.crd import depends_on, failure_rules, lifetime, policies
from hack.crd.fields import Schema, replica_bound
from taskset.api import constants as c


def schema(template: Schema) -> Schema:
    """The ``roles`` list: a list-map keyed by name, each item a role whose Pods use ``template``."""
    return {
        "type": "array",
        "description": "The roles, in order: statuses follow it, event policies are scanned in it.",
        "maxItems": c.MAX_ROLES,
        "items": _role_schema(template),
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
    }


def _role_schema(template: Schema) -> Schema:
    return {
        "type": "object",
        "required": ["name", "replicas"],
        "properties": {
            **_counted_name(),
            "completionPolicy": policies.completion_policy(),
            "retryPolicy": policies.retry_policy("of each replica of this role"),
            "eventPolicy": policies.event_policy(),
            "dependsOn": depends_on.schema(),
            "template": template,
            "failureRules": failure_rules.schema("of this role, matched before the TaskSet's"),
            "startDeadlineSeconds": lifetime.role_start_deadline(),
        },
        "x-kubernetes-validations": [
            *policies.completion_rules(),
            depends_on.self_dependency_rule(),
            *_bounds_rules(),
        ],
    }


def _counted_name() -> Schema:
    """The role's name and how many replicas it runs: ``replicas`` and the bounds a scale stays within."""
    return {
        "name": {
            "type": "string",
            "minLength": 1,
            "maxLength": c.DNS1123_LABEL_MAX_LENGTH,
            "pattern": c.DNS1123_LABEL_PATTERN,
            "description": "Role name, unique in the TaskSet: a DNS-1123 label. Pods are named "
            "<taskset>-<role>-<index>, which must fit in 63 characters.",
        },
        "replicas": {
            "type": "integer",
            "format": "int32",
            "minimum": c.MIN_REPLICAS,
            "maximum": c.MAX_REPLICAS,
            "description": "Number of replicas, one Pod each. Changing it while the TaskSet runs "
            "scales the running attempt, within minReplicas..maxReplicas.",
        },
        "minReplicas": replica_bound("The fewest replicas the role may be scaled to (default 1)."),
        "maxReplicas": replica_bound(
            f"The most replicas the role may be scaled to (default {c.MAX_REPLICAS}); Pod names "
            "must fit for it, and explicit completion thresholds may reach it."
        ),
    }


def _bounds_rules() -> list[Schema]:
    """CEL on a role: minReplicas <= replicas <= maxReplicas, each bound optional. A scale outside them is
    refused by the API server, ``kubectl scale`` included."""
    return [
        {
            "rule": "!has(self.minReplicas) || !has(self.replicas) || self.replicas >= self.minReplicas",
            "message": "replicas must be at least minReplicas",
            "fieldPath": ".replicas",
            "reason": "FieldValueInvalid",
        },
        {
            "rule": "!has(self.maxReplicas) || !has(self.replicas) || self.replicas <= self.maxReplicas",
            "message": "replicas must be at most maxReplicas",
            "fieldPath": ".replicas",
            "reason": "FieldValueInvalid",
        },
    ]


def total_replicas_rule() -> Schema:
    """CEL on the spec: the largest supported TaskSet, for which the status budget is proved."""
    return {
        "rule": "!has(self.roles) || self.roles.map(r, has(self.scale) && r.name == self.scale.role ? "
        f"self.scale.replicas : has(r.replicas) ? r.replicas : 0).sum() <= {c.MAX_TOTAL_REPLICAS}",
        # No messageExpression: one naming the sum is priced beyond the API server's CEL budget.
        "message": f"the replicas of all roles must total at most {c.MAX_TOTAL_REPLICAS}",
        "fieldPath": ".roles",
        "reason": "FieldValueInvalid",
    }
