"""Start order on the real control plane: a role that depends on another has no Pod
until that role's replicas run, says what it waits for, and waits again in the TaskSet's next attempt.

kwok's ``hold`` annotation keeps the learner's Pod Pending until the test releases it, so the order is
observable: nothing of the collector exists while the learner waits, then it is made."""

from __future__ import annotations

import time
from typing import Any

import pytest

from devcluster import Cluster, sim
from taskset.api.constants import ANNOTATION_TASKSET_ATTEMPT_ID
from tests.builders import TaskSetBuilder, pod_template
from tests.integration.harness import TaskSets, eventually, recording, replica

pytestmark = pytest.mark.integration

HELD = "Held: waiting for role learner to be Running (0/1)"


def attempt_of(pod: dict[str, Any] | None) -> str | None:
    return (
        None if pod is None else (pod["metadata"].get("annotations") or {}).get(ANNOTATION_TASKSET_ATTEMPT_ID)
    )


def collector_held(ts: TaskSets, attempt: int) -> None:
    """The learner's Pod of ``attempt`` is there, held Pending; the collector has none and says why."""
    eventually(
        lambda: attempt_of(ts.pod("rl-learner-0")) == str(attempt), 90, f"the learner of attempt {attempt}"
    )
    eventually(
        lambda: replica(ts.status("rl"), "collector", 0).get("phaseMessage") == HELD, 60, "the collector held"
    )
    time.sleep(2)  # a few passes more: still nothing of the collector
    assert ts.pod("rl-collector-0") is None
    assert replica(ts.status("rl"), "collector", 0)["phase"] == "TaskRoleReplicaAttemptPending"


def test_a_dependent_role_starts_only_after_its_dependency_runs_in_every_attempt(
    cluster: Cluster, namespace: str, controller: object
) -> None:
    ts = TaskSets(cluster, namespace)
    with recording(cluster, namespace) as recorder:
        ts.create(
            TaskSetBuilder("rl")
            .retry(True, 1, 0)
            .role("learner", 1, template=pod_template(annotations={sim.HOLD: "true"}))
            .role(
                "collector", 1, template=pod_template(), dependsOn=[{"role": "learner", "until": "Running"}]
            )
            .obj()
        )
        collector_held(ts, 0)
        held_event = ("TaskRoleHeld", "TaskRole:collector: waiting for role learner to be Running (0/1)")
        assert held_event in ts.events("rl")
        ts.release("rl-learner-0")
        eventually(lambda: ts.pod("rl-collector-0"), 60, "the collector's Pod once the learner runs")
        made = {entry.name: entry.created for entry in recorder.pod_log("rl-")}
        assert made["rl-learner-0"] < made["rl-collector-0"]

        # The learner fails for good: the TaskSet's next attempt obeys the order again.
        eventually(
            lambda: replica(ts.status("rl"), "collector", 0)["phase"] == "TaskRoleReplicaAttemptRunning",
            60,
            "the collector runs",
        )
        ts.end_pod("rl-learner-0", 1)
        collector_held(ts, 1)
        ts.release("rl-learner-0")
        eventually(
            lambda: attempt_of(ts.pod("rl-collector-0")) == "1", 60, "the collector's Pod of attempt 1"
        )
