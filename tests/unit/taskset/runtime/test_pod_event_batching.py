"""Changes of Pods and ControlUnits reach the queue batched, so a wave of them (a pass's creates being
answered, a role's Pods starting or exiting) is one pass and one status write; a TaskSet's own changes
at once; the window grows with the TaskSet's replicas. Pure: the controller's handlers and its delaying
queue on a fake clock (the informers are never started, no API server)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from clock import FakeClock
from informers import DeletedFinalStateUnknown, EventHandler
from taskset.api.constants import ANNOTATION_NAMESPACE, ANNOTATION_TASKSET
from taskset.runtime.batching import (
    POD_EVENT_BATCH,
    POD_EVENT_BATCH_MAX,
    declared_replicas,
    pod_event_window,
)
from taskset.runtime.controller import Controller, ControllerSettings

pytestmark = [pytest.mark.unit, pytest.mark.timeout(30)]


def owned(name: str, taskset: str = "ts") -> dict[str, Any]:
    annotations = {ANNOTATION_TASKSET: taskset, ANNOTATION_NAMESPACE: "ns"}
    return {"metadata": {"name": name, "namespace": "ns", "annotations": annotations}}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def controller(clock: FakeClock) -> Iterator[Controller]:
    logger: Any = None  # never called: nothing here logs
    made = Controller(api_client=None, settings=ControllerSettings(), logger=logger, clock=clock)
    yield made
    made.queue.shutdown()
    made.recorder.stop(0.1)


def queued_after(controller: Controller, clock: FakeClock, seconds: float, expected: int) -> int:
    """Step the fake clock, then give the queue's timer thread (real time) to hand over what is due."""
    clock.step(seconds)
    deadline = time.monotonic() + 1.0
    while controller.queue.len() < expected and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.05)  # and a moment more, so that an item handed over too early is seen
    return controller.queue.len()


def test_a_pod_update_is_queued_after_the_batch_period_not_before(
    controller: Controller, clock: FakeClock
) -> None:
    controller._enqueue_owner_batched(owned("ts-worker-0"))
    assert queued_after(controller, clock, POD_EVENT_BATCH * 0.9, expected=1) == 0
    assert queued_after(controller, clock, POD_EVENT_BATCH * 0.1, expected=1) == 1
    assert controller.queue.get() == "ns/ts"


def test_a_wave_of_pod_updates_is_one_key_at_the_first_changes_deadline(
    controller: Controller, clock: FakeClock
) -> None:
    controller._enqueue_owner_batched(owned("ts-worker-0"))
    clock.step(POD_EVENT_BATCH / 2)
    for index in range(1, 5):
        controller._enqueue_owner_batched(owned(f"ts-worker-{index}"))
    controller._enqueue_owner_batched(owned("ts-ps-0"))
    assert queued_after(controller, clock, POD_EVENT_BATCH / 2, expected=1) == 1
    assert controller.queue.get() == "ns/ts"
    controller.queue.done("ns/ts")
    assert queued_after(controller, clock, POD_EVENT_BATCH, expected=1) == 0  # nothing else was waiting


def test_pods_of_two_tasksets_give_two_keys(controller: Controller, clock: FakeClock) -> None:
    controller._enqueue_owner_batched(owned("a-worker-0", "a"))
    controller._enqueue_owner_batched(owned("b-worker-0", "b"))
    assert queued_after(controller, clock, POD_EVENT_BATCH, expected=2) == 2


def test_a_tasksets_own_change_is_queued_at_once(controller: Controller) -> None:
    controller._enqueue_taskset({"metadata": {"name": "ts", "namespace": "ns"}})
    assert controller.queue.len() == 1


def handler_of(controller: Controller, informer: str) -> EventHandler:
    """The callbacks the controller registered on that informer, as its delivery thread would call them."""
    (listener,) = getattr(controller, informer)._listeners
    handler: EventHandler = listener._handler
    return handler


@pytest.mark.parametrize("informer", ["pods", "units"])
@pytest.mark.parametrize("kind", ["add", "update", "delete", "delete, final state unknown"])
def test_every_change_of_a_pod_or_control_unit_waits_for_the_batch(
    controller: Controller, clock: FakeClock, informer: str, kind: str
) -> None:
    handler = handler_of(controller, informer)
    obj = owned("ts-worker-0")
    if kind == "add":
        assert handler.on_add is not None
        handler.on_add(obj)
    elif kind == "update":
        assert handler.on_update is not None
        handler.on_update(obj, obj)
    else:
        assert handler.on_delete is not None
        handler.on_delete(
            obj if kind == "delete" else DeletedFinalStateUnknown(key="ns/ts-worker-0", obj=obj)
        )
    assert controller.queue.len() == 0
    assert queued_after(controller, clock, POD_EVENT_BATCH, expected=1) == 1
    assert controller.queue.get() == "ns/ts"


def test_an_added_object_has_its_creation_observed_at_once(controller: Controller, mocker: Any) -> None:
    """At once, not with the batch: a pass that runs meanwhile must not create it again."""
    observed = mocker.spy(controller.reconciler, "creation_observed")
    pod = owned("ts-worker-0")
    pod["metadata"]["uid"] = "pod-uid"
    controller._created(pod)
    observed.assert_called_once_with(pod)
    assert controller.queue.len() == 0


def cached_taskset(controller: Controller, *replicas: int, name: str = "ts", pods: int | None = None) -> None:
    """The TaskSet in the cache, declaring ``replicas`` over its roles, and ``pods`` of its Pods (all of
    them unless told)."""
    roles = [{"name": f"role{index}", "replicas": count} for index, count in enumerate(replicas)]
    controller.tasksets.store.add({"metadata": {"name": name, "namespace": "ns"}, "spec": {"roles": roles}})
    cached_pods(controller, sum(replicas) if pods is None else pods, name)


def cached_pods(controller: Controller, count: int, taskset: str = "ts", first: int = 0) -> None:
    for index in range(first, first + count):
        controller.pods.store.add(owned(f"{taskset}-worker-{index}", taskset))


def assert_window(controller: Controller, clock: FakeClock, seconds: float, taskset: str = "ts") -> None:
    """A change of one of ``taskset``'s Pods is queued ``seconds`` later: not 0.05 s before, by 0.05 s
    after (the window is a float)."""
    controller._enqueue_owner_batched(owned(f"{taskset}-worker-0", taskset))
    assert queued_after(controller, clock, seconds - 0.05, expected=1) == 0
    assert queued_after(controller, clock, 0.1, expected=1) == 1
    controller.queue.done(controller.queue.get())


@pytest.mark.parametrize(
    ("declared", "window"),
    [(0, 0.5), (1, 0.5), (5, 0.5), (500, 0.5), (501, 0.501), (1_000, 1.0), (2_000, 2.0), (5_000, 5.0),
     (10_000, 5.0), (10**9, 5.0)],
)  # fmt: skip
def test_the_window_is_half_a_second_up_to_500_declared_replicas_then_grows(
    declared: int, window: float
) -> None:
    assert pod_event_window(declared, cached=max(declared, 500)) == pytest.approx(window)


@pytest.mark.parametrize("declared", [0, 5, 499, 500, 2_000, 10_000])
@pytest.mark.parametrize("cached", [0, 1, 250, 499])
def test_fewer_than_500_pods_in_the_cache_wait_as_a_small_taskset(declared: int, cached: int) -> None:
    assert pod_event_window(declared, cached) == POD_EVENT_BATCH


@pytest.mark.parametrize(
    ("taskset", "replicas"),
    [
        (None, 0),
        ({}, 0),
        ({"spec": None}, 0),
        ({"spec": {"roles": "many"}}, 0),
        ({"spec": {"roles": [None, 3, "x", {"replicas": "7"}, {"replicas": True}, {"replicas": -4}]}}, 0),
        ({"spec": {"roles": [{"replicas": 3}, {"name": "no count"}, {"replicas": 1_500}]}}, 1_503),
    ],
)
def test_declared_replicas_counts_only_whole_positive_counts(taskset: Any, replicas: int) -> None:
    assert declared_replicas(taskset) == replicas


def test_a_large_tasksets_pod_waits_its_longer_window(controller: Controller, clock: FakeClock) -> None:
    cached_taskset(controller, 1, 1_999)  # 2,000 replicas over two roles, all their Pods cached: 2 s
    controller._enqueue_owner_batched(owned("ts-worker-0"))
    assert queued_after(controller, clock, 1.9, expected=1) == 0
    assert queued_after(controller, clock, 0.1, expected=1) == 1
    assert controller.queue.get() == "ns/ts"


def test_each_taskset_waits_its_own_window(controller: Controller, clock: FakeClock) -> None:
    cached_taskset(controller, 5, name="small")
    cached_taskset(controller, 6_000, name="huge", pods=5_000)
    controller._enqueue_owner_batched(owned("huge-worker-0", "huge"))
    controller._enqueue_owner_batched(owned("small-worker-0", "small"))
    assert queued_after(controller, clock, POD_EVENT_BATCH, expected=1) == 1
    assert controller.queue.get() == "ns/small"
    assert queued_after(controller, clock, POD_EVENT_BATCH_MAX - POD_EVENT_BATCH - 0.1, expected=2) == 0
    assert queued_after(controller, clock, 0.1, expected=1) == 1
    assert controller.queue.get() == "ns/huge"


def test_a_large_taskset_waits_as_a_small_one_while_few_of_its_pods_are_cached(
    controller: Controller, clock: FakeClock
) -> None:
    """Before its Pods are there, and once most of them ended and went, a wave of its changes is small:
    the last steps of a large TaskSet's end are seen as soon as a small one's."""
    cached_taskset(controller, 2_000, pods=0)  # nothing created yet
    assert_window(controller, clock, 0.5)
    cached_pods(controller, 1_200)
    assert_window(controller, clock, 2.0)
    cached_pods(controller, 800, first=1_200)
    assert_window(controller, clock, 2.0)
    for index in range(1_600):
        controller.pods.store.delete(owned(f"ts-worker-{index}"))
    assert_window(controller, clock, 0.5)


def test_a_scaled_taskset_waits_the_window_of_its_new_size(controller: Controller, clock: FakeClock) -> None:
    """The window is read at each change, from the TaskSet as cached then: a role scaled up makes the next
    wave wait longer once its new Pods are there."""
    cached_taskset(controller, 100)
    assert_window(controller, clock, 0.5)
    cached_taskset(controller, 3_000)
    assert_window(controller, clock, 3.0)


def test_pods_a_stranger_plants_do_not_stretch_the_window(controller: Controller, clock: FakeClock) -> None:
    """Anyone creating a Pod in the namespace may write the TaskSet annotation; the declared replicas
    bound the count, so 3,000 planted Pods leave a 5-replica TaskSet's window at 0.5 s, and Pods of a
    TaskSet not in the cache (gone, or never there) wait 0.5 s too."""
    cached_taskset(controller, 5, pods=3_000)
    assert_window(controller, clock, 0.5)
    cached_pods(controller, 3_000, taskset="gone")
    assert_window(controller, clock, 0.5, "gone")
