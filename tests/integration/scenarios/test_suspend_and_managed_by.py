"""On the real control plane: spec.suspend (a suspended TaskSet creates nothing; suspending a
running one deletes its Pods and counts nothing; resuming recreates them) and spec.managedBy (another
controller's TaskSet is left alone; the field is immutable and checked by the CRD)."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client

from taskset.api import constants as c
from tests.builders import TaskSetBuilder
from tests.integration.harness import Recorder, TaskSets, eventually, never_overlapping, replica
from tests.integration.scenarios.steps import FOREVER, PENDING, RUNNING

pytestmark = pytest.mark.integration


def patch_spec(ts: TaskSets, name: str, spec: dict[str, Any]) -> None:
    ts.custom.patch_namespaced_custom_object(c.GROUP, c.VERSION, ts.namespace, c.PLURAL, name, {"spec": spec})


def condition(status: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((cond for cond in status.get("conditions") or [] if cond.get("type") == kind), None)


def suspended_is(ts: TaskSets, name: str, value: str) -> bool:
    found = condition(ts.status(name), c.ConditionType.SUSPENDED)
    return found is not None and found["status"] == value


def all_running(ts: TaskSets, name: str, count: int) -> bool:
    pods = ts.pods(name)
    return len(pods) == count and all((p.get("status") or {}).get("phase") == "Running" for p in pods)


def test_a_taskset_created_suspended_creates_nothing_until_resumed(ts: TaskSets, recorder: Recorder) -> None:
    ts.create(TaskSetBuilder("paused").suspend().role("r", 2, command=FOREVER).obj())
    eventually(lambda: suspended_is(ts, "paused", "True"), 30, "the Suspended condition")
    time.sleep(2)  # time enough for a controller that would create something to have done so
    assert ts.configmap("c-paused-0") is None
    assert ts.pods("paused") == []
    assert ts.status("paused")["phase"] == c.TaskSetPhase.ATTEMPT_PENDING

    patch_spec(ts, "paused", {"suspend": False})
    eventually(lambda: all_running(ts, "paused", 2), 60, "both Pods running after the resume")
    # The pass that resumes creates the Pods first and writes its status after: a simulated kubelet can
    # run them before that write lands.
    eventually(lambda: suspended_is(ts, "paused", "False"), 30, "the Suspended condition False")
    for index in range(2):
        ts.end_pod(f"paused-r-{index}", 0)
    final = ts.final("paused")
    assert (final["state"], final["totalRetriedCount"]) == ("Succeeded", 0)
    assert {"TaskSetSuspended", "TaskSetResumed"} <= ts.reasons("paused")


def test_suspending_a_running_taskset_deletes_its_pods_and_counts_nothing(
    ts: TaskSets, recorder: Recorder
) -> None:
    ts.create(TaskSetBuilder("pause").role("r", 2, command=FOREVER, retry=(True, 3, 0)).obj())
    eventually(lambda: all_running(ts, "pause", 2), 60, "both Pods running")
    eventually(lambda: ts.status("pause").get("state") == "Running", 30, "the TaskSet running")
    first = {p["metadata"]["name"]: p["metadata"]["uid"] for p in ts.pods("pause")}

    patch_spec(ts, "pause", {"suspend": True})

    def all_pending() -> dict[str, Any] | None:
        status = ts.status("pause")
        phases = [replica(status, "r", index)["phase"] for index in range(2)]
        return status if phases == [PENDING, PENDING] and not ts.pods("pause") else None

    status = eventually(all_pending, 60, "every Pod deleted, every replica pending again")
    assert status["totalRetriedCount"] == 0
    assert [replica(status, "r", index)["totalRetriedCount"] for index in range(2)] == [0, 0]
    assert status["phase"] == c.TaskSetPhase.ATTEMPT_RUNNING, "the attempt itself goes on"
    assert ts.configmap("c-pause-0") is not None
    assert suspended_is(ts, "pause", "True")

    patch_spec(ts, "pause", {"suspend": False})
    eventually(lambda: all_running(ts, "pause", 2), 60, "both Pods running again")
    again = ts.pods("pause")
    assert {p["metadata"]["name"] for p in again} == set(first)
    assert not {p["metadata"]["uid"] for p in again} & set(first.values()), "new Pods"
    assert {p["metadata"]["annotations"][c.ANNOTATION_REPLICA_ATTEMPT_ID] for p in again} == {"0"}
    eventually(
        lambda: [replica(ts.status("pause"), "r", i)["phase"] for i in range(2)] == [RUNNING, RUNNING],
        30,
        "both replicas running",
    )
    for index in range(2):
        ts.end_pod(f"pause-r-{index}", 0)
    final = ts.final("pause")
    assert (final["state"], final["totalRetriedCount"]) == ("Succeeded", 0)
    assert [replica(final, "r", index)["totalRetriedCount"] for index in range(2)] == [0, 0]
    for index in range(2):
        log = recorder.pod_log(f"pause-r-{index}")
        assert len(log) == 2, "one Pod before the suspension, one after: no duplicate"
        assert never_overlapping(log)


def test_a_taskset_managed_by_another_controller_is_left_alone(ts: TaskSets) -> None:
    ts.create(TaskSetBuilder("elsewhere").managed_by("kueue.x-k8s.io/multikueue").role("r", 1).obj())
    ts.create(TaskSetBuilder("here").managed_by(c.CONTROLLER_NAME).role("r", 1, command=FOREVER).obj())
    eventually(lambda: ts.pods("here"), 60, "our own TaskSet's Pod")
    time.sleep(1)  # the other one was listed with it, long enough ago
    assert ts.status("elsewhere") == {}
    assert ts.pods("elsewhere") == []
    assert ts.configmap("c-elsewhere-0") is None


@pytest.mark.parametrize(
    ("spec", "named"),
    [
        pytest.param(
            {"managedBy": "example.com/other"}, "spec.managedBy", id="managedBy cannot be set later"
        ),
        pytest.param({"suspend": "yes"}, "spec.suspend", id="suspend must be a boolean"),
    ],
)
def test_the_crd_refuses_a_bad_change_naming_the_field(
    ts: TaskSets, spec: dict[str, Any], named: str
) -> None:
    ts.create(TaskSetBuilder("fixed").suspend().role("r", 1).obj())
    with pytest.raises(client.ApiException) as refused:
        patch_spec(ts, "fixed", spec)
    assert refused.value.status == 422
    assert named in (refused.value.body or "")


@pytest.mark.parametrize(
    "manager",
    [
        pytest.param("not-a-path", id="no domain prefix"),
        pytest.param("example.com/" + "x" * 60, id="longer than 63 characters"),
        pytest.param("Example.com/x", id="an upper-case domain"),
    ],
)
def test_the_crd_refuses_a_malformed_managed_by_naming_it(ts: TaskSets, manager: str) -> None:
    with pytest.raises(client.ApiException) as refused:
        ts.create(TaskSetBuilder("badmanager").managed_by(manager).role("r", 1).obj())
    assert refused.value.status == 422
    assert "spec.managedBy" in (refused.value.body or "")


def test_managed_by_cannot_be_removed_or_changed(ts: TaskSets) -> None:
    ts.create(TaskSetBuilder("owned").managed_by("example.com/other").role("r", 1).obj())
    for change in ({"managedBy": None}, {"managedBy": "example.com/third"}):
        with pytest.raises(client.ApiException) as refused:
            patch_spec(ts, "owned", change)
        assert refused.value.status == 422
        assert c.MSG_MANAGED_BY_IMMUTABLE in (refused.value.body or "")
