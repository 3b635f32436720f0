"""Scenarios S39-S45 (spec 14.1): what O got stuck on: quota failures (W-2), invalid templates (W-14),
replicas that finish at different times (W-3a, W-5, W-7), NoAction cleanup, and a sticky state (W-9)."""

from __future__ import annotations

from typing import Any

from devcluster import Cluster, sim
from tests.builders import TaskSetBuilder, pod_template
from tests.integration.harness import (
    ObjectLog,
    PodFacts,
    Recorder,
    TaskSets,
    eventually,
    exits,
    replica,
    role_status,
    run_forever,
    watching,
)
from tests.integration.scenarios.steps import (
    ASSIGNED,
    PENDING,
    PREPARING,
    REPLICA_COMPLETED,
    RETRY_PENDING,
    RUNNING,
    Run,
    replica_phase,
)

# "Running or later" for one replica attempt (spec 5.3.2).
RUNNING_OR_LATER = {
    RUNNING,
    "TaskRoleReplicaAttemptDeletionPending",
    "TaskRoleReplicaAttemptDeletionRequested",
    "TaskRoleReplicaAttemptCompleted",
    REPLICA_COMPLETED,
}


def _init_container(command: str) -> dict[str, Any]:
    return {"name": "init", "image": "busybox", "command": ["sh", "-c", command]}


def _live_counts(pods: ObjectLog) -> tuple[int, int]:
    """The most Pods that ever existed at once, and the most that were not yet terminal at once."""
    live: dict[str, bool] = {}  # uid -> still charged to the quota (not Succeeded/Failed)
    most_existing = most_active = 0
    for version in pods.versions():
        if version.kind == "DELETED":
            live.pop(version.uid, None)
        else:
            phase = (version.obj.get("status") or {}).get("phase")
            live[version.uid] = phase not in ("Succeeded", "Failed")
        most_existing = max(most_existing, len(live))
        most_active = max(most_active, sum(live.values()))
    return most_existing, most_active


def create_pod_quota(ts: TaskSets, hard: int) -> None:
    """A namespace ResourceQuota ``pods: hard``, ready once kube-controller-manager's resource-quota
    controller has filled in its usage (admission refuses every Pod until then)."""
    ts.core.create_namespaced_resource_quota(
        ts.namespace, {"metadata": {"name": "pods"}, "spec": {"hard": {"pods": str(hard)}}}
    )
    eventually(
        lambda: (ts.core.read_namespaced_resource_quota("pods", ts.namespace).status.hard or {}).get("pods"),
        30,
        "the quota's status",
    )


def test_s39_quota_failure_of_one_replica_does_not_block_the_others(
    ts: TaskSets, recorder: Recorder, cluster: Cluster, namespace: str
) -> None:
    create_pod_quota(ts, hard=2)  # namespace ResourceQuota pods: "2", before the TaskSet

    def workload(pod: PodFacts) -> Any:
        # a: sleep 15; exit 0 (shortened). b: exit 0, after 2 s: the status can only show the third Pod
        # blocked while the first two run if some pass falls between them running and the quota being
        # freed. With b exiting at once that window is the quota controller's lag alone, and a pass that
        # first sees both running may already create the third (the retry backoff decides which);
        # CI failed that way once. 2 s leaves room for the pass their Running updates trigger (0.5 s).
        return exits(0, after=6) if pod.role == "a" else exits(0, after=2)

    recorder.script = workload
    with watching(cluster, namespace, "pods") as pods:
        ts.create(TaskSetBuilder("quota").role("a", 2, min_succeeded=2, max_failed=1).role("b", 1).obj())
        status = ts.final("quota")
    assert status["state"] == "Succeeded"

    # ResourceQuota charges only Pods that are not terminal, so that is what it keeps at 2.
    existing, active = _live_counts(pods)
    assert active <= 2, (existing, active)
    eventually(lambda: "PodCreationFailed" in ts.reasons("quota"), 30, "a PodCreationFailed event")

    replicas = [("a", 0), ("a", 1), ("b", 0)]
    for role, index in replicas:
        done = replica(status, role, index)
        assert done["phase"] == REPLICA_COMPLETED, (role, index, done)
        assert done["terminatedInfo"]["exitCode"] == 0, (role, index, done)
    log = sorted(recorder.pod_log(), key=lambda e: e.created)
    assert sorted(e.name for e in log) == ["quota-a-0", "quota-a-1", "quota-b-0"]

    def replica_of(pod_name: str) -> tuple[str, int]:
        _, role, index = pod_name.rsplit("-", 2)
        return role, int(index)

    first, second, third = (replica_of(e.name) for e in log)
    assert any(
        replica_phase(s, *first) in RUNNING_OR_LATER
        and replica_phase(s, *second) in RUNNING_OR_LATER
        and replica_phase(s, *third) == PENDING
        for s in recorder.history("quota")
    ), [[replica_phase(s, *r) for r in (first, second, third)] for s in recorder.history("quota")]


def test_pods_wait_for_a_service_account_created_after_the_taskset(ts: TaskSets) -> None:
    """The ServiceAccount admission plugin refuses a Pod whose service account does not exist yet (403).
    Applied in the wrong order, or created right after its namespace (whose "default" account comes a
    moment later), a TaskSet must wait for the account, not fail: the denial is retried like a quota's."""
    template = pod_template(annotations=sim.outcome(duration=1.0, exit_code=0), serviceAccountName="late")
    ts.create(TaskSetBuilder("latesa").role("r", 1, template=template).obj())
    eventually(lambda: "PodCreationFailed" in ts.reasons("latesa"), 30, "the refused create's Warning event")
    status = ts.status("latesa")
    assert status.get("state") != "Failed", status
    assert replica_phase(status, "r", 0) == PENDING, status
    ts.core.create_namespaced_service_account(ts.namespace, {"metadata": {"name": "late"}})
    status = ts.final("latesa", timeout=90)
    assert status["state"] == "Succeeded", status
    done = replica(status, "r", 0)
    assert done["terminatedInfo"]["exitCode"] == 0, done


def test_s40_invalid_pod_template_fails_visibly(ts: TaskSets, recorder: Recorder, run: Run) -> None:
    # A container name that is not a DNS label: the CRD's Pod template schema has no pattern for it (the
    # TaskSet is stored), Pod validation rejects it with 422.
    status = run(
        TaskSetBuilder("badtpl").role("r", 1, template=pod_template(container="Bad_Name")), timeout=60
    )
    done = replica(status, "r", 0)
    assert done["phase"] == REPLICA_COMPLETED
    assert done["podReason"] == "PodCreationFailed"
    assert "Bad_Name" in done["phaseMessage"] and "Invalid value" in done["phaseMessage"], done[
        "phaseMessage"
    ]
    assert role_status(status, "r")["state"] == "Failed"
    assert status["state"] == "Failed"
    eventually(lambda: "PodCreationFailed" in ts.reasons("badtpl"), 30, "a PodCreationFailed event")
    assert recorder.pod_log() == []


def test_s41_finished_replica_next_to_a_not_yet_started_one(ts: TaskSets, recorder: Recorder) -> None:
    # The init container `if [ $i = 1 ]; then sleep 30; fi` is played by sim.HOLD, released per replica.
    template = pod_template(
        "exit 0",
        annotations={sim.HOLD: "init"},
        initContainers=[_init_container("if [ $TASKROLE_REPLICA_INDEX = 1 ]; then sleep 30; fi")],
    )
    recorder.script = lambda pod: exits(0)
    ts.create(TaskSetBuilder("mixed").role("r", 2, min_succeeded=2, max_failed=2, template=template).obj())
    eventually(
        lambda: all(replica_phase(ts.status("mixed"), "r", i) == ASSIGNED for i in (0, 1)),
        60,
        "both replicas Assigned",
    )
    ts.release("mixed-r-0")  # replica 0's init container is done at once

    status = eventually(
        lambda: (s := ts.status("mixed")) and replica_phase(s, "r", 0) == REPLICA_COMPLETED and s, 60
    )
    assert replica_phase(status, "r", 1) in (PREPARING, ASSIGNED)
    assert status["phase"] != "TaskSetCompleted"
    ts.release("mixed-r-1")  # replica 1's init container ends

    status = ts.final("mixed", timeout=120)
    later = replica(status, "r", 1)
    assert later["phase"] == REPLICA_COMPLETED and later["terminatedInfo"]["exitCode"] == 0
    assert later["podUID"]
    assert role_status(status, "r")["state"] == "Succeeded"
    assert status["state"] == "Succeeded"


def test_s41b_finished_replica_next_to_one_in_retry_pending(recorder: Recorder, run: Run) -> None:
    def workload(pod: PodFacts) -> Any:
        # [ $i = 1 ] && [ "$TASKROLE_REPLICA_ATTEMPT_ID" = 0 ] && exit 1; exit 0
        return exits(1) if pod.index == 1 and pod.replica_attempt == 0 else exits(0)

    status = run(
        TaskSetBuilder("mixedretry").role("r", 2, min_succeeded=2, max_failed=2, retry=(True, 1, 6)),
        script=workload,
        timeout=120,
    )
    assert status["state"] == "Succeeded"
    assert replica(status, "r", 1)["totalRetriedCount"] == 1
    assert any(
        replica_phase(s, "r", 0) == REPLICA_COMPLETED and replica_phase(s, "r", 1) == RETRY_PENDING
        for s in recorder.history("mixedretry")
    )


def test_s42_all_replicas_done_neither_threshold_reached(run: Run) -> None:
    status = run(
        TaskSetBuilder("neither").role("r", 3, min_succeeded=3, max_failed=2),
        script=lambda pod: exits(1) if pod.index == 0 else exits(0),
    )
    role = role_status(status, "r")
    assert role["state"] == "Failed"
    assert "neither MinSucceeded nor MaxFailed" in role["stateMessage"]
    assert status["state"] == "Failed"


def test_s43_cleanup_stops_assigned_replicas(ts: TaskSets, recorder: Recorder) -> None:
    # The init container `if [ $i = 1 ]; then sleep 3600; fi` is sim.HOLD; only replica 0 is released.
    template = pod_template(
        "exit 0",
        annotations={sim.HOLD: "init"},
        initContainers=[_init_container("if [ $TASKROLE_REPLICA_INDEX = 1 ]; then sleep 3600; fi")],
    )
    recorder.script = lambda pod: exits(0)
    ts.create(
        TaskSetBuilder("cleanassigned").role("r", 2, min_succeeded=1, max_failed=2, template=template).obj()
    )
    eventually(
        lambda: all(replica_phase(ts.status("cleanassigned"), "r", i) == ASSIGNED for i in (0, 1)),
        60,
        "both replicas Assigned",
    )
    ts.release("cleanassigned-r-0")

    status = ts.final("cleanassigned", timeout=90)
    assert role_status(status, "r")["state"] == "Succeeded"
    stopped = replica(status, "r", 1)
    assert (stopped["phase"], stopped["stopped"]) == (REPLICA_COMPLETED, True)
    held = recorder.pod_log("cleanassigned-r-1")
    assert len(held) == 1
    eventually(lambda: held[0].gone is not None, 30, "replica 1's Pod deleted")
    assert status["state"] == "Succeeded"


def test_s44_completed_noaction_role_is_cleaned_up_while_the_taskset_continues(
    ts: TaskSets, recorder: Recorder
) -> None:
    recorder.script = lambda pod: run_forever()  # a-0 and b-0 are ended by the test below
    ts.create(
        TaskSetBuilder("garbage")
        .role(
            "a",
            4,
            min_succeeded=1,
            max_failed=4,
            retry=(True, 2, 0),
            event_policy=[("RoleSucceeded", "NoAction")],
        )
        .role("b", 1, event_policy=[("RoleSucceeded", "TaskSetSucceeded")])
        .obj()
    )
    running = [("a", i) for i in range(4)] + [("b", 0)]
    eventually(
        lambda: all(replica_phase(ts.status("garbage"), r, i) == RUNNING for r, i in running),
        60,
        "every replica Running",
    )
    ts.end_pod("garbage-a-0", 0)  # if [ $i = 0 ]; then sleep 5; exit 0; fi

    others = [recorder.pod_log(f"garbage-a-{i}") for i in (1, 2, 3)]

    def cleaned() -> dict[str, Any] | None:
        status = ts.status("garbage")
        role = role_status(status, "a")
        done = (role["phase"], role["state"]) == ("TaskRoleCompleted", "Succeeded") and all(
            len(log) == 1 and log[0].gone is not None for log in others
        )
        return status if done else None

    status = eventually(cleaned, 30, "role a cleaned up")
    for index in (1, 2, 3):
        stopped = replica(status, "a", index)
        assert (stopped["stopped"], stopped["totalRetriedCount"]) == (True, 0), stopped
    assert replica(status, "a", 0)["terminatedInfo"]["exitCode"] == 0
    assert status["phase"] != "TaskSetCompleted"
    assert ts.status("garbage")["phase"] != "TaskSetCompleted"

    ts.end_pod("garbage-b-0", 0)  # sleep 45; exit 0
    status = ts.final("garbage")
    assert status["state"] == "Succeeded"
    assert "taskrole(b)" in status["stateMessage"]


def test_s45_state_never_goes_back_from_running_to_waiting(recorder: Recorder, run: Run) -> None:
    assert (
        run(TaskSetBuilder("sticky").role("r", 1), script=lambda pod: exits(0, after=5))["state"]
        == "Succeeded"
    )
    eventually(lambda: recorder.states("sticky")[-1:] == ["Succeeded"], 10, "final status recorded")
    assert recorder.states("sticky") == ["Waiting", "Running", "Succeeded"]
