"""The Pod cache keeps the last state of a Pod deleted while it carried ``DisruptionTarget=True``, by
TaskSet and Pod name, bounded: the Eviction API's Pod is often gone before a pass sees it, and its last
state is what the failure rules must match. It is kept before the cache forgets the Pod, so no pass
finds the Pod gone and its disruption unknown."""

from __future__ import annotations

from typing import Any

import pytest

from informers import DeletedFinalStateUnknown
from taskset.runtime.controller import Controller, ControllerSettings
from taskset.runtime.disruptions import Disruptions
from tests.unit.taskset.world import PodBuilder

pytestmark = pytest.mark.unit


def deleted(name: str, *, disrupted: str | None = "True", taskset: str = "job") -> dict[str, Any]:
    pod = PodBuilder(name).taskset("tsuid").running().obj()
    pod["metadata"]["namespace"] = "ns"
    pod["metadata"].setdefault("annotations", {})["TaskSet"] = taskset
    if disrupted is not None:
        pod["status"]["conditions"] = [{"type": "DisruptionTarget", "status": disrupted}]
    return pod


@pytest.mark.parametrize(
    ("pod", "kept"),
    [
        pytest.param(deleted("job-r-0"), True, id="disrupted: kept"),
        pytest.param(deleted("job-r-0", disrupted="False"), False, id="condition False: not kept"),
        pytest.param(deleted("job-r-0", disrupted=None), False, id="no condition: not kept"),
        pytest.param(deleted("job-r-0", taskset=""), False, id="no TaskSet annotation: not kept"),
        pytest.param(
            DeletedFinalStateUnknown("ns/job-r-0", deleted("job-r-0")), True, id="seen by a relist: kept"
        ),
    ],
)
def test_only_a_disrupted_pod_of_a_taskset_is_kept(pod: Any, kept: bool) -> None:
    disruptions = Disruptions()
    disruptions.pod_deleted(pod)
    assert list(disruptions.of("ns", "job")) == (["job-r-0"] if kept else [])
    assert disruptions.of("other", "job") == {}


def test_the_oldest_are_dropped_past_the_bound() -> None:
    disruptions = Disruptions(kept=2)
    for name in ("job-r-0", "job-r-1", "job-r-2"):
        disruptions.pod_deleted(deleted(name))
    assert sorted(disruptions.of("ns", "job")) == ["job-r-1", "job-r-2"]
    assert len(disruptions) == 2
    disruptions.pod_deleted(deleted("job-r-1"))  # seen again: the youngest now
    disruptions.pod_deleted(deleted("job-r-3"))
    assert sorted(disruptions.of("ns", "job")) == ["job-r-1", "job-r-3"]


def test_the_controller_keeps_it_before_the_pod_cache_forgets_the_pod() -> None:
    """No handler thread runs here (the informers are never started): what is kept is kept by the
    store's own write, before any pass can read the cache without the Pod."""
    logger: Any = None  # never called: nothing here fails
    controller = Controller(api_client=None, settings=ControllerSettings(), logger=logger)
    try:
        store = controller.pods.store
        for name in ("job-r-0", "job-r-1"):
            store.add(deleted(name, disrupted="True" if name.endswith("0") else None))
        seen: list[tuple[bool, list[str]]] = []
        controller.pods.add_forget_hook(
            lambda pod: seen.append(
                (store.get(pod) is not None, sorted(controller.reconciler.disruptions.of("ns", "job")))
            )
        )
        store.delete(deleted("job-r-0"))
        store.replace([], "9")  # a relist no longer finds job-r-1: forgotten too, never disrupted
        assert sorted(controller.reconciler.disruptions.of("ns", "job")) == ["job-r-0"]
        # The controller's own hook ran first, while the cache still held each Pod.
        assert seen == [(True, ["job-r-0"]), (True, ["job-r-0"])]
    finally:
        controller.queue.shutdown()
        controller.recorder.stop(0.1)


def test_a_pod_that_leaves_the_cache_leaves_the_pass_views_too() -> None:
    """The views the passes read (``PodViews``) are as many as the cached Pods: the Pod cache's forget
    hook drops a Pod's view, whether the watch saw it deleted or a relist no longer found it."""
    logger: Any = None  # never called: nothing here fails
    controller = Controller(api_client=None, settings=ControllerSettings(), logger=logger)
    try:
        store, views = controller.pods.store, controller.reconciler.pod_views
        for name in ("job-r-0", "job-r-1", "job-r-2"):
            pod = deleted(name, disrupted=None)
            pod["metadata"].update(uid=f"uid-{name}", resourceVersion="5")
            store.add(pod)
            views.of(store.get(pod))
        assert len(views) == 3

        gone = deleted("job-r-0", disrupted=None)
        gone["metadata"]["uid"] = "uid-job-r-0"
        store.delete(gone)
        assert len(views) == 2
        kept = store.get_by_key("ns/job-r-2")
        assert kept is not None
        store.replace([kept], "9")  # a relist no longer finds job-r-1
        assert len(views) == 1
    finally:
        controller.queue.shutdown()
        controller.recorder.stop(0.1)
