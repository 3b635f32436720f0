"""A status whose only news is "a create or delete was requested" waits for the pass that the request's
watch event brings, and goes out with what that pass learns (TaskSet status writes are the API
server's costliest requests, and a burst TaskSet made 8-9 of them). One status at a time is held, for at
most ``HOLD_LIMIT`` seconds; lost with the process, it is redone without a second create."""

from __future__ import annotations

import pytest

from clock import FakeClock
from taskset.api.constants import EventReason
from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import TaskSetPhase as T
from taskset.api.status import TaskSetStatus
from taskset.decide import Event, Plan, Settings
from taskset.integrations import Framework
from taskset.runtime.kube import KubeError
from taskset.runtime.reconciler import Reconciler
from taskset.runtime.records import HOLD_LIMIT
from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import (
    CORE_INTEGRATIONS,
    Caches,
    RecordingClient,
    World,
    cached_taskset,
    reconciler_over,
    show_created,
)

KEY = "ns/job"


@pytest.mark.parametrize(
    ("moves", "held"),
    [
        pytest.param([], False, id="no move: a refresh of what is known is written"),
        pytest.param([T.ATTEMPT_PENDING, T.ATTEMPT_CREATION_REQUESTED], True, id="first pass: T2, T3"),
        pytest.param([P.ATTEMPT_CREATION_REQUESTED] * 3, True, id="Pods created"),
        pytest.param([P.ATTEMPT_DELETION_REQUESTED], True, id="Pod deletion requested"),
        pytest.param([P.ATTEMPT_PREPARING] * 3, True, id="Pods seen, Pending"),
        pytest.param([P.ATTEMPT_PREPARING, P.ATTEMPT_ASSIGNED], True, id="Pods scheduled"),
        pytest.param([P.ATTEMPT_ASSIGNED, P.ATTEMPT_RUNNING], False, id="a Pod runs"),
        pytest.param([T.ATTEMPT_DELETION_REQUESTED], True, id="ControlUnit deletion requested"),
        pytest.param([T.ATTEMPT_PREPARING, P.ATTEMPT_CREATION_REQUESTED], False, id="T5 is news"),
        pytest.param([P.ATTEMPT_DELETION_REQUESTED, P.COMPLETED], False, id="a replica completed"),
        pytest.param([P.ATTEMPT_DELETION_REQUESTED, "TaskRoleCompleted"], False, id="a role moved"),
        pytest.param([T.COMPLETED], False, id="the end"),
    ],
)
def test_only_moves_into_requested_phases_may_wait(moves: list[str], held: bool) -> None:
    plan = Plan(status=TaskSetStatus(), spec=None, moves=list(moves))
    assert plan.only_requests_in_flight is held


def new_taskset() -> tuple[Reconciler, RecordingClient, Caches, FakeClock]:
    world = World(TaskSetBuilder("job").role("r").obj())
    client = RecordingClient(cached_taskset(world))
    clock = FakeClock(wall_start=world.now)
    reconciler, caches = reconciler_over(world, client, clock=clock)
    return reconciler, client, caches, clock


def test_the_first_pass_creates_the_control_unit_and_the_pods_and_writes_once() -> None:
    reconciler, client, _, _ = new_taskset()

    reconciler.reconcile(KEY)

    assert client.calls == [
        ("create", "c-job-0"),
        ("create", "job-r-0"),
        ("status", P.ATTEMPT_CREATION_REQUESTED),
    ]
    status = client.live["status"]
    assert (status["phase"], status["controlUnitUID"]) == (T.ATTEMPT_PREPARING, "configmaps-0")


def test_a_first_pass_that_dies_before_its_status_write_is_redone_by_adopting_not_creating_again() -> None:
    reconciler, client, caches, _ = new_taskset()
    client.status_error = KubeError(0, "TransportError", "connection refused")  # the process dies here
    reconciler.reconcile(KEY)
    client.status_error = None
    show_created(reconciler, client, caches)
    # A restart: the new process knows only the caches and the (status-less) live object.
    restarted = Reconciler(
        client=client,
        tasksets=caches.tasksets,
        pods=caches.pods,
        units=caches.units,
        recorder=reconciler._recorder,
        logger=reconciler._log,
        settings=Settings(framework=Framework(CORE_INTEGRATIONS)),
    )

    restarted.reconcile(KEY)

    assert [call for call in client.calls if call[0] == "create"] == [
        ("create", "c-job-0"),
        ("create", "job-r-0"),
    ]
    status = client.live["status"]
    assert (status["phase"], status["controlUnitUID"]) == (T.ATTEMPT_PREPARING, "configmaps-0")
    assert status["roleStatus"][0]["replicaStatus"][0]["podUID"] == "pods-1"


def test_a_warning_is_news() -> None:
    quiet = Plan(status=TaskSetStatus(), spec=None, moves=[P.ATTEMPT_PREPARING])
    unschedulable = Event(EventReason.POD_UNSCHEDULABLE, "job-r-0: Pod is unschedulable: 0/1 nodes")
    warned = Plan(status=TaskSetStatus(), spec=None, moves=[P.ATTEMPT_PREPARING], events=[unschedulable])
    assert (quiet.only_requests_in_flight, warned.only_requests_in_flight) == (True, False)


def test_a_pod_on_its_way_to_running_is_written_once_when_it_runs() -> None:
    """Seen Pending, then scheduled: each pass only says the Pod is on its way, so the status waits
    (from the first of them, at most ``HOLD_LIMIT``) and goes out once, with Running."""
    reconciler, client, caches, clock = new_taskset()
    reconciler.reconcile(KEY)
    show_created(reconciler, client, caches)
    client.calls.clear()
    pending = caches.pods.get_by_key("ns/job-r-0")
    assert pending is not None

    reconciler.reconcile(KEY)
    scheduled = {
        **pending,
        "metadata": {**pending["metadata"], "resourceVersion": "scheduled"},  # as the API server would
        "status": {"phase": "Pending", "hostIP": "10.0.0.1", "podIP": "10.0.1.1"},
    }
    caches.pods.update(scheduled)
    clock.step(HOLD_LIMIT / 2)
    held = reconciler.reconcile(KEY)

    assert client.calls == []
    assert held.requeue_after is not None and held.requeue_after <= HOLD_LIMIT / 2
    running_meta = {**scheduled["metadata"], "resourceVersion": "running"}
    caches.pods.update(
        {**scheduled, "metadata": running_meta, "status": {**scheduled["status"], "phase": "Running"}}
    )
    reconciler.reconcile(KEY)
    assert client.calls == [("status", P.ATTEMPT_RUNNING)]


def test_a_pod_that_stays_on_its_way_is_written_at_the_limit() -> None:
    reconciler, client, caches, clock = new_taskset()
    reconciler.reconcile(KEY)
    show_created(reconciler, client, caches)
    client.calls.clear()

    reconciler.reconcile(KEY)
    assert client.calls == []
    clock.step(HOLD_LIMIT)
    reconciler.reconcile(KEY)

    assert client.calls == [("status", P.ATTEMPT_PREPARING)]


def finished_pod() -> tuple[Reconciler, RecordingClient, Caches, FakeClock]:
    """A one-replica TaskSet whose Pod exited 1 and was deleted by the last pass, which held its status."""
    world = World(TaskSetBuilder("job").role("r").obj())
    world.settle()
    world.run("job-r-0")
    world.settle()
    world.exit("job-r-0", 1)
    client = RecordingClient(cached_taskset(world))
    clock = FakeClock(wall_start=world.now)
    reconciler, caches = reconciler_over(world, client, clock=clock)
    reconciler.reconcile(KEY)
    assert client.calls == [("status", P.ATTEMPT_DELETION_PENDING), ("delete", "job-r-0")]
    client.calls.clear()
    return reconciler, client, caches, clock


def test_a_held_status_goes_out_with_the_news_of_the_next_pass() -> None:
    reconciler, client, caches, _ = finished_pod()
    caches.pods.delete(caches.pods.get_by_key("ns/job-r-0"))  # the deletion's watch event

    reconciler.reconcile(KEY)

    # One write, before the ControlUnit's deletion that the failure brings: the replica's DeletionRequested
    # never went out on its own, and the TaskSet's (T10) is held in turn.
    assert client.calls == [("status", P.COMPLETED), ("delete", "c-job-0")]
    assert client.live["status"]["phase"] == T.ATTEMPT_DELETION_PENDING


def test_a_pass_that_learns_nothing_keeps_the_status_held_until_the_limit() -> None:
    reconciler, client, caches, clock = finished_pod()
    deleting = caches.pods.get_by_key("ns/job-r-0")
    assert deleting is not None
    caches.pods.update({**deleting, "metadata": {**deleting["metadata"], "deletionTimestamp": "now"}})

    clock.step(HOLD_LIMIT - 1)
    waiting = reconciler.reconcile(KEY)
    assert client.calls == []
    assert waiting.requeue_after is not None and waiting.requeue_after <= 1

    clock.step(1)
    reconciler.reconcile(KEY)
    assert client.calls == [("status", P.ATTEMPT_DELETION_REQUESTED)]


def test_the_status_held_is_the_one_the_next_pass_builds_on() -> None:
    """The next pass must not redo what the held status records: the Pod is not deleted again."""
    reconciler, client, caches, _ = finished_pod()
    assert caches.pods.get_by_key("ns/job-r-0") is not None  # its deletion not shown yet

    reconciler.reconcile(KEY)

    assert client.calls == []


def test_a_taskset_resting_in_attempt_pending_has_nothing_in_flight() -> None:
    """Suspended (T3-suspended) or held for a deletion (T3-hold), the TaskSet stays in AttemptPending
    with no request out: no watch event of ours brings the next pass, so its status is written now."""
    resting = TaskSetStatus(phase=T.ATTEMPT_PENDING)
    assert not Plan(status=resting, spec=None, moves=[T.ATTEMPT_PENDING]).only_requests_in_flight


def test_a_taskset_created_suspended_shows_its_status_on_the_first_pass() -> None:
    world = World(TaskSetBuilder("job").role("r").suspend().obj())
    client = RecordingClient(cached_taskset(world))
    reconciler, _ = reconciler_over(world, client, clock=FakeClock(wall_start=world.now))

    result = reconciler.reconcile(KEY)

    assert client.calls == [("status", P.ATTEMPT_PENDING)]  # nothing created, the status written
    status = client.live["status"]
    assert status["phase"] == T.ATTEMPT_PENDING
    assert [c["type"] for c in status["conditions"] if c["status"] == "True"] == ["Suspended"]
    assert result.requeue_after is None  # the resume's own update event brings the next pass
