"""spec.suspend and spec.managedBy as the controller reads them: total over any input, and
left out of, or kept in, the attempt's snapshot as they should be."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.api.constants import CONTROLLER_NAME
from taskset.api.live_fields import managed_here, suspended, without_live_fields
from taskset.api.spec import ParsedTaskSet, ValidationFailure, parse_taskset
from taskset.objects.controlunit import build_control_unit, snapshot_of
from tests.builders import TaskSetBuilder

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param({"spec": {"suspend": True}}, True, id="true suspends"),
        pytest.param({"spec": {"suspend": False}}, False, id="false does not"),
        pytest.param({"spec": {}}, False, id="absent does not"),
        pytest.param({"spec": {"suspend": None}}, False, id="null does not"),
        pytest.param({"spec": {"suspend": 1}}, False, id="1 is not true"),
        pytest.param({"spec": {"suspend": "true"}}, False, id="the string true is not true"),
        pytest.param({"spec": []}, False, id="a spec that is no object"),
        pytest.param("garbage", False, id="an object that is no object"),
    ],
)
def test_suspended(obj: Any, expected: bool) -> None:
    assert suspended(obj) is expected


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param({"spec": {}}, True, id="absent is ours"),
        pytest.param({"spec": {"managedBy": None}}, True, id="null is ours"),
        pytest.param({"spec": {"managedBy": CONTROLLER_NAME}}, True, id="our own name is ours"),
        pytest.param({"spec": {"managedBy": "kueue.x-k8s.io/multikueue"}}, False, id="MultiKueue's is not"),
        pytest.param({"spec": {"managedBy": ""}}, False, id="an empty name is someone else's"),
        pytest.param({"spec": {"managedBy": 7}}, False, id="a number is someone else's"),
        pytest.param({"spec": {"managedBy": CONTROLLER_NAME.upper()}}, False, id="names are exact"),
        pytest.param("garbage", True, id="no spec at all is ours (and fails validation)"),
    ],
)
def test_managed_here(obj: Any, expected: bool) -> None:
    assert managed_here(obj) is expected


@pytest.mark.parametrize(
    ("value", "legal"),
    [
        pytest.param(True, True, id="true"),
        pytest.param(False, True, id="false"),
        pytest.param(None, True, id="null"),
        pytest.param(1, False, id="a number"),
        pytest.param("yes", False, id="a string"),
        pytest.param({}, False, id="an object"),
    ],
)
def test_parsing_refuses_a_suspend_that_is_no_boolean_naming_it(value: object, legal: bool) -> None:
    parsed = parse_taskset(TaskSetBuilder("job").suspend(value).role("r").obj())
    if legal:
        assert isinstance(parsed, ParsedTaskSet)
    else:
        assert isinstance(parsed, ValidationFailure)
        assert (parsed.field, parsed.message) == ("spec.suspend", "spec.suspend: must be a boolean")


def test_the_snapshot_leaves_suspend_out_so_a_resume_matches_it() -> None:
    running = TaskSetBuilder("job").role("r").obj()
    running["metadata"]["uid"] = running["metadata"]["namespace"] = "x"
    paused = TaskSetBuilder("job").suspend().role("r").obj()
    assert snapshot_of(paused["spec"]) == snapshot_of(running["spec"])
    unit = build_control_unit({**running, "spec": paused["spec"]}, "c-job-0")
    assert '"suspend"' not in unit["data"]["spec.json"]
    assert "suspend" in paused["spec"], "the caller's spec is left as it was"


def test_the_snapshot_keeps_managed_by() -> None:
    spec = TaskSetBuilder("job").managed_by(CONTROLLER_NAME).role("r").obj()["spec"]
    assert without_live_fields(spec) is spec
    assert CONTROLLER_NAME in snapshot_of(spec)
