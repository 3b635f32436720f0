"""The status a pass builds on (``Reconciler._record``): the last one written, until the cache shows it.
Then the record takes the cache's copy, so that a large TaskSet's status is kept once, not twice (issue
7: the memory target with 10,000 replicas), and the cache's newer version (a spec edit) is written on."""

from __future__ import annotations

import copy

from taskset.api.constants import ReplicaPhase as P
from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import RecordingClient, World, cached_taskset, reconciler_over, show_created

KEY = "ns/job"


def test_once_the_cache_shows_the_written_status_the_record_keeps_the_caches_copy() -> None:
    world = World(TaskSetBuilder("job").role("r").obj())
    client = RecordingClient(cached_taskset(world))
    reconciler, caches = reconciler_over(world, client)

    calls = -1
    while calls != len(client.calls):  # until the TaskSet waits for its Pod to run
        calls = len(client.calls)
        reconciler.reconcile(KEY)
        show_created(reconciler, client, caches)
    assert client.calls[-1] == ("status", P.ATTEMPT_CREATION_REQUESTED)  # Preparing is held
    written = reconciler._records[KEY].status
    cached = copy.deepcopy(client.live)  # the watch event: an equal copy, a newer version (a spec edit)
    cached["metadata"]["resourceVersion"] = "7"
    caches.tasksets.update(cached)

    reconciler.reconcile(KEY)

    record = reconciler._records[KEY]
    assert written is not None and record.status is not written
    shown = caches.tasksets.get_by_key(KEY)
    assert shown is not None and record.status is shown["status"]
    assert record.resource_version == "7"
    assert len(client.calls) == calls
