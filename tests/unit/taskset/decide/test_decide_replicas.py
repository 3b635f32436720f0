"""The replica machine, one pass at a time: the unobserved-Pod timeouts (S57, W-4), the replica retry
(7.2), adoption, previous Pods and strays (W-1, D1, P0, W-3d) and capturing Pod information
(5.3.3)."""

from __future__ import annotations

import copy

import pytest

from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import State
from taskset.api.constants import TaskSetPhase as T
from taskset.api.status import TerminatedInfo
from taskset.decide import (
    ActionResult,
    CreateOwned,
    CreatePod,
    DeleteOwned,
    DeletePod,
    ResultKind,
)
from tests.unit.taskset.decide.scenes import (
    creates,
    pod_uid,
    preparing,
    reasons,
    retrying_replica,
    running,
    single,
    stamp_at,
    the_status,
    transitions,
    uid_of,
    unit_uid,
)
from tests.unit.taskset.world import (
    PodBuilder,
    adopted_unseen_control_unit,
    control_unit,
    control_unit_ready,
    decide_once,
    execute,
    pass_once,
    replica,
)

pytestmark = pytest.mark.unit


# ----- S57: timeouts apply only to objects that were never observed (W-4) -----------------------------------


def test_s57_a_control_unit_observed_an_hour_late_is_used() -> None:
    world = single()
    adopted_unseen_control_unit(world)
    world.tick(3600)
    plan = decide_once(world)
    assert plan.status.phase == T.ATTEMPT_PREPARING
    assert transitions(plan) == ["Pre:TaskSetAttemptCreationRequested,Next:TaskSetAttemptPreparing"]
    assert not [i for i in plan.intents if isinstance(i, DeleteOwned)]


def test_s57_a_control_unit_never_observed_ends_the_attempt_as_failed() -> None:
    world = single()
    uid = adopted_unseen_control_unit(world)
    world.units.clear()
    world.tick(3600)
    plan = decide_once(world)
    assert transitions(plan)[0] == "Pre:TaskSetAttemptCreationRequested,Next:TaskSetAttemptDeletionPending"
    assert plan.intents == [DeleteOwned("c-job-0", uid, advances=False)]
    assert (plan.status.phase, plan.status.state) == (T.COMPLETED, State.FAILED)


def test_s57_a_control_unit_not_observed_within_the_timeout_is_waited_for() -> None:
    world = single()
    adopted_unseen_control_unit(world)
    world.units.clear()
    world.tick(299)
    plan = decide_once(world)
    assert plan.status.phase == T.ATTEMPT_CREATION_REQUESTED
    assert (plan.intents, plan.events) == ([], [])
    assert plan.requeue_after is not None and 0 < plan.requeue_after <= 10


def test_s57_a_pod_observed_an_hour_late_is_used() -> None:
    world = preparing(single())
    replica(world, "r").phase = P.ATTEMPT_CREATION_REQUESTED
    world.tick(3600)
    plan = decide_once(world)
    assert plan.status.roles[0].replicas[0].phase == P.ATTEMPT_PREPARING
    assert plan.intents == []


def test_s57_a_pod_never_observed_ends_the_replica_attempt_with_a_delete_by_name() -> None:
    world = preparing(single())
    uid = pod_uid(world, "job-r-0")
    replica(world, "r").phase = P.ATTEMPT_CREATION_REQUESTED
    del world.pods["job-r-0"]
    world.tick(3600)
    step = pass_once(world)
    plan = step.plan
    rep = plan.status.roles[0].replicas[0]
    assert rep.phase == P.ATTEMPT_DELETION_PENDING
    assert plan.intents == [DeletePod("job-r-0", uid, 0, 0, advances=True, seen=False)]
    step.fold(plan.intents[0], ActionResult(ResultKind.NOT_FOUND))
    assert plan.status.roles[0].replicas[0].phase == P.ATTEMPT_DELETION_REQUESTED
    world.status = plan.status
    after = decide_once(world)
    assert after.status.roles[0].replicas[0].phase == P.COMPLETED
    assert after.status.roles[0].replicas[0].succeeded is False


def test_s57_a_pod_the_cache_never_showed_counts_as_gone_only_after_a_not_found() -> None:
    # Spec P2/P13 and S57: the replica reaches its retry decision only once the API server says NotFound.
    world = preparing(single(retry=(True, 1, 0)))
    replica(world, "r").phase = P.ATTEMPT_CREATION_REQUESTED
    del world.pods["job-r-0"]  # it exists server-side but never reached the cache
    world.tick(3600)
    step = pass_once(world)
    plan = step.plan
    assert [type(i) for i in plan.intents] == [DeletePod]
    step.fold(plan.intents[0], ActionResult(ResultKind.OK))  # accepted: the Pod is terminating
    world.status = plan.status
    after = decide_once(world)  # the cache still does not show it
    rep = after.status.roles[0].replicas[0]
    assert rep.phase not in (P.ATTEMPT_RETRY_PENDING, P.ATTEMPT_PENDING, P.COMPLETED), rep.phase
    assert rep.total_retried_count == 0
    assert not [i for i in after.intents if isinstance(i, CreatePod)]


# ----- replica retry (7.2) ----------------------------------------------------------------------------------


def test_a_failed_replica_with_retries_left_waits_out_its_delay() -> None:
    world = retrying_replica(30)
    entered = replica(world, "r").transition_time
    assert entered == stamp_at(0)
    world.tick(10)
    plan = decide_once(world)
    assert plan.status.roles[0].replicas[0].phase == P.ATTEMPT_RETRY_PENDING
    assert (plan.intents, plan.events) == ([], [])
    assert plan.requeue_after == 20  # P14b: requeue after the remaining delay


def test_the_retry_delay_counts_from_entering_retry_pending() -> None:
    world = retrying_replica(30)
    world.tick(29)
    assert decide_once(world).status.roles[0].replicas[0].phase == P.ATTEMPT_RETRY_PENDING
    world.tick(1)
    assert decide_once(world).status.roles[0].replicas[0].phase == P.ATTEMPT_PENDING


@pytest.mark.parametrize("offset", [0.0, 0.3, 0.999], ids=["on the second", "0.3 s past", "0.999 s past"])
def test_a_zero_replica_retry_delay_retries_in_the_pass_that_sees_the_pod_gone(offset: float) -> None:
    """P14 with delay 0 is immediate. transitionTime is stored rounded up to the second, which must not
    hold the retry (and a pass of a busy queue) until the clock passes that second."""
    world = running(single(retry=(True, 2, 0)))
    world.tick(offset)
    world.exit("job-r-0", 1)
    world.reconcile()  # the exit is recorded, the Pod deleted
    plan = world.reconcile()  # the Pod is gone: retry at once
    assert plan.intents == [CreatePod(0, 0, "job-r-0", 0, 1)]
    assert plan.requeue_after is None


def test_a_replica_retry_starts_a_new_attempt_under_the_same_name() -> None:
    world = retrying_replica(30)
    before = copy.deepcopy(replica(world, "r"))
    assert before.pod_name == "job-r-0" and before.terminated_info == TerminatedInfo(1, "", 0, "Error")
    world.tick(30)
    step = pass_once(world)
    plan = step.plan
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.total_retried_count, rep.stopped) == (P.ATTEMPT_PENDING, 1, False)
    assert rep.phase_message == "TaskRole replica is going to retry"
    cleared = (
        rep.pod_name,
        rep.pod_uid,
        rep.pod_reason,
        rep.pod_ip,
        rep.pod_host_ip,
        rep.container_name,
        rep.container_id,
        rep.start_at,
        rep.finish_at,
        rep.terminated_info,
    )
    assert cleared == ("", None, "", "", "", "", "", None, None, None)
    assert plan.intents == [CreatePod(0, 0, "job-r-0", 0, 1)]
    history = [r for r in plan.records if r.msg == "TaskRole replica is going to retry,log the pod history"]
    assert len(history) == 1
    fields = history[0].fields
    assert (fields["QueryKey"], fields["PodName"], fields["AttemptID"], fields["TaskSetAttemptID"]) == (
        "PodHistory",
        "job-r-0",
        0,
        0,
    )
    # written before the Pod fields were cleared
    assert (fields["ContainerExitCode"], fields["PodIP"], fields["PodHostIP"]) == (1, "10.0.1.1", "10.0.0.1")
    execute(world, step)
    new_pod = world.pods["job-r-0"]
    assert new_pod["metadata"]["annotations"]["ReplicaAttemptID"] == "1"
    assert uid_of(new_pod) != before.pod_uid


def test_replica_retries_run_out_and_the_last_attempt_counts() -> None:
    world = retrying_replica(0)
    for attempt in (1, 2):
        world.settle()
        assert replica(world, "r").total_retried_count == attempt
        world.run("job-r-0")
        world.exit("job-r-0", 1)
    world.settle()
    rep = replica(world, "r")
    assert (rep.phase, rep.total_retried_count, rep.succeeded) == (P.COMPLETED, 2, False)
    assert rep.phase_message == "Can't retry anymore"
    assert [p["metadata"]["annotations"]["ReplicaAttemptID"] for p in world.created_pods] == ["0", "1", "2"]
    assert {p["metadata"]["name"] for p in world.created_pods} == {"job-r-0"}
    assert (the_status(world).phase, the_status(world).state) == (T.COMPLETED, State.FAILED)


# ----- adoption, previous Pods and strays (W-1, D1, P0, W-3d) -----------------------------------------------


def test_w1_a_control_unit_created_before_a_lost_status_write_is_adopted() -> None:
    world = single()
    world.reconcile()
    uid = unit_uid(world)
    world.status = None  # the status write was lost
    plan = decide_once(world)
    assert (plan.status.phase, plan.status.control_unit_uid) == (T.ATTEMPT_PREPARING, uid)
    assert not [i for i in plan.intents if isinstance(i, CreateOwned)]


def test_w1_a_pod_created_before_a_lost_status_write_is_adopted() -> None:
    world = preparing(single())
    uid = pod_uid(world, "job-r-0")
    replica(world, "r").phase = P.ATTEMPT_PENDING
    replica(world, "r").clear_pod()
    plan = decide_once(world)
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.pod_uid, rep.pod_name) == (P.ATTEMPT_PREPARING, uid, "job-r-0")
    assert creates(plan) == []


def test_a_next_attempts_pod_made_before_a_lost_retry_write_is_kept_and_adopted() -> None:
    # Found by the chaos suite's SIGKILLs: a controller started the retry (made the attempt-1 Pod) and died
    # before writing it; the next one, still reading attempt 0 with its old podUID, took the new Pod for a
    # duplicate and deleted it, then counted its disappearance as a second failure.
    world = retrying_replica(5)
    world.tick(5)
    world.pods["job-r-0"] = (
        PodBuilder("job-r-0")
        .uid("next")
        .controlled_by(unit_uid(world))
        .taskset(world.ref.uid)
        .attempt(1)
        .proven()
        .obj()
    )
    plan = decide_once(world)
    assert [i for i in plan.intents if isinstance(i, DeletePod)] == []
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.total_retried_count, rep.pod_uid) == (P.ATTEMPT_PREPARING, 1, "next")


def test_an_unrecorded_pod_being_deleted_is_waited_for_not_adopted() -> None:
    world = preparing(single())
    replica(world, "r").phase = P.ATTEMPT_PENDING
    replica(world, "r").clear_pod()
    world.pods["job-r-0"]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:01Z"
    plan = decide_once(world)
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.pod_uid, plan.intents) == (P.ATTEMPT_PENDING, None, [])


def test_p0_a_previous_attempts_pod_is_deleted_and_waited_for() -> None:
    world = control_unit_ready(single())
    world.pods["job-r-0"] = (
        PodBuilder("job-r-0").uid("old").controlled_by("cu-old").taskset(world.ref.uid).obj()
    )
    plan = decide_once(world)
    assert plan.intents == [DeletePod("job-r-0", "old", 0, 0, advances=False)]
    assert plan.status.roles[0].replicas[0].phase == P.ATTEMPT_PENDING
    assert plan.requeue_after == 10
    world.pods["job-r-0"]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:01Z"
    plan = decide_once(world)
    assert (plan.intents, plan.requeue_after) == ([], 10)
    del world.pods["job-r-0"]
    plan = decide_once(world)
    assert plan.intents == [CreatePod(0, 0, "job-r-0", 0, 0)]


def test_p0_an_orphaned_pod_of_this_taskset_is_not_a_conflict() -> None:
    world = control_unit_ready(single())
    world.pods["job-r-0"] = (
        PodBuilder("job-r-0").uid("orphan").controlled_by(None).taskset(world.ref.uid).obj()
    )
    plan = decide_once(world)
    assert plan.intents == [DeletePod("job-r-0", "orphan", 0, 0, advances=False)]
    assert "PodNameConflict" not in reasons(plan)


def test_a_duplicate_pod_of_the_current_control_unit_is_deleted() -> None:
    # Spec 5.3.1: a Pod controlled by the current ControlUnit whose UID differs from the recorded podUID is
    # deleted (UID precondition) and the replica treated as having no Pod. The role goes on (cp 2/2), so
    # nothing else would remove the duplicate.
    world = running(single(replicas=2, max_failed=2))
    world.pods["job-r-0"]["metadata"]["uid"] = "duplicate"
    plan = decide_once(world)
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.succeeded) == (P.COMPLETED, False)  # P11: the recorded Pod is gone
    assert plan.status.phase == T.ATTEMPT_RUNNING
    assert DeletePod("job-r-0", "duplicate", 0, 0, advances=False) in plan.intents


def test_t15_a_completed_taskset_deletes_a_stray_control_unit() -> None:
    world = running(single())
    world.exit("job-r-0", 0)
    world.settle()
    assert the_status(world).phase == T.COMPLETED
    world.units["c-job-0"] = control_unit("c-job-0", "cu-late", world.ref.uid)
    plan = decide_once(world)
    assert plan.intents == [DeleteOwned("c-job-0", "cu-late", advances=False)]
    assert plan.status.to_json() == the_status(world).to_json()


# ----- capturing Pod information (5.3.3) --------------------------------------------------------------------


def test_pod_information_is_captured_while_the_pod_is_observed() -> None:
    world = preparing(single())
    assign = {
        "phase": "Pending",
        "hostIP": "10.0.0.7",
        "podIP": "10.0.1.7",
        "startTime": "2026-01-01T00:00:03Z",
    }
    world.pods["job-r-0"]["status"] = assign
    step = pass_once(world)
    plan = step.plan
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.pod_ip, rep.pod_host_ip, rep.start_at) == (
        P.ATTEMPT_ASSIGNED,
        "10.0.1.7",
        "10.0.0.7",
        "2026-01-01T00:00:03Z",
    )
    assert [r.msg for r in plan.records if r.fields.get("QueryKey") == "PodHistory"] == [
        "TaskRole replica is assigned to node"
    ]
    execute(world, step)
    world.pods["job-r-0"]["status"] = (
        PodBuilder("x").exited(3, message="boom").reason("Evicted").obj()["status"]
    )
    plan = decide_once(world)
    rep = plan.status.roles[0].replicas[0]
    assert rep.phase == P.ATTEMPT_DELETION_PENDING
    assert rep.phase_message == "PodPhase:Failed ,PodMessage: ,PodReason: Evicted"
    assert (rep.pod_reason, rep.container_name, rep.container_id) == ("Evicted", "c0", "kwok://c0")
    assert rep.terminated_info == TerminatedInfo(3, "boom", 0, "Error")
    assert rep.finish_at == "2026-01-01T00:00:09Z"
    assert (rep.start_at, rep.pod_ip) == ("2026-01-01T00:00:03Z", "10.0.1.1")
