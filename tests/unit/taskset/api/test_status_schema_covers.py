"""Every key the controller writes into a status is declared by the CRD's status schema, in both shapes
(full, compact): a structural schema makes the API server prune an undeclared key silently, so a field the
schema forgot is lost at the first write (the compact texts' failure rule was, until the
attempt history's change declared it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from taskset.api import compact
from taskset.api import constants as c
from taskset.api import status as st
from taskset.api.constants import ConditionStatus, ConditionType, FailureAction, ReplicaPhase
from taskset.api.elastic_status import MembershipStatus, ScaleRecord, ScaleStatus
from taskset.api.history import AttemptHistory, AttemptRecord

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[4]
T0 = "2026-01-01T00:00:00Z"


def schema_paths(schema: dict[str, Any], path: str = "") -> Iterator[str]:
    yield path
    for name, prop in schema.get("properties", {}).items():
        yield from schema_paths(prop, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from schema_paths(schema["items"], f"{path}[]")


def value_paths(value: object, path: str = "") -> Iterator[str]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from value_paths(item, f"{path}.{key}")
    elif isinstance(value, list):
        for item in value:
            yield from value_paths(item, f"{path}[]")


def status_schema() -> dict[str, Any]:
    crd = yaml.safe_load((ROOT / "manifests" / "crd" / f"{c.CRD_NAME}.yaml").read_text())
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
    return schema


def rich_status() -> st.TaskSetStatus:
    """A status with every optional part set: a failed replica with its rule, a scaled role, a
    suspended replica, an attempt result naming its replica, an attempt history."""
    failed = st.ReplicaStatus(
        0,
        "w",
        ReplicaPhase.ATTEMPT_DELETION_REQUESTED,
        "failed",
        transition_time=T0,
        total_retried_count=2,
        pod_name="job-w-0",
        pod_reason="Evicted",
        pod_uid="8b1a9953-c461-4b3c-8e5d-3b0f3c6a7e2b",
        container_name="main",
        terminated_info=st.TerminatedInfo(3, "bye", 0, "Error"),
        uncounted_retries=1,
        failure=st.FailureRecord("default", FailureAction.RETRY_COUNTED, "no failure rule matched"),
        next_retry_at=T0,
    )
    waiting = st.ReplicaStatus(1, "w", transition_time=T0, suspended=True)
    role = st.RoleStatus(
        "w",
        [failed, waiting],
        transition_time=T0,
        target_replicas=2,
        last_scale=ScaleRecord(1, 2, T0, "kubectl", 3),
    )
    record = AttemptRecord(0, T0, T0, False, "failed", True, "w-0", 3, "default", FailureAction.RETRY_COUNTED)
    status = st.TaskSetStatus(
        created_at=T0,
        roles=[role],
        attempt_result=st.AttemptResult(False, "failed", replica=("w", 0)),
        attempt_start_at=T0,
        attempt_history=AttemptHistory((record,), dropped=1),
        scale=ScaleStatus(2, "TaskSet=job"),
        membership=MembershipStatus("job-membership", 3, "sha256:0"),
    )
    status.set_condition(ConditionType.RUNNING, ConditionStatus.TRUE, "Running", "running", T0)
    return status


@pytest.mark.parametrize(
    "written",
    [
        pytest.param(rich_status().full_json(), id="full"),
        pytest.param(compact.compact(rich_status().full_json()), id="compact"),
    ],
)
def test_every_key_written_is_declared(written: dict[str, Any]) -> None:
    undeclared = set(value_paths(written)) - set(schema_paths(status_schema()))
    assert not undeclared


def test_no_enum_of_the_status_is_nullable() -> None:
    """The API server checks a null against an enum even when the schema is nullable and the enum lists
    null, and refuses it: the attempt history's action, once a nullable enum, made every status write of
    a TaskSet whose last attempt succeeded fail. An enum says "none" with a value of its own."""
    enums = [s for s in schemas(status_schema()) if "enum" in s]
    assert enums
    assert not [s for s in enums if s.get("nullable")]


def schemas(schema: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield schema
    for prop in schema.get("properties", {}).values():
        yield from schemas(prop)
    if isinstance(schema.get("items"), dict):
        yield from schemas(schema["items"])
