"""A status write that fails after the pass acted (API errors between the controller and
the API server). Two bugs the fault-injecting proxy of ``tests/chaos/test_api_faults.py`` found:

* a pass that deleted a finished Pod (or the ControlUnit) and then lost its status write left a status
  waiting for an object that was gone, its exit code unobservable: the TaskSet hung in
  ``TaskRoleReplicaAttemptCreationRequested`` until the 300 s creation timeout, then miscounted the
  attempt. The reconciler now persists the status before an advancing delete (spec 4.4);
* a pass that started a TaskSet retry and created the next ControlUnit, then lost its status write, was
  followed by one that adopted the unit after AlreadyExists and then waited for an add event that had
  already been handled: the TaskSet stayed ``TaskSetAttemptCreationRequested`` for good. Adopting now
  looks again at once.
"""

from __future__ import annotations

import threading

from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import TaskSetPhase as T
from taskset.objects.controlunit import build_control_unit
from taskset.runtime.kube import KubeError
from taskset.runtime.reconciler import Reconciler
from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import RecordingClient, World, cached_taskset, reconciler_over


def running(world: World) -> World:
    world.settle()
    for name in list(world.pods):
        world.run(name)
    world.settle()
    assert world.status is not None and world.status.phase == T.ATTEMPT_RUNNING
    return world


# ----- adopting the next attempt's ControlUnit ---------------------------------------------------------


def test_a_retry_that_adopts_its_already_created_control_unit_looks_again_at_once() -> None:
    world = running(World(TaskSetBuilder("job").retry(True, 1, 30).role("r").obj()))
    world.exit("job-r-0", 1)
    world.settle()
    assert world.status is not None and world.status.phase == T.ATTEMPT_RETRY_PENDING
    world.tick(30)
    # A pass started the retry and created c-job-1, then lost its status write: the unit exists (its add
    # event already handled) while the recorded status still waits to retry.
    lost = build_control_unit(world.taskset, "c-job-1")
    lost["metadata"]["uid"] = "cu-of-the-lost-pass"
    world.units["c-job-1"] = lost

    plan = world.reconcile()

    assert plan.status.phase == T.ATTEMPT_CREATION_REQUESTED
    assert plan.status.control_unit_uid == "cu-of-the-lost-pass"
    assert plan.requeue_after == 0  # no add event will come for a unit that is already there
    assert world.reconcile().status.phase == T.ATTEMPT_PREPARING


# ----- persisting before deleting ----------------------------------------------------------------------


def finished_pod_scene(replicas: int = 1, parallelism: int = 1) -> tuple[Reconciler, RecordingClient]:
    """A TaskSet whose Pods have just exited 1, as caches and API server show it before the next pass."""
    world = running(World(TaskSetBuilder("job").role("r", replicas).obj()))
    for index in range(replicas):
        world.exit(f"job-r-{index}", 1)
    client = RecordingClient(cached_taskset(world))
    return reconciler_over(world, client, parallelism=parallelism)[0], client


def test_the_exit_of_a_pod_is_persisted_before_the_pod_is_deleted() -> None:
    reconciler, client = finished_pod_scene()

    result = reconciler.reconcile("ns/job")

    assert result.error is None
    # DeletionRequested, news of a request in flight only, waits for the pass the deletion brings.
    assert client.calls == [("status", P.ATTEMPT_DELETION_PENDING), ("delete", "job-r-0")]
    first = client.live["status"]["roleStatus"][0]["replicaStatus"][0]
    assert first["terminatedInfo"]["exitCode"] == 1


def test_the_pods_a_pass_deletes_go_together_once_the_status_is_persisted() -> None:
    """A TaskSet's end deletes its Pods in one round trip: the deletes overlap (each waits at a barrier
    for the others, so one at a time would break it), and none starts before the persisting write."""
    reconciler, client = finished_pod_scene(replicas=3, parallelism=3)
    client.deletes_together = threading.Barrier(3, timeout=10)

    result = reconciler.reconcile("ns/job")

    assert result.error is None
    assert client.calls[0] == ("status", P.ATTEMPT_DELETION_PENDING)
    assert sorted(client.calls[1:4]) == [("delete", f"job-r-{i}") for i in range(3)]
    assert client.calls[4:] == []  # DeletionRequested is held for the next pass
    reconciler.close()


def test_a_failed_status_write_deletes_nothing() -> None:
    reconciler, client = finished_pod_scene()
    client.status_error = KubeError(500, "InternalError", "injected")

    result = reconciler.reconcile("ns/job")

    assert result.error is not None and "500" in result.error
    assert client.calls == [("status", P.ATTEMPT_DELETION_PENDING)]  # the Pod, its exit code, stays
