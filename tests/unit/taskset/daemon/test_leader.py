"""Leader election: the pure decisions (table-driven, injected clock) and the elector against an in-memory
Lease API with client-go's optimistic concurrency (a stale resourceVersion is a 409)."""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from clock import FakeClock
from taskset.daemon.leader import (
    SERVICE_ACCOUNT_NAMESPACE_FILE,
    LeaderElector,
    LeaseRecord,
    Observation,
    Step,
    Timings,
    decide,
    desired_record,
    format_micro_time,
    in_cluster_namespace,
    lease_path,
    lease_valid,
    new_identity,
    observe,
    record_from_lease,
    release_record,
    round_expired,
    timing_errors,
)
from taskset.runtime.kube import KubeError, Response

pytestmark = pytest.mark.unit

ME, OTHER = "me_1", "other_2"
WALL = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
NOW_TEXT = "2026-01-02T03:04:05.678901Z"
HELD = LeaseRecord(OTHER, 15, "2026-01-01T00:00:00.000000Z", "2026-01-01T00:00:10.000000Z", 4)


# ----- pure decisions -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("observation", "now", "valid"),
    [
        pytest.param(None, 100.0, False, id="never observed: not valid"),
        pytest.param(Observation(HELD, 100.0), 100.0, True, id="just observed"),
        pytest.param(Observation(HELD, 100.0), 114.9, True, id="within the lease duration"),
        pytest.param(Observation(HELD, 100.0), 115.0, False, id="exactly the lease duration: expired"),
        pytest.param(Observation(HELD, 100.0), 200.0, False, id="long expired"),
        pytest.param(Observation(LeaseRecord("", 1), 100.0), 100.5, True, id="a released lease lasts 1 s"),
    ],
)
def test_lease_valid_counts_from_the_local_observation(
    observation: Observation | None, now: float, valid: bool
) -> None:
    assert lease_valid(observation, now) is valid


def test_observe_restarts_the_clock_only_when_the_record_changes() -> None:
    first = observe(None, HELD, 10.0)
    assert first == Observation(HELD, 10.0)
    assert observe(first, HELD, 20.0) is first  # unchanged: still counted from 10
    renewed = LeaseRecord(OTHER, 15, HELD.acquire_time, "2026-01-01T00:00:12.000000Z", 4)
    assert observe(first, renewed, 20.0) == Observation(renewed, 20.0)


@pytest.mark.parametrize(
    ("current", "observation", "now", "step"),
    [
        pytest.param(None, None, 0.0, Step.CREATE, id="no lease: create it"),
        pytest.param(HELD, Observation(HELD, 100.0), 105.0, Step.WAIT, id="held by another, valid: wait"),
        pytest.param(HELD, Observation(HELD, 100.0), 115.0, Step.ACQUIRE, id="held by another, expired"),
        pytest.param(
            LeaseRecord("", 1, None, None, 4),
            Observation(LeaseRecord("", 1), 100.0),
            100.1,
            Step.ACQUIRE,
            id="released (empty holder): acquire at once",
        ),
        pytest.param(
            LeaseRecord(ME, 15), Observation(LeaseRecord(ME, 15), 100.0), 105.0, Step.RENEW, id="ours: renew"
        ),
        pytest.param(
            LeaseRecord(ME, 15), Observation(LeaseRecord(ME, 15), 100.0), 500.0, Step.RENEW, id="ours, late"
        ),
        pytest.param(
            HELD,
            Observation(HELD, 1000.0),
            1001.0,
            Step.WAIT,
            id="renewTime far in the past but just seen: wait (clock skew does not matter)",
        ),
    ],
)
def test_decide(current: LeaseRecord | None, observation: Observation | None, now: float, step: Step) -> None:
    assert decide(current, observation, ME, now) is step


@pytest.mark.parametrize(
    ("step", "current", "want"),
    [
        pytest.param(Step.CREATE, None, LeaseRecord(ME, 15, NOW_TEXT, NOW_TEXT, 0), id="create"),
        pytest.param(
            Step.ACQUIRE, HELD, LeaseRecord(ME, 15, NOW_TEXT, NOW_TEXT, 5), id="take over: transitions+1"
        ),
        pytest.param(
            Step.RENEW,
            LeaseRecord(ME, 15, "2026-01-01T00:00:00.000000Z", "x", 7),
            LeaseRecord(ME, 15, "2026-01-01T00:00:00.000000Z", NOW_TEXT, 7),
            id="renew keeps acquireTime and transitions",
        ),
    ],
)
def test_desired_record(step: Step, current: LeaseRecord | None, want: LeaseRecord) -> None:
    assert desired_record(step, current, ME, 15, WALL) == want


def test_release_record_empties_the_holder_and_keeps_the_transitions() -> None:
    assert release_record(LeaseRecord(ME, 15, "a", "b", 3), WALL) == LeaseRecord("", 1, NOW_TEXT, NOW_TEXT, 3)


@pytest.mark.parametrize(
    ("started", "now", "expired"),
    [
        pytest.param(100.0, 100.0, False, id="just started"),
        pytest.param(100.0, 109.9, False, id="within the deadline"),
        pytest.param(100.0, 110.0, True, id="at the deadline"),
        pytest.param(100.0, 130.0, True, id="past it"),
    ],
)
def test_round_expired(started: float, now: float, expired: bool) -> None:
    assert round_expired(started, 10.0, now) is expired


@pytest.mark.parametrize(
    ("timings", "errors"),
    [
        pytest.param(Timings(), [], id="client-go defaults 15/10/2"),
        pytest.param(Timings(4, 3, 1), [], id="the fast test timings 4/3/1"),
        pytest.param(Timings(10, 10, 2), ["lease duration (10 s) must be greater"], id="lease == renew"),
        pytest.param(Timings(15, 2.4, 2), ["renew deadline (2.4 s) must be greater than 1.2"], id="jitter"),
        pytest.param(Timings(15, 10, 0), ["retry period must be greater than zero"], id="retry 0"),
    ],
)
def test_timing_errors(timings: Timings, errors: list[str]) -> None:
    got = timing_errors(timings)
    assert len(got) == len(errors)
    for message, expected in zip(got, errors, strict=True):
        assert expected in message


def test_the_lease_duration_is_whole_seconds_rounded_up() -> None:
    assert Timings(4.2, 3, 1).lease_duration_seconds == 5
    assert Timings(15, 10, 2).lease_duration_seconds == 15


def test_wire_forms() -> None:
    assert format_micro_time(WALL) == NOW_TEXT
    assert lease_path("ns", "x") == "/apis/coordination.k8s.io/v1/namespaces/ns/leases/x"
    lease = {"spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "leaseTransitions": 2}}
    assert record_from_lease(lease) == LeaseRecord("a", 15, None, None, 2)
    assert record_from_lease({}) == LeaseRecord()


def test_identity_is_hostname_and_a_random_suffix() -> None:
    assert new_identity("pod-a", "1234") == "pod-a_1234"
    one, two = new_identity("pod-a"), new_identity("pod-a")
    assert one.startswith("pod-a_") and one != two


def test_the_namespace_comes_from_the_service_account_else_default() -> None:
    def mounted(path: str) -> str:
        assert path == SERVICE_ACCOUNT_NAMESPACE_FILE
        return "taskset-system\n"

    def missing(path: str) -> str:
        raise FileNotFoundError(path)

    assert in_cluster_namespace(mounted) == "taskset-system"
    assert in_cluster_namespace(missing) == "default"
    assert in_cluster_namespace(lambda path: "  ") == "default"


# ----- the elector against an in-memory Lease API ---------------------------------------------------------
class FakeLeases:
    """One Lease with resourceVersion checks; ``down`` makes every request fail without an answer."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.version = 0
        self.down = False
        self.requests: list[tuple[str, float | None]] = []

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
        assert resource == "leases"
        self.requests.append((method, timeout))
        if self.down:
            raise KubeError(0, "TransportError", "connection refused")
        if method == "GET":
            if self.lease is None:
                raise KubeError(404, "NotFound", "not found")
            return Response(200, copy.deepcopy(self.lease))
        if method == "POST":
            assert path == lease_path("ns")
            if self.lease is not None:
                raise KubeError(409, "AlreadyExists", "exists")
            return Response(201, self._store(body))
        assert method == "PUT" and path == lease_path("ns", "lock")
        if self.lease is None:
            raise KubeError(404, "NotFound", "not found")
        if body["metadata"].get("resourceVersion") != self.lease["metadata"]["resourceVersion"]:
            raise KubeError(409, "Conflict", "the object has been modified")
        return Response(200, self._store(body))

    def _store(self, body: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        self.lease = copy.deepcopy(body)
        self.lease["metadata"]["resourceVersion"] = str(self.version)
        return copy.deepcopy(self.lease)

    @property
    def holder(self) -> str:
        assert self.lease is not None
        return str(self.lease["spec"]["holderIdentity"])

    def methods(self) -> list[str]:
        return [method for method, _ in self.requests]


class Logger:
    def __init__(self) -> None:
        self.records: list[tuple[str, str, dict[str, Any]]] = []

    def _log(self, level: str) -> Callable[..., None]:
        return lambda msg, **fields: self.records.append((level, msg, fields))

    def __getattr__(self, level: str) -> Callable[..., None]:
        return self._log(level)

    def messages(self) -> list[str]:
        return [msg for _, msg, _ in self.records]


class Metrics:
    def __init__(self) -> None:
        self.leading: list[bool] = []
        self.slow_paths = 0

    def set_leader(self, name: str, leading: bool) -> None:
        assert name == "lock"
        self.leading.append(leading)

    def observe_leader_slow_path(self, name: str) -> None:
        self.slow_paths += 1


def elector(
    api: FakeLeases,
    clock: FakeClock,
    identity: str,
    *,
    on_wait: Callable[[], None] | None = None,
    timings: Timings | None = None,
) -> LeaderElector:
    """An elector whose waits move the fake clock (and run ``on_wait`` first, e.g. another replica's turn)."""

    def wait(event: threading.Event, seconds: float) -> bool:
        if on_wait is not None:
            on_wait()
        clock.step(seconds)
        return event.is_set()

    return LeaderElector(
        client=api,
        namespace="ns",
        name="lock",
        identity=identity,
        logger=Logger(),
        timings=timings or Timings(),
        clock=clock,
        metrics=Metrics(),
        wait=wait,
        rng=lambda: 0.0,
    )


def test_the_first_candidate_creates_the_lease_and_leads() -> None:
    api, clock = FakeLeases(), FakeClock()
    a = elector(api, clock, ME)
    assert a.acquire(threading.Event())
    assert a.is_leader() and a.leader() == ME
    assert api.methods() == ["GET", "POST"]
    assert api.lease is not None
    spec = api.lease["spec"]
    assert (spec["holderIdentity"], spec["leaseDurationSeconds"], spec["leaseTransitions"]) == (ME, 15, 0)
    assert spec["acquireTime"] == spec["renewTime"]
    assert isinstance(a.metrics, Metrics) and a.metrics.leading == [True]


def test_a_standby_waits_while_the_leader_renews_and_takes_over_after_the_lease_duration() -> None:
    api, clock = FakeLeases(), FakeClock()
    a = elector(api, clock, "a")
    assert a.acquire(threading.Event())
    renewals = {"left": 5}

    def leader_renews() -> None:  # the leader's turn between the standby's attempts, then it dies
        if renewals["left"] > 0:
            renewals["left"] -= 1
            assert a.try_acquire_or_renew(deadline=None)

    b = elector(api, clock, "b", on_wait=leader_renews)
    started = clock.now()
    assert b.acquire(threading.Event())
    # Five renewals at 0, 2, .., 8 s; b saw the last one at its attempt at 10 s, so the lease was valid
    # for b until 25 s, and b took it at its first attempt after that (attempts every 2 s).
    assert api.holder == "b"
    assert clock.now() - started == 26
    assert api.lease is not None and api.lease["spec"]["leaseTransitions"] == 1
    assert "new leader observed" in b.logger.messages()


def test_the_leader_renews_on_the_fast_path_and_keeps_acquire_time() -> None:
    api, clock = FakeLeases(), FakeClock()
    a = elector(api, clock, ME)
    assert a.acquire(threading.Event())
    assert api.lease is not None
    acquired = api.lease["spec"]["acquireTime"]
    api.requests.clear()
    clock.step(2)
    assert a.try_acquire_or_renew(deadline=None)
    assert api.methods() == ["PUT"]  # no read: the cached resourceVersion was current
    assert api.lease["spec"]["acquireTime"] == acquired
    assert api.lease["spec"]["renewTime"] != acquired


def test_a_stale_fast_path_falls_back_to_read_and_write_and_counts_the_slow_path() -> None:
    api, clock = FakeLeases(), FakeClock()
    a = elector(api, clock, ME)
    assert a.acquire(threading.Event())
    assert api.lease is not None
    api.lease["metadata"]["resourceVersion"] = "99"  # someone touched the object (e.g. a label)
    api.requests.clear()
    assert a.try_acquire_or_renew(deadline=None)
    assert api.methods() == ["PUT", "GET", "PUT"]
    assert isinstance(a.metrics, Metrics) and a.metrics.slow_paths == 1


def test_two_candidates_racing_for_an_expired_lease_one_wins_by_resource_version() -> None:
    api, clock = FakeLeases(), FakeClock()
    old = elector(api, clock, "old")
    assert old.acquire(threading.Event())
    b, c = elector(api, clock, "b"), elector(api, clock, "c")
    assert not b.try_acquire_or_renew(deadline=None) and not c.try_acquire_or_renew(deadline=None)
    clock.step(16)
    # Both read the same expired version; c writes first, b's write on the stale version is refused.
    b_state = b._get(timeout=1.0)
    assert c.try_acquire_or_renew(deadline=None)
    assert b_state is not None
    with pytest.raises(KubeError) as refused:
        b._put(b_state, LeaseRecord("b", 15), timeout=1.0)
    assert refused.value.conflict
    assert not b.try_acquire_or_renew(deadline=None)  # and b now sees c's fresh lease as valid
    assert api.holder == "c"


def test_a_leader_that_cannot_renew_within_the_renew_deadline_loses_the_lease() -> None:
    api, clock = FakeLeases(), FakeClock()
    calls = {"n": 0}

    def partition_after_two_renewals() -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            api.down = True

    a = elector(api, clock, ME, on_wait=partition_after_two_renewals)
    assert a.acquire(threading.Event())
    started = clock.now()
    assert a.renew(threading.Event()) is False
    assert not a.is_leader()
    assert isinstance(a.metrics, Metrics) and a.metrics.leading == [True, False]
    # Two good rounds (2 s apart), the third round starts at 6 s and gives up 10 s later.
    assert clock.now() - started == pytest.approx(6 + 10)
    assert "failed to renew lease in time; leadership lost" in a.logger.messages()
    # No request was allowed to outlive the round: every timeout is within the renew deadline.
    assert all(timeout is not None and timeout <= 10 for _, timeout in api.requests)


def test_a_leader_that_sees_another_holder_stops_at_once() -> None:
    api, clock = FakeLeases(), FakeClock()
    a = elector(api, clock, ME)
    assert a.acquire(threading.Event())

    def usurp() -> None:
        assert api.lease is not None
        api.lease["spec"]["holderIdentity"] = OTHER
        api.lease["metadata"]["resourceVersion"] = "1000"

    def wait(event: threading.Event, seconds: float) -> bool:
        usurp()
        clock.step(seconds)
        return event.is_set()

    a.wait = wait
    started = clock.now()
    assert a.renew(threading.Event()) is False
    assert clock.now() - started == pytest.approx(2)  # one retry period, not the whole renew deadline


def test_renew_returns_true_when_asked_to_stop() -> None:
    api, clock = FakeLeases(), FakeClock()
    stop = threading.Event()
    rounds = {"n": 0}

    def stop_after_three() -> None:
        rounds["n"] += 1
        if rounds["n"] == 3:
            stop.set()

    a = elector(api, clock, ME, on_wait=stop_after_three)
    assert a.acquire(threading.Event())
    assert a.renew(stop) is True
    assert a.is_leader()  # still the leader until it releases


def test_release_lets_a_standby_acquire_at_its_next_attempt() -> None:
    api, clock = FakeLeases(), FakeClock()
    a, b = elector(api, clock, "a"), elector(api, clock, "b")
    assert a.acquire(threading.Event())
    assert not b.try_acquire_or_renew(deadline=None)
    assert a.release()
    assert not a.is_leader()
    assert api.lease is not None
    assert (api.holder, api.lease["spec"]["leaseDurationSeconds"]) == ("", 1)
    assert isinstance(a.metrics, Metrics) and a.metrics.leading == [True, False]
    clock.step(2)
    assert b.try_acquire_or_renew(deadline=None)  # no 15 s wait
    assert api.holder == "b"
    assert api.lease["spec"]["leaseTransitions"] == 1


def test_release_without_leading_does_nothing() -> None:
    api, clock = FakeLeases(), FakeClock()
    assert elector(api, clock, "a").release()
    assert api.requests == []


def test_acquire_stops_when_asked() -> None:
    api, clock = FakeLeases(), FakeClock()
    assert elector(api, clock, "a").acquire(threading.Event())
    stop = threading.Event()
    b = elector(api, clock, "b", on_wait=stop.set)
    assert b.acquire(stop) is False
    assert not b.is_leader()


def test_health_fails_only_for_a_leader_long_past_its_lease() -> None:
    api, clock = FakeLeases(), FakeClock()
    a = elector(api, clock, ME)
    assert a.healthy(20)  # not leading: nothing to check
    assert a.acquire(threading.Event())
    clock.step(30)
    assert a.healthy(20)
    clock.step(6)
    assert not a.healthy(20)


def test_the_leader_metrics_follow_controller_runtime() -> None:
    from prometheus_client import CollectorRegistry  # noqa: PLC0415

    from taskset.daemon.metrics import ControllerMetrics  # noqa: PLC0415

    registry = CollectorRegistry()
    metrics = ControllerMetrics(registry=registry)
    assert registry.get_sample_value("leader_election_master_status", {"name": "lock"}) is None
    metrics.set_leader("lock", False)
    assert registry.get_sample_value("leader_election_master_status", {"name": "lock"}) == 0
    assert registry.get_sample_value("leader_election_slowpath_total", {"name": "lock"}) == 0
    metrics.set_leader("lock", True)
    metrics.observe_leader_slow_path("lock")
    assert registry.get_sample_value("leader_election_master_status", {"name": "lock"}) == 1
    assert registry.get_sample_value("leader_election_slowpath_total", {"name": "lock"}) == 1
