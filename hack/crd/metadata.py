"""What names the TaskSet: the resource's names (plural, kind, short names, categories), the object's
``metadata.name``, a DNS label, and the CEL rule that every Pod name built from it fits in one (D2).
"""

from __future__ import annotations

from hack.crd.fields import Schema, cel_prefix
from taskset.api import constants as c


def names() -> Schema:
    """The CRD's ``spec.names``: how kubectl and the API server name the resource."""
    return {
        "plural": c.PLURAL,
        "singular": c.SINGULAR,
        "kind": c.KIND,
        "listKind": c.LIST_KIND,
        "shortNames": list(c.SHORT_NAMES),
        "categories": list(c.CATEGORIES),
    }


def schema() -> Schema:
    """``metadata``: only the name is checked here, the API server checks the rest."""
    return {
        "type": "object",
        "properties": {
            "name": {
                "type": "string",
                "maxLength": c.DNS1123_LABEL_MAX_LENGTH,
                "pattern": c.DNS1123_LABEL_PATTERN,
            }
        },
    }


def pod_name_rule() -> Schema:
    """CEL on the whole object (D2): every role's longest Pod name, {taskset}-{role}-{replicas-1}, must fit
    in a DNS label. Only the root can see both metadata.name and the roles."""
    too_long = (
        "size(self.metadata.name) + size(r.name) + "
        "size(string((has(r.maxReplicas) ? r.maxReplicas : r.replicas) - 1)) + 2 > "
        f"{c.POD_NAME_MAX_LENGTH}"
    )
    checked = "has(r.name) && has(r.replicas)"
    return {
        "rule": "!has(self.metadata.name) || !has(self.spec) || !has(self.spec.roles) || "
        f"!self.spec.roles.exists(r, {checked} && {too_long})",
        "message": "the longest Pod name of a role, <taskset>-<role>-<replicas-1>, must not exceed "
        f"{c.POD_NAME_MAX_LENGTH} characters",
        # map's filtering form builds a list of names only; filter() would copy whole roles, templates
        # included, which the cost estimator prices far beyond the budget.
        "messageExpression": f"{cel_prefix(c.MSG_POD_NAME_TOO_LONG)} + "
        f"self.spec.roles.map(r, {checked} && {too_long}, r.name)[0]",
        "fieldPath": ".spec.roles",
        "reason": "FieldValueInvalid",
    }
