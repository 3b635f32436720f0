"""Scenarios S53, S56, S59 and S60 (spec 14.1): a Pod no scheduler picks up, a foreign ControlUnit name,
a spec the controller never writes (W-15), and a spec edited mid-attempt (W-18)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
import structlog

from devcluster import Cluster
from taskset.runtime.controller import Controller, ControllerSettings
from tests.builders import TaskSetBuilder, pod_template
from tests.integration.harness import (
    ReconcileOutcomes,
    Recorder,
    TaskSets,
    eventually,
    exits,
    replica,
    role_status,
    run_forever,
    watching,
)
from tests.integration.scenarios.steps import PREPARING, RUNNING, replica_phase

NOSCHED_WINDOW = 60.0  # seconds the unschedulable Pod is watched (spec S53)


def test_s53_scheduler_pass_through_unschedulable_pod_stays_waiting(
    ts: TaskSets, recorder: Recorder, namespace: str
) -> None:
    recorder.script = lambda pod: exits(0, after=1)  # sleep 1 -- if it ever ran
    template = pod_template("sleep 1", schedulerName="no-such-scheduler")
    ts.create(TaskSetBuilder("nosched").role("r", 1, template=template).obj())
    eventually(lambda: replica_phase(ts.status("nosched"), "r", 0) == PREPARING, 60, "replica Preparing")
    settled = len(recorder.history("nosched"))

    deadline = time.monotonic() + NOSCHED_WINDOW
    while time.monotonic() < deadline:
        pod = ts.pod("nosched-r-0")
        assert pod is not None
        assert pod["spec"]["schedulerName"] == "no-such-scheduler"
        assert pod["spec"].get("nodeName") is None
        assert pod["status"]["phase"] == "Pending"
        status = ts.status("nosched")
        assert (status["phase"], status["state"]) == ("TaskSetAttemptPreparing", "Waiting")
        assert replica_phase(status, "r", 0) == PREPARING
        time.sleep(1)
    # Every status written meanwhile (the watch saw them all) kept those phases: no timeout fired.
    for status in recorder.history("nosched")[settled - 1 :]:
        assert (status["phase"], status["state"], replica_phase(status, "r", 0)) == (
            "TaskSetAttemptPreparing",
            "Waiting",
            PREPARING,
        )
    log = recorder.pod_log()
    assert [(e.name, e.gone) for e in log] == [("nosched-r-0", None)]

    ts.delete("nosched")
    eventually(
        lambda: (
            ts.get("nosched") is None and ts.configmap("c-nosched-0") is None and ts.pods("nosched") == []
        ),
        60,
        "nosched cleaned up",
    )


def test_s56_control_unit_name_conflict(ts: TaskSets, recorder: Recorder, cluster: Cluster) -> None:
    foreign = ts.core.api_client.sanitize_for_serialization(
        ts.core.create_namespaced_config_map(
            ts.namespace, {"metadata": {"name": "c-cmconf-0"}, "data": {"owner": "someone-else"}}
        )
    )
    recorder.script = lambda pod: exits(0)
    with watching(cluster, ts.namespace, "configmaps") as units:
        ts.create(TaskSetBuilder("cmconf").retry(True, 1, 0).role("r", 1).obj())
        status = ts.final("cmconf")
        eventually(
            lambda: "ControlUnitNameConflict" in ts.reasons("cmconf"), 30, "ControlUnitNameConflict event"
        )
        unit = ts.configmap("c-cmconf-0")

    assert status["state"] == "Succeeded"
    assert status["totalRetriedCount"] == 1
    assert any(
        "ControlUnit name conflict" in s.get("phaseMessage", "") + s.get("stateMessage", "")
        for s in recorder.history("cmconf")
        if s.get("totalRetriedCount") == 0
    ), [s.get("phaseMessage") for s in recorder.history("cmconf")]
    assert "c-cmconf-1" in units.names()
    # The foreign ConfigMap: same object, same version, never modified or deleted.
    assert unit is not None
    for key in ("uid", "resourceVersion"):
        assert unit["metadata"][key] == foreign["metadata"][key]
    assert unit["data"] == {"owner": "someone-else"}
    assert not unit["metadata"].get("ownerReferences")
    assert {v.kind for v in units.versions("c-cmconf-0")} <= {"LISTED", "ADDED"}


def test_s59_spec_is_never_modified_by_the_controller(ts: TaskSets, recorder: Recorder) -> None:
    recorder.script = lambda pod: exits(0)
    obj = TaskSetBuilder("untouched").queue("default").priority(5).role("r", 1).obj()
    created = ts.create(obj)
    ts.final("untouched")
    stored = ts.get("untouched")
    assert stored is not None
    assert stored["spec"] == obj["spec"]
    assert "eventPolicy" not in stored["spec"]["roles"][0]
    assert (stored["spec"]["queue"], stored["spec"]["priority"]) == ("default", 5)
    assert stored["metadata"]["generation"] == 1
    assert stored["status"]["observedGeneration"] == 1
    # Status written through the status subresource; the only writer of the main resource is the creator.
    creator = {entry["manager"] for entry in created["metadata"]["managedFields"]}
    fields = stored["metadata"]["managedFields"]
    assert any(entry.get("subresource") == "status" for entry in fields), fields
    assert {entry["manager"] for entry in fields if not entry.get("subresource")} == creator, fields


@pytest.fixture
def counted(
    cluster: Cluster, namespace: str, crd_installed: None
) -> Iterator[tuple[TaskSets, ReconcileOutcomes]]:
    """The default controller, with its reconcile outcomes counted (S60: no reconcile-error loop)."""
    outcomes = ReconcileOutcomes()
    running = Controller(
        api_client=cluster.api_client(),
        settings=ControllerSettings(namespace=namespace, workers=4),
        logger=structlog.get_logger("taskset-test").bind(test_namespace=namespace),
        worker_metrics=outcomes,
    )
    running.start()
    try:
        assert running.wait_for_sync(30), "controller caches did not sync"
        yield TaskSets(cluster, namespace), outcomes
    finally:
        running.stop(5)


def test_s60_spec_edits_during_an_attempt_do_not_break_it(
    counted: tuple[TaskSets, ReconcileOutcomes], recorder: Recorder, cluster: Cluster, namespace: str
) -> None:
    ts, outcomes = counted
    recorder.script = lambda pod: run_forever()  # sleep 20; exit 0 -- ended by the test after the edit
    ts.create(TaskSetBuilder("edit").role("a", 1).role("b", 1).obj())
    eventually(
        lambda: all(replica_phase(ts.status("edit"), role, 0) == RUNNING for role in ("a", "b")),
        60,
        "both Running",
    )
    errors_before = outcomes.count("error") + outcomes.count("panic")

    patch = json.dumps([{"op": "remove", "path": "/spec/roles/1"}])
    patched = cluster.kubectl(
        "patch", "taskset", "edit", "-n", namespace, "--type=json", "-p", patch, check=False
    )
    assert patched.returncode == 0, patched.stderr
    stored = ts.get("edit")
    assert stored is not None and [r["name"] for r in stored["spec"]["roles"]] == ["a"]
    time.sleep(5)  # time enough for an error loop (backoff 5 ms, doubling) to show
    for pod in ("edit-a-0", "edit-b-0"):
        ts.end_pod(pod, 0)

    status = ts.final("edit")
    errors = outcomes.count("error") + outcomes.count("panic") - errors_before
    assert errors <= 2, outcomes.counts
    assert [r["name"] for r in status["roleStatus"]] == ["a", "b"]
    for role in ("a", "b"):
        done = replica(status, role, 0)
        assert done["phase"] == "TaskRoleReplicaCompleted", (role, done)
        assert done["terminatedInfo"]["exitCode"] == 0, (role, done)
        assert role_status(status, role)["state"] == "Succeeded"
    assert status["state"] == "Succeeded"
