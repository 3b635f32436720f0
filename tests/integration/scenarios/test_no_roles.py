"""Scenario S26 (spec 14.1): a TaskSet without roles succeeds at once."""

from __future__ import annotations

from devcluster import Cluster
from tests.builders import TaskSetBuilder
from tests.integration.harness import Recorder, TaskSets, eventually, watching
from tests.integration.scenarios.steps import Run


def test_s26_taskset_without_roles_succeeds_at_once(
    ts: TaskSets, recorder: Recorder, run: Run, cluster: Cluster, namespace: str
) -> None:
    with watching(cluster, namespace, "configmaps") as configmaps:
        status = run(TaskSetBuilder("noroles").no_roles(), timeout=30)
        assert status["state"] == "Succeeded"
        assert status["roleStatus"] == []
        eventually(lambda: ts.configmap("c-noroles-0") is None, 60, "ControlUnit c-noroles-0 deleted")
        units = [name for name in configmaps.names() if name.startswith("c-noroles-")]
        assert units == ["c-noroles-0"], units
        eventually(
            lambda: any(v.kind == "DELETED" for v in configmaps.versions("c-noroles-0")),
            10,
            "deletion of c-noroles-0 seen by the watch",
        )
    assert ts.pods("noroles") == []
    assert recorder.pod_log() == []
