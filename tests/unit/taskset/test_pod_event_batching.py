"""Pod updates reach the queue batched, so a wave of a role's Pod updates is one pass and one status write;
other changes at once. Pure: the controller's handlers and its delaying queue on a fake clock (the
informers are never started, no API server)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from clock import FakeClock
from taskset.constants import ANNOTATION_NAMESPACE, ANNOTATION_TASKSET
from taskset.controller import POD_EVENT_BATCH, Controller, ControllerSettings

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


def test_other_changes_are_queued_at_once(controller: Controller, clock: FakeClock) -> None:
    controller._enqueue_owner(owned("ts-0"))  # a ControlUnit, or a Pod added or deleted
    assert controller.queue.len() == 1


def test_an_added_object_is_queued_at_once_and_its_creation_observed(
    controller: Controller, mocker: Any
) -> None:
    observed = mocker.spy(controller.reconciler, "creation_observed")
    pod = owned("ts-worker-0")
    pod["metadata"]["uid"] = "pod-uid"
    controller._created(pod)
    observed.assert_called_once_with(pod)
    assert controller.queue.len() == 1
