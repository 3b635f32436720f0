"""Scenarios S01-S07 (spec 14.1): outcomes under the default and explicit event policies."""

from __future__ import annotations

from tests.builders import TaskSetBuilder, pod_template
from tests.integration.harness import (
    PodFacts,
    Recorder,
    TaskSets,
    eventually,
    exits,
    replica,
    role_status,
    run_forever,
    timestamp,
)
from tests.integration.scenarios.steps import Run


def test_s01_ps_worker_worker_success_ends_the_taskset(ts: TaskSets, run: Run) -> None:
    def workload(pod: PodFacts) -> object:
        if pod.role == "ps" or pod.index == 2:
            return run_forever()
        return exits(0, after=3)

    status = run(
        TaskSetBuilder("psworker")
        .role("ps", 1)
        .role(
            "worker", 3, min_succeeded=2, max_failed=2, event_policy=[("RoleSucceeded", "TaskSetSucceeded")]
        ),
        script=workload,
    )
    assert status["state"] == "Succeeded"
    assert "taskrole(worker) is succeeded" in status["stateMessage"]
    worker = role_status(status, "worker")
    assert (worker["phase"], worker["state"]) == ("TaskRoleCompleted", "Succeeded")
    for index in (0, 1):
        done = replica(status, "worker", index)
        assert done["phase"] == "TaskRoleReplicaCompleted"
        assert done["terminatedInfo"]["exitCode"] == 0
        assert done["stopped"] is False
    stopped = replica(status, "worker", 2)
    assert (stopped["phase"], stopped["stopped"], stopped["totalRetriedCount"]) == (
        "TaskRoleReplicaCompleted",
        True,
        0,
    )
    assert status["totalRetriedCount"] == 0
    assert status["startAt"] <= status["finishAt"]
    # [R] foreground deletion of the ControlUnit: every Pod is gone when TaskSetCompleted is observed.
    assert ts.pods("psworker") == []
    assert ts.configmap("c-psworker-0") is None


def test_s02_single_role_default_policy_success_with_lifecycle_facts(
    ts: TaskSets, recorder: Recorder, namespace: str
) -> None:
    ts.create(TaskSetBuilder("single").role("r", 1, template=pod_template()).obj())
    unit = eventually(lambda: ts.configmap("c-single-0"), what="ControlUnit c-single-0")
    owners = unit["metadata"]["ownerReferences"]
    assert [(o["kind"], o["name"], o["controller"], o["blockOwnerDeletion"]) for o in owners] == [
        ("TaskSet", "single", True, True)
    ]
    assert unit["metadata"]["labels"] == {"TaskSet": "single"}
    assert unit["metadata"]["annotations"] == {"TaskSet": "single", "Namespace": namespace}
    pod = eventually(lambda: ts.pod("single-r-0"), what="Pod single-r-0")
    annotations = pod["metadata"]["annotations"]
    assert (annotations["TaskSetAttemptID"], annotations["ReplicaAttemptID"]) == ("0", "0")
    eventually(lambda: ts.status("single").get("controlUnitUID") == unit["metadata"]["uid"], what="CU uid")
    eventually(lambda: replica(ts.status("single"), "r", 0)["phase"] == "TaskRoleReplicaAttemptRunning")
    ts.end_pod("single-r-0", 0)
    status = ts.final("single")
    assert status["state"] == "Succeeded"
    order = [
        "TaskSetAttemptPending",
        "TaskSetAttemptCreationRequested",
        "TaskSetAttemptPreparing",
        "TaskSetAttemptRunning",
        "TaskSetAttemptDeletionPending",
        "TaskSetAttemptDeletionRequested",
        "TaskSetCompleted",
    ]
    seen = recorder.phases("single")
    assert seen == [p for p in order if p in seen], seen
    states = recorder.states("single")
    assert states[-1] == "Succeeded" and set(states) <= {"Waiting", "Running", "Succeeded"}
    assert states == sorted(states, key=["Waiting", "Running", "Succeeded"].index)
    log = recorder.pod_log("single-r-0")
    assert len(log) == 1 and log[0].gone is not None
    done = replica(status, "r", 0)
    assert done["podName"] == "single-r-0"
    assert done["podUID"] == pod["metadata"]["uid"]
    assert done["containerName"] == "c0" and done["containerID"]
    assert done["startAt"] and done["finishAt"]
    assert done["terminatedInfo"]["reason"] == "Completed"
    assert status["createdAt"] <= status["startAt"] <= status["finishAt"]
    assert status["preemptCount"] == 0
    assert status["observedGeneration"] == 1
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Succeeded"]["status"] == "True"
    assert (conditions["Running"]["status"], conditions["Running"]["reason"]) == ("False", "Succeeded")


def test_s03_single_role_default_policy_failure(ts: TaskSets, recorder: Recorder, run: Run) -> None:
    status = run(TaskSetBuilder("singlefail").role("r", 1), script=lambda pod: exits(3))
    assert status["state"] == "Failed"
    assert "taskrole(r) is failed" in status["stateMessage"]
    assert replica(status, "r", 0)["terminatedInfo"]["exitCode"] == 3
    assert role_status(status, "r")["state"] == "Failed"
    eventually(lambda: {"TaskSet Failed", "TaskRole Failed"} <= ts.reasons("singlefail"), what="events")
    assert len(recorder.pod_log()) == 1


def _role_seen(
    recorder: Recorder, taskset: str, role: str, phase: str, state: str
) -> list[dict[str, object]]:
    """Status snapshots of the history where ``role`` is in ``phase``/``state`` while the TaskSet is not
    yet completed."""
    seen = []
    for snapshot in recorder.history(taskset):
        if snapshot.get("phase") == "TaskSetCompleted":
            continue
        try:
            entry = role_status(snapshot, role)
        except KeyError:
            continue
        if (entry.get("phase"), entry.get("state")) == (phase, state):
            seen.append(snapshot)
    return seen


def test_s04_default_policy_one_role_failure_ends_the_taskset_while_another_runs(
    ts: TaskSets, recorder: Recorder, run: Run
) -> None:
    status = run(
        TaskSetBuilder("twofail").role("a", 1).role("b", 1),
        script=lambda pod: run_forever() if pod.role == "a" else exits(1, after=3),
        timeout=60,
    )
    assert status["state"] == "Failed"
    assert "taskrole(b) is failed" in status["stateMessage"]
    assert role_status(status, "b")["state"] == "Failed"
    # The ps-like Pod of role a never ended on its own: it is deleted with the ControlUnit.
    eventually(lambda: ts.pod("twofail-a-0") is None, 60, "Pod twofail-a-0 deleted")
    eventually(lambda: ts.configmap("c-twofail-0") is None, 60, "ControlUnit c-twofail-0 deleted")
    log = recorder.pod_log("twofail-a-0")
    assert len(log) == 1
    eventually(lambda: log[0].gone is not None, 10, "deletion of twofail-a-0 seen by the pod log")


def test_s05_role_failed_noaction_keeps_running_other_role_success_ends_it(
    recorder: Recorder, run: Run
) -> None:
    status = run(
        TaskSetBuilder("failnoact")
        .role("a", 1, event_policy=[("RoleSucceeded", "TaskSetSucceeded")])
        .role("b", 1, event_policy=[("RoleFailed", "NoAction")]),
        script=lambda pod: exits(0, after=10) if pod.role == "a" else exits(1, after=2),
    )
    assert _role_seen(recorder, "failnoact", "b", "TaskRoleCompleted", "Failed"), recorder.history(
        "failnoact"
    )
    assert status["state"] == "Succeeded"
    assert "taskrole(a)" in status["stateMessage"]


def test_s06_only_role_fails_under_noaction_taskset_fails_once_all_completed(
    run: Run,
) -> None:
    status = run(
        TaskSetBuilder("onlynoact").role("r", 1, event_policy=[("RoleFailed", "NoAction")]),
        script=lambda pod: exits(1),
    )
    assert status["state"] == "Failed"
    assert "all taskrole are completed,but some TaskRole are failed" in status["stateMessage"]


# S07 runs role b for 25 s and asserts finishAt >= 20 s after role a completed; both shrunk by 0.6.
S07_B_SECONDS = 15
S07_MIN_GAP = 12


def test_s07_all_roles_must_succeed_under_default_policy(recorder: Recorder, run: Run) -> None:
    status = run(
        TaskSetBuilder("allsucc").role("a", 1).role("b", 1),
        script=lambda pod: exits(0) if pod.role == "a" else exits(0, after=S07_B_SECONDS),
    )
    seen = _role_seen(recorder, "allsucc", "a", "TaskRoleCompleted", "Succeeded")
    assert seen, recorder.history("allsucc")
    assert status["state"] == "Succeeded"
    assert "all taskrole are succeeded" in status["stateMessage"]
    # role a's transitionTime into TaskRoleCompleted, from the first snapshot showing it there
    a_done = role_status(seen[0], "a")["transitionTime"]
    assert timestamp(status["finishAt"]) - timestamp(a_done) >= S07_MIN_GAP, (status["finishAt"], a_done)
