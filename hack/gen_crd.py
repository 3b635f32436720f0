"""Generate the TaskSet CRD, ``manifests/crd/tasksets.octopus.openi.pcl.cn.yaml``.

Usage: ``python hack/gen_crd.py`` writes the file; ``--check`` only compares and exits 1 on a difference.

The role ``template`` carries the full core/v1 PodTemplateSpec schema, so the API server rejects a typo
such as ``contaners:`` at create time instead of the controller failing a Pod later (D7). It is derived
from the OpenAPI v3 document that ships with the pinned Kubernetes release (the module the control-plane
build downloads into ``$(go env GOMODCACHE)``), turned into a structural schema:

* ``$ref`` and single-entry ``allOf`` wrappers are inlined (the Pod schema has no cycles);
* ``IntOrString`` and ``Quantity`` become ``x-kubernetes-int-or-string`` with the ``anyOf`` structural
  schemas allow. A Quantity written as a float (``cpu: 0.5``) is therefore rejected, as in every CRD that
  controller-gen generates; write ``500m`` or ``"0.5"``;
* descriptions, defaults and the strategic-merge-patch and union extensions are dropped: descriptions for
  size, defaults because the API server would write them into the stored spec. The one exception is a
  default on a list-map key that is not required (``ports[].protocol: TCP``, ``imagePullSecrets[].name``),
  which structural schemas demand;
* the template's ``metadata`` keeps only what a Pod template can meaningfully carry.

The rest of the schema (spec section 2.2, Appendix A, decisions D1-D7) is written out below. Its messages
and bounds come from ``taskset.api.constants``, so the CRD and the controller's own validation cannot drift.
Output is deterministic: the same inputs give the same bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from taskset.api import constants as c  # noqa: E402  (after the sys.path tweak, so the script runs from anywhere)
from taskset.api import scale as sc  # noqa: E402
from taskset.api.compact import BUCKETS  # noqa: E402
from taskset.api.failures import (  # noqa: E402
    EXIT_CODE_RANGE_PATTERN,
    REASON_TEXT_MAX,
    RULE_NAME_MAX,
    RULE_NAME_PATTERN,
)
from taskset.api.history import FAILED, HISTORY_MAX_ATTEMPTS, SUCCEEDED  # noqa: E402
from taskset.api.spec import MAX_BACKOFF_FACTOR  # noqa: E402
from taskset.api.thresholds import PERCENT_PATTERN  # noqa: E402
from taskset.integrations import framework_env as fw  # noqa: E402
from taskset.integrations import start_order  # noqa: E402
from taskset.integrations.gang import SCHEDULERS as GANG_SCHEDULERS  # noqa: E402

OUTPUT = ROOT / "manifests" / "crd" / f"{c.CRD_NAME}.yaml"
KUBERNETES_VERSION_FILE = ROOT / "devcluster" / "go" / "kubernetes" / "VERSION"
OPENAPI_IN_MODULE = "api/openapi-spec/v3/api__v1_openapi.json"

Schema = dict[str, Any]

_REF_PREFIX = "#/components/schemas/"
_POD_TEMPLATE_SPEC = "io.k8s.api.core.v1.PodTemplateSpec"
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_TIME = "io.k8s.apimachinery.pkg.apis.meta.v1.Time"
# The Pod template's metadata, trimmed to what the controller copies into a Pod (spec 3.2) plus the
# harmless fields that `kubectl get -o yaml` leaves in templates people paste (creationTimestamp: null).
_TEMPLATE_METADATA_FIELDS = (
    "annotations",
    "creationTimestamp",
    "finalizers",
    "generateName",
    "labels",
    "name",
    "namespace",
    "ownerReferences",
)
# Schema keywords that survive into the structural schema; everything else (description, default,
# x-kubernetes-patch-*, x-kubernetes-unions, ...) is dropped.
_KEPT_KEYWORDS = ("type", "format", "required", "x-kubernetes-list-type", "x-kubernetes-list-map-keys")
_KEPT_KEYWORDS_LAST = ("x-kubernetes-map-type",)
# Same as the pattern controller-gen emits for resource.Quantity.
_QUANTITY_PATTERN = (
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$"
)
_INT_OR_STRING_SCHEMA: Schema = {
    "anyOf": [{"type": "integer"}, {"type": "string"}],
    "x-kubernetes-int-or-string": True,
}


# ======================================================================================================
# Locating the OpenAPI document
# ======================================================================================================


def kubernetes_version() -> str:
    """The pinned release, from the control-plane build's wrapper module (``KUBERNETES_VERSION=v1.x.y``)."""
    return KUBERNETES_VERSION_FILE.read_text().strip().split("=", 1)[1]


def gomodcache() -> Path | None:
    if os.environ.get("GOMODCACHE"):
        return Path(os.environ["GOMODCACHE"])
    try:
        out = subprocess.run(
            ["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError):
        gopath = os.environ.get("GOPATH") or str(Path.home() / "go")
        return Path(gopath.split(os.pathsep)[0]) / "pkg" / "mod"
    return Path(out.stdout.strip()) if out.stdout.strip() else None


def openapi_path() -> Path | None:
    """Where the pinned release's core/v1 OpenAPI document is, or None when the module is not downloaded."""
    cache = gomodcache()
    if cache is None:
        return None
    path = cache / "k8s.io" / f"kubernetes@{kubernetes_version()}" / OPENAPI_IN_MODULE
    return path if path.is_file() else None


# ======================================================================================================
# OpenAPI -> structural schema
# ======================================================================================================


class _Converter:
    """Inline one OpenAPI v3 definition into a structural schema (see the module docstring for the rules)."""

    def __init__(self, schemas: dict[str, Schema]) -> None:
        self.schemas = schemas
        self._stack: list[str] = []

    def definition(self, name: str) -> Schema:
        if name == _INT_OR_STRING:
            return dict(_INT_OR_STRING_SCHEMA)
        if name == _QUANTITY:
            return {**_INT_OR_STRING_SCHEMA, "pattern": _QUANTITY_PATTERN}
        if name == _TIME:
            return {"type": "string", "format": "date-time"}
        if name in self._stack:
            raise ValueError(f"recursive schema through {' -> '.join(self._stack)} -> {name}")
        self._stack.append(name)
        try:
            return self.convert(self.schemas[name], name)
        finally:
            self._stack.pop()

    def convert(self, schema: Schema, where: str) -> Schema:
        target = _single_ref(schema)
        if target is not None:
            return self.definition(target)
        if "oneOf" in schema or "anyOf" in schema:
            raise ValueError(f"{where}: unexpected union {sorted(schema)}; map it explicitly")
        out: Schema = {key: schema[key] for key in _KEPT_KEYWORDS if key in schema}
        if out.get("format") == "int-or-string":
            raise ValueError(f"{where}: int-or-string outside IntOrString")
        if "properties" in schema:
            out["properties"] = {
                name: self.convert(prop, f"{where}.{name}") for name, prop in schema["properties"].items()
            }
        if "additionalProperties" in schema:
            out["additionalProperties"] = self.convert(schema["additionalProperties"], f"{where}[*]")
        if "items" in schema:
            out["items"] = self.convert(schema["items"], f"{where}[]")
            self._default_optional_map_keys(schema, out, where)
        out.update({key: schema[key] for key in _KEPT_KEYWORDS_LAST if key in schema})
        if "type" not in out:
            raise ValueError(f"{where}: no type, which a structural schema needs")
        return out

    def _default_optional_map_keys(self, source: Schema, out: Schema, where: str) -> None:
        """A list-map key must be required or defaulted; keep the source's default for the optional ones."""
        if out.get("x-kubernetes-list-type") != "map":
            return
        items = out["items"]
        source_items = self._resolve(source["items"])
        for key in out["x-kubernetes-list-map-keys"]:
            if key in items.get("required", ()):
                continue
            default = source_items["properties"][key].get("default")
            if default is None:
                raise ValueError(f"{where}: list-map key {key!r} is neither required nor defaulted")
            prop = items["properties"][key]
            items["properties"][key] = {"default": default, **prop}

    def _resolve(self, schema: Schema) -> Schema:
        target = _single_ref(schema)
        return self.schemas[target] if target is not None else schema


def _single_ref(schema: Schema) -> str | None:
    """The definition a ``$ref`` or a one-entry ``allOf: [$ref]`` points at (description and default of the
    wrapper are dropped with it)."""
    if "$ref" in schema:
        return str(schema["$ref"]).removeprefix(_REF_PREFIX)
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
        return str(all_of[0]["$ref"]).removeprefix(_REF_PREFIX)
    return None


def pod_template_schema(openapi: dict[str, Any]) -> Schema:
    """The structural schema of core/v1 PodTemplateSpec, without descriptions."""
    schemas: dict[str, Schema] = openapi["components"]["schemas"]
    converter = _Converter(schemas)
    meta = schemas[_OBJECT_META]["properties"]
    metadata = {
        "type": "object",
        "properties": {
            name: converter.convert(meta[name], f"ObjectMeta.{name}") for name in _TEMPLATE_METADATA_FIELDS
        },
    }
    spec = converter.definition("io.k8s.api.core.v1.PodSpec")
    template_keys = set(schemas[_POD_TEMPLATE_SPEC]["properties"])
    if template_keys != {"metadata", "spec"}:
        raise ValueError(f"PodTemplateSpec changed shape: {sorted(template_keys)}")
    return {
        "type": "object",
        "description": (
            f"Pod template of every replica: core/v1 PodTemplateSpec of Kubernetes {kubernetes_version()} "
            "(see `kubectl explain pod`). restartPolicy defaults to Never."
        ),
        "properties": {"metadata": metadata, "spec": spec},
    }


# ======================================================================================================
# The TaskSet schema
# ======================================================================================================


def _prefix(message_format: str) -> str:
    """The constant text before ``{role}`` in a constants.MSG_* format, as a CEL string literal."""
    text = message_format.split("{role}", maxsplit=1)[0]
    if "'" in text or "\\" in text:
        raise ValueError(f"message needs CEL escaping: {text!r}")
    return f"'{text}'"


def _retry_policy(scope: str) -> Schema:
    return {
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


def _backoff_schema() -> Schema:
    """``retryPolicy.backoff`` (issue 25): exponential delays instead of the fixed ``delay``."""

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
        "description": "Issue 25: exponential delays, initialDelay * factor^n seconds before retry n + 1, "
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


def _failure_rules(scope: str) -> Schema:
    """``failureRules`` (issue 25, ``taskset.api.failures``): ordered, first match wins."""

    def words() -> Schema:  # a new dict each time: a shared one would become a YAML anchor
        item = {"type": "string", "minLength": 1, "maxLength": REASON_TEXT_MAX}
        return {"type": "array", "minItems": 1, "maxItems": c.MAX_RULE_VALUES, "items": item}

    # An exit code or a range "low-high". No CEL here: per value of 20 rules of 100 roles it would pass
    # the API server's cost budget; low <= high is the controller's check (taskset.api.failures).
    code = {
        "x-kubernetes-int-or-string": True,
        # Each keyword applies to its own type only: the bounds to an integer, the pattern to a string.
        "minimum": 0,
        "maximum": c.MAX_EXIT_CODE,
        "pattern": EXIT_CODE_RANGE_PATTERN,
    }
    rule = {
        "type": "object",
        "required": ["action"],
        "properties": {
            "name": {"type": "string", "maxLength": RULE_NAME_MAX, "pattern": RULE_NAME_PATTERN},
            "action": {"type": "string", "enum": [str(a) for a in c.FailureAction]},
            "onExitCodes": {
                "type": "object",
                "required": ["operator", "values"],
                "properties": {
                    "containerName": {"type": "string", "minLength": 1, "maxLength": REASON_TEXT_MAX},
                    "operator": {"type": "string", "enum": [str(o) for o in c.ExitCodeOperator]},
                    "values": {"type": "array", "minItems": 1, "maxItems": c.MAX_RULE_VALUES, "items": code},
                },
            },
            "onTerminatedReasons": words(),
            "onPodReasons": words(),
            "onPodConditions": {
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
            },
        },
        "x-kubernetes-validations": [
            {
                "rule": "has(self.onExitCodes) || has(self.onTerminatedReasons) || has(self.onPodReasons) || "
                "has(self.onPodConditions)",
                "message": "a failure rule must give at least one of onExitCodes, onTerminatedReasons, "
                "onPodReasons, onPodConditions",
            }
        ],
    }
    return {
        "type": "array",
        "description": f"Issue 25: failure rules {scope}, first match wins; then the built-in rules "
        "(disruption, eviction, node loss, preemption: RetryNotCounted); no match: RetryCounted.",
        "maxItems": c.MAX_FAILURE_RULES,
        "items": rule,
    }


def _threshold(description: str) -> Schema:
    """A completion threshold (issue 25, ``taskset.api.thresholds``): a count, or a percentage of the
    replicas rounded up."""
    return {
        "x-kubernetes-int-or-string": True,
        "description": f'{description} Or a percentage of replicas, "1%" to "100%", rounded up (issue 25).',
        # Plain value validations, not CEL (a regex over an int-or-string is priced beyond the API server's
        # budget) nor a typed anyOf (not structural): minimum applies to integers only, pattern to strings.
        "minimum": 1,
        "pattern": PERCENT_PATTERN,
        "maxLength": 4,
    }


def _completion_rule(field: str, message_format: str) -> Schema:
    """CEL: an explicit completion count must not exceed replicas (D4, D7), or maxReplicas when the role
    has one (issue 26: the threshold is then clamped to the current count); the path names the field. A
    percentage (issue 25) never does."""
    ceiling = "(has(self.maxReplicas) ? self.maxReplicas : self.replicas)"
    return {
        "rule": f"!has(self.completionPolicy) || !has(self.completionPolicy.{field}) || "
        f"type(self.completionPolicy.{field}) != int || "
        f"!has(self.replicas) || self.completionPolicy.{field} <= {ceiling}",
        "message": f"{field} must not exceed replicas",
        "messageExpression": f"{_prefix(message_format)} + self.name",
        "fieldPath": f".completionPolicy.{field}",
        "reason": "FieldValueInvalid",
    }


def _role_schema(template: Schema) -> Schema:
    return {
        "type": "object",
        "required": ["name", "replicas"],
        "properties": {
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
                "scales the running attempt (issue 26), within minReplicas..maxReplicas.",
            },
            "minReplicas": _bound("The fewest replicas the role may be scaled to (default 1)."),
            "maxReplicas": _bound(
                f"The most replicas the role may be scaled to (default {c.MAX_REPLICAS}); Pod names "
                "must fit for it, and explicit completion thresholds may reach it."
            ),
            "completionPolicy": {
                "type": "object",
                "description": "When the role completes. Absent fields: minSucceeded = replicas, "
                "maxFailed = 1.",
                "properties": {
                    "minSucceeded": _threshold(
                        "The role succeeds once this many replicas succeeded (1..replicas)."
                    ),
                    "maxFailed": _threshold(
                        "The role fails once this many replicas failed for good (1..replicas)."
                    ),
                },
            },
            "retryPolicy": _retry_policy("of each replica of this role"),
            "eventPolicy": {
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
            },
            "dependsOn": _depends_on_schema(),
            "template": template,
            "failureRules": _failure_rules("of this role, matched before the TaskSet's"),
            "startDeadlineSeconds": _seconds_bound(_START_DEADLINE + " Absent: spec.startDeadlineSeconds."),
        },
        "x-kubernetes-validations": [
            _completion_rule("minSucceeded", c.MSG_MIN_SUCCEEDED_ABOVE_REPLICAS),
            _completion_rule("maxFailed", c.MSG_MAX_FAILED_ABOVE_REPLICAS),
            {
                "rule": "!has(self.dependsOn) || !self.dependsOn.exists(d, d.role == self.name)",
                "message": "a role cannot depend on itself",
                "fieldPath": ".dependsOn",
                "reason": "FieldValueInvalid",
            },
            *_bounds_rules(),
        ],
    }


def _depends_on_schema() -> Schema:
    """``roles[].dependsOn`` (issue 23, ``taskset.integrations.start_order``)."""
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


def _depends_on_rule() -> Schema:
    """CEL (issue 23): every role a dependsOn names is a role of the TaskSet (cycles: the controller)."""
    return {
        "rule": "!has(self.roles) || self.roles.all(r, !has(r.dependsOn) || "
        "r.dependsOn.all(d, self.roles.exists(o, o.name == d.role)))",
        "message": "dependsOn must name roles of the TaskSet",
        "fieldPath": ".roles",
        "reason": "FieldValueInvalid",
    }


def _bound(description: str) -> Schema:
    return {
        "type": "integer",
        "format": "int32",
        "minimum": c.MIN_REPLICAS,
        "maximum": c.MAX_REPLICAS,
        "description": description,
    }


def _bounds_rules() -> list[Schema]:
    """CEL (issue 26): minReplicas <= replicas <= maxReplicas, each bound optional. A scale outside them is
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


def _pod_name_rule() -> Schema:
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
        "messageExpression": f"{_prefix(c.MSG_POD_NAME_TOO_LONG)} + "
        f"self.spec.roles.map(r, {checked} && {too_long}, r.name)[0]",
        "fieldPath": ".spec.roles",
        "reason": "FieldValueInvalid",
    }


def _total_replicas_rule() -> Schema:
    """CEL (issue 22): the largest supported TaskSet, for which the status budget is proved."""
    return {
        "rule": "!has(self.roles) || self.roles.map(r, has(self.scale) && r.name == self.scale.role ? "
        f"self.scale.replicas : has(r.replicas) ? r.replicas : 0).sum() <= {c.MAX_TOTAL_REPLICAS}",
        # No messageExpression: one naming the sum is priced beyond the API server's CEL budget.
        "message": f"the replicas of all roles must total at most {c.MAX_TOTAL_REPLICAS}",
        "fieldPath": ".roles",
        "reason": "FieldValueInvalid",
    }


_START_DEADLINE = (
    "Issue 25: a replica whose Pod has not run this many seconds after its creation is replaced, alone, "
    "as a failure not counted against maxRetryCount (the Pod reason StartDeadlineExceeded)."
)


def _seconds_bound(description: str, low: int = 1) -> Schema:
    """A bound in seconds (issue 25), ``low`` up to a year."""
    top = c.MAX_RETRY_DELAY_SECONDS
    return {"type": "integer", "format": "int64", "minimum": low, "maximum": top, "description": description}


def _spec_schema(template: Schema) -> Schema:
    return {
        "type": "object",
        "x-kubernetes-validations": [
            _total_replicas_rule(),
            _depends_on_rule(),
            *_framework_rules(),
            _managed_by_rule(),
            *_scale_rules(),
        ],
        "properties": {
            "retryPolicy": _retry_policy("of the TaskSet: whether a failed attempt is replaced by a new one"),
            "failureRules": _failure_rules("for every role, after the role's own"),
            "activeDeadlineSeconds": _seconds_bound(
                "Issue 25: the TaskSet fails with reason DeadlineExceeded, its Pods removed and no retry, "
                "once this many seconds passed since it was created (status.createdAt)."
            ),
            "startDeadlineSeconds": _seconds_bound(
                _START_DEADLINE + " The default of every role that does not set its own. Absent: none."
            ),
            "cleanPodPolicy": {
                "type": "string",
                "enum": [str(p) for p in c.CleanPodPolicy],
                "description": "Issue 25: what the finished TaskSet keeps of its Pods. All (absent): "
                "none, as the spec does; Running: the exited ones, those still running are deleted; None: "
                "every Pod, running ones too, until the TaskSet is deleted.",
            },
            "ttlSecondsAfterFinished": _seconds_bound(
                "Issue 25: the controller deletes the TaskSet, and with it everything it owns, this many "
                "seconds after it finished (status.finishAt); 0 deletes it at once. Absent: kept.",
                low=0,
            ),
            "roles": {
                "type": "array",
                "description": "The roles, in order: statuses follow it, event policies are scanned in it.",
                "maxItems": c.MAX_ROLES,
                "items": _role_schema(template),
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
            },
            "network": _network_schema(),
            "framework": {
                "type": "string",
                "enum": list(fw.FRAMEWORKS),
                "description": "A framework preset (issue 23), built from the replicas' DNS names: "
                "tensorflow gives every container TF_CONFIG; pytorch MASTER_ADDR, MASTER_PORT, WORLD_SIZE, "
                "RANK and torchrun's PET_*; jax JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID; "
                "mpi a hostfile mounted at /etc/mpi.",
            },
            "frameworkOptions": _framework_options_schema(),
            "queue": {
                "type": "string",
                "pattern": c.QUEUE_PATTERN,
                "description": "Reserved: accepted and preserved, ignored by the controller.",
            },
            "priority": {
                "type": "integer",
                "description": "Reserved: accepted and preserved; with --kueue, the priority of the "
                "TaskSet's Kueue Workload (a higher one may preempt a lower).",
            },
            "gang": _gang_schema(),
            sc.SCALE_FIELD: _scale_schema(),
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
        },
    }


def _scale_schema() -> Schema:
    """``spec.scale`` (issue 26, ``taskset.api.scale``): the one role the scale subresource drives."""
    return {
        "type": "object",
        "required": [sc.SCALE_ROLE, sc.SCALE_REPLICAS],
        "description": "Issue 26: the role kubectl scale and an HPA drive (the scale subresource's "
        "specReplicasPath is .spec.scale.replicas). For that role, scale.replicas is the count and its "
        "roles[].replicas is ignored; the role must declare maxReplicas.",
        "properties": {
            sc.SCALE_ROLE: {
                "type": "string",
                "maxLength": c.DNS1123_LABEL_MAX_LENGTH,
                "description": "Immutable. A role of the TaskSet.",
            },
            sc.SCALE_REPLICAS: _bound("The named role's replicas, within its minReplicas and maxReplicas."),
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


def _scale_rules() -> list[Schema]:
    """CEL (issue 26): ``spec.scale`` names a role that declares maxReplicas (so Pod names are checked up
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


def _finished_counts_rule() -> Schema:
    """CEL on the whole object (issue 26): a finished TaskSet's counts no longer change (a scale of it is
    refused, /scale included). Only the root sees both the spec and the status the update keeps."""
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


def _framework_rules() -> list[Schema]:
    """CEL (issue 23): the master role is one of the roles; a preset needs the replicas' names."""
    return [
        {
            "rule": "!has(self.frameworkOptions) || !has(self.frameworkOptions.masterRole) || "
            "(has(self.roles) && self.roles.exists(r, r.name == self.frameworkOptions.masterRole))",
            "message": "must name one of the roles",
            "fieldPath": ".frameworkOptions.masterRole",
            "reason": "FieldValueInvalid",
        },
        {
            "rule": "!has(self.framework) || !has(self.network) || !has(self.network.enableDNSHostnames) || "
            "self.network.enableDNSHostnames",
            "message": "a framework preset needs the replicas' DNS names",
            "fieldPath": ".network.enableDNSHostnames",
            "reason": "FieldValueInvalid",
        },
    ]


def _framework_options_schema() -> Schema:
    """``spec.frameworkOptions`` (issue 23, ``taskset.integrations.framework_env``)."""
    return {
        "type": "object",
        "description": "Tunes the framework preset.",
        "properties": {
            "masterRole": {
                "type": "string",
                "maxLength": c.DNS1123_LABEL_MAX_LENGTH,
                "description": "The role that plays master, chief, coordinator or launcher (default: the "
                "first role named master, chief, launcher or coordinator, else the first role).",
            },
            "port": {
                "type": "integer",
                "format": "int32",
                "minimum": 1,
                "maximum": fw.PORT_MAX,
                "description": "The master's port (default: the master role's first container port, else "
                f"{fw.DEFAULT_PYTORCH_PORT} for pytorch, {fw.DEFAULT_JAX_PORT} for jax).",
            },
            "nprocPerNode": {
                "type": "string",
                "pattern": fw.NPROC_PATTERN,
                "description": "torchrun's processes per replica: auto, cpu, gpu or a number (default auto).",
            },
            "slotsPerWorker": {
                "type": "integer",
                "format": "int32",
                "minimum": 1,
                "maximum": fw.MAX_SLOTS,
                "description": "MPI slots per replica in the hostfile (default 1).",
            },
        },
    }


def _gang_schema() -> Schema:
    """spec.gang (issue 24): opt in to gang scheduling, all or nothing, by one of the served schedulers."""
    return {
        "type": "object",
        "description": "Gang scheduling: the attempt's Pods are placed all at once or not at all, by the "
        "scheduler named (the controller must serve it: --gang-scheduling). The Pods' schedulerName stays "
        "the template's.",
        "required": ["scheduler"],
        "properties": {
            "scheduler": {
                "type": "string",
                "enum": list(GANG_SCHEDULERS),
                "description": "coscheduling: scheduler-plugins' PodGroup (scheduling.x-k8s.io); volcano: "
                "Volcano's PodGroup (scheduling.volcano.sh).",
            },
            "minAvailable": {
                "type": "integer",
                "format": "int32",
                "minimum": 1,
                "maximum": c.MAX_TOTAL_REPLICAS,
                "description": "How many Pods must be placed at once. Absent: all of them (the sum of the "
                "roles' replicas); at most that sum.",
            },
            "scheduleTimeoutSeconds": {
                "type": "integer",
                "format": "int32",
                "minimum": 1,
                "description": "coscheduling: how long the gang may wait to be placed before it is retried.",
            },
            "queue": {
                "type": "string",
                "maxLength": c.DNS1123_LABEL_MAX_LENGTH,
                "pattern": c.DNS1123_LABEL_PATTERN,
                "description": "volcano: the Volcano queue of the PodGroup.",
            },
        },
    }


def _managed_by_rule() -> Schema:
    """CEL transition rule: spec.managedBy may be neither set, changed nor removed after creation."""
    return {
        "rule": "has(self.managedBy) == has(oldSelf.managedBy) && "
        "(!has(self.managedBy) || self.managedBy == oldSelf.managedBy)",
        "message": c.MSG_MANAGED_BY_IMMUTABLE,
        "fieldPath": ".managedBy",
        "reason": "FieldValueInvalid",
    }


def _network_schema() -> Schema:
    """``spec.network`` (issue 23, ``taskset.objects.network``): the replicas' DNS names and their
    headless Service."""
    return {
        "type": "object",
        "description": "The replicas' network identity: a headless Service per TaskSet and a hostname "
        "per Pod, so <taskset>-<role>-<index>.<subdomain>.<namespace>.svc resolves to the replica's Pod.",
        "properties": {
            "enableDNSHostnames": {
                "type": "boolean",
                "description": "Whether Pods get hostnames under the headless Service (default true).",
            },
            "subdomain": {
                "type": "string",
                "maxLength": c.DNS1123_LABEL_MAX_LENGTH,
                "pattern": "^[a-z]([-a-z0-9]*[a-z0-9])?$",
                "description": "The headless Service's name, a DNS-1035 label (default: the TaskSet's "
                "name; a TaskSet whose name starts with a digit gets names only when this is set).",
            },
        },
    }


def _time(nullable: bool = False) -> Schema:
    schema: Schema = {"type": "string", "format": "date-time"}
    return {**schema, "nullable": True} if nullable else schema


def _string(nullable: bool = False) -> Schema:
    return {"type": "string", "nullable": True} if nullable else {"type": "string"}


def _count() -> Schema:
    return {"type": "integer", "format": "int64", "minimum": 0}


def _enum(values: type[Any]) -> Schema:
    return {"type": "string", "enum": [str(v) for v in values]}


def _condition_schema() -> Schema:
    """metav1.Condition with the validations Kubernetes' own types carry."""
    return {
        "type": "object",
        "required": ["lastTransitionTime", "message", "reason", "status", "type"],
        "properties": {
            "lastTransitionTime": _time(),
            "message": {"type": "string", "maxLength": 32768},
            "observedGeneration": _count(),
            "reason": {
                "type": "string",
                "minLength": 1,
                "maxLength": 1024,
                "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
            },
            "status": _enum(c.ConditionStatus),
            "type": {
                "type": "string",
                "maxLength": 316,
                "pattern": r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
            },
        },
    }


def _replica_counts(description: str) -> Schema:
    return {
        "type": "object",
        "description": description,
        "properties": {bucket: _count() for bucket in BUCKETS},
    }


def _replica_rows() -> Schema:
    """The compact shape of a role's replicas (taskset.api.compact), written only when the full shape
    would not fit in the status budget."""
    texts = {
        "type": "object",
        "properties": {
            "phaseMessage": _string(),
            "podReason": _string(),
            "podHostIP": _string(),
            "containerName": _string(),
            "exitCode": {"type": "integer", "format": "int32"},
            "signal": {"type": "integer", "format": "int32"},
            "reason": _string(),
            # Issue 25: the failure rule's name and why go with the texts (its action is a row flag).
            "failureRule": _string(),
            "failureMessage": _string(),
        },
    }
    return {
        "type": "object",
        "description": "Compact shape of a large status (issue 22): one row per replica, "
        "'<phase letter><flags> <retries> <transition epoch> <podUID> <texts index>'. See docs/status.md.",
        "properties": {
            "podNamePrefix": _string(),
            "texts": {"type": "array", "items": texts, "x-kubernetes-list-type": "atomic"},
            "rows": {"type": "array", "items": _string(), "x-kubernetes-list-type": "atomic"},
        },
    }


def _status_schema() -> Schema:
    """Spec 2.5. The controller writes every key; pointers are null until set. Every status timestamp is
    nullable, as Go's zero metav1.Time was for O: a null in a non-nullable field would be pruned silently,
    losing the key, not rejected. Status must be written with PUT (or a JSON patch): a merge patch treats
    null as "delete this key"."""
    replica = {
        "type": "object",
        "properties": {
            "index": _count(),
            "name": {"type": "string", "description": "The role's name, not the Pod's."},
            "phase": _enum(c.ReplicaPhase),
            "phaseMessage": _string(),
            "stopped": {"type": "boolean"},
            "suspended": {"type": "boolean"},
            "transitionTime": _time(nullable=True),
            "startAt": _time(nullable=True),
            "finishAt": _time(nullable=True),
            "totalRetriedCount": {
                **_count(),
                "description": "Replica retries started; the replica attempt id.",
            },
            "podName": _string(),
            "podReason": _string(),
            "podUID": _string(nullable=True),
            "podIP": _string(),
            "podHostIP": _string(),
            "containerName": _string(),
            "containerID": _string(),
            "terminatedInfo": {
                "type": "object",
                "nullable": True,
                "properties": {
                    "exitCode": {"type": "integer", "format": "int32"},
                    "exitMessage": _string(),
                    "signal": {"type": "integer", "format": "int32"},
                    "reason": _string(),
                },
            },
            "uncountedRetries": {
                **_count(),
                "description": "Issue 25: retries not counted (platform failures).",
            },
            "failure": {
                "type": "object",
                "nullable": True,
                "description": "Issue 25: the failure rule the current attempt's failure matched, and why.",
                "properties": {"rule": _string(), "action": _enum(c.FailureAction), "message": _string()},
            },
            "nextRetryAt": {
                **_time(nullable=True),
                "description": "Issue 25: when the pending retry is due.",
            },
        },
    }
    role = {
        "type": "object",
        "properties": {
            "name": _string(),
            "phase": _enum(c.RolePhase),
            "phaseMessage": _string(),
            "transitionTime": _time(nullable=True),
            "state": _enum(c.State),
            "stateMessage": _string(),
            "replicaCounts": _replica_counts("The role's replicas by what they do (issue 22)."),
            # Atomic, not a list-map: one entry per spec.roles entry, whatever the names.
            "replicaStatus": {
                "type": "array",
                "description": "Every replica; in the compact shape (replicaRows present), only the replicas "
                "that are not fine (failed, retried, a Pod reason, waiting for something), by index.",
                "items": replica,
                "x-kubernetes-list-type": "atomic",
            },
            "replicaRows": _replica_rows(),
            "targetReplicas": {
                **_count(),
                "description": "Issue 26: the replicas this attempt runs the role with, once it was scaled.",
            },
            "lastScale": {
                "type": "object",
                "description": "Issue 26: the role's last scale in this attempt: from, to, at, who asked "
                "(the manager that last wrote the count, best effort) and the membership generation.",
                "properties": {
                    "from": _count(),
                    "to": _count(),
                    "at": _time(),
                    "by": _string(),
                    "generation": _count(),
                },
            },
        },
    }
    return {
        "type": "object",
        "properties": {
            "phase": _enum(c.TaskSetPhase),
            "phaseMessage": _string(),
            "transitionTime": _time(nullable=True),
            "state": _enum(c.State),
            "stateMessage": _string(),
            "controlUnitUID": _string(nullable=True),
            "attemptSpecDigest": {
                **_string(nullable=True),
                "description": "R only: sha256 of the current attempt's ControlUnit spec snapshot, as the "
                "controller wrote it; a snapshot that does not match is never used (issue 30).",
            },
            "createdAt": _time(nullable=True),
            "startAt": _time(nullable=True),
            "finishAt": _time(nullable=True),
            "totalRetriedCount": {**_count(), "description": "TaskSet retries started; the attempt id."},
            "preemptCount": {**_count(), "description": "Reserved, always 0."},
            "roleStatus": {"type": "array", "items": role, "x-kubernetes-list-type": "atomic"},
            "observedGeneration": _count(),
            "attemptResult": {
                "type": "object",
                "nullable": True,
                "description": "R only: the current attempt's outcome once its policies decided it, kept so "
                "the final state survives the ControlUnit (and its spec snapshot) going away.",
                "properties": {
                    "succeeded": {"type": "boolean"},
                    "reason": _string(),
                    "final": {"type": "boolean", "description": "Issue 25: no TaskSet retry may follow."},
                    "replica": {
                        "type": "object",
                        "description": "Issue 25: the replica whose failure ended the attempt.",
                        "properties": {"role": _string(), "index": _count()},
                    },
                },
            },
            "nextRetryAt": {
                **_time(nullable=True),
                "description": "Issue 25: when the pending retry is due.",
            },
            "attemptStartAt": {
                **_time(nullable=True),
                "description": "Issue 25: when the current attempt began (entered AttemptPending).",
            },
            "attemptHistory": _attempt_history_schema(),
            "conditions": {
                "type": "array",
                "items": _condition_schema(),
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["type"],
            },
            "scale": {
                "type": "object",
                "description": "Issue 26: the role spec.scale names, for the scale subresource: its current "
                "replicas and its Pods' label selector (an HPA's).",
                "properties": {"replicas": _count(), "selector": _string()},
            },
            "membership": {
                "type": "object",
                "description": "Issue 26: the live membership ConfigMap and its generation, which every "
                "change of the peers (a scale, a replica retry, a new attempt) increments.",
                "properties": {"configMap": _string(), "generation": _count(), "digest": _string()},
            },
            "summary": {
                "type": "object",
                "description": "Progress for kubectl get.",
                "properties": {
                    "roles": {"type": "string", "description": "Completed roles / roles, e.g. 1/2."},
                    "replicas": {"type": "string", "description": "Completed replicas / replicas, e.g. 5/8."},
                    **{bucket: _count() for bucket in BUCKETS},
                },
            },
        },
    }


def _attempt_history_schema() -> Schema:
    """Issue 25: the last attempts (taskset.api.history), each entry's texts bounded in bytes."""
    entry = {
        "type": "object",
        "properties": {
            "attempt": {**_count(), "description": "The attempt's number (totalRetriedCount then)."},
            "startAt": _time(nullable=True),
            "finishAt": _time(nullable=True),
            "outcome": {"type": "string", "enum": [SUCCEEDED, FAILED]},
            "reason": _string(),
            "replica": {**_string(), "description": "<role>-<index> of the replica whose failure ended it."},
            "exitCode": {"type": "integer", "format": "int32", "nullable": True},
            "rule": {**_string(), "description": "The failure rule that replica's failure matched."},
            # "" when no rule: the API server refuses a null for an enum, even a nullable one listing it.
            "action": {"type": "string", "enum": ["", *_enum(c.FailureAction)["enum"]]},
            "counted": {
                "type": "boolean",
                "description": "A TaskSet retry was charged for it against retryPolicy.maxRetryCount.",
            },
        },
    }
    return {
        "type": "object",
        "description": f"Issue 25: the last {HISTORY_MAX_ATTEMPTS} ended attempts, oldest first, and how "
        "many older ones are no longer listed.",
        "properties": {
            "attempts": {
                "type": "array",
                "maxItems": HISTORY_MAX_ATTEMPTS,
                "items": entry,
                "x-kubernetes-list-type": "atomic",
            },
            "dropped": _count(),
        },
    }


def _printer_columns() -> list[Schema]:
    def column(name: str, kind: str, path: str, description: str, wide: bool = False) -> Schema:
        col = {"name": name, "type": kind, "jsonPath": path, "description": description}
        return {**col, "priority": 1} if wide else col

    return [
        column("State", "string", ".status.state", "Waiting, Running, Succeeded or Failed"),
        column("Roles", "string", ".status.summary.roles", "Completed roles / roles"),
        column("Replicas", "string", ".status.summary.replicas", "Completed replicas / replicas"),
        column("Retries", "integer", ".status.totalRetriedCount", "TaskSet retries started"),
        column("Age", "date", ".metadata.creationTimestamp", "Time since creation"),
        column("Phase", "string", ".status.phase", "Attempt phase", wide=True),
        column("Started", "date", ".status.startAt", "First time the TaskSet ran", wide=True),
        column("Finished", "date", ".status.finishAt", "Time the TaskSet completed", wide=True),
        column("Waiting", "integer", ".status.summary.waiting", "Replicas waiting for a Pod", wide=True),
        column("Running", "integer", ".status.summary.running", "Replicas running", wide=True),
        column("Succeeded", "integer", ".status.summary.succeeded", "Replicas succeeded", wide=True),
        column("Failed", "integer", ".status.summary.failed", "Replicas failed", wide=True),
        column("Retrying", "integer", ".status.summary.retrying", "Replicas waiting to retry", wide=True),
        column("Message", "string", ".status.stateMessage", "Why the state is what it is", wide=True),
        column("Suspended", "boolean", ".spec.suspend", "spec.suspend (issue 24)", wide=True),
        column(
            "Queue", "string", r".metadata.labels.kueue\.x-k8s\.io/queue-name", "Kueue's queue", wide=True
        ),
        column("Priority", "integer", ".spec.priority", "the Kueue Workload's priority", wide=True),
    ]


def crd(openapi: dict[str, Any]) -> Schema:
    root = {
        "type": "object",
        "description": "TaskSet: a batch job of several roles, each with replicas run as Pods.",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {
                "type": "object",
                "properties": {
                    "name": {
                        "type": "string",
                        "maxLength": c.DNS1123_LABEL_MAX_LENGTH,
                        "pattern": c.DNS1123_LABEL_PATTERN,
                    }
                },
            },
            "spec": _spec_schema(pod_template_schema(openapi)),
            "status": _status_schema(),
        },
        "x-kubernetes-validations": [_pod_name_rule(), _finished_counts_rule()],
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": c.CRD_NAME},
        "spec": {
            "group": c.GROUP,
            "scope": "Namespaced",
            "names": {
                "plural": c.PLURAL,
                "singular": c.SINGULAR,
                "kind": c.KIND,
                "listKind": c.LIST_KIND,
                "shortNames": list(c.SHORT_NAMES),
                "categories": list(c.CATEGORIES),
            },
            "versions": [
                {
                    "name": c.VERSION,
                    "served": True,
                    "storage": True,
                    "subresources": {
                        "status": {},
                        # Issue 26: a plain field path (a list index here is read as a field's name).
                        "scale": {
                            "specReplicasPath": f".spec.{sc.SCALE_FIELD}.{sc.SCALE_REPLICAS}",
                            "statusReplicasPath": ".status.scale.replicas",
                            "labelSelectorPath": ".status.scale.selector",
                        },
                    },
                    "additionalPrinterColumns": _printer_columns(),
                    "schema": {"openAPIV3Schema": root},
                }
            ],
        },
    }


def render(openapi: dict[str, Any]) -> str:
    header = (
        f"# Generated by hack/gen_crd.py from the core/v1 OpenAPI of Kubernetes {kubernetes_version()}. "
        "Do not edit.\n"
    )
    body = yaml.safe_dump(crd(openapi), sort_keys=False, width=1 << 16, allow_unicode=True)
    return header + body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed file is out of date")
    parser.add_argument("--openapi", type=Path, help="core/v1 OpenAPI v3 JSON (default: the Go module cache)")
    args = parser.parse_args(argv)
    source = args.openapi or openapi_path()
    if source is None:
        print(f"cannot find k8s.io/kubernetes@{kubernetes_version()} in the Go module cache", file=sys.stderr)
        return 2
    text = render(json.loads(source.read_text()))
    if args.check:
        current = OUTPUT.read_text() if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT.relative_to(ROOT)} is out of date: run python hack/gen_crd.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT.relative_to(ROOT)} ({len(text.encode()) / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
