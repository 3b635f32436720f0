"""The status a pass builds on (``Reconciler._record``): the last one written, never the cache's (the
TaskSet cache keeps no status, ``slim_taskset``). When someone else makes a newer version of the object
(a spec edit), the next status write meets the conflict, reads the live object once and is written on
that version: nothing is lost and nothing is redone.

``StatusRecords`` is also tested on its own: the status each TaskSet's passes build on, the one last
written or read live, and held unwritten while its only news is requests in flight (the reconciler's
use of the hold: test_held_status.py).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest

from clock import FakeClock
from taskset.api.constants import ReplicaPhase as P
from taskset.observed.slim import slim_taskset
from taskset.runtime.records import HOLD_LIMIT, Record, StatusRecords
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


# ----- StatusRecords on its own -----------------------------------------------------------------------------

WRITTEN = {"phase": "AttemptPreparing"}
NEWER = {"phase": "AttemptRunning"}


def taskset(uid: str, status: dict[str, Any] | None, version: str) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "ns", "name": "job", "uid": uid, "resourceVersion": version},
        "status": status,
    }


def records_with_written_status() -> tuple[StatusRecords, FakeClock]:
    clock = FakeClock()
    records = StatusRecords(clock)
    records.written(KEY, "ts-1", WRITTEN, "5")
    return records, clock


@pytest.mark.parametrize(
    ("cached", "version"),
    [
        pytest.param(
            taskset("ts-1", {"phase": "AttemptPending"}, "4"), "5", id="a cache behind our write is ignored"
        ),
        pytest.param(
            taskset("ts-1", copy.deepcopy(WRITTEN), "7"), "5", id="a newer version in the cache is not taken"
        ),
    ],
)
def test_a_record_builds_on_our_write_until_the_cache_catches_up(
    cached: dict[str, Any], version: str
) -> None:
    records, _ = records_with_written_status()

    record = records.known(KEY, cached)

    assert record is not None and record.status == WRITTEN
    assert record.resource_version == version


@pytest.mark.parametrize(
    "records",
    [
        pytest.param(StatusRecords(FakeClock()), id="a TaskSet never written needs a live read"),
        pytest.param(
            records_with_written_status()[0], id="a TaskSet re-created under the name needs a live read"
        ),
    ],
)
def test_only_a_record_of_the_same_object_is_known(records: StatusRecords) -> None:
    assert records.known(KEY, taskset("ts-2", None, "9")) is None


@pytest.mark.parametrize(
    ("live", "recorded"),
    [
        pytest.param(None, None, id="a TaskSet gone from the API server gives no record"),
        pytest.param(taskset("ts-0", WRITTEN, "3"), None, id="another object under the name gives no record"),
        pytest.param(
            taskset("ts-1", WRITTEN, "3"), Record("ts-1", WRITTEN, "3"), id="the same object is recorded"
        ),
    ],
)
def test_a_live_read_starts_a_fresh_record_of_the_same_object_only(
    live: dict[str, Any] | None, recorded: Record | None
) -> None:
    records = StatusRecords(FakeClock())

    record = records.read(KEY, "ts-1", live)

    assert (record, records.get(KEY)) == (recorded, recorded)


def test_a_write_replaces_the_record_and_ends_a_hold() -> None:
    records, _ = records_with_written_status()
    records.hold(records[KEY], NEWER, only_requests_in_flight=True)

    records.written(KEY, "ts-1", NEWER, "6")

    assert records[KEY] == Record("ts-1", NEWER, "6")


def test_a_forgotten_taskset_has_no_record() -> None:
    records, _ = records_with_written_status()

    records.forget(KEY)

    assert (KEY in records, len(records), list(records)) == (False, 0, [])


@dataclass(frozen=True)
class Hold:
    held_before: bool  # a status was already held, ``HELD_AGO`` seconds ago
    new: dict[str, Any]
    only_requests_in_flight: bool
    wait: float | None  # seconds to hold for; None: write now
    held_after: dict[str, Any] | None


HELD = {"phase": "held"}
HELD_AGO = 4.0


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            Hold(False, NEWER, True, HOLD_LIMIT, NEWER),
            id="a first status of requests in flight is held for the limit",
        ),
        pytest.param(Hold(False, NEWER, False, None, None), id="a status with news is written at once"),
        pytest.param(
            Hold(True, NEWER, True, HOLD_LIMIT - HELD_AGO, NEWER),
            id="more requests in flight replace the held status within the limit from the first",
        ),
        pytest.param(Hold(True, NEWER, False, None, HELD), id="news has the held status written at once"),
        pytest.param(
            Hold(True, HELD, False, HOLD_LIMIT - HELD_AGO, HELD),
            id="a pass that learns nothing keeps the held status held",
        ),
    ],
)
def test_a_status_of_requests_in_flight_waits_for_news_for_at_most_the_limit(case: Hold) -> None:
    records, clock = records_with_written_status()
    record = records[KEY]
    if case.held_before:
        records.hold(record, HELD, only_requests_in_flight=True)
        clock.step(HELD_AGO)

    wait = records.hold(record, case.new, only_requests_in_flight=case.only_requests_in_flight)

    assert (wait, record.held) == (case.wait, case.held_after)
    assert record.latest == (case.held_after or WRITTEN)


def test_a_held_status_is_written_at_the_limit_even_without_news() -> None:
    records, clock = records_with_written_status()
    record = records[KEY]
    records.hold(record, HELD, only_requests_in_flight=True)
    clock.step(HOLD_LIMIT)

    assert records.hold(record, NEWER, only_requests_in_flight=True) is None
