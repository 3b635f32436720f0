"""A bounded cache: the ConfigMap cache keeps no data, so the reconciler gets a ControlUnit's
snapshot text when a pass needs it, once per ControlUnit: from its own create, from the TaskSet's spec
when that builds the same digest, else by one read of the ControlUnit. A failed or mismatching read is a
transient error (backoff) that decides nothing; texts are bounded in number and dropped with their
ControlUnit."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from informers import DeletedFinalStateUnknown
from taskset.api.constants import TaskSetPhase as T
from taskset.observed.slim import slim_config_map
from taskset.observed.views import control_unit_view
from taskset.runtime.kube import KubeError
from taskset.runtime.reconciler import Reconciler
from taskset.runtime.snapshot_texts import Snapshots
from tests.unit.taskset.decide.scenes import running, single
from tests.unit.taskset.world import Caches, RecordingClient, World, cached_taskset, reconciler_over

pytestmark = pytest.mark.unit

KEY = "ns/job"
UNIT = "c-job-0"


class UnitReadingClient(RecordingClient):
    """The API server, which also answers reads of the ControlUnits (``units``, by name) and counts them."""

    def __init__(self, taskset: dict[str, Any], units: dict[str, dict[str, Any]]) -> None:
        super().__init__(taskset)
        self.units = units
        self.unit_reads: list[str] = []
        self.unit_error: KubeError | None = None

    def get(self, path: str, *, resource: str) -> dict[str, Any] | None:
        if resource != "configmaps":
            return super().get(path, resource=resource)
        name = path.rsplit("/", 1)[-1]
        self.unit_reads.append(name)
        if self.unit_error is not None:
            raise self.unit_error
        return copy.deepcopy(self.units.get(name))


def restarted(world: World) -> tuple[Reconciler, UnitReadingClient, Caches]:
    """A fresh reconciler (a restarted controller) over ``world``'s running TaskSet, whose ConfigMap cache
    holds what the informer's transform keeps: no data."""
    client = UnitReadingClient(cached_taskset(world), world.units)
    reconciler, caches = reconciler_over(world, client)
    for unit in world.units.values():
        caches.units.update(slim_config_map(unit))
    return reconciler, client, caches


def edited_since_it_started(world: World) -> World:
    """The TaskSet's spec edited while the attempt runs (W-18): the snapshot is no longer what it builds."""
    world.taskset["spec"]["roles"][0]["template"]["metadata"] = {"labels": {"edited": "yes"}}
    return world


def test_after_a_restart_an_unedited_taskset_s_snapshot_is_built_from_its_spec_without_a_read() -> None:
    reconciler, client, _ = restarted(running(single()))

    result = reconciler.reconcile(KEY)

    assert result.error is None
    assert client.unit_reads == []
    assert len(reconciler._snapshots) == 1  # the pass needed it, and has it now


def test_after_a_restart_an_edited_taskset_s_snapshot_is_read_once() -> None:
    reconciler, client, caches = restarted(edited_since_it_started(running(single())))

    first = reconciler.reconcile(KEY)
    caches.tasksets.update(client.live)
    second = reconciler.reconcile(KEY)

    assert (first.error, second.error) == (None, None)
    assert client.unit_reads == [UNIT]


def test_a_failed_read_is_retried_with_backoff_and_decides_nothing() -> None:
    reconciler, client, _ = restarted(edited_since_it_started(running(single())))
    client.unit_error = KubeError(503, "ServiceUnavailable", "etcd is away")

    result = reconciler.reconcile(KEY)

    assert result.error is not None and "etcd is away" in result.error
    assert client.calls == []  # no create, no delete, no status write
    client.unit_error = None
    assert reconciler.reconcile(KEY).error is None
    assert client.unit_reads == [UNIT, UNIT]


@pytest.mark.parametrize(
    "live",
    [
        pytest.param(lambda unit: None, id="the ControlUnit is gone"),
        pytest.param(
            lambda unit: unit | {"metadata": unit["metadata"] | {"uid": "another"}},
            id="another ControlUnit under the name",
        ),
        pytest.param(lambda unit: unit | {"data": {"spec.json": "{}"}}, id="edited since the cache saw it"),
    ],
)
def test_a_control_unit_read_that_is_not_the_cached_one_is_not_used(live: Any) -> None:
    world = edited_since_it_started(running(single()))
    reconciler, client, _ = restarted(world)
    client.units = {UNIT: live(world.units[UNIT])} if live(world.units[UNIT]) is not None else {}

    result = reconciler.reconcile(KEY)

    assert result.error is not None and "not what the cache shows" in result.error
    assert client.calls == []


def test_a_control_unit_this_process_created_needs_no_read() -> None:
    world = single()
    client = UnitReadingClient(cached_taskset(world), {})
    reconciler, caches = reconciler_over(world, client)
    reconciler.reconcile(KEY)  # creates the ControlUnit and the Pod
    for obj in client.created:
        store = caches.pods if obj["kind"] == "Pod" else caches.units
        store.add(slim_config_map(obj) if obj["kind"] == "ConfigMap" else obj)
        reconciler.creation_observed(obj)
    caches.tasksets.update(client.live)
    edited_since_it_started(world)  # so the TaskSet's spec builds another snapshot
    caches.tasksets.update(cached_taskset(world) | {"status": client.live["status"]})

    assert reconciler.reconcile(KEY).error is None
    assert client.live["status"]["phase"] == T.ATTEMPT_PREPARING
    assert client.unit_reads == []


# ----- the texts ----------------------------------------------------------------------------------------


def test_a_text_is_used_only_for_the_digest_it_has() -> None:
    world = running(single())
    whole = control_unit_view(world.units[UNIT])
    cached = control_unit_view(slim_config_map(world.units[UNIT]))
    snapshots = Snapshots()
    snapshots.remember(cached.uid, "{}")  # not this ControlUnit's snapshot
    assert snapshots.known(cached) == cached
    snapshots.remember(cached.uid, whole.spec_snapshot or "")
    assert snapshots.known(cached) == whole


def test_texts_are_bounded_in_number_least_recently_used_first() -> None:
    snapshots = Snapshots(size=2)
    world = running(single())
    cached = control_unit_view(slim_config_map(world.units[UNIT]))
    text = control_unit_view(world.units[UNIT]).spec_snapshot or ""
    snapshots.remember(cached.uid, text)
    snapshots.remember("b", "{}")
    assert snapshots.known(cached).snapshot_known  # used: now the most recent
    snapshots.remember("c", "{}")
    assert len(snapshots) == 2
    assert snapshots.known(cached).snapshot_known  # "b" went, not the one in use


@pytest.mark.parametrize("final_state_unknown", [False, True])
def test_a_deleted_control_unit_s_text_is_dropped(final_state_unknown: bool) -> None:
    world = single()
    client = UnitReadingClient(cached_taskset(world), {})
    reconciler, _ = reconciler_over(world, client)
    reconciler.reconcile(KEY)
    unit = next(obj for obj in client.created if obj["kind"] == "ConfigMap")
    cached = control_unit_view(slim_config_map(unit))
    snapshots = reconciler._snapshots
    assert snapshots.known(cached).snapshot_known

    gone = slim_config_map(unit)
    reconciler.control_unit_deleted(
        DeletedFinalStateUnknown(f"ns/{UNIT}", gone) if final_state_unknown else gone
    )

    assert not snapshots.known(cached).snapshot_known and len(snapshots) == 0
