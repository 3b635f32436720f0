"""Scenario S24 (the runtime half: completion-policy defaults, D4) and S35 (background deletion)."""

from __future__ import annotations

import pytest

from taskset.runtime.controller import Controller
from tests.builders import TaskSetBuilder
from tests.integration.harness import Recorder, TaskSets, eventually, exits, role_status
from tests.integration.scenarios.steps import Run


@pytest.mark.parametrize(
    ("completion", "expected"),
    [
        pytest.param({"max_failed": 1}, "Succeeded", id="minSucceeded absent takes replicas"),
        pytest.param({"min_succeeded": 1}, "Succeeded", id="maxFailed absent takes 1"),
    ],
)
def test_s24_absent_completion_policy_values_take_their_defaults(
    run: Run, completion: dict[str, int], expected: str
) -> None:
    status = run(TaskSetBuilder("defaults").role("r", 1, **completion), script=lambda pod: exits(0))
    assert status["state"] == expected


def test_s24b_no_completion_policy_one_failure_fails_the_role(run: Run) -> None:
    status = run(TaskSetBuilder("nocp").role("r", 2), script=lambda pod: exits(1 if pod.index == 1 else 0))
    role = role_status(status, "r")
    assert role["state"] == "Failed"
    assert "MaxFailed" in role["stateMessage"]
    assert status["state"] == "Failed"


def test_s24c_no_completion_policy_all_must_succeed(run: Run) -> None:
    status = run(TaskSetBuilder("allok").role("r", 2), script=lambda pod: exits(0))
    role = role_status(status, "r")
    assert role["state"] == "Succeeded"
    assert role["stateMessage"] == "Completion policy MinSucceeded satisfied,succeeded count:2"


def test_s35_background_deletion(ts: TaskSets, recorder: Recorder, controller: Controller) -> None:
    ts.create(TaskSetBuilder("bgdel").role("r", 2).obj())
    eventually(lambda: len(ts.pods("bgdel")) == 2, what="both Pods")
    eventually(lambda: ts.configmap("c-bgdel-0"), what="ControlUnit")
    ts.delete("bgdel")
    eventually(lambda: ts.get("bgdel") is None, timeout=5, what="TaskSet gone at once")
    eventually(lambda: ts.pods("bgdel") == [] and ts.configmap("c-bgdel-0") is None, what="cascade")
    assert controller.reconciler.reconcile(f"{ts.namespace}/bgdel").error is None  # nothing left to do
