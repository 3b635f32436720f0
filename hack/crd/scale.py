"""Scaling a running TaskSet (``taskset.api.scale``): ``spec.scale``, the one role ``kubectl scale`` and an
HPA drive through the scale subresource, the CEL rules that keep its count within that role's bounds and
freeze the counts of a finished TaskSet, and the status the subresource and the peers read (``status.scale``,
``status.membership``).
"""

from __future__ import annotations

from hack.crd.fields import Schema, count, replica_bound, string
from taskset.api import constants as c
from taskset.api import scale as sc


def properties() -> Schema:
    return {sc.SCALE_FIELD: _scale_schema()}


def _scale_schema() -> Schema:
    """``spec.scale``: the role and its count; for that role, ``roles[].replicas`` is ignored."""
    return {
        "type": "object",
        "required": [sc.SCALE_ROLE, sc.SCALE_REPLICAS],
        "description": "The role kubectl scale and an HPA drive (the scale subresource's "
        "specReplicasPath is .spec.scale.replicas). For that role, scale.replicas is the count and its "
        "roles[].replicas is ignored; the role must declare maxReplicas.",
        "properties": {
            sc.SCALE_ROLE: {
                "type": "string",
                "maxLength": c.DNS1123_LABEL_MAX_LENGTH,
                "description": "Immutable. A role of the TaskSet.",
            },
            sc.SCALE_REPLICAS: replica_bound(
                "The named role's replicas, within its minReplicas and maxReplicas."
            ),
        },
        "x-kubernetes-validations": [
            {
                "rule": "self.role == oldSelf.role",
                "message": "scale.role is immutable",
                "fieldPath": ".role",
                "reason": "FieldValueInvalid",
            }
        ],
    }


def rules() -> list[Schema]:
    """CEL on the spec: ``spec.scale`` names a role that declares maxReplicas (so Pod names are checked up
    to it), and its count stays within that role's bounds; each message names the field."""
    named = "!has(self.scale) || !has(self.roles) || self.roles.all(r, r.name != self.scale.role || "
    return [
        {
            "rule": "!has(self.scale) || "
            "(has(self.roles) && self.roles.exists(r, r.name == self.scale.role))",
            "message": "scale.role must name a role of the TaskSet",
            "fieldPath": ".scale.role",
            "reason": "FieldValueInvalid",
        },
        {
            "rule": named + "has(r.maxReplicas))",
            "message": "the role scale.role names must declare maxReplicas",
            "fieldPath": ".scale.role",
            "reason": "FieldValueInvalid",
        },
        {
            "rule": named + "!has(r.maxReplicas) || self.scale.replicas <= r.maxReplicas)",
            "message": "scale.replicas must be at most the role's maxReplicas",
            "fieldPath": ".scale.replicas",
            "reason": "FieldValueInvalid",
        },
        {
            "rule": named + "!has(r.minReplicas) || self.scale.replicas >= r.minReplicas)",
            "message": "scale.replicas must be at least the role's minReplicas",
            "fieldPath": ".scale.replicas",
            "reason": "FieldValueInvalid",
        },
    ]


def finished_counts_rule() -> Schema:
    """CEL on the whole object: a finished TaskSet's counts no longer change (a scale of it is refused,
    /scale included). Only the root sees both the spec and the status the update keeps."""
    counts = "{0}.spec.roles.map(r, has(r.replicas) ? r.replicas : 0)"
    scaled = "(has({0}.spec.scale) ? {0}.spec.scale.replicas : 0)"
    return {
        "rule": "!has(oldSelf.status) || !has(oldSelf.status.state) || "
        "!(oldSelf.status.state in ['Succeeded', 'Failed']) || !has(self.spec) || !has(oldSelf.spec) || "
        f"((!has(self.spec.roles) || !has(oldSelf.spec.roles) || {counts.format('self')} == "
        f"{counts.format('oldSelf')}) && {scaled.format('self')} == {scaled.format('oldSelf')})",
        "message": "spec.roles[].replicas and spec.scale.replicas of a finished TaskSet (status.state "
        "Succeeded or Failed) cannot change",
        "fieldPath": ".spec",
        "reason": "FieldValueInvalid",
    }


def subresource() -> Schema:
    """The scale subresource's paths: plain field paths (a list index there is read as a field's name)."""
    return {
        "specReplicasPath": f".spec.{sc.SCALE_FIELD}.{sc.SCALE_REPLICAS}",
        "statusReplicasPath": ".status.scale.replicas",
        "labelSelectorPath": ".status.scale.selector",
    }


def status_properties() -> Schema:
    """``status.scale``, which the subresource reads, and ``status.membership``, which the peers read."""
    return {
        "scale": {
            "type": "object",
            "description": "The role spec.scale names, for the scale subresource: its current "
            "replicas and its Pods' label selector (an HPA's).",
            "properties": {"replicas": count(), "selector": string()},
        },
        "membership": {
            "type": "object",
            "description": "The live membership ConfigMap and its generation, which every "
            "change of the peers (a scale, a replica retry, a new attempt) increments; refused: why the "
            "current peers are not published (too large for a ConfigMap), absent when they are.",
            "properties": {
                "configMap": string(),
                "generation": count(),
                "digest": string(),
                "refused": string(),
            },
        },
    }
