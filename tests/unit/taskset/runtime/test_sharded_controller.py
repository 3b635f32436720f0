"""The controller of one replica among several (``--shards auto``): which of its caches are cut by the
namespace hash, and what it does when it gains buckets. Pure: the informers are never started."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from informers.sharding import ShardView
from informers.shards import Buckets
from taskset.runtime.controller import Controller, ControllerSettings

pytestmark = [pytest.mark.unit, pytest.mark.timeout(30)]

BUCKETS = Buckets()


class FakeShards:
    """Holds what the test says; tells the controller of changes when the test calls ``change``."""

    def __init__(self) -> None:
        self.view = ShardView(BUCKETS)
        self.subscribers: list[Callable[[frozenset[int], frozenset[int]], None]] = []

    def owns(self, namespace: str) -> bool:
        return BUCKETS.of_namespace(namespace) in self.view.held

    def pending(self, namespace: str) -> bool:
        return False

    def subscribe(self, on_change: Callable[[frozenset[int], frozenset[int]], None]) -> None:
        self.subscribers.append(on_change)

    def change(self, held: frozenset[int]) -> None:
        before = self.view.held
        self.view.hold(held)
        for on_change in self.subscribers:
            on_change(held - before, before - held)


def namespace_in(bucket: int, start: int = 0) -> str:
    return next(f"ns-{i}" for i in range(start, 100_000) if BUCKETS.of_namespace(f"ns-{i}") == bucket)


@pytest.fixture
def made() -> Iterator[tuple[Controller, FakeShards]]:
    shards = FakeShards()
    logger: Any = None  # never called: nothing here logs
    controller = Controller(api_client=None, settings=ControllerSettings(), logger=logger, shards=shards)
    yield controller, shards
    controller.queue.shutdown()
    controller.recorder.stop(0.1)


def test_namespaced_caches_are_cut_and_the_cluster_scoped_ones_stay_whole(
    made: tuple[Controller, FakeShards],
) -> None:
    """Nodes have no namespace to hash: every replica needs them all to see its Pods' nodes lost."""
    _, shards = made
    cut = " ".join(shards.view.counts())
    assert "pods" in cut and "tasksets" in cut and "configmaps" in cut
    assert "nodes" not in cut


def test_a_gained_bucket_brings_back_the_tasksets_its_cache_kept(made: tuple[Controller, FakeShards]) -> None:
    """Held, lost while its key was dropped, gained back before a relist removed it: the TaskSet is
    unchanged in the cache, so no handler hears of it; the gain itself must queue it."""
    controller, shards = made
    kept, other = namespace_in(3), namespace_in(5)
    for namespace in (kept, other):
        controller.tasksets.store.add({"metadata": {"namespace": namespace, "name": "job", "uid": namespace}})
    shards.change(frozenset({5}))
    assert controller.queue.len() == 1 and controller.queue.get() == f"{other}/job"
    controller.queue.done(f"{other}/job")
    shards.change(frozenset({3, 5}))
    assert controller.queue.len() == 1 and controller.queue.get() == f"{kept}/job"
