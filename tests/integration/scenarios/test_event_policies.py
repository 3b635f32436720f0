"""Scenarios S08-S13 (spec 14.1): explicit event policies and how they combine with the implicit rule."""

from __future__ import annotations

import time

from tests.builders import TaskSetBuilder
from tests.integration.harness import (
    Outcome,
    PodFacts,
    Recorder,
    TaskSets,
    eventually,
    exits,
    never_overlapping,
    role_status,
    run_forever,
)
from tests.integration.scenarios.steps import Run


def test_s08_role_completed_taskset_completed(ts: TaskSets, recorder: Recorder) -> None:
    def workload(pod: PodFacts) -> Outcome:
        if pod.role == "b":
            return run_forever()
        return exits(0) if pod.name.startswith("tscomp1-") else exits(1)

    recorder.script = workload
    for name in ("tscomp1", "tscomp2"):
        ts.create(
            TaskSetBuilder(name)
            .retry(True, 1, 0)
            .role("a", 1, event_policy=[("RoleCompleted", "TaskSetCompleted")])
            .role("b", 1)
            .obj()
        )
    first = ts.final("tscomp1")
    second = ts.final("tscomp2")
    # [R] TaskSetCompleted takes the triggering role's outcome (D5): a succeeded, so the TaskSet did.
    assert (first["state"], first["totalRetriedCount"]) == ("Succeeded", 0)
    assert (second["state"], second["totalRetriedCount"]) == ("Failed", 1)
    log = sorted(
        (e for e in recorder.pod_log("tscomp2-a-0") if e.name == "tscomp2-a-0"), key=lambda e: e.created
    )
    assert [(e.taskset_attempt, e.replica_attempt) for e in log] == [("0", "0"), ("1", "0")]
    assert never_overlapping(log)


def test_s09_role_completed_taskset_succeeded_turns_failure_into_success(run: Run) -> None:
    status = run(
        TaskSetBuilder("compsucc")
        .retry(True, 2, 0)
        .role("a", 1, event_policy=[("RoleCompleted", "TaskSetSucceeded")]),
        script=lambda pod: exits(1),
    )
    assert status["state"] == "Succeeded"
    assert role_status(status, "a")["state"] == "Failed"
    assert status["totalRetriedCount"] == 0


# S10 runs role b for 25 s and watches 15 s after role a completed; shrunk to 15 s and 9 s.
S10_B_SECONDS = 15
S10_WINDOW = 9


def test_s10_role_completed_entry_suppresses_implicit_role_failed_rule(
    ts: TaskSets, recorder: Recorder
) -> None:
    recorder.script = lambda pod: exits(1) if pod.role == "a" else exits(0, after=S10_B_SECONDS)
    ts.create(
        TaskSetBuilder("compnoact")
        .role("a", 1, event_policy=[("RoleCompleted", "NoAction")])
        .role("b", 1)
        .obj()
    )

    def a_completed() -> bool:
        status = ts.status("compnoact")
        try:
            return role_status(status, "a").get("phase") == "TaskRoleCompleted"
        except KeyError:
            return False

    eventually(a_completed, 60, "role a TaskRoleCompleted")
    deadline = time.monotonic() + S10_WINDOW
    while time.monotonic() < deadline:
        phase = ts.status("compnoact").get("phase")
        assert phase != "TaskSetCompleted", "TaskSet completed although role a's RoleCompleted is NoAction"
        time.sleep(0.5)
    status = ts.final("compnoact")
    assert status["state"] == "Failed"
    assert "all taskrole are completed,but some TaskRole are failed" in status["stateMessage"]


def test_s11_implicit_failure_rule_appended_without_role_failed_or_completed(run: Run) -> None:
    status = run(
        TaskSetBuilder("implicit")
        .role("a", 1, event_policy=[("RoleSucceeded", "TaskSetSucceeded")])
        .role("b", 1),
        script=lambda pod: exits(1) if pod.role == "a" else run_forever(),
        timeout=60,
    )
    assert status["state"] == "Failed"
    assert "taskrole(a) is failed" in status["stateMessage"]


def test_s12_entry_order_and_noaction_falls_through(run: Run) -> None:
    status = run(
        TaskSetBuilder("order")
        .role("a", 1, event_policy=[("RoleFailed", "NoAction"), ("RoleCompleted", "TaskSetSucceeded")])
        .role("b", 1),
        script=lambda pod: exits(1) if pod.role == "a" else run_forever(),
        timeout=60,
    )
    assert status["state"] == "Succeeded"


def test_s13_role_succeeded_taskset_failed_sentinel_role(run: Run) -> None:
    status = run(
        TaskSetBuilder("sentinel")
        .role("canary", 1, event_policy=[("RoleSucceeded", "TaskSetFailed")])
        .role("main", 1),
        script=lambda pod: exits(0) if pod.role == "canary" else run_forever(),
        timeout=60,
    )
    assert status["state"] == "Failed"
    assert role_status(status, "canary")["state"] == "Succeeded"
