"""The status a pass builds on (``Reconciler._record``): the last one written, never the cache's (the
TaskSet cache keeps no status, ``slim_taskset``). When someone else makes a newer version of the object
(a spec edit), the next status write meets the conflict, reads the live object once and is written on
that version: nothing is lost and nothing is redone."""

from __future__ import annotations

import copy

from taskset.api.constants import ReplicaPhase as P
from taskset.observed.slim import slim_taskset
from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import RecordingClient, World, cached_taskset, reconciler_over, show_created

KEY = "ns/job"


def test_a_newer_version_made_by_someone_else_costs_one_conflict_and_one_read() -> None:
    world = World(TaskSetBuilder("job").role("r").obj())
    client = RecordingClient(cached_taskset(world))
    client.check_versions = True
    reconciler, caches = reconciler_over(world, client)

    calls = -1
    while calls != len(client.calls):  # until the TaskSet waits for its Pod to run
        calls = len(client.calls)
        reconciler.reconcile(KEY)
        show_created(reconciler, client, caches)
    assert client.calls[-1] == ("status", P.ATTEMPT_CREATION_REQUESTED)
    written = copy.deepcopy(client.live["status"])
    edited = copy.deepcopy(client.live)  # a label added by kubectl: a new version, the same status
    edited["metadata"]["resourceVersion"] = "70"
    client.live = edited
    caches.tasksets.update(slim_taskset(copy.deepcopy(edited)))
    pod = caches.pods.get_by_key("ns/job-r-0")
    assert pod is not None
    running = {
        **pod,
        "metadata": {**pod["metadata"], "resourceVersion": "71"},
        "status": {"phase": "Running"},
    }
    caches.pods.update(running)

    reconciler.reconcile(KEY)

    assert client.calls[calls:] == [("status", P.ATTEMPT_RUNNING), ("status", P.ATTEMPT_RUNNING)]
    assert client.live["metadata"]["resourceVersion"] != "70"  # written, on the version read live
    assert client.live["status"] != written
    assert reconciler._records[KEY].resource_version == client.live["metadata"]["resourceVersion"]
