"""Sharded collections: only the held buckets reach the cache, a change of buckets relists, the selector
is asked of the server, and what a server without the feature sends is filtered and counted."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from clock import FakeClock, RealClock
from informers import InformerSettings, SharedInformer
from informers.listwatch import ListerWatcher, ListOptions, ListResult, Resource, WatchStream, WatchTarget
from informers.reflector import ReflectorSettings
from informers.sharding import NOTHING_SELECTOR, ShardView, sharded_factory
from informers.shards import Buckets, fnv1a_64, selector_for
from informers.testing import FakeSource, eventually

pytestmark = [pytest.mark.unit, pytest.mark.timeout(30)]

PODS = WatchTarget(resource=Resource(group="", version="v1", plural="pods"))
FLAVORS = WatchTarget(resource=Resource(group="kueue.x-k8s.io", version="v1beta1", plural="resourceflavors"))
TWO = Buckets(2)
# FNV-1a 64: beta hashes below 2^63 (bucket 0 of 2), alpha above (bucket 1); checked on kube-apiserver.
assert fnv1a_64("beta") < 1 << 63 <= fnv1a_64("alpha")


def pod(namespace: str, name: str) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"namespace": namespace, "name": name}}


class Recording:
    """A ``ListerWatcherFactory`` over one fake server, remembering the targets it was asked for."""

    def __init__(self, source: FakeSource) -> None:
        self.source = source
        self.targets: list[WatchTarget] = []

    def __call__(self, target: WatchTarget) -> ListerWatcher:
        self.targets.append(target)
        return self.source


@pytest.fixture
def source() -> FakeSource:
    fake = FakeSource(clock=RealClock())
    for namespace in ("alpha", "beta"):
        for name in ("a", "b"):
            fake.create(pod(namespace, name))
    return fake


@pytest.fixture
def informer_on() -> Iterator[Any]:
    made: list[SharedInformer] = []

    def make(lister_watcher: ListerWatcher) -> SharedInformer:
        informer = SharedInformer(
            name="pods",
            lister_watcher=lister_watcher,
            settings=InformerSettings(reflector=ReflectorSettings()),
            clock=RealClock(),
        )
        made.append(informer)
        informer.start()
        return informer

    yield make
    for informer in made:
        informer.stop()


def keys(informer: SharedInformer) -> list[str]:
    return sorted(informer.store.list_keys())


def test_only_the_held_buckets_reach_the_cache_and_a_change_relists(
    source: FakeSource, informer_on: Any
) -> None:
    view = ShardView(TWO)
    view.hold(frozenset({0}))
    recording = Recording(source)
    informer = informer_on(sharded_factory(recording, view, shard=lambda _: True)(PODS))
    eventually(lambda: keys(informer) == ["beta/a", "beta/b"])
    assert recording.targets[-1].shard_selector == selector_for(TWO, [0])
    eventually(lambda: view.listed_generation() == view.generation)

    generation = view.hold(frozenset({1}))  # the bucket moved: the cache follows, by a relist
    eventually(lambda: keys(informer) == ["alpha/a", "alpha/b"], timeout=15)
    eventually(lambda: view.listed_generation() == generation)
    assert recording.targets[-1].shard_selector == selector_for(TWO, [1])

    source.create(pod("beta", "c"))  # a server without the feature sends it; the filter drops it
    source.create(pod("alpha", "c"))
    eventually(lambda: keys(informer) == ["alpha/a", "alpha/b", "alpha/c"])
    counts = view.counts()[str(PODS)]
    assert counts.dropped >= 3  # two of beta's at the first list... and every event of beta since
    assert not counts.server_filtered


def test_each_change_of_the_held_buckets_is_followed_at_once_listing_only_the_gained_buckets() -> None:
    """The fake clock is never stepped: a backoff between the changes would hold the cache back. A gained
    bucket is listed alone, as it is now (a consistent read); a lost one costs no request."""
    clock = FakeClock()
    fake = FakeSource(clock=clock)
    for namespace in ("alpha", "beta"):
        fake.create(pod(namespace, "a"))
    view = ShardView(TWO)
    view.hold(frozenset({0}))
    recording = Recording(fake)
    informer = SharedInformer(
        name="pods",
        lister_watcher=sharded_factory(recording, view, shard=lambda _: True)(PODS),
        settings=InformerSettings(reflector=ReflectorSettings()),
        clock=clock,
    )
    informer.start()
    try:
        eventually(lambda: keys(informer) == ["beta/a"] and view.listed_generation() == view.generation)
        for held, expected in [({1}, ["alpha/a"]), ({0, 1}, ["alpha/a", "beta/a"]), ({0}, ["beta/a"])]:
            generation = view.hold(frozenset(held))
            eventually(lambda: keys(informer) == expected and view.listed_generation() >= generation)  # noqa: B023
        first, *follows = fake.list_calls
        assert first.resource_version == "0"
        assert [(c.resource_version, c.resource_version_match) for c in follows] == [("", None)] * 2
        listed_for = [t.shard_selector for t in recording.targets if t.shard_selector]
        assert selector_for(TWO, [1]) in listed_for  # bucket 1 gained alone, then bucket 0 alone
        assert listed_for.count(selector_for(TWO, [0])) >= 2
    finally:
        informer.stop()


def test_writes_while_a_bucket_moves_are_neither_lost_nor_doubled(
    source: FakeSource, informer_on: Any
) -> None:
    """The gained bucket is listed as it is now and the watch goes on from the cache's RV: a write made after
    that RV arrives once, by the list or by the watch, whatever bucket it is in."""
    view = ShardView(TWO)
    view.hold(frozenset({0}))
    informer = informer_on(sharded_factory(Recording(source), view, shard=lambda _: True)(PODS))
    eventually(lambda: keys(informer) == ["beta/a", "beta/b"] and view.listed_generation() == view.generation)
    with source.paused():  # the open watch hears none of these: the cache's RV stays behind them
        source.create(pod("alpha", "c"))
        source.delete(pod("alpha", "a"))
        source.create(pod("beta", "c"))
        generation = view.hold(frozenset({0, 1}))
    eventually(lambda: view.listed_generation() >= generation)
    eventually(lambda: keys(informer) == ["alpha/b", "alpha/c", "beta/a", "beta/b", "beta/c"])
    assert [c.resource_version for c in source.list_calls[1:]] == [""]  # the gained bucket alone, as now
    assert [c.resource_version for c in source.watch_calls[-1:]] == ["104"]  # the RV before the three writes


def test_a_cache_whose_history_is_compacted_when_a_bucket_moves_lists_everything(
    source: FakeSource, informer_on: Any
) -> None:
    """The gained bucket's list is served as it is now, but the watch cannot resume from the cache's RV
    once etcd compacted it: the reflector then lists everything again, and the cache ends as the server."""
    view = ShardView(TWO)
    view.hold(frozenset({0}))
    informer = informer_on(sharded_factory(Recording(source), view, shard=lambda _: True)(PODS))
    eventually(lambda: keys(informer) == ["beta/a", "beta/b"] and view.listed_generation() == view.generation)
    with source.paused():
        source.create(pod("alpha", "c"))
        source.delete(pod("beta", "b"))
        source.compact()  # the cache's RV is gone from history: the resumed watch gets 410
        generation = view.hold(frozenset({0, 1}))
    eventually(lambda: view.listed_generation() >= generation)
    eventually(lambda: len(source.list_calls) == 3, timeout=10)  # the first list, the gained bucket's, all
    eventually(lambda: keys(informer) == ["alpha/a", "alpha/b", "alpha/c", "beta/a"])
    eventually(lambda: len(source.watch_calls) >= 3)  # the cache is replaced before the new watch opens
    assert [c.resource_version for c in source.watch_calls][:3] == ["104", "104", "106"]  # 410, then anew


def test_holding_nothing_asks_for_one_hash_value_not_everything(source: FakeSource, informer_on: Any) -> None:
    view = ShardView(TWO)
    recording = Recording(source)
    informer = informer_on(sharded_factory(recording, view, shard=lambda _: True)(PODS))
    eventually(informer.has_synced)
    assert keys(informer) == []
    assert recording.targets[-1].shard_selector == NOTHING_SELECTOR


def test_targets_not_sharded_stay_whole(source: FakeSource) -> None:
    recording = Recording(source)
    factory = sharded_factory(
        recording, ShardView(TWO), shard=lambda target: target.resource.plural == "pods"
    )
    assert factory(FLAVORS) is source
    assert recording.targets == [FLAVORS]


class EchoingServer:
    """A server applying the selector and echoing it, as kube-apiserver 1.36 does for built-in kinds."""

    def __init__(self, target: WatchTarget) -> None:
        self.target = target

    def list(self, options: ListOptions) -> ListResult:
        return ListResult(
            items=[pod("beta", "a")], resource_version="5", shard_selector=self.target.shard_selector or ""
        )

    def watch(self, *, resource_version: str, timeout_seconds: int, allow_bookmarks: bool) -> WatchStream:
        raise AssertionError("not watched here")


def test_an_echoed_selector_is_reported_as_filtered_by_the_server() -> None:
    view = ShardView(TWO)
    view.hold(frozenset({0}))
    sharded = sharded_factory(EchoingServer, view, shard=lambda _: True)(PODS)
    assert [p["metadata"]["name"] for p in sharded.list(ListOptions()).items] == ["a"]
    counts = view.counts()[str(PODS)]
    assert counts.server_filtered
    assert counts.dropped == 0


class HeldBackWatches:
    """A ``ListerWatcherFactory`` over one fake server whose watches hand over nothing until ``release``:
    what a watch replays reaches the cache as late as a busy server sends it."""

    def __init__(self, source: FakeSource) -> None:
        self.source = source
        self.released = threading.Event()

    def __call__(self, target: WatchTarget) -> ListerWatcher:
        return self

    def list(self, options: ListOptions) -> ListResult:
        return self.source.list(options)

    def watch(self, *, resource_version: str, timeout_seconds: int, allow_bookmarks: bool) -> WatchStream:
        inner = self.source.watch(
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            allow_bookmarks=allow_bookmarks,
        )
        released = self.released

        class Held:
            def __iter__(self) -> Iterator[Any]:
                while not released.wait(0.05):
                    if inner.closed:
                        return
                yield from inner

            def close(self) -> None:
                inner.close()

        return Held()


def test_a_gained_bucket_is_cached_as_fresh_as_the_hand_over_before_the_watch_replays(
    source: FakeSource, informer_on: Any
) -> None:
    """The replica acts for a gained bucket as soon as its generation counts as listed; its objects must
    then be at least as new as the moment it gained the bucket (the previous holder's last writes), not as
    old as the cache's own resource version, which the watch brings forward only later. Nor does the
    watch's replay of older writes take the cache back."""
    view = ShardView(TWO)
    view.hold(frozenset({0}))
    held_back = HeldBackWatches(source)
    held_back.released.set()
    informer = informer_on(sharded_factory(held_back, view, shard=lambda _: True)(PODS))
    versions: dict[str, list[int]] = {}

    def seen(obj: dict[str, Any]) -> None:
        key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
        versions.setdefault(key, []).append(int(obj["metadata"]["resourceVersion"]))

    informer.add_event_handler(on_add=seen, on_update=lambda _old, new: seen(new))
    eventually(lambda: keys(informer) == ["beta/a", "beta/b"] and view.listed_generation() == view.generation)
    held_back.released.clear()
    with source.paused():  # written after the cache's RV, heard by no watch yet
        source.create(pod("alpha", "c"))
        source.update({**pod("alpha", "c"), "spec": {"nodeName": "n1"}})
        source.delete(pod("alpha", "a"))
        source.create(pod("beta", "c"))
    generation = view.hold(frozenset({0, 1}))
    eventually(lambda: view.listed_generation() >= generation)
    assert [k for k in keys(informer) if k.startswith("alpha/")] == ["alpha/b", "alpha/c"]
    assert informer.store.get_by_key("alpha/c")["spec"] == {"nodeName": "n1"}

    held_back.released.set()  # the watch now replays everything since the cache's RV
    eventually(lambda: keys(informer) == ["alpha/b", "alpha/c", "beta/a", "beta/b", "beta/c"])
    source.update({**pod("alpha", "c"), "spec": {"nodeName": "n2"}})
    eventually(lambda: (informer.store.get_by_key("alpha/c") or {}).get("spec") == {"nodeName": "n2"})
    assert versions["alpha/c"] == sorted(set(versions["alpha/c"])), versions["alpha/c"]
