"""The shared informer: cache first, then handlers; isolated handlers; resync from the cache; tombstones for
deletes seen only by a relist; sync signals per informer and per handler."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from clock import FakeClock, RealClock
from informers import (
    DeletedFinalStateUnknown,
    HandlerRegistration,
    InformerSettings,
    ReflectorSettings,
    SharedInformer,
    deletion_handling_key,
    resource_version,
    wait_for_cache_sync,
)
from informers.testing import FakeSource, RecordingLogger, eventually

pytestmark = [pytest.mark.unit, pytest.mark.timeout(20)]

RELIST = "backing off before relisting"
# Real seconds for negative checks: four of FakeClock's 50 ms wake-up slices, so any thread waiting on the
# fake clock has re-checked its deadline at least once.
SETTLE = 0.2


def settle() -> None:
    time.sleep(SETTLE)


def obj(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "labels": labels},
    }


def relabeled(o: dict[str, Any], **labels: str) -> dict[str, Any]:
    return {**o, "metadata": {**o["metadata"], "labels": labels}}


Event = tuple[str, str, str]  # (kind, key, resource version or "tombstone@<rv>")


class Recorder:
    """A handler that records what it was told, as (kind, key, rv) tuples."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def on_add(self, o: dict[str, Any]) -> None:
        self.events.append(("add", deletion_handling_key(o), resource_version(o)))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.events.append(
            ("update", deletion_handling_key(new), f"{resource_version(old)}->{resource_version(new)}")
        )

    def on_delete(self, o: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        if isinstance(o, DeletedFinalStateUnknown):
            self.events.append(("delete", o.key, f"tombstone@{resource_version(o.obj)}"))
        else:
            self.events.append(("delete", deletion_handling_key(o), resource_version(o)))

    def register(self, informer: SharedInformer, resync_period: float | None = None) -> HandlerRegistration:
        return informer.add_event_handler(
            on_add=self.on_add,
            on_update=self.on_update,
            on_delete=self.on_delete,
            resync_period=resync_period,
        )

    def seen(self, count: int) -> list[Event]:
        """Wait until ``count`` events arrived and return them."""
        eventually(lambda: len(self.events) >= count)
        return list(self.events)


InformerFactory = Callable[..., SharedInformer]


@pytest.fixture
def make_informer(
    source: FakeSource, clock: FakeClock, rng: random.Random, logger: RecordingLogger
) -> Iterator[InformerFactory]:
    """An informer on ``source`` (not started); every one made is stopped afterwards."""
    made: list[SharedInformer] = []

    def make(**kwargs: Any) -> SharedInformer:
        settings = kwargs.pop("settings", InformerSettings(reflector=ReflectorSettings()))
        informer = SharedInformer(
            name="pods",
            lister_watcher=source,
            settings=settings,
            clock=clock,
            rng=rng,
            logger=logger,
            **kwargs,
        )
        made.append(informer)
        return informer

    yield make
    for informer in made:
        informer.stop()


def watching(source: FakeSource, calls: int) -> None:
    eventually(lambda: len(source.watch_calls) >= calls and source.open_watches())


def step_relist_backoff(clock: FakeClock, logger: RecordingLogger, nth: int = 1) -> None:
    record = eventually(lambda: logger.named(RELIST)[nth - 1 : nth])[0]
    # Two threads wait on the clock once the reflector sleeps: it and the informer's resync timer.
    eventually(lambda: clock.blocked_waiters() >= 2)
    clock.step(float(record.fields["delay"]))


def test_handlers_run_after_the_cache_holds_the_state_they_are_told_about(
    source: FakeSource, make_informer: InformerFactory
) -> None:
    informer = make_informer()
    checks: list[bool] = []
    informer.add_event_handler(
        on_add=lambda o: checks.append(informer.store.get_by_key("ns/a") == o),
        on_update=lambda old, new: checks.append(informer.store.get_by_key("ns/a") == new),
        on_delete=lambda o: checks.append("ns/a" not in informer.store),
    )
    informer.start()
    watching(source, 1)

    a = source.create(obj("a"))
    eventually(lambda: len(checks) == 1)
    source.update(relabeled(a, app="web"))
    eventually(lambda: len(checks) == 2)
    source.delete(a)
    eventually(lambda: len(checks) == 3)

    assert checks == [True, True, True]


def test_every_handler_sees_each_change_in_order(source: FakeSource, make_informer: InformerFactory) -> None:
    a = source.create(obj("a"))
    informer = make_informer()
    first, second = Recorder(), Recorder()
    first.register(informer)
    second.register(informer)
    informer.start()
    watching(source, 1)

    a2 = source.update(relabeled(a, app="web"))
    source.create(obj("b"))
    source.delete(a2)

    expected = [
        ("add", "ns/a", "101"),
        ("update", "ns/a", "101->102"),
        ("add", "ns/b", "103"),
        ("delete", "ns/a", "104"),
    ]
    assert first.seen(4) == expected
    assert second.seen(4) == expected


def test_an_update_with_an_unchanged_resource_version_reaches_nobody(
    source: FakeSource, clock: FakeClock, logger: RecordingLogger, make_informer: InformerFactory
) -> None:
    source.create(obj("a"))
    informer = make_informer()
    recorder = Recorder()
    recorder.register(informer)
    informer.start()
    watching(source, 1)

    source.expire_watches()  # the relist finds "a" unchanged
    step_relist_backoff(clock, logger)
    watching(source, 2)
    for watch in source.open_watches():  # the same state again, as a watch might replay it
        watch.send({"type": "MODIFIED", "object": source.get("ns/a") or {}})
    source.create(obj("b"))

    assert recorder.seen(2) == [("add", "ns/a", "101"), ("add", "ns/b", "102")]
    assert len(source.list_calls) == 2


def test_deletes_missed_while_disconnected_reach_handlers_as_tombstones_on_relist(
    source: FakeSource, clock: FakeClock, logger: RecordingLogger, make_informer: InformerFactory
) -> None:
    a, b, c = source.create(obj("a")), source.create(obj("b")), source.create(obj("c"))
    informer = make_informer()
    recorder = Recorder()
    recorder.register(informer)
    informer.start()
    watching(source, 1)
    recorder.seen(3)

    with source.paused():  # the watch hears nothing of these
        source.delete(b)
        source.update(relabeled(c, app="web"))
    source.compact()
    source.expire_watches()
    step_relist_backoff(clock, logger)
    watching(source, 2)

    assert recorder.seen(5)[3:] == [
        ("update", "ns/c", "103->105"),
        ("delete", "ns/b", "tombstone@102"),
    ]
    assert sorted(informer.store.list_keys()) == ["ns/a", "ns/c"]
    assert informer.store.get_by_key("ns/a") == a


def test_a_delete_seen_by_the_watch_delivers_the_final_state(
    source: FakeSource, make_informer: InformerFactory
) -> None:
    informer = make_informer()
    deleted: list[Any] = []
    informer.add_event_handler(on_delete=deleted.append)
    informer.start()
    watching(source, 1)

    a = source.create(obj("a"))
    final = source.delete(relabeled(a, phase="done"))

    eventually(lambda: deleted)
    assert deleted == [final]
    assert not isinstance(deleted[0], DeletedFinalStateUnknown)


def test_a_forget_hook_hears_of_each_object_while_the_cache_still_holds_it(
    source: FakeSource, clock: FakeClock, logger: RecordingLogger, make_informer: InformerFactory
) -> None:
    """By a watch delete (the final state) and by a relist that no longer finds it (the last cached
    state): a reader never misses the object before the hook kept what it needs."""
    a, b = source.create(obj("a")), source.create(obj("b"))
    informer = make_informer()
    heard: list[tuple[str, str, bool]] = []

    def hook(o: dict[str, Any]) -> None:
        key = deletion_handling_key(o)
        heard.append((key, resource_version(o), key in informer.store))

    informer.add_forget_hook(hook)
    told: list[Any] = []
    informer.add_event_handler(on_delete=told.append)
    informer.start()
    watching(source, 1)

    final = source.delete(relabeled(a, phase="done"))
    eventually(lambda: told)
    assert heard == [("ns/a", resource_version(final), True)]

    with source.paused():
        source.delete(b)
    source.compact()
    source.expire_watches()
    step_relist_backoff(clock, logger)
    watching(source, 2)
    eventually(lambda: len(told) == 2)
    assert heard[1:] == [("ns/b", resource_version(b), True)]
    # A delete of what the cache never held tells nobody.
    informer.store.delete(obj("never"))
    assert len(heard) == 2


def test_bookmarks_move_the_resource_version_without_calling_handlers(
    source: FakeSource, make_informer: InformerFactory
) -> None:
    source.create(obj("a"))
    informer = make_informer()
    recorder = Recorder()
    recorder.register(informer)
    informer.start()
    watching(source, 1)
    recorder.seen(1)

    rv = source.bookmark()
    eventually(lambda: informer.last_sync_resource_version() == rv)
    source.create(obj("b"))  # a later event proves the bookmark was processed and skipped

    assert recorder.seen(2) == [("add", "ns/a", "101"), ("add", "ns/b", "103")]
    assert sorted(informer.store.list_keys()) == ["ns/a", "ns/b"]


def test_has_synced_per_informer_and_per_handler(source: FakeSource, make_informer: InformerFactory) -> None:
    source.create(obj("a"))
    source.create(obj("b"))
    informer = make_informer()
    release = threading.Event()

    def slow_add(o: dict[str, Any]) -> None:
        release.wait(5)

    slow = informer.add_event_handler(on_add=slow_add)
    fast = informer.add_event_handler()
    assert not informer.has_synced()
    assert not slow.has_synced()

    informer.start()
    assert informer.wait_for_cache_sync(timeout=5)
    eventually(fast.has_synced)

    assert informer.has_synced()
    assert not slow.has_synced(), "its handler has not returned from the initial adds yet"
    release.set()
    eventually(slow.has_synced)


def test_a_handler_added_after_sync_first_gets_the_cache_as_adds(
    source: FakeSource, make_informer: InformerFactory
) -> None:
    source.create(obj("a"))
    informer = make_informer()
    informer.start()
    informer.wait_for_cache_sync(timeout=5)
    watching(source, 1)
    source.create(obj("b"))
    eventually(lambda: len(informer.store) == 2)

    late = Recorder()
    registration = late.register(informer)
    source.create(obj("c"))

    assert sorted(late.seen(2)[:2]) == [("add", "ns/a", "101"), ("add", "ns/b", "102")]
    assert late.seen(3)[2] == ("add", "ns/c", "103")
    assert registration.has_synced()


def test_a_raising_handler_does_not_stop_itself_or_others(
    source: FakeSource, logger: RecordingLogger, make_informer: InformerFactory
) -> None:
    informer = make_informer()
    calls: list[str] = []

    def explode(o: dict[str, Any]) -> None:
        calls.append(o["metadata"]["name"])
        raise RuntimeError("handler bug")

    informer.add_event_handler(on_add=explode)
    recorder = Recorder()
    recorder.register(informer)
    informer.start()
    watching(source, 1)

    for name in ("a", "b", "c"):
        source.create(obj(name))

    assert [e[1] for e in recorder.seen(3)] == ["ns/a", "ns/b", "ns/c"]
    eventually(lambda: len(calls) == 3)
    assert calls == ["a", "b", "c"]
    raised = eventually(
        lambda: logger.named("event handler raised")[2:] and logger.named("event handler raised")
    )
    assert [(r.level, r.exc_info, r.fields["kind"]) for r in raised] == [("error", True, "add")] * 3


def test_a_slow_handler_does_not_block_the_watch_or_other_handlers(
    source: FakeSource, make_informer: InformerFactory
) -> None:
    informer = make_informer()
    release = threading.Event()
    slow_seen: list[str] = []

    def slow(o: dict[str, Any]) -> None:
        release.wait(10)
        slow_seen.append(o["metadata"]["name"])

    informer.add_event_handler(on_add=slow)
    fast = Recorder()
    fast.register(informer)
    informer.start()
    watching(source, 1)

    for i in range(5):
        source.create(obj(f"p{i}"))

    assert [e[1] for e in fast.seen(5)] == [f"ns/p{i}" for i in range(5)]
    assert len(informer.store) == 5
    assert slow_seen == []
    release.set()
    eventually(lambda: len(slow_seen) == 5)
    assert slow_seen == [f"p{i}" for i in range(5)]


@dataclass(frozen=True)
class ResyncCase:
    period: float
    steps: list[float]
    """Clock steps, in seconds."""
    resyncs: list[int]
    """How many resyncs the handler has seen after each step."""


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            ResyncCase(30.0, [29.0, 1.0, 30.0], [0, 1, 2]),
            id="a handler is replayed the cache once per period",
        ),
        pytest.param(
            ResyncCase(0.2, [0.5, 0.5], [0, 1]), id="a period below one second is raised to one second"
        ),
        pytest.param(ResyncCase(0.0, [3600.0], [0]), id="a period of 0 never resyncs"),
    ],
)
def test_resync_replays_the_cache_without_calling_the_api_server(
    case: ResyncCase, source: FakeSource, clock: FakeClock, make_informer: InformerFactory
) -> None:
    source.create(obj("a"))
    source.create(obj("b"))
    informer = make_informer()
    resynced, plain = Recorder(), Recorder()
    resynced.register(informer, case.period)
    plain.register(informer)
    informer.start()
    watching(source, 1)
    resynced.seen(2)

    def wait_for_resyncs(count: int) -> None:
        eventually(lambda: len(resynced.events) == 2 + 2 * count)

    for step, expected in zip(case.steps, case.resyncs, strict=True):
        clock.step(step)
        if expected == len(resynced.events[2:]) // 2:
            settle()  # give a wrong resync the chance to show up
        wait_for_resyncs(expected)

    assert (
        resynced.events[2:]
        == [("update", "ns/a", "101->101"), ("update", "ns/b", "102->102")] * case.resyncs[-1]
    )
    assert len(plain.events) == 2
    assert len(source.list_calls) == 1
    assert len(source.watch_calls) == 1


def test_the_default_transform_strips_managed_fields_before_anyone_sees_the_object(
    source: FakeSource, make_informer: InformerFactory
) -> None:
    informer = make_informer()
    added: list[dict[str, Any]] = []
    informer.add_event_handler(on_add=added.append)
    informer.start()
    watching(source, 1)

    fat = obj("a")
    fat["metadata"]["managedFields"] = [{"manager": "kubectl", "fieldsV1": {"f:spec": {}}}]
    source.create(fat)

    eventually(lambda: added)
    assert "managedFields" not in added[0]["metadata"]
    assert informer.store.get_by_key("ns/a") is added[0]


def test_a_removed_handler_hears_nothing_more(source: FakeSource, make_informer: InformerFactory) -> None:
    informer = make_informer()
    removed, kept = Recorder(), Recorder()
    registration = removed.register(informer)
    kept.register(informer)
    informer.start()
    watching(source, 1)
    source.create(obj("a"))
    removed.seen(1)

    informer.remove_event_handler(registration)
    source.create(obj("b"))

    assert [e[1] for e in kept.seen(2)] == ["ns/a", "ns/b"]
    assert removed.events == [("add", "ns/a", "101")]


def test_wait_for_cache_sync_times_out_while_listing_fails(
    source: FakeSource, clock: FakeClock, logger: RecordingLogger, make_informer: InformerFactory
) -> None:
    source.fail_list(RuntimeError("cannot list"))
    informer = make_informer()
    registration = informer.add_event_handler()
    informer.start()

    assert not wait_for_cache_sync([informer.has_synced], timeout=0.2, clock=RealClock())
    step_relist_backoff(clock, logger)
    assert wait_for_cache_sync([informer.has_synced, registration.has_synced], timeout=5, clock=RealClock())


def test_a_stopped_informer_refuses_new_handlers(source: FakeSource, make_informer: InformerFactory) -> None:
    informer = make_informer()
    informer.start()
    watching(source, 1)

    informer.stop()

    assert source.open_watches() == []
    with pytest.raises(RuntimeError, match="stopped"):
        informer.add_event_handler()
    with pytest.raises(RuntimeError, match="stopped"):
        informer.start()


def test_a_bounded_buffer_holds_the_watch_back_yet_stop_still_returns(
    source: FakeSource, make_informer: InformerFactory
) -> None:
    informer = make_informer(settings=InformerSettings(handler_buffer=1, stop_timeout=0.5))
    stuck = threading.Event()

    def never_returns(o: dict[str, Any]) -> None:
        stuck.wait(10)

    informer.add_event_handler(on_add=never_returns)
    informer.start()
    watching(source, 1)

    for name in ("a", "b", "c", "d", "e"):
        source.create(obj(name))

    # "a" is in the handler, "b" fills the buffer, "c" is stored and then waits for room: backpressure.
    eventually(lambda: len(informer.store) == 3)
    settle()
    assert sorted(informer.store.list_keys()) == ["ns/a", "ns/b", "ns/c"]
    stopper = threading.Thread(target=informer.stop)
    stopper.start()
    stopper.join(2.0)
    assert not stopper.is_alive()
    stuck.set()


# ----- handler threads that rest between batches (``handler_batch_interval``) ------------------------------


def test_handlers_that_rest_between_batches_still_see_each_change_once_and_in_order(
    source: FakeSource, make_informer: InformerFactory
) -> None:
    """Resting changes when a handler hears of a change, never what or in which order: a stream of
    changes, some arriving while the threads rest, reaches both handlers whole, one with a buffer of one
    (whose producer waits for room while the thread rests)."""
    for buffer in (None, 1):
        source_objects = [source.create(obj(f"{buffer}-{i}")) for i in range(3)]
        informer = make_informer(
            settings=InformerSettings(handler_batch_interval=0.02, handler_buffer=buffer)
        )
        first, second = Recorder(), Recorder()
        first.register(informer)
        second.register(informer)
        watches_before = len(source.watch_calls)
        informer.start()
        watching(source, watches_before + 1)
        expected = [("add", f"ns/{o['metadata']['name']}", resource_version(o)) for o in source_objects]
        for i, o in enumerate(source_objects):
            changed = source.update(relabeled(o, step=str(i)))
            expected.append(
                (
                    "update",
                    f"ns/{o['metadata']['name']}",
                    f"{resource_version(o)}->{resource_version(changed)}",
                )
            )
            if i == 1:
                time.sleep(0.03)  # the next ones arrive while the threads rest, or after it
            source.delete(changed)
            expected.append(
                ("delete", f"ns/{o['metadata']['name']}", str(int(resource_version(changed)) + 1))
            )
        assert first.seen(len(expected)) == expected
        assert second.seen(len(expected)) == expected
        settle()
        assert len(first.events) == len(second.events) == len(expected)
        informer.stop()


def test_a_change_that_arrives_while_the_handler_thread_rests_waits_for_the_rest(
    source: FakeSource, make_informer: InformerFactory
) -> None:
    """A push does not wake a resting thread (that wake-up per change is the cost resting saves): a
    change seen after the first batch is delivered no sooner than the rest's end."""
    rest = 0.4
    informer = make_informer(settings=InformerSettings(handler_batch_interval=rest))
    delivered: dict[str, float] = {}
    informer.add_event_handler(on_add=lambda o: delivered.setdefault(o["metadata"]["name"], time.monotonic()))
    informer.start()
    watching(source, 1)

    source.create(obj("a"))
    eventually(lambda: "a" in delivered)
    source.create(obj("b"))
    source.create(obj("c"))
    eventually(lambda: len(delivered) == 3)

    assert delivered["b"] - delivered["a"] >= rest * 0.95
    assert delivered["c"] >= delivered["b"]


def test_stop_wakes_a_resting_handler_thread(source: FakeSource, make_informer: InformerFactory) -> None:
    informer = make_informer(settings=InformerSettings(handler_batch_interval=60.0))
    seen: list[str] = []
    informer.add_event_handler(on_add=lambda o: seen.append(o["metadata"]["name"]))
    earlier = set(threading.enumerate())  # another test's handler thread is not this one's
    informer.start()
    watching(source, 1)
    source.create(obj("a"))
    eventually(lambda: seen == ["a"])
    handler_threads = [
        t for t in threading.enumerate() if t.name.startswith("handler-pods-") and t not in earlier
    ]
    assert len(handler_threads) == 1

    informer.stop()

    eventually(lambda: not any(t.is_alive() for t in handler_threads), timeout=5.0)


def test_a_negative_handler_batch_interval_is_refused() -> None:
    with pytest.raises(ValueError, match="handler_batch_interval"):
        InformerSettings(handler_batch_interval=-0.01)
