"""Two states the controller reports that must be correct whatever came first.

The end of a TaskSet closes what it overtook: a role or replica still unfinished when the TaskSet ended
(another role's outcome, a deadline) reports ``TaskRoleCompleted`` / ``TaskRoleReplicaCompleted``
(row ``S3``), never the ``Running`` of a Pod the end deleted, and no phase ever goes back.

A resume whose status write was lost adopts the Pod it made: the status still names the Pod the
suspension deleted, and the Pod the resume created for the same replica attempt is the replica's, not a
duplicate to delete (which would restart the user's work).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import RolePhase as R
from taskset.api.constants import State
from taskset.api.constants import TaskSetPhase as T
from taskset.decide import DeletePod
from taskset.decide.roles import UNFINISHED_AT_END
from taskset.observed.views import PodClass, classify_pod, pod_view
from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import (
    PodBuilder,
    World,
    execute_write_lost,
    pass_once,
    replica,
    settle_terminating,
)

pytestmark = pytest.mark.unit

CHIEF_ENDS = [("RoleSucceeded", "TaskSetSucceeded")]


def chief_and_workers(**spec: Any) -> World:
    """A chief whose success ends the TaskSet, beside two workers, all running."""
    builder = TaskSetBuilder("job").role("chief", 1, event_policy=CHIEF_ENDS).role("w", 2)
    for name, value in spec.items():
        builder = builder.spec_field(name, value)
    world = World(builder.obj())
    world.settle()
    for name in list(world.pods):
        world.run(name)
    world.settle()
    return world


def phases(world: World) -> list[tuple[str, str, str]]:
    assert world.status is not None
    return [(role.name, str(role.phase), str(role.state)) for role in world.status.roles] + [
        (f"{role.name}-{r.index}", str(r.phase), r.phase_message)
        for role in world.status.roles
        for r in role.replicas
    ]


@pytest.mark.parametrize(
    ("spec", "end", "state"),
    [
        pytest.param({}, "chief", State.SUCCEEDED, id="the chief succeeds while the workers run"),
        pytest.param(
            {"cleanPodPolicy": "None"}, "chief", State.SUCCEEDED, id="cleanPodPolicy None keeps their Pods"
        ),
        pytest.param({}, "chief fails", State.FAILED, id="the chief fails while the workers run"),
        pytest.param({"activeDeadlineSeconds": 5}, "deadline", State.FAILED, id="the deadline passes"),
    ],
)
def test_the_end_closes_the_roles_and_replicas_it_overtook(
    spec: dict[str, Any], end: str, state: State
) -> None:
    world = chief_and_workers(**spec)
    world.exit("job-w-1", 0)  # one worker finished before the end: its own outcome stays
    world.settle()
    if end == "deadline":
        world.tick(10)
    else:
        world.exit("job-chief-0", 0 if end == "chief" else 1)
    world.settle(40)
    status = world.status
    assert status is not None and (status.phase, status.state) == (T.COMPLETED, state)
    assert {str(role.phase) for role in status.roles} == {R.COMPLETED}
    assert {str(r.phase) for role in status.roles for r in role.replicas} == {P.COMPLETED}
    worker = status.roles[1]
    assert worker.state == State.RUNNING  # its completion policy decided nothing: no outcome of its own
    assert worker.phase_message == UNFINISHED_AT_END
    overtaken, finished = worker.replicas
    assert (overtaken.stopped, overtaken.phase_message) == (True, UNFINISHED_AT_END)
    assert overtaken.terminated_info is None
    assert not finished.stopped and finished.phase_message != UNFINISHED_AT_END
    if end != "deadline":
        assert status.roles[0].state == state and not status.roles[0].replicas[0].stopped
    moves = [
        record.fields
        for plan in world.plans
        for record in plan.records
        if record.fields.get("Reason") == UNFINISHED_AT_END
    ]
    assert {(m.get("PodName") or m.get("Role"), m["NextPhase"]) for m in moves} >= {
        ("job-w-0", P.COMPLETED),
        ("w", R.COMPLETED),
    }
    if spec.get("cleanPodPolicy") == "None":
        assert "job-w-0" in world.pods  # kept running, as the policy says: the replica is still closed


def test_an_illegal_taskset_keeps_its_roles_as_built() -> None:
    world = World(TaskSetBuilder("job").role("a", 1).role("a", 1).obj())
    world.settle()
    status = world.status
    assert status is not None and status.phase == T.COMPLETED
    assert {str(role.phase) for role in status.roles} == {R.WAITING}


# The order each phase can only move forward in; COMPLETED is last for roles and replicas.
ROLE_ORDER = [R.WAITING, R.RUNNING, R.CLEANING_PENDING, R.COMPLETED]
EVENTS = st.lists(
    st.tuples(st.sampled_from(["run", "exit0", "exit1", "pass", "tick"]), st.integers(0, 2)), max_size=25
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=EVENTS)
def test_no_phase_goes_back_and_the_end_leaves_nothing_unfinished(events: list[tuple[str, int]]) -> None:
    """Any interleaving of the Pods' events and passes: a completed role or replica stays completed, a
    role's phase only moves forward, and once the TaskSet is completed nothing reports unfinished."""
    builder = TaskSetBuilder("job").role("chief", 1, event_policy=CHIEF_ENDS).role("w", 2)
    world = World(builder.spec_field("activeDeadlineSeconds", 30).obj())
    world.settle()
    seen: dict[str, int] = {}
    done: set[str] = set()
    for step, which in events:
        names = sorted(world.pods)
        name = names[which % len(names)] if names else None
        pod = world.pods.get(name) if name else None
        if step == "pass":
            world.settle()
        elif step == "tick":
            world.tick(10)
        elif (
            pod is not None
            and name is not None
            and pod["status"].get("phase") in (None, "Pending", "Running")
        ):
            if step == "run":
                world.run(name)
            else:
                world.exit(name, 0 if step == "exit0" else 1)
        world.reconcile()
        status = world.status
        assert status is not None
        for role in status.roles:
            rank = ROLE_ORDER.index(role.phase)
            assert rank >= seen.get(role.name, 0), (role.name, role.phase)
            seen[role.name] = rank
            for r in role.replicas:
                key = f"{role.name}-{r.index}"
                if key in done:
                    assert r.phase == P.COMPLETED, (key, r.phase)
                if r.phase == P.COMPLETED:
                    done.add(key)
        if status.phase == T.COMPLETED:
            assert {str(role.phase) for role in status.roles} == {R.COMPLETED}
            assert {str(r.phase) for role in status.roles for r in role.replicas} == {P.COMPLETED}
    world.tick(60)
    world.settle(40)
    status = world.status
    assert status is not None
    if status.phase == T.COMPLETED:
        assert {str(role.phase) for role in status.roles} == {R.COMPLETED}
        assert {str(r.phase) for role in status.roles for r in role.replicas} == {P.COMPLETED}


# ----- a resume whose status write was lost ---------------------------------------------------------------


def _flip(world: World) -> None:
    spec = world.taskset["spec"]
    spec["suspend"] = not spec.get("suspend", False)
    world.taskset["metadata"]["generation"] += 1


def resumed_with_a_lost_write() -> tuple[World, str, str]:
    """Suspend a running replica, let its Pod go, resume, and lose the write of the pass that made its
    next Pod: the status still names the deleted Pod. Returns the world and both Pods' UIDs."""
    world = World(TaskSetBuilder("job").role("r", 1).obj(), graceful=True)
    world.settle()
    world.run("job-r-0")
    world.settle()
    deleted = replica(world, "r").pod_uid
    _flip(world)
    world.reconcile()  # P-suspend: the Pod is deleted, the replica marked
    assert replica(world, "r").suspended and "deletionTimestamp" in world.pods["job-r-0"]["metadata"]
    world.remove("job-r-0")
    _flip(world)
    execute_write_lost(world, pass_once(world))
    made = world.pods["job-r-0"]["metadata"]["uid"]
    assert made != deleted and replica(world, "r").pod_uid == deleted
    assert deleted is not None
    return world, deleted, made


def test_a_resumed_pod_whose_recording_was_lost_is_adopted_not_made_again() -> None:
    world, _, made = resumed_with_a_lost_write()
    world.run("job-r-0")
    world.settle()
    deletes = [i for plan in world.plans[-3:] for i in plan.intents if isinstance(i, DeletePod)]
    assert deletes == []
    assert replica(world, "r").pod_uid == made
    assert world.pods["job-r-0"]["metadata"]["uid"] == made
    assert replica(world, "r").phase == P.ATTEMPT_RUNNING
    world.exit("job-r-0", 0)
    settle_terminating(world)
    status = world.status
    assert status is not None and (status.phase, status.state) == (T.COMPLETED, State.SUCCEEDED)
    assert replica(world, "r").total_retried_count == 0
    assert [p["metadata"]["uid"] for p in world.created_pods].count(made) == 1
    assert len(world.created_pods) == 2  # the first Pod and the resumed one: nothing made again


def test_a_resumed_pod_being_deleted_is_never_adopted() -> None:
    world, _, made = resumed_with_a_lost_write()
    world.pods["job-r-0"]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:05Z"
    world.reconcile()
    assert replica(world, "r").pod_uid != made


# How a Pod under the replica's name is classified while the replica's recorded Pod (``old``) went
# away because of a suspension (``resumed``), for replica attempt 1 under the ControlUnit ``cu-1``.
KEY = b"k" * 32


@pytest.mark.parametrize(
    ("attempt", "resumed", "deleting", "proven", "expected"),
    [
        pytest.param(1, True, False, True, PodClass.RESUMED, id="the resume's Pod: adopted"),
        pytest.param(1, False, False, True, PodClass.DUPLICATE, id="no suspension: a duplicate"),
        pytest.param(1, True, True, True, PodClass.DUPLICATE, id="being deleted: never adopted"),
        pytest.param(1, True, False, False, PodClass.FOREIGN, id="without its proof: a squatter"),
        pytest.param(2, True, False, True, PodClass.NEXT, id="a later attempt's: the next"),
        pytest.param(0, True, False, True, PodClass.PREVIOUS, id="an earlier attempt's: previous"),
    ],
)
def test_a_pod_under_a_resumed_replicas_name(
    attempt: int, resumed: bool, deleting: bool, proven: bool, expected: PodClass
) -> None:
    builder = PodBuilder("job-r-0").uid("new").controlled_by("cu-1").taskset("ts-1").attempt(attempt)
    if proven:
        builder = builder.proven("ns", KEY)
    kind = classify_pod(
        pod_view(builder.deleting(deleting).obj()),
        recorded_uid="old",
        control_unit_uid="cu-1",
        taskset_uid="ts-1",
        replica_attempt=1,
        proof_key=KEY,
        namespace="ns",
        taskset_name="job",
        resumed=resumed,
    )
    assert kind == expected
