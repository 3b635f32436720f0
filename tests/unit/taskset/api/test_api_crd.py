"""The committed CRD is the generator's output, is a structural schema, and agrees with taskset.api.constants
and taskset.api.spec on every bound, enum and message it shares with them."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from taskset.api import constants as c

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[4]
CRD_FILE = ROOT / "manifests" / "crd" / f"{c.CRD_NAME}.yaml"
# etcd rejects objects above 1.5 MiB; the CRD also travels in managedFields and watch events: stay far below.
MAX_CRD_BYTES = 900 * 1024


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_crd", ROOT / "hack" / "gen_crd.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_crd", module)
    spec.loader.exec_module(module)
    return module


gen_crd = _load_generator()


@pytest.fixture(scope="module")
def crd() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(CRD_FILE.read_text())
    return loaded


@pytest.fixture(scope="module")
def root(crd: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


def role_schema(root: dict[str, Any]) -> dict[str, Any]:
    items: dict[str, Any] = root["properties"]["spec"]["properties"]["roles"]["items"]
    return items


def walk(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, prop in schema.get("properties", {}).items():
        yield from walk(prop, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from walk(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from walk(schema["additionalProperties"], f"{path}[*]")


def test_the_committed_crd_is_the_generators_output() -> None:
    """Regenerate with `python hack/gen_crd.py` after changing the generator or the pinned Kubernetes."""
    source = gen_crd.openapi_path()
    if source is None:
        version = gen_crd.kubernetes_version()
        if os.environ.get("CI") == "true":
            pytest.fail(
                f"k8s.io/kubernetes@{version} is not in the Go module cache; the binaries build fetches it"
            )
        pytest.skip(f"k8s.io/kubernetes@{version} is not in the Go module cache (run `make binaries`)")
    expected = gen_crd.render(json.loads(source.read_text()))
    assert CRD_FILE.read_text() == expected, "stale CRD: run `python hack/gen_crd.py`"


def test_the_crd_is_small(crd: dict[str, Any]) -> None:
    assert len(CRD_FILE.read_bytes()) < MAX_CRD_BYTES
    assert len(json.dumps(crd, separators=(",", ":"))) < MAX_CRD_BYTES / 4


def test_identity(crd: dict[str, Any]) -> None:
    spec = crd["spec"]
    assert crd["metadata"]["name"] == c.CRD_NAME
    assert (spec["group"], spec["scope"]) == (c.GROUP, "Namespaced")
    assert spec["names"] == {
        "plural": c.PLURAL,
        "singular": c.SINGULAR,
        "kind": c.KIND,
        "listKind": c.LIST_KIND,
        "shortNames": ["ts"],
        "categories": ["octopus"],
    }
    [version] = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == (c.VERSION, True, True)
    # /scale on a plain field path (a list index there is read as a field's name).
    assert version["subresources"] == {
        "status": {},
        "scale": {
            "specReplicasPath": ".spec.scale.replicas",
            "statusReplicasPath": ".status.scale.replicas",
            "labelSelectorPath": ".status.scale.selector",
        },
    }


def test_every_node_is_structural(root: dict[str, Any]) -> None:
    for path, schema in walk(root):
        typeless_ok = schema.get("x-kubernetes-int-or-string") or schema.get(
            "x-kubernetes-preserve-unknown-fields"
        )
        assert "type" in schema or typeless_ok, f"{path} has no type"
        assert not {"$ref", "allOf", "oneOf", "not"} & set(schema), path
        if "anyOf" in schema:
            assert schema["anyOf"] == [{"type": "integer"}, {"type": "string"}], path
            assert schema["x-kubernetes-int-or-string"] is True, path
        if schema.get("type") == "array":
            assert "items" in schema, path
        if schema.get("x-kubernetes-list-type") == "map":
            items = schema["items"]
            for key in schema["x-kubernetes-list-map-keys"]:
                assert key in items.get("required", []) or "default" in items["properties"][key], (path, key)
        assert not any(key.startswith("x-kubernetes-patch") for key in schema), path
        assert not ("properties" in schema and "additionalProperties" in schema), path


def test_the_pod_template_is_the_full_pod_schema_without_descriptions(root: dict[str, Any]) -> None:
    template = role_schema(root)["properties"]["template"]
    pod_spec = template["properties"]["spec"]
    assert {"containers", "initContainers", "volumes", "affinity", "schedulerName", "restartPolicy"} <= set(
        pod_spec["properties"]
    )
    assert pod_spec["required"] == ["containers"]
    container = pod_spec["properties"]["containers"]["items"]
    assert container["required"] == ["name"]
    assert pod_spec["properties"]["containers"]["x-kubernetes-list-map-keys"] == ["name"]
    limits = container["properties"]["resources"]["properties"]["limits"]["additionalProperties"]
    assert limits["x-kubernetes-int-or-string"] is True
    port = container["properties"]["livenessProbe"]["properties"]["httpGet"]["properties"]["port"]
    assert port == {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": True}
    assert container["properties"]["ports"]["items"]["properties"]["protocol"]["default"] == "TCP"
    assert set(template["properties"]["metadata"]["properties"]) >= {"labels", "annotations"}
    described = [path for path, schema in walk(template, "template") if "description" in schema]
    assert described == ["template"]


def test_no_defaults_outside_optional_list_map_keys(root: dict[str, Any]) -> None:
    """Defaults would be written into the stored spec; only structural necessity justifies one."""
    defaulted = sorted(path for path, schema in walk(root) if "default" in schema)
    assert defaulted == [
        ".spec.roles[].template.spec.containers[].ports[].protocol",
        ".spec.roles[].template.spec.ephemeralContainers[].ports[].protocol",
        ".spec.roles[].template.spec.imagePullSecrets[].name",
        ".spec.roles[].template.spec.initContainers[].ports[].protocol",
    ]


def test_taskset_bounds_match_the_controller(root: dict[str, Any]) -> None:
    metadata_name = root["properties"]["metadata"]["properties"]["name"]
    assert (metadata_name["pattern"], metadata_name["maxLength"]) == (c.DNS1123_LABEL_PATTERN, 63)
    spec = root["properties"]["spec"]["properties"]
    roles = spec["roles"]
    assert roles["maxItems"] == c.MAX_ROLES
    assert (roles["x-kubernetes-list-type"], roles["x-kubernetes-list-map-keys"]) == ("map", ["name"])
    role = role_schema(root)
    assert role["required"] == ["name", "replicas"]
    assert role["properties"]["name"]["pattern"] == c.DNS1123_LABEL_PATTERN
    replicas = role["properties"]["replicas"]
    assert (replicas["minimum"], replicas["maximum"]) == (c.MIN_REPLICAS, c.MAX_REPLICAS)
    for policy in (
        role["properties"]["completionPolicy"]["properties"][k] for k in ("minSucceeded", "maxFailed")
    ):
        assert policy["x-kubernetes-int-or-string"] is True  # a count or a percentage
        assert (policy["minimum"], policy["maxLength"]) == (1, 4)
    for retry in (spec["retryPolicy"], role["properties"]["retryPolicy"]):
        assert retry["properties"]["retry"] == {
            "type": "boolean",
            "description": "Retries are allowed only if true.",
        }
        assert retry["properties"]["maxRetryCount"]["maximum"] == c.MAX_RETRY_COUNT
        assert retry["properties"]["delay"]["maximum"] == c.MAX_RETRY_DELAY_SECONDS
    entry = role["properties"]["eventPolicy"]["items"]["properties"]
    assert entry["event"]["enum"] == [str(e) for e in c.RoleEvent]
    assert entry["action"]["enum"] == [str(a) for a in c.TaskSetAction]
    assert spec["queue"]["pattern"] == c.QUEUE_PATTERN
    assert spec["priority"]["type"] == "integer"


def test_cel_messages_are_the_controllers_messages(root: dict[str, Any]) -> None:
    pod_name_rule, finished_rule = root["x-kubernetes-validations"]
    assert finished_rule["message"].startswith(
        "spec.roles[].replicas and spec.scale.replicas"
    )  # a role's count
    assert pod_name_rule["messageExpression"].startswith(
        "'Pod name cannot be longer than 63 characters for TaskRole:'"
    )
    assert pod_name_rule["fieldPath"] == ".spec.roles"
    min_rule, max_rule, _self_rule, *bounds = role_schema(root)["x-kubernetes-validations"]
    assert [rule["message"] for rule in bounds] == [  # minReplicas, maxReplicas
        "replicas must be at least minReplicas",
        "replicas must be at most maxReplicas",
    ]
    assert (
        min_rule["messageExpression"]
        == "'MinSucceeded cannot be bigger than replica amount for TaskRole:' + self.name"
    )
    assert (
        max_rule["messageExpression"]
        == "'MaxFailed cannot be bigger than replica amount for TaskRole:' + self.name"
    )
    assert (min_rule["fieldPath"], max_rule["fieldPath"]) == (
        ".completionPolicy.minSucceeded",
        ".completionPolicy.maxFailed",
    )


def test_status_schema_declares_every_field_of_spec_2_5(root: dict[str, Any]) -> None:
    status = root["properties"]["status"]
    assert "x-kubernetes-preserve-unknown-fields" not in json.dumps(status)
    assert set(status["properties"]) == {
        "phase", "phaseMessage", "transitionTime", "state", "stateMessage", "controlUnitUID", "createdAt",
        "startAt", "finishAt", "totalRetriedCount", "preemptCount", "roleStatus", "observedGeneration",
        "conditions", "summary", "attemptResult", "attemptSpecDigest", "nextRetryAt", "scale", "membership",
        "attemptStartAt", "attemptHistory", "nodeRecoveries", "countedEviction", "nextAttempt",
    }  # fmt: skip
    assert status["properties"]["phase"]["enum"] == [str(p) for p in c.TaskSetPhase]
    role = status["properties"]["roleStatus"]["items"]
    assert role["properties"]["phase"]["enum"] == [str(p) for p in c.RolePhase]
    replica = role["properties"]["replicaStatus"]["items"]
    assert replica["properties"]["phase"]["enum"] == [str(p) for p in c.ReplicaPhase]
    nullable = sorted(path for path, schema in walk(status) if schema.get("nullable"))
    assert nullable == [
        ".attemptHistory.attempts[].exitCode",
        ".attemptHistory.attempts[].finishAt",
        ".attemptHistory.attempts[].startAt",
        ".attemptResult",
        ".attemptSpecDigest",
        ".attemptStartAt",
        ".controlUnitUID",
        ".createdAt",
        ".finishAt",
        ".nextAttempt.memory[].limit",
        ".nextAttempt.memory[].request",
        ".nextRetryAt",
        ".nodeRecoveries.recoveries[].lostAt",
        ".nodeRecoveries.recoveries[].recoveredAt",
        ".roleStatus[].replicaStatus[].failure",
        ".roleStatus[].replicaStatus[].finishAt",
        ".roleStatus[].replicaStatus[].nextAttempt.memory[].limit",
        ".roleStatus[].replicaStatus[].nextAttempt.memory[].request",
        ".roleStatus[].replicaStatus[].nextRetryAt",
        ".roleStatus[].replicaStatus[].podUID",
        ".roleStatus[].replicaStatus[].startAt",
        ".roleStatus[].replicaStatus[].terminatedInfo",
        ".roleStatus[].replicaStatus[].transitionTime",
        ".roleStatus[].transitionTime",
        ".startAt",
        ".transitionTime",
    ]
    conditions = status["properties"]["conditions"]
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]


def test_printer_columns_point_at_declared_fields(crd: dict[str, Any], root: dict[str, Any]) -> None:
    columns = crd["spec"]["versions"][0]["additionalPrinterColumns"]
    assert [(col["name"], col.get("priority", 0)) for col in columns] == [
        ("State", 0),
        ("Roles", 0),
        ("Replicas", 0),
        ("Retries", 0),
        ("Age", 0),
        ("Phase", 1),
        ("Started", 1),
        ("Finished", 1),
        ("Waiting", 1),
        ("Running", 1),
        ("Succeeded", 1),
        ("Failed", 1),
        ("Retrying", 1),
        ("Stopped", 1),
        ("Message", 1),
        ("Suspended", 1),
        ("Queue", 1),
        ("Priority", 1),
    ]
    for col in columns:
        node = root
        for part in col["jsonPath"].lstrip(".").split("."):
            if part == "metadata" and node is root:
                break
            node = node["properties"][part]
        else:
            assert node["type"] in ("string", "integer", "boolean"), col
