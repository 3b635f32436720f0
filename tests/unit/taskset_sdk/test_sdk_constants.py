"""The SDK copies the wire strings it needs instead of importing the controller; these must stay equal."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from informers import shards
from taskset.api import constants as controller
from taskset.daemon.buckets import bucket_lease_name
from taskset.daemon.leader import DEFAULT_LEASE_NAME
from taskset_sdk import constants as sdk
from taskset_sdk.views import namespace_bucket

CRD = Path(__file__).resolve().parents[3] / "manifests" / "crd" / "tasksets.octopus.openi.pcl.cn.yaml"


def crd_enum(*path: str) -> tuple[str, ...]:
    """The enum of a spec field of the CRD, ``path`` through properties and list items."""
    schema: Any = yaml.safe_load(CRD.read_text())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema = schema["properties"]["spec"]
    for key in path:
        schema = schema["properties"][key]
        schema = schema.get("items", schema)
    return tuple(schema["enum"])


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        pytest.param(sdk.GROUP, controller.GROUP, id="group"),
        pytest.param(sdk.SHARD_BUCKETS, shards.DEFAULT_BUCKET_COUNT, id="buckets"),
        pytest.param(sdk.FNV_OFFSET_BASIS, shards.FNV_OFFSET_BASIS, id="FNV offset"),
        pytest.param(sdk.FNV_PRIME, shards.FNV_PRIME, id="FNV prime"),
        pytest.param(sdk.DEFAULT_RING, DEFAULT_LEASE_NAME, id="ring"),
        pytest.param(
            sdk.BUCKET_LEASE_FORMAT.format(ring="r", bucket=7), bucket_lease_name("r", 7), id="bucket Lease"
        ),
        pytest.param(sdk.VERSION, controller.VERSION, id="version"),
        pytest.param(sdk.API_VERSION, controller.API_VERSION, id="apiVersion"),
        pytest.param(sdk.KIND, controller.KIND, id="kind"),
        pytest.param(sdk.PLURAL, controller.PLURAL, id="plural"),
        pytest.param(sdk.POD_NAME_FORMAT, controller.POD_NAME_FORMAT, id="Pod name"),
        pytest.param(sdk.LABEL_TASKSET, controller.LABEL_TASKSET, id="TaskSet label"),
        pytest.param(sdk.LABEL_ROLE, controller.LABEL_ROLE, id="role label"),
        pytest.param(sdk.ANNOTATION_REPLICA_INDEX, controller.ANNOTATION_REPLICA_INDEX, id="index"),
        pytest.param(
            sdk.ANNOTATION_TASKSET_ATTEMPT_ID, controller.ANNOTATION_TASKSET_ATTEMPT_ID, id="attempt"
        ),
        pytest.param(
            sdk.ANNOTATION_REPLICA_ATTEMPT_ID,
            controller.ANNOTATION_REPLICA_ATTEMPT_ID,
            id="replica attempt",
        ),
        pytest.param(sdk.STATES, tuple(controller.State), id="states, in order"),
        pytest.param(sdk.ROLE_EVENTS, tuple(controller.RoleEvent), id="role events"),
        pytest.param(sdk.TASKSET_ACTIONS, tuple(controller.TaskSetAction), id="actions"),
        pytest.param(sdk.FAILURE_ACTIONS, tuple(controller.FailureAction), id="failure rule actions"),
        pytest.param(sdk.EXIT_CODE_OPERATORS, tuple(controller.ExitCodeOperator), id="exit code operators"),
        pytest.param(sdk.CONDITION_STATUSES, tuple(controller.ConditionStatus), id="condition statuses"),
        pytest.param(sdk.CLEAN_POD_POLICIES, tuple(controller.CleanPodPolicy), id="clean-up policies"),
        pytest.param(sdk.FRAMEWORKS, crd_enum("framework"), id="frameworks"),
        pytest.param(sdk.DEPENDS_ON_UNTIL, crd_enum("roles", "dependsOn", "until"), id="dependsOn until"),
        pytest.param(sdk.GANG_SCHEDULERS, crd_enum("gang", "scheduler"), id="gang schedulers"),
        pytest.param(sdk.NODE_LOSS_ACTIONS, crd_enum("nodeLossPolicy", "action"), id="node loss actions"),
        pytest.param(sdk.FAILURE_ACTIONS, crd_enum("failureRules", "action"), id="the CRD's actions"),
    ],
)
def test_the_sdk_speaks_the_controllers_words(ours: object, theirs: object) -> None:
    assert ours == theirs


@pytest.mark.parametrize("namespace", ["default", "alpha", "shard-7", "ünïcode", "", "x" * 63])
def test_the_sdk_puts_a_namespace_in_the_controllers_bucket(namespace: str) -> None:
    assert namespace_bucket(namespace) == shards.Buckets().of_namespace(namespace)
