"""The reflector follows client-go's list/watch rules: which RV each request asks for, when it relists,
when it only rewatches, how long it backs off, and that it survives its own crashes.

Time is fake: a test steps the clock by exactly the backoff the reflector logged, once the reflector is
waiting on it, and then checks the clock time at which the next request was made.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from clock import FakeClock
from informers import (
    ApiError,
    ListOptions,
    Reflector,
    ReflectorSettings,
    SelectionChangedError,
    Store,
    TransportError,
)
from informers.testing import FakeSource, RecordingLogger, eventually

pytestmark = [pytest.mark.unit, pytest.mark.timeout(20)]

START = 1000.0  # FakeClock's start time
FIRST_LIST = ListOptions(resource_version="0", limit=500)
REWATCH = "backing off before rewatching"
RELIST = "backing off before relisting"


def obj(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "labels": labels},
    }


def relist_at(rv: str) -> ListOptions:
    return ListOptions(resource_version=rv, resource_version_match="NotOlderThan")


def too_many_requests() -> ApiError:
    return ApiError(code=429, reason="TooManyRequests", message="slow down")


def internal_error() -> ApiError:
    return ApiError(code=500, reason="InternalError", message="etcd hiccup")


ReflectorFactory = Callable[..., tuple[Reflector, Store]]


@pytest.fixture
def run_reflector(
    source: FakeSource, clock: FakeClock, rng: random.Random, logger: RecordingLogger
) -> Iterator[ReflectorFactory]:
    """Start a reflector on ``source`` (settings as keywords); every one started is stopped afterwards."""
    started: list[Reflector] = []

    def run(*, store: Store | None = None, **settings: Any) -> tuple[Reflector, Store]:
        store = store if store is not None else Store()
        reflector = Reflector(
            name="pods",
            lister_watcher=source,
            store=store,
            settings=ReflectorSettings(**settings),
            clock=clock,
            rng=rng,
            logger=logger,
        )
        started.append(reflector)
        reflector.start()
        return reflector, store

    yield run
    for reflector in started:
        reflector.stop()


def watching(source: FakeSource, calls: int) -> None:
    """Wait until the ``calls``-th watch is open and being read."""
    eventually(lambda: len(source.watch_calls) >= calls and source.open_watches())


def step_logged_backoff(clock: FakeClock, logger: RecordingLogger, event: str, nth: int) -> float:
    """Wait for the ``nth`` (1-based) backoff logged as ``event``, then step the clock past it; returns it."""
    record = eventually(lambda: logger.named(event)[nth - 1 : nth])[0]
    eventually(lambda: clock.blocked_waiters() > 0)  # the reflector is sleeping, its deadline fixed
    delay = float(record.fields["delay"])
    clock.step(delay)
    return delay


def test_the_first_list_asks_for_any_cached_state_and_the_watch_continues_from_its_rv(
    source: FakeSource, run_reflector: ReflectorFactory
) -> None:
    source.create(obj("a"))
    source.create(obj("b"))

    reflector, store = run_reflector()
    watching(source, 1)

    assert source.list_calls == [FIRST_LIST]
    call = source.watch_calls[0]
    assert (call.resource_version, call.timeout_seconds, call.allow_bookmarks) == ("102", 450, True)
    assert sorted(store.list_keys()) == ["ns/a", "ns/b"]
    assert reflector.last_sync_resource_version() == "102"


def test_events_and_bookmarks_advance_the_resource_version(
    source: FakeSource, run_reflector: ReflectorFactory
) -> None:
    reflector, store = run_reflector()
    watching(source, 1)

    source.create(obj("a"))
    eventually(lambda: reflector.last_sync_resource_version() == "101")
    bookmark_rv = source.bookmark()
    eventually(lambda: reflector.last_sync_resource_version() == bookmark_rv)
    assert bookmark_rv == "102"
    assert store.list_keys() == ["ns/a"]

    source.end_watches()  # the server's timeoutSeconds ran out
    watching(source, 2)
    assert [c.resource_version for c in source.watch_calls] == ["100", "102"]
    assert source.list_calls == [FIRST_LIST]


@dataclass(frozen=True)
class WatchEndCase:
    end: Callable[[FakeSource], None]
    backoff: str | None
    """The backoff log event expected before the next request; None: the next request comes at once."""
    lists: list[ListOptions]
    watch_rvs: list[str]
    events_first: bool = True
    age: float = 0.0
    settings: dict[str, Any] = field(default_factory=dict)


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            WatchEndCase(
                end=FakeSource.end_watches, backoff=None, lists=[FIRST_LIST], watch_rvs=["100", "101"]
            ),
            id="a watch closed by the server is reopened at once from the last RV",
        ),
        pytest.param(
            WatchEndCase(
                end=FakeSource.break_watches,
                backoff=None,
                lists=[FIRST_LIST],
                watch_rvs=["100", "101"],
            ),
            id="a watch whose connection broke is reopened at once from the last RV",
        ),
        pytest.param(
            WatchEndCase(
                end=FakeSource.end_watches,
                backoff=RELIST,
                lists=[FIRST_LIST, relist_at("100")],
                watch_rvs=["100", "100"],
                events_first=False,
            ),
            id="a watch closed within a second without any event counts as an error and relists",
        ),
        pytest.param(
            WatchEndCase(
                end=FakeSource.end_watches,
                backoff=None,
                lists=[FIRST_LIST],
                watch_rvs=["100", "100"],
                events_first=False,
                age=2.0,
            ),
            id="a quiet watch that lasted over a second is simply reopened",
        ),
        pytest.param(
            WatchEndCase(
                end=FakeSource.expire_watches,
                backoff=RELIST,
                lists=[FIRST_LIST, relist_at("101")],
                watch_rvs=["100", "101"],
            ),
            id="410 Expired relists at the last RV with NotOlderThan, after backoff",
        ),
        pytest.param(
            WatchEndCase(
                end=lambda s: s.send_error(too_many_requests()),
                backoff=REWATCH,
                lists=[FIRST_LIST],
                watch_rvs=["100", "101"],
            ),
            id="429 ending a watch backs off and rewatches without relisting",
        ),
        pytest.param(
            WatchEndCase(
                end=lambda s: s.send_error(internal_error()),
                backoff=RELIST,
                lists=[FIRST_LIST, relist_at("101")],
                watch_rvs=["100", "101"],
            ),
            id="500 ending a watch relists after backoff by default",
        ),
        pytest.param(
            WatchEndCase(
                end=lambda s: s.send_error(internal_error()),
                backoff=None,
                lists=[FIRST_LIST],
                watch_rvs=["100", "101"],
                settings={"max_internal_error_retry": 60.0},
            ),
            id="500 ending a watch rewatches at once within the internal-error retry window",
        ),
        pytest.param(
            WatchEndCase(
                end=lambda s: s.send_error(ApiError(code=403, reason="Forbidden", message="no")),
                backoff=RELIST,
                lists=[FIRST_LIST, relist_at("101")],
                watch_rvs=["100", "101"],
            ),
            id="any other error relists after backoff",
        ),
    ],
)
def test_how_the_end_of_a_watch_is_handled(
    case: WatchEndCase,
    source: FakeSource,
    clock: FakeClock,
    logger: RecordingLogger,
    run_reflector: ReflectorFactory,
) -> None:
    _, store = run_reflector(**case.settings)
    watching(source, 1)
    if case.events_first:
        source.create(obj("a"))
        eventually(lambda: store.list_keys() == ["ns/a"])
    clock.step(case.age)

    case.end(source)
    if case.backoff is not None:
        assert step_logged_backoff(clock, logger, case.backoff, 1) == pytest.approx(1.2)
    watching(source, 2)

    assert source.list_calls == case.lists
    assert [c.resource_version for c in source.watch_calls] == case.watch_rvs
    expected_at = START + case.age + (1.2 if case.backoff else 0.0)
    assert source.watch_calls[1].at == pytest.approx(expected_at)


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(ApiError(code=410, reason="Expired", message="too old"), id="after 410 Expired"),
        pytest.param(
            ApiError(code=504, reason="Timeout", causes=({"reason": "ResourceVersionTooLarge"},)),
            id="after a too-large-resource-version cause",
        ),
        pytest.param(
            ApiError(code=504, reason="Timeout", message="Too large resource version: 7"),
            id="after an old server's too-large-resource-version message",
        ),
    ],
)
def test_a_relist_whose_rv_is_unavailable_is_retried_at_once_as_a_consistent_read(
    error: ApiError,
    source: FakeSource,
    clock: FakeClock,
    logger: RecordingLogger,
    run_reflector: ReflectorFactory,
) -> None:
    reflector, _ = run_reflector()
    watching(source, 1)
    source.create(obj("a"))
    eventually(lambda: reflector.last_sync_resource_version() == "101")

    source.fail_list(error)
    source.expire_watches()
    step_logged_backoff(clock, logger, RELIST, 1)
    watching(source, 2)

    assert source.list_calls == [FIRST_LIST, relist_at("101"), ListOptions(resource_version="", limit=500)]
    # The consistent read succeeded, so the next relist asks for the last RV again.
    source.expire_watches()
    step_logged_backoff(clock, logger, RELIST, 2)
    watching(source, 3)
    assert source.list_calls[3] == relist_at("101")


def test_a_relist_failing_otherwise_keeps_its_rv(
    source: FakeSource, clock: FakeClock, logger: RecordingLogger, run_reflector: ReflectorFactory
) -> None:
    reflector, _ = run_reflector()
    watching(source, 1)
    source.create(obj("a"))
    eventually(lambda: reflector.last_sync_resource_version() == "101")

    source.fail_list(internal_error())
    source.expire_watches()
    step_logged_backoff(clock, logger, RELIST, 1)
    step_logged_backoff(clock, logger, RELIST, 2)
    watching(source, 2)

    assert source.list_calls == [FIRST_LIST, relist_at("101"), relist_at("101")]


@dataclass(frozen=True)
class BackoffCase:
    inject: Callable[[FakeSource], None]
    event: str
    lists: int
    retried: str


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            BackoffCase(
                lambda s: s.fail_watch(*[too_many_requests()] * 3), REWATCH, lists=1, retried="watch"
            ),
            id="429 opening the watch backs off and rewatches from the same RV without relisting",
        ),
        pytest.param(
            BackoffCase(
                lambda s: s.fail_watch(*[TransportError("connection refused")] * 3),
                REWATCH,
                lists=1,
                retried="watch",
            ),
            id="a refused connection backs off and rewatches from the same RV without relisting",
        ),
        pytest.param(
            BackoffCase(lambda s: s.fail_list(*[internal_error()] * 3), RELIST, lists=4, retried="list"),
            id="500 on the list backs off and lists again",
        ),
    ],
)
def test_repeated_failures_back_off_exponentially(
    case: BackoffCase,
    source: FakeSource,
    clock: FakeClock,
    logger: RecordingLogger,
    run_reflector: ReflectorFactory,
) -> None:
    case.inject(source)
    run_reflector()

    delays = [step_logged_backoff(clock, logger, case.event, n) for n in (1, 2, 3)]
    watching(source, 4 if case.retried == "watch" else 1)

    assert delays == pytest.approx([1.2, 2.4, 4.8])
    assert len(source.list_calls) == case.lists
    assert {c.resource_version for c in source.watch_calls} == {"100"}
    opened_at = [c.at for c in source.watch_calls]
    if case.retried == "watch":
        assert opened_at == pytest.approx([START, START + 1.2, START + 3.6, START + 8.4])
    else:
        assert opened_at == pytest.approx([START + 8.4])
        assert [r.level for r in logger.named("list and watch failed")] == ["warning"] * 3


def test_a_relist_the_lister_watcher_asks_for_comes_at_once_every_time(
    source: FakeSource, clock: FakeClock, logger: RecordingLogger, run_reflector: ReflectorFactory
) -> None:
    """Its selection changed (a sharded collection's held buckets moved): not a failure, so no backoff,
    however often in a row; the fake clock is never stepped, so any backoff would hold the relist."""
    source.create(obj("a"))
    source.fail_watch(*(SelectionChangedError("the held shard buckets changed") for _ in range(3)))
    run_reflector()
    watching(source, 4)

    assert source.list_calls == [FIRST_LIST, relist_at("101"), relist_at("101"), relist_at("101")]
    assert {c.at for c in source.watch_calls} == {START}
    assert not logger.named(RELIST)
    assert [r.level for r in logger.named("following a change of the selection")] == ["info"] * 3


@pytest.mark.parametrize(
    "crash",
    [
        pytest.param("watch", id="an exception escaping the lister-watcher is logged and the loop restarts"),
        pytest.param("store", id="an exception from the store is logged and the loop restarts"),
    ],
)
def test_a_crash_in_the_watch_loop_is_logged_and_the_loop_restarted_from_a_list(
    crash: str,
    source: FakeSource,
    clock: FakeClock,
    logger: RecordingLogger,
    run_reflector: ReflectorFactory,
) -> None:
    def picky_index(o: dict[str, Any]) -> list[str]:
        if o["metadata"]["labels"].get("poison"):
            raise RuntimeError("index function bug")
        return []

    source.create(obj("a"))
    if crash == "watch":
        source.fail_watch(RuntimeError("lister bug"))
    _, store = run_reflector(store=Store(indexers={"picky": picky_index}))
    if crash == "store":
        watching(source, 1)
        poison = source.create(obj("poison", poison="yes"))

    crashes = eventually(lambda: logger.named("reflector loop crashed; restarting from a list"))
    assert crashes[0].exc_info and crashes[0].level == "error"
    if crash == "store":
        source.delete(poison)  # the cause goes away; the relist then succeeds
    step_logged_backoff(clock, logger, RELIST, 1)
    watching(source, 2)

    assert len(crashes) == 1
    assert source.list_calls == [FIRST_LIST, relist_at("101")]
    assert store.list_keys() == ["ns/a"]


@dataclass(frozen=True)
class PagingCase:
    page_size: int | None
    rv0_pages: bool
    """Whether the fake pages RV "0" lists (a real watch cache ignores their limit)."""
    objects: int
    first_lists: list[ListOptions]
    relist: ListOptions


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            PagingCase(None, False, 3, [ListOptions(resource_version="0", limit=500)], relist_at("103")),
            id="by default the first list asks for pages and a relist at an RV asks for none",
        ),
        pytest.param(
            PagingCase(
                None,
                True,
                501,
                [
                    ListOptions(resource_version="0", limit=500),
                    ListOptions(limit=500, continue_token="500:601"),
                ],
                ListOptions(resource_version="601", resource_version_match="NotOlderThan", limit=500),
            ),
            id="once the first list came back in pages (no watch cache), relists page too",
        ),
        pytest.param(
            PagingCase(
                2,
                True,
                3,
                [ListOptions(resource_version="0", limit=2), ListOptions(limit=2, continue_token="2:103")],
                ListOptions(resource_version="103", resource_version_match="NotOlderThan", limit=2),
            ),
            id="an explicit page size pages every list, and continuations carry only the token",
        ),
        pytest.param(
            PagingCase(0, True, 3, [ListOptions(resource_version="0")], relist_at("103")),
            id="a page size of 0 never pages",
        ),
    ],
)
def test_pagination_follows_client_go(
    case: PagingCase,
    source: FakeSource,
    clock: FakeClock,
    logger: RecordingLogger,
    run_reflector: ReflectorFactory,
) -> None:
    for i in range(case.objects):
        source.create(obj(f"pod-{i:03}"))
    source.honor_limit_at_rv0 = case.rv0_pages
    _, store = run_reflector(page_size=case.page_size)
    watching(source, 1)
    assert len(store) == case.objects

    source.expire_watches()
    step_logged_backoff(clock, logger, RELIST, 1)
    watching(source, 2)

    assert source.list_calls[: len(case.first_lists)] == case.first_lists
    assert source.list_calls[len(case.first_lists)] == case.relist


def test_an_expired_continue_token_falls_back_to_one_unpaged_list(
    source: FakeSource, run_reflector: ReflectorFactory
) -> None:
    for name in ("a", "b", "c"):
        source.create(obj(name))
    source.honor_limit_at_rv0 = True
    original_list = source.list

    def list_expiring_continuations(options: ListOptions) -> Any:
        if options.continue_token:
            source.list_calls.append(options)
            raise ApiError(code=410, reason="Expired", message="continue token too old")
        return original_list(options)

    source.list = list_expiring_continuations  # type: ignore[method-assign]
    _, store = run_reflector(page_size=2)
    watching(source, 1)

    assert source.list_calls == [
        ListOptions(resource_version="0", limit=2),
        ListOptions(limit=2, continue_token="2:103"),
        ListOptions(resource_version="0"),
    ]
    assert sorted(store.list_keys()) == ["ns/a", "ns/b", "ns/c"]


@pytest.mark.parametrize(
    "blocked_in",
    [
        pytest.param("watch", id="stop unblocks a watch waiting for events"),
        pytest.param("backoff", id="stop cuts a backoff short"),
    ],
)
def test_stop_returns_promptly(
    blocked_in: str,
    source: FakeSource,
    clock: FakeClock,
    logger: RecordingLogger,
    run_reflector: ReflectorFactory,
) -> None:
    if blocked_in == "backoff":
        source.fail_list(internal_error())
    reflector, _ = run_reflector()
    if blocked_in == "watch":
        watching(source, 1)
    else:
        eventually(lambda: logger.named(RELIST) and clock.blocked_waiters() > 0)

    stopper = threading.Thread(target=reflector.stop)
    stopper.start()
    stopper.join(2.0)

    assert not stopper.is_alive()
    assert reflector.is_stopped()
    assert source.open_watches() == []
    assert logger.named("reflector stopped")
