"""Bucket Leases: the round's pure plan (table-driven) and replicas sharing an in-memory Lease API with
optimistic concurrency: they split the buckets, a leaver's buckets move at once, a dead one's only after
its Leases expire, and no bucket is ever held by two replicas' fences at one moment."""

from __future__ import annotations

import copy
import functools
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import unquote

import pytest

from clock import FakeClock, RealClock
from informers.sharding import ShardView
from informers.shards import Buckets
from taskset.daemon.buckets import (
    LEASE_WRITES_IN_FLIGHT,
    BucketElector,
    bucket_lease_name,
    plan_round,
    settled,
)
from taskset.daemon.leader import LeaseRecord, Observation, Timings, format_micro_time
from taskset.runtime.kube import KubeError, Response

pytestmark = [pytest.mark.unit, pytest.mark.timeout(60)]

A, B, C = "replica-a", "replica-b", "replica-c"
RING = "ring"


def seen(holder: str, at: float = 0.0, duration: int = 15) -> Observation:
    return Observation(LeaseRecord(holder=holder, lease_duration_seconds=duration), at)


def member(holder: str, renewed_for: float, at: float = 0.0, duration: int = 15) -> Observation:
    """A member Lease its holder has renewed for ``renewed_for`` seconds since it acquired it."""
    acquired = datetime(2026, 1, 1, tzinfo=UTC)
    record = LeaseRecord(
        holder=holder,
        lease_duration_seconds=duration,
        acquire_time=format_micro_time(acquired),
        renew_time=format_micro_time(acquired + timedelta(seconds=renewed_for)),
    )
    return Observation(record, at)


@pytest.mark.parametrize(
    ("held", "buckets", "members", "now", "expected"),
    [
        pytest.param(
            set(), {}, {}, 0.0, (set(range(4)), set(), set()), id="alone in an empty ring: take every bucket"
        ),
        pytest.param(
            set(range(4)),
            {b: seen(B) for b in range(4)},
            {A: seen(A)},
            1.0,
            (set(), {0, 1}, {2, 3}),
            id="a member joins: keep the lower half, release the rest for it",
        ),
        pytest.param(
            set(),
            {0: seen(A), 1: seen(A), 2: seen(A), 3: seen(A)},
            {A: seen(A)},
            1.0,
            (set(), set(), set()),
            id="joining while the holder still has them: wait, take nothing held",
        ),
        pytest.param(
            set(),
            {0: seen(A), 1: seen(A), 2: seen(""), 3: seen("")},
            {A: seen(A)},
            1.0,
            ({2, 3}, set(), set()),
            id="released buckets are free at once",
        ),
        pytest.param(
            {2, 3},
            {0: seen(A), 1: seen(A), 2: seen(B), 3: seen(B)},
            {A: seen(A)},
            16.0,
            ({0, 1}, {2, 3}, set()),
            id="a holder silent for its lease duration is gone: its buckets are taken",
        ),
        pytest.param(
            {0},
            {0: seen(B), 1: seen(B), 2: seen(A), 3: seen(A)},
            {A: seen(A)},
            1.0,
            ({1}, {0}, set()),
            id="a bucket dropped after a late renewal, whose Lease still names us, is taken back at once",
        ),
        pytest.param(
            {0, 1},
            {0: seen(B), 1: seen(B), 2: seen(A), 3: seen(A)},
            {A: member(A, 60.0), B: member(B, 60.0), C: member(C, 2.0, at=14.0)},
            16.0,
            ({2, 3}, {0, 1}, set()),
            id="a dead holder's buckets go to the settled members, not to a newcomer that cannot judge them",
        ),
        pytest.param(
            set(),
            {0: seen(A), 1: seen(A), 2: seen(""), 3: seen("")},
            {A: member(A, 60.0), B: member(B, 2.0)},
            1.0,
            (set(), set(), set()),
            id="a newcomer takes nothing, not even a released bucket, before it has settled",
        ),
        pytest.param(
            set(),
            {0: seen(A), 1: seen(A), 2: seen(A), 3: seen(A)},
            {A: member(A, 60.0), B: member(B, 15.0)},
            1.0,
            (set(), set(), set()),
            id="settled: the holder releases its half for it, it takes nothing still held",
        ),
        pytest.param(
            {0, 1},
            {0: seen(B), 1: seen(B), 2: seen(A), 3: seen(A)},
            {A: member(A, 60.0), B: member(B, 2.0)},
            1.0,
            (set(), {0, 1}, set()),
            id="a newcomer already holding buckets keeps them while it settles",
        ),
    ],
)
def test_plan_round(
    held: set[int],
    buckets: dict[int, Observation],
    members: dict[str, Observation],
    now: float,
    expected: tuple[set[int], set[int], set[int]],
) -> None:
    """``expected``: the buckets to acquire, to renew, to release."""
    plan = plan_round(
        bucket_count=4, identity=B, held=frozenset(held), buckets=buckets, members=members, now=now
    )
    assert (set(plan.acquire), set(plan.renew), set(plan.release)) == expected


class FakeLeaseApi:
    """Leases of one namespace with resourceVersion checks and label-selected lists."""

    def __init__(self) -> None:
        self.leases: dict[str, dict[str, Any]] = {}
        self.version = 0
        self.lock = threading.Lock()

    def request(
        self,
        method: str,
        path: str,
        *,
        resource: str,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> Response:
        with self.lock:
            if method == "GET":
                _, _, query = path.partition("?labelSelector=")
                key, _, value = unquote(query).partition("=")
                items = [
                    copy.deepcopy(lease)
                    for lease in self.leases.values()
                    if lease["metadata"].get("labels", {}).get(key) == value
                ]
                return Response(200, {"items": items})
            name = body["metadata"]["name"]
            if method == "POST":
                if name in self.leases:
                    raise KubeError(409, "AlreadyExists", "exists")
            elif body["metadata"].get("resourceVersion") != self.leases[name]["metadata"]["resourceVersion"]:
                raise KubeError(409, "Conflict", "the object has been modified")
            self.version += 1
            stored = copy.deepcopy(body)
            stored["metadata"]["resourceVersion"] = str(self.version)
            self.leases[name] = stored
            return Response(200, copy.deepcopy(stored))

    def holders(self) -> dict[int, str]:
        return {
            b: self.leases[bucket_lease_name(RING, b)]["spec"]["holderIdentity"]
            for b in range(8)
            if bucket_lease_name(RING, b) in self.leases
        }


class QuietLogger:
    def __getattr__(self, level: str) -> Any:
        return lambda *args, **kwargs: None


class Replica:
    """An elector whose informers relist at once (the view's every generation counts as listed)."""

    def __init__(self, api: FakeLeaseApi, identity: str, clock: FakeClock) -> None:
        self.view = ShardView(Buckets(8))
        self.elector = BucketElector(
            client=api,
            namespace="ns",
            ring=RING,
            identity=identity,
            view=self.view,
            logger=QuietLogger(),
            timings=Timings(),
            clock=clock,
        )
        self.view._register(0, "all")

    def round(self) -> None:
        self.elector.round()
        self.view._mark_listed(0, self.view.generation)


@functools.cache
def namespace_in(bucket: int) -> str:
    buckets = Buckets(8)
    return next(f"ns-{i}" for i in range(10_000) if buckets.of_namespace(f"ns-{i}") == bucket)


def assert_no_bucket_owned_twice(replicas: list[Replica]) -> None:
    for bucket in range(8):
        owners = [r for r in replicas if r.elector.owns(namespace_in(bucket))]
        assert len(owners) <= 1, f"bucket {bucket} owned by {len(owners)} replicas"


def rounds(replicas: list[Replica], clock: FakeClock, count: int) -> None:
    for _ in range(count):
        for replica in replicas:
            replica.round()
            assert_no_bucket_owned_twice(replicas)
        clock.step(2.0)


def test_replicas_split_the_buckets_and_a_leaver_hands_over_at_once() -> None:
    api, clock = FakeLeaseApi(), FakeClock()
    a, b = Replica(api, A, clock), Replica(api, B, clock)
    rounds([a], clock, 1)
    assert a.elector.held() == frozenset(range(8))
    rounds([a, b], clock, 3)
    assert len(a.elector.held()) == len(b.elector.held()) == 4
    assert all(a.elector.owns(namespace_in(bucket)) for bucket in a.elector.held())

    c = Replica(api, C, clock)
    rounds([a, b, c], clock, 3)
    assert sorted(len(r.elector.held()) for r in (a, b, c)) == [2, 3, 3]

    c.elector.release_all()  # a clean shutdown: the others take its buckets in their next round
    rounds([a, b], clock, 1)
    assert len(a.elector.held()) + len(b.elector.held()) == 8


def test_a_dead_replicas_buckets_move_only_after_its_leases_expire() -> None:
    api, clock = FakeLeaseApi(), FakeClock()
    a, b = Replica(api, A, clock), Replica(api, B, clock)
    rounds([a, b], clock, 3)
    lost = a.elector.held()
    assert len(lost) == 4
    waited = 0.0
    while not lost <= b.elector.held():  # a is SIGKILLed: it neither renews nor releases
        rounds([b], clock, 1)
        waited += 2.0
        for bucket in lost:
            if bucket in b.elector.held():
                assert not a.elector.owns(namespace_in(bucket)), "a's fence outlived its tenure"
    assert waited >= 15.0  # the lease duration, on b's own clock
    assert b.elector.held() == frozenset(range(8))


def test_the_fence_closes_when_renewals_stop_before_anyone_may_take_over() -> None:
    api, clock = FakeLeaseApi(), FakeClock()
    a = Replica(api, A, clock)
    rounds([a], clock, 1)
    namespace = namespace_in(0)
    assert a.elector.owns(namespace)
    clock.step(Timings().renew_deadline)  # no renewal for the renew deadline, shorter than the lease
    assert not a.elector.owns(namespace)


def test_a_gained_bucket_is_not_acted_for_until_the_informers_relisted() -> None:
    api, clock = FakeLeaseApi(), FakeClock()
    view = ShardView(Buckets(8))
    view._register(0, "pods")
    elector = BucketElector(
        client=api, namespace="ns", ring=RING, identity=A, view=view, logger=QuietLogger(), clock=clock
    )
    elector.round()
    assert elector.held() == frozenset(range(8))
    assert not elector.owns(namespace_in(0))
    view._mark_listed(0, view.generation)
    assert elector.owns(namespace_in(0))


def test_a_held_bucket_stays_pending_whatever_the_moment_its_fence_is_asked() -> None:
    """A worker asks ``owns``, then ``pending``. Its renewal late (fence closed) at the first question and
    landed by the second, the key must still be taken for this replica's, or it is dropped for good."""
    api, clock = FakeLeaseApi(), FakeClock()
    a = Replica(api, A, clock)
    rounds([a], clock, 1)
    namespace = namespace_in(0)
    clock.step(Timings().renew_deadline)  # the round renewing it runs late
    assert not a.elector.owns(namespace)
    a.round()  # and lands now
    assert a.elector.owns(namespace)
    assert a.elector.pending(namespace)
    a.elector.release_all()
    assert not a.elector.pending(namespace)  # gone to another replica: its keys are forgotten


def test_subscribers_hear_of_every_gain_and_loss() -> None:
    api, clock = FakeLeaseApi(), FakeClock()
    a, b = Replica(api, A, clock), Replica(api, B, clock)
    heard: list[tuple[frozenset[int], frozenset[int]]] = []
    a.elector.subscribe(lambda gained, lost: heard.append((gained, lost)))
    rounds([a], clock, 1)
    assert heard == [(frozenset(range(8)), frozenset())]
    rounds([a, b], clock, 3)  # b joins: a releases half of them
    assert frozenset().union(*(lost for _, lost in heard[1:])) == frozenset(range(8)) - a.elector.held()
    assert all(not gained for gained, _ in heard[1:])


def test_buckets_given_up_together_change_the_held_set_once() -> None:
    """Each change of the held set makes every sharded informer follow it (a request and a new watch
    each): a round that releases half the buckets for a newcomer, or a shutdown releasing all, is one."""
    api, clock = FakeLeaseApi(), FakeClock()
    a, b = Replica(api, A, clock), Replica(api, B, clock)
    rounds([a], clock, 1)
    generations: list[int] = []
    a.elector.subscribe(lambda gained, lost: generations.append(a.view.generation))
    before = a.view.generation
    while len(a.elector.held()) == 8:
        rounds([a, b], clock, 1)
    assert len(a.elector.held()) == 4
    assert a.view.generation == before + 1, "four buckets released, one change of the held set"
    assert generations == [before + 1]
    a.elector.release_all()
    assert a.elector.held() == frozenset()
    assert a.view.generation == before + 2
    assert all(
        api.leases[bucket_lease_name(RING, bucket)]["spec"].get("holderIdentity") in (None, "", B)
        for bucket in range(8)
    )


def test_a_dead_replicas_buckets_do_not_wait_for_the_replica_restarted_in_its_place() -> None:
    """The killed replica comes back as a new member seconds later (its process restarts under a new
    identity). It has seen the dead Leases for less than a lease duration, so the settled replica takes
    them when they expire; the newcomer gets its share from it by release once it has settled."""
    api, clock = FakeLeaseApi(), FakeClock()
    a, b = Replica(api, A, clock), Replica(api, B, clock)
    rounds([a, b], clock, 10)  # 20 s: both settled (lease 15 s)
    lost = a.elector.held()
    assert len(lost) == 4
    rounds([b], clock, 3)  # a is SIGKILLed; its process takes 6 s to start again
    c = Replica(api, C, clock)
    waited = 6.0
    while not lost <= b.elector.held() | c.elector.held():
        rounds([b, c], clock, 1)
        waited += 2.0
        assert waited <= Timings().lease_duration + 2 * 2.0, f"{sorted(lost)} unowned for {waited} s"
    assert lost <= b.elector.held()
    for _ in range(20):
        rounds([b, c], clock, 1)
        if len(c.elector.held()) == 4:
            break
    assert len(b.elector.held()) == len(c.elector.held()) == 4


class SlowLeaseApi(FakeLeaseApi):
    """Every write takes ``delay`` seconds, as on a loaded API server; counts the writes in flight."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay
        self.in_flight = 0
        self.most_in_flight = 0
        self.count_lock = threading.Lock()

    def request(self, method: str, path: str, **kwargs: Any) -> Response:
        if method == "GET":
            return super().request(method, path, **kwargs)
        with self.count_lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            time.sleep(self.delay)
            return super().request(method, path, **kwargs)
        finally:
            with self.count_lock:
                self.in_flight -= 1


def test_a_round_sends_its_lease_writes_together() -> None:
    """32 buckets whose writes take 0.2 s each: one after another the round would take 6.4 s, and the
    first renewals would be older than the 3 s renew deadline when it ends (dropped, relisted, every
    round). Sent together they all stay held round after round."""
    api = SlowLeaseApi(delay=0.2)
    view = ShardView(Buckets(32))
    view._register(0, "all")
    elector = BucketElector(
        client=api,
        namespace="ns",
        ring=RING,
        identity=A,
        view=view,
        logger=QuietLogger(),
        timings=Timings(lease_duration=4.0, renew_deadline=3.0, retry_period=0.5),
        clock=RealClock(),
    )
    stop = threading.Event()
    stop.set()  # run() makes one round, then releases everything and shuts its writers down
    try:
        for _ in range(3):
            elector.round()
            assert elector.held() == frozenset(range(32))
        assert 1 < api.most_in_flight <= LEASE_WRITES_IN_FLIGHT
    finally:
        elector.run(stop)
    assert elector.held() == frozenset()
    assert set(api.holders().values()) <= {""}


START = "2026-01-01T00:00:00.000000Z"


@pytest.mark.parametrize(
    ("acquire", "renew", "expected"),
    [
        pytest.param(
            "2026-01-01T00:00:00.000000Z", "2026-01-01T00:00:15.000000Z", True, id="a lease duration"
        ),
        pytest.param("2026-01-01T00:00:00.000000Z", "2026-01-01T00:00:14.999999Z", False, id="just short"),
        pytest.param(None, "2026-01-01T00:00:15.000000Z", False, id="no acquire time"),
        pytest.param("yesterday", "2026-01-01T00:00:15.000000Z", False, id="an unreadable time"),
        pytest.param(42, "2026-01-01T00:00:15.000000Z", False, id="not a string"),
    ],
)
def test_a_member_has_settled_after_renewing_for_a_lease_duration(
    acquire: Any, renew: str, expected: bool
) -> None:
    record = LeaseRecord(holder=A, lease_duration_seconds=15, acquire_time=acquire, renew_time=renew)
    assert settled(Observation(record, 0.0)) is expected
