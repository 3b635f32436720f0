"""Folding action results into a pass (``Pass.fold``): Pod creates (P1, D1, W-1, W-14, W-24), and
ControlUnit creates and deletes (T3, T10, W-24), each answer moving the machine along its row."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import State
from taskset.api.constants import TaskSetPhase as T
from taskset.decide import (
    ActionResult,
    CreateOwned,
    CreatePod,
    DeleteOwned,
    DeletePod,
    Pass,
    ResultKind,
)
from tests.builders import TaskSetBuilder
from tests.unit.taskset.decide.scenes import (
    creates,
    events,
    pod_uid,
    reasons,
    running,
    single,
    the_status,
    uid_of,
    unit_uid,
)
from tests.unit.taskset.world import (
    PodBuilder,
    World,
    control_unit,
    control_unit_ready,
    decide_once,
    pass_once,
    replica,
    role_status,
    view_of,
)

pytestmark = pytest.mark.unit


# ----- action results: Pod creates (P1, D1, W-1, W-14, W-24) ------------------------------------------------


def pending_replica(**role: Any) -> tuple[World, Pass, CreatePod]:
    """A pass that asks for replica r/0's Pod, with the result not yet folded in."""
    world = control_unit_ready(single(**role))
    step = pass_once(world)
    plan = step.plan
    intent = plan.intents[0]
    assert isinstance(intent, CreatePod)
    return world, step, intent


def our_pod(world: World, *, attempt: int = 0, uid: str = "pod-ours") -> dict[str, Any]:
    return (
        PodBuilder("job-r-0")
        .uid(uid)
        .controlled_by(unit_uid(world))
        .taskset(world.ref.uid)
        .attempt(attempt)
        .proven()
        .obj()
    )


def test_pod_create_ok_records_the_pod() -> None:
    world, step, intent = pending_replica()
    plan = step.plan
    pod = our_pod(world)
    pod["status"] = {"phase": "Pending", "podIP": "", "hostIP": ""}
    step.fold(intent, ActionResult(ResultKind.OK, view_of(intent, pod)))
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.pod_name, rep.pod_uid) == (P.ATTEMPT_CREATION_REQUESTED, "job-r-0", "pod-ours")
    assert rep.phase_message == "TaskRole replica is going to start"
    assert not plan.backoff


def test_pod_create_already_exists_adopts_this_attempts_pod() -> None:
    world, step, intent = pending_replica()
    plan = step.plan
    step.fold(intent, ActionResult(ResultKind.EXISTS, view_of(intent, our_pod(world, uid="pod-lost"))))
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.pod_name, rep.pod_uid) == (P.ATTEMPT_CREATION_REQUESTED, "job-r-0", "pod-lost")
    assert "PodNameConflict" not in reasons(plan)


def test_pod_create_already_exists_waits_for_a_previous_attempts_pod() -> None:
    world, step, intent = pending_replica()
    plan = step.plan
    previous = (
        PodBuilder("job-r-0").uid("old").controlled_by("cu-old").taskset(world.ref.uid).attempt(0).obj()
    )
    step.fold(intent, ActionResult(ResultKind.EXISTS, view_of(intent, previous)))
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.pod_uid, rep.pod_reason) == (P.ATTEMPT_PENDING, None, "")
    assert "PodNameConflict" not in reasons(plan)
    assert plan.requeue_after is not None


def test_pod_create_already_exists_with_a_foreign_pod_is_a_name_conflict() -> None:
    _, step, intent = pending_replica()
    plan = step.plan
    foreign = PodBuilder("job-r-0").uid("foreign").controlled_by(None).taskset(None).obj()
    step.fold(intent, ActionResult(ResultKind.EXISTS, view_of(intent, foreign)))
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.pod_reason) == (P.ATTEMPT_COMPLETED, "PodNameConflict")
    assert (rep.pod_name, rep.pod_uid, rep.terminated_info) == ("", None, None)
    assert "PodNameConflict" in reasons(plan)
    assert next(e for e in plan.events if str(e.reason) == "PodNameConflict").warning


def test_pod_create_invalid_ends_the_attempt_as_failed() -> None:
    _, step, intent = pending_replica()
    plan = step.plan
    step.fold(intent, ActionResult(ResultKind.INVALID, message="spec.containers: Required value"))
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.pod_reason) == (P.ATTEMPT_COMPLETED, "PodCreationFailed")
    assert rep.phase_message == "spec.containers: Required value"
    assert (rep.pod_uid, rep.terminated_info) == (None, None)
    assert ("PodCreationFailed", "job-r-0: spec.containers: Required value") in events(plan)
    assert not plan.backoff


def test_pod_create_transient_error_stays_and_backs_off() -> None:
    _, step, intent = pending_replica()
    plan = step.plan
    step.fold(intent, ActionResult(ResultKind.ERROR, message="exceeded quota"))
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.pod_reason, rep.pod_uid) == (P.ATTEMPT_PENDING, "", None)
    assert plan.backoff
    assert ("PodCreationFailed", "job-r-0: exceeded quota") in events(plan)


def test_pod_create_already_exists_for_a_pod_gone_again_tries_once_more() -> None:
    _, step, intent = pending_replica()
    plan = step.plan
    step.fold(intent, ActionResult(ResultKind.EXISTS, None))
    assert plan.status.roles[0].replicas[0].phase == P.ATTEMPT_PENDING
    assert plan.requeue_after == 0


@pytest.mark.parametrize(
    ("retry", "after", "retried"),
    [
        pytest.param(
            (True, 1, 20), P.ATTEMPT_RETRY_PENDING, 0, id="with a retry left the replica waits for it"
        ),
        pytest.param(None, P.COMPLETED, 0, id="without retries the replica completes as failed"),
    ],
)
def test_a_pod_name_conflict_feeds_the_role_retry_policy(
    retry: tuple[bool, int, int] | None, after: P, retried: int
) -> None:
    world = control_unit_ready(single(retry=retry))
    world.pods["job-r-0"] = PodBuilder("job-r-0").uid("foreign").controlled_by(None).running().obj()
    plan = decide_once(world)
    rep = plan.status.roles[0].replicas[0]
    assert (rep.phase, rep.total_retried_count, rep.succeeded) == (after, retried, False)
    assert (rep.pod_reason, rep.pod_name, rep.pod_uid) == ("PodNameConflict", "", None)
    assert ("PodNameConflict", "Pod name conflict: job-r-0") in events(plan)
    assert creates(plan) == []
    assert not [i for i in plan.intents if isinstance(i, DeletePod)]  # the foreign Pod is never touched
    if retry is None:
        assert (plan.status.roles[0].state, plan.status.phase) == (State.FAILED, T.ATTEMPT_DELETION_PENDING)


def test_s50_the_retry_after_a_conflict_creates_the_pod_once_the_foreign_pod_is_gone() -> None:
    world = control_unit_ready(single(retry=(True, 1, 20)))
    world.pods["job-r-0"] = PodBuilder("job-r-0").uid("foreign").controlled_by(None).running().obj()
    world.reconcile()
    assert replica(world, "r").phase == P.ATTEMPT_RETRY_PENDING
    del world.pods["job-r-0"]
    world.tick(20)
    world.settle()
    rep = replica(world, "r")
    assert (rep.phase, rep.total_retried_count, rep.pod_reason) == (P.ATTEMPT_PREPARING, 1, "")
    ours = world.pods["job-r-0"]
    assert ours["metadata"]["annotations"]["ReplicaAttemptID"] == "1"
    assert ours["metadata"]["ownerReferences"][0]["uid"] == unit_uid(world)


def test_s50_conf2_a_foreign_pod_that_stays_uses_up_every_replica_attempt() -> None:
    world = control_unit_ready(single(retry=(True, 1, 0)))
    world.pods["job-r-0"] = PodBuilder("job-r-0").uid("foreign").controlled_by(None).running().obj()
    world.settle()
    rep = replica(world, "r")
    assert (rep.phase, rep.total_retried_count, rep.pod_reason) == (P.COMPLETED, 1, "PodNameConflict")
    assert world.events.count("PodNameConflict: Pod name conflict: job-r-0") == 2
    assert (role_status(world, "r").state, the_status(world).state) == (State.FAILED, State.FAILED)
    assert uid_of(world.pods["job-r-0"]) == "foreign"
    assert world.created_pods == []


# ----- action results: ControlUnit creates and deletes (T3, T10, W-24) --------------------------------------


def creating_unit() -> tuple[World, Pass, CreateOwned]:
    world = single()
    step = pass_once(world)
    plan = step.plan
    intent = plan.intents[0]
    assert isinstance(intent, CreateOwned)
    return world, step, intent


def test_control_unit_create_already_exists_adopts_ours() -> None:
    world, step, intent = creating_unit()
    plan = step.plan
    unit = control_unit("c-job-0", "cu-lost", world.ref.uid)
    step.fold(intent, ActionResult(ResultKind.EXISTS, view_of(intent, unit)))
    assert (plan.status.phase, plan.status.control_unit_uid) == (T.ATTEMPT_CREATION_REQUESTED, "cu-lost")


def test_control_unit_create_already_exists_waits_for_ours_going_away() -> None:
    world, step, intent = creating_unit()
    plan = step.plan
    unit = control_unit("c-job-0", "cu-old", world.ref.uid, deleting=True)
    step.fold(intent, ActionResult(ResultKind.EXISTS, view_of(intent, unit)))
    assert (plan.status.phase, plan.status.control_unit_uid) == (T.ATTEMPT_PENDING, None)
    assert plan.requeue_after == 10


def test_s56_control_unit_create_already_exists_foreign_is_a_name_conflict() -> None:
    _, step, intent = creating_unit()
    plan = step.plan
    unit = control_unit("c-job-0", "cu-foreign", None)
    step.fold(intent, ActionResult(ResultKind.EXISTS, view_of(intent, unit)))
    assert plan.status.phase == T.ATTEMPT_COMPLETED
    assert plan.status.phase_message == "ControlUnit name conflict: c-job-0"
    assert plan.status.control_unit_uid is None
    assert ("ControlUnitNameConflict", "ControlUnit name conflict: c-job-0") in events(plan)


def test_s56_a_control_unit_name_conflict_fails_the_attempt_and_the_retry_uses_the_next_name() -> None:
    world = World(TaskSetBuilder("cmconf").retry(True, 1, 0).role("r").obj())
    world.units["c-cmconf-0"] = control_unit("c-cmconf-0", "cu-foreign", None)
    world.settle()
    status = the_status(world)
    assert (status.phase, status.total_retried_count) == (T.ATTEMPT_PREPARING, 1)
    assert "ControlUnitNameConflict: ControlUnit name conflict: c-cmconf-0" in world.events
    assert uid_of(world.units["c-cmconf-0"]) == "cu-foreign"
    assert status.control_unit_uid == uid_of(world.units["c-cmconf-1"])


def test_s56_with_a_retry_delay_the_next_attempt_uses_the_next_name() -> None:
    world = World(TaskSetBuilder("cmconf").retry(True, 1, 5).role("r").obj())
    world.units["c-cmconf-0"] = control_unit("c-cmconf-0", "cu-foreign", None)
    world.settle()
    assert the_status(world).phase == T.ATTEMPT_RETRY_PENDING
    world.tick(5)
    world.settle()
    status = the_status(world)
    assert (status.phase, status.total_retried_count) == (T.ATTEMPT_PREPARING, 1)
    assert status.control_unit_uid == uid_of(world.units["c-cmconf-1"])
    assert uid_of(world.units["c-cmconf-0"]) == "cu-foreign"


def test_control_unit_create_invalid_fails_the_attempt() -> None:
    _, step, intent = creating_unit()
    plan = step.plan
    step.fold(intent, ActionResult(ResultKind.INVALID, message="bad"))
    assert plan.status.phase == T.ATTEMPT_COMPLETED
    assert ("ControlUnitCreationFailed", "bad") in events(plan)


def test_control_unit_create_transient_error_stays_and_backs_off() -> None:
    _, step, intent = creating_unit()
    plan = step.plan
    step.fold(intent, ActionResult(ResultKind.ERROR, message="etcd timeout"))
    assert (plan.status.phase, plan.status.control_unit_uid) == (T.ATTEMPT_PENDING, None)
    assert plan.backoff
    assert ("ControlUnitCreationFailed", "etcd timeout") in events(plan)


def ending_attempt() -> tuple[World, Pass, DeleteOwned]:
    world = running(single())
    world.exit("job-r-0", 0)
    world.reconcile()
    step = pass_once(world)
    plan = step.plan
    intent = next(i for i in plan.intents if isinstance(i, DeleteOwned))
    assert plan.status.phase == T.ATTEMPT_DELETION_PENDING
    return world, step, intent


@pytest.mark.parametrize(
    ("kind", "phase", "backoff"),
    [
        pytest.param(ResultKind.OK, T.ATTEMPT_DELETION_REQUESTED, False, id="an accepted delete moves on"),
        pytest.param(
            ResultKind.NOT_FOUND, T.ATTEMPT_DELETION_REQUESTED, False, id="an already gone unit moves on"
        ),
        pytest.param(
            ResultKind.ERROR, T.ATTEMPT_DELETION_PENDING, True, id="a failed delete stays and backs off"
        ),
    ],
)
def test_t10_control_unit_delete_results(kind: ResultKind, phase: T, backoff: bool) -> None:
    world, step, intent = ending_attempt()
    plan = step.plan
    assert intent == DeleteOwned("c-job-0", unit_uid(world), advances=True)
    step.fold(intent, ActionResult(kind))
    assert (plan.status.phase, plan.backoff) == (phase, backoff)


@pytest.mark.parametrize(
    ("kind", "phase", "backoff"),
    [
        pytest.param(ResultKind.OK, P.ATTEMPT_DELETION_REQUESTED, False, id="an accepted delete moves on"),
        pytest.param(
            ResultKind.NOT_FOUND, P.ATTEMPT_DELETION_REQUESTED, False, id="an already gone Pod moves on"
        ),
        pytest.param(
            ResultKind.ERROR, P.ATTEMPT_DELETION_PENDING, True, id="a failed delete stays and backs off"
        ),
    ],
)
def test_p9_pod_delete_results(kind: ResultKind, phase: P, backoff: bool) -> None:
    world = running(single())
    world.exit("job-r-0", 1)
    step = pass_once(world)
    plan = step.plan
    intent = plan.intents[0]
    assert intent == DeletePod("job-r-0", pod_uid(world, "job-r-0"), 0, 0, advances=True)
    assert plan.status.roles[0].replicas[0].phase == P.ATTEMPT_DELETION_PENDING
    step.fold(intent, ActionResult(kind))
    assert (plan.status.roles[0].replicas[0].phase, plan.backoff) == (phase, backoff)
