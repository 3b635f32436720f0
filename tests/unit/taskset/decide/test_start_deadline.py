"""The per-replica start deadline: a replica whose Pod is still Pending past its role's
``startDeadlineSeconds`` (from the Pod's creation) is replaced alone, as a failure not counted, with why
the Pod waited in its failure record; a replica seen Running is never replaced by it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import TaskSetPhase as T
from taskset.api.spec import ParsedTaskSet, parse_taskset
from taskset.api.status import ReplicaStatus, stamp
from taskset.decide.start_deadline import start_remaining, waiting_reason
from taskset.observed.views import ContainerWaiting, PodView
from tests.builders import TaskSetBuilder
from tests.unit.taskset.decide.scenes import preparing, the_status
from tests.unit.taskset.world import World, decide_once, replica

pytestmark = pytest.mark.unit

NOW = datetime(2026, 1, 1, 0, 10, tzinfo=UTC)


def pod(**fields: Any) -> PodView:
    base: dict[str, Any] = {
        "name": "job-r-0",
        "uid": "u",
        "phase": "Pending",
        "deleting": False,
        "controller_uid": None,
        "taskset_uid": "t",
        "replica_attempt_id": 0,
    }
    return PodView(**(base | fields))


def role_with(deadline: int | None) -> Any:
    builder = TaskSetBuilder("job").role("r", 2)
    if deadline is not None:
        builder.spec_field("startDeadlineSeconds", deadline)
    parsed = parse_taskset(builder.obj())
    assert isinstance(parsed, ParsedTaskSet)
    return parsed.spec.roles[0]


def ago(seconds: int) -> str:
    return stamp(NOW - timedelta(seconds=seconds))


@pytest.mark.parametrize(
    ("deadline", "phase", "view", "remaining"),
    [
        pytest.param(None, P.ATTEMPT_PREPARING, pod(created_at=ago(99)), None, id="no deadline"),
        pytest.param(30, P.ATTEMPT_PREPARING, pod(created_at=ago(10)), 20, id="Pending, time left"),
        pytest.param(30, P.ATTEMPT_ASSIGNED, pod(created_at=ago(30)), 0, id="Assigned, due"),
        pytest.param(30, P.ATTEMPT_PREPARING, pod(created_at=ago(45)), -15, id="Pending, overdue"),
        pytest.param(30, P.ATTEMPT_RUNNING, pod(created_at=ago(99)), None, id="seen Running: never"),
        pytest.param(
            30, P.ATTEMPT_ASSIGNED, pod(created_at=ago(99), phase="Running"), None, id="runs now: never"
        ),
        pytest.param(
            30, P.ATTEMPT_PREPARING, pod(created_at=ago(99), phase="Failed"), None, id="exited: its own end"
        ),
        pytest.param(30, P.ATTEMPT_CREATION_REQUESTED, None, None, id="not seen yet: P2's business"),
        pytest.param(30, P.ATTEMPT_PREPARING, pod(), 30 - 60, id="no creation time: since the phase"),
    ],
)
def test_the_time_left_counts_from_the_pods_creation(
    deadline: int | None, phase: P, view: PodView | None, remaining: float | None
) -> None:
    status = ReplicaStatus(index=0, name="r", phase=phase, transition_time=ago(60))
    assert start_remaining(role_with(deadline), status, view, NOW) == remaining


@pytest.mark.parametrize(
    ("view", "said"),
    [
        (pod(unschedulable_message="0/3 nodes are available"), "Unschedulable: 0/3 nodes are available"),
        (
            pod(waiting=ContainerWaiting("main", "ImagePullBackOff", "Back-off pulling image")),
            "container main waiting: ImagePullBackOff: Back-off pulling image",
        ),
        (
            pod(waiting=ContainerWaiting("init", "CreateContainerConfigError", "")),
            "container init waiting: CreateContainerConfigError",
        ),
        (pod(conditions=(("PodScheduled", "False"),)), "not scheduled to a node"),
        (pod(), "not scheduled to a node"),
        (pod(host_ip="10.0.0.1", pod_ip="10.1.0.1"), "phase Pending on node 10.0.0.1"),
    ],
)
def test_the_waiting_reason_names_what_holds_the_pod(view: PodView, said: str) -> None:
    assert waiting_reason(view) == said


# ----- whole passes -----------------------------------------------------------------------------------------


def stuck(**spec: Any) -> World:
    """Role r, 2 replicas, start deadline 30s: job-r-1 runs, job-r-0 stays Pending, unschedulable."""
    builder = TaskSetBuilder("job")
    for key, value in spec.items():
        builder.spec_field(key, value)
    world = preparing(World(builder.spec_field("startDeadlineSeconds", 30).role("r", 2).obj()))
    for name in world.pods:
        world.pods[name]["metadata"]["creationTimestamp"] = stamp(world.now)
    world.run("job-r-1")
    world.pods["job-r-0"]["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/1 nodes fit"}
    ]
    world.settle()
    return world


def test_a_waiting_replica_is_requeued_for_its_deadline() -> None:
    world = stuck()
    world.tick(10)
    plan = decide_once(world)
    assert plan.requeue_after is not None and 0 < plan.requeue_after <= 20


def test_a_stuck_pending_replica_is_replaced_alone_without_counting() -> None:
    world = stuck()
    stuck_uid, running_uid = (world.pods[n]["metadata"]["uid"] for n in ("job-r-0", "job-r-1"))
    world.tick(29)
    world.settle()
    assert world.pods["job-r-0"]["metadata"]["uid"] == stuck_uid
    world.tick(2)
    world.settle()
    late = replica(world, "r", 0)
    assert world.pods["job-r-0"]["metadata"]["uid"] != stuck_uid
    assert (late.total_retried_count, late.uncounted_retries, late.counted_retries) == (1, 1, 0)
    assert world.pods["job-r-1"]["metadata"]["uid"] == running_uid
    assert replica(world, "r", 1).total_retried_count == 0
    failures = [e for e in world.events if e.startswith("ReplicaFailure")]
    assert len(failures) == 1
    assert "rule builtin-start-deadline matched" in failures[0]
    assert "startDeadlineSeconds (30s): Unschedulable: 0/1 nodes fit" in failures[0]
    assert the_status(world).phase == T.ATTEMPT_RUNNING


def test_the_failure_record_names_the_waiting_reason_until_the_retry() -> None:
    world = stuck()
    world.tick(31)
    world.reconcile()  # P-start-deadline, P9
    late = replica(world, "r", 0)
    assert late.pod_reason == "StartDeadlineExceeded"
    assert late.failure is not None
    assert (late.failure.rule, str(late.failure.action)) == ("builtin-start-deadline", "RetryNotCounted")
    assert "Unschedulable: 0/1 nodes fit" in late.failure.message


def test_a_running_replica_is_never_replaced() -> None:
    world = stuck()
    world.tick(3600)
    world.settle()
    assert replica(world, "r", 1).total_retried_count == 0
    assert replica(world, "r", 1).phase == P.ATTEMPT_RUNNING


def test_a_role_deadline_overrides_the_taskset_default_and_a_user_rule_the_builtin() -> None:
    rule = {"action": "FailTaskSet", "onPodReasons": ["StartDeadlineExceeded"]}
    builder = TaskSetBuilder("job").spec_field("startDeadlineSeconds", 3600)
    world = preparing(World(builder.role("r", 1, startDeadlineSeconds=5, failureRules=[rule]).obj()))
    world.tick(6)
    world.settle()
    status = the_status(world)
    assert (status.phase, str(status.state)) == (T.COMPLETED, "Failed")
    assert "roles[0].failureRules[0]" in " ".join(world.events)
