"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's semantics and timings.

Two or more replicas of the controller run at once; only the one holding the Lease runs workers. The
algorithm is client-go's ``tools/leaderelection`` (``tryAcquireOrRenew``, ``renew``, ``release``), written
anew over raw JSON through ``taskset.runtime.kube.KubeClient``:

* **Expiry is judged on the local clock.** A candidate never compares the Lease's ``renewTime`` with its
  own wall clock: it notes *when it last saw the record change* (monotonic) and treats the Lease as
  expired once ``leaseDurationSeconds`` have passed since then without a change. Clock skew between
  nodes therefore does not matter; only the rate of the clocks does (client-go's doc.go).
* **Acquire** when the Lease does not exist (create it), when its ``holderIdentity`` is empty (released),
  or when it has expired as above. Every write is a PUT carrying the ``resourceVersion`` read last, so of
  two candidates racing for an expired Lease exactly one wins; the other gets 409 Conflict and waits.
* **Renew** every ``retry_period``: the leader first PUTs on its cached copy (the fast path, one request);
  if that fails it re-reads and retries (the slow path, counted by ``leader_election_slowpath_total``).
  A round that has not succeeded within ``renew_deadline`` means the lease is **lost**: the caller must
  stop working at once (the daemon exits non-zero and the Deployment restarts it).
* **Release** on a clean shutdown, after the work guarded by the lease has stopped: ``holderIdentity``
  empty, ``leaseDurationSeconds`` 1, times now; a standby takes over at its next retry instead of waiting
  out the lease.

As in client-go there is no fencing: a leader paused for longer than the lease duration (a long GC, a
frozen VM) may act once more before its next renewal shows it another holder and it exits. The writes it
could make then are guarded by resourceVersion and UID preconditions, so they fail rather than clobber.

Timings (client-go / controller-runtime defaults): lease duration 15 s, renew deadline 10 s, retry period
2 s, with ``lease > renew > 1.2 * retry``. The decisions are pure functions of the observed record and an
injected clock (``decide``, ``lease_valid``, ``desired_record``, ``release_record``, ``round_expired``),
so they are table-driven unit tests; ``LeaderElector`` only adds the requests and the loops.
"""

from __future__ import annotations

import math
import random
import socket
import threading
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any, Final, Protocol

from clock import Clock, RealClock
from taskset.runtime.kube import KubeError, Response

__all__ = [
    "DEFAULT_LEASE_DURATION",
    "DEFAULT_LEASE_NAME",
    "DEFAULT_RENEW_DEADLINE",
    "DEFAULT_RETRY_PERIOD",
    "JITTER_FACTOR",
    "SERVICE_ACCOUNT_NAMESPACE_FILE",
    "LeaderElector",
    "LeaseRecord",
    "Observation",
    "Step",
    "Timings",
    "decide",
    "desired_record",
    "format_micro_time",
    "in_cluster_namespace",
    "lease_path",
    "lease_valid",
    "new_identity",
    "observe",
    "record_from_lease",
    "release_record",
    "round_expired",
    "timing_errors",
]

DEFAULT_LEASE_DURATION: Final = 15.0  # seconds a standby waits after the last change it saw
DEFAULT_RENEW_DEADLINE: Final = 10.0  # seconds the leader keeps retrying a renewal before giving up
DEFAULT_RETRY_PERIOD: Final = 2.0  # seconds between attempts
DEFAULT_LEASE_NAME: Final = "taskset-controller"
JITTER_FACTOR: Final = 1.2  # client-go: acquire attempts wait retry_period * (1 + rand * 1.2)
SERVICE_ACCOUNT_NAMESPACE_FILE: Final = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
FALLBACK_NAMESPACE: Final = "default"
LEASE_API: Final = "/apis/coordination.k8s.io/v1"
RESOURCE: Final = "leases"
# A request never waits less than this, even when a round's deadline is nearer (it would fail anyway).
MIN_REQUEST_TIMEOUT: Final = 0.5


# ----- the record and its wire form ----------------------------------------------------------------------
@dataclass(frozen=True)
class LeaseRecord:
    """The Lease's spec, as client-go's ``LeaderElectionRecord``. Times are the API's MicroTime strings."""

    holder: str = ""
    lease_duration_seconds: int = 0
    acquire_time: str | None = None
    renew_time: str | None = None
    transitions: int = 0


def format_micro_time(moment: datetime) -> str:
    """``metav1.MicroTime``: RFC 3339 in UTC with microseconds, e.g. ``2026-01-01T00:00:00.000000Z``."""
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def micro_time(text: object) -> datetime | None:
    """A Lease's MicroTime as written by ``format_micro_time`` (or any RFC 3339 time); None if absent or
    unreadable (a Lease is another writer's object)."""
    if not isinstance(text, str) or not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def record_from_lease(lease: Mapping[str, Any]) -> LeaseRecord:
    spec = lease.get("spec") or {}
    return LeaseRecord(
        holder=str(spec.get("holderIdentity") or ""),
        lease_duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
        acquire_time=spec.get("acquireTime"),
        renew_time=spec.get("renewTime"),
        transitions=int(spec.get("leaseTransitions") or 0),
    )


def lease_spec(record: LeaseRecord) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "holderIdentity": record.holder,
        "leaseDurationSeconds": record.lease_duration_seconds,
        "leaseTransitions": record.transitions,
    }
    if record.acquire_time is not None:
        spec["acquireTime"] = record.acquire_time
    if record.renew_time is not None:
        spec["renewTime"] = record.renew_time
    return spec


def lease_path(namespace: str, name: str | None = None) -> str:
    base = f"{LEASE_API}/namespaces/{namespace}/leases"
    return f"{base}/{name}" if name else base


# ----- pure decisions ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Observation:
    """A record and the local monotonic time at which it was first seen in this form."""

    record: LeaseRecord
    time: float


def observe(previous: Observation | None, record: LeaseRecord, now: float) -> Observation:
    """client-go's observedRecord/observedTime: the clock restarts only when the record changes."""
    if previous is not None and previous.record == record:
        return previous
    return Observation(record, now)


def lease_valid(observation: Observation | None, now: float) -> bool:
    """Whether the observed holder may still be alive: less than its lease duration since the last change."""
    if observation is None:
        return False
    return observation.time + observation.record.lease_duration_seconds > now


class Step(StrEnum):
    """What one attempt does with the Lease it just read."""

    CREATE = "create"  # no Lease yet: create it, holding it
    ACQUIRE = "acquire"  # free (released) or expired: take it over (transitions + 1)
    RENEW = "renew"  # we hold it: refresh renewTime
    WAIT = "wait"  # someone else holds a valid lease: do nothing


def decide(current: LeaseRecord | None, observation: Observation | None, identity: str, now: float) -> Step:
    """The step for ``current`` (None: the Lease does not exist) seen as ``observation`` at ``now``."""
    if current is None:
        return Step.CREATE
    if current.holder == identity:
        return Step.RENEW
    if current.holder and lease_valid(observation, now):
        return Step.WAIT
    return Step.ACQUIRE


def desired_record(
    step: Step, current: LeaseRecord | None, identity: str, lease_duration_seconds: int, wall: datetime
) -> LeaseRecord:
    """The record to write for ``step`` (not ``WAIT``): renewals keep acquireTime and the transition count."""
    now = format_micro_time(wall)
    if step is Step.RENEW and current is not None:
        return LeaseRecord(identity, lease_duration_seconds, current.acquire_time, now, current.transitions)
    transitions = current.transitions + 1 if step is Step.ACQUIRE and current is not None else 0
    return LeaseRecord(identity, lease_duration_seconds, now, now, transitions)


def release_record(current: LeaseRecord, wall: datetime) -> LeaseRecord:
    """client-go's release: nobody holds it, a 1 s duration, times now, the transition count kept."""
    now = format_micro_time(wall)
    return LeaseRecord("", 1, now, now, current.transitions)


def round_expired(round_started: float, renew_deadline: float, now: float) -> bool:
    """A renewal round that has not succeeded by ``renew_deadline`` seconds after it began is lost."""
    return now - round_started >= renew_deadline


@dataclass(frozen=True)
class Timings:
    lease_duration: float = DEFAULT_LEASE_DURATION
    renew_deadline: float = DEFAULT_RENEW_DEADLINE
    retry_period: float = DEFAULT_RETRY_PERIOD

    @property
    def lease_duration_seconds(self) -> int:
        """The Lease field is whole seconds: round up, so a standby never waits less than configured."""
        return max(1, math.ceil(self.lease_duration))


def timing_errors(timings: Timings) -> list[str]:
    """client-go's ``NewLeaderElector`` checks; an empty list means usable."""
    errors = []
    if timings.retry_period <= 0:
        errors.append("the retry period must be greater than zero")
    if timings.lease_duration <= timings.renew_deadline:
        errors.append(
            f"the lease duration ({timings.lease_duration:g} s) must be greater than the renew deadline "
            f"({timings.renew_deadline:g} s)"
        )
    if timings.renew_deadline <= JITTER_FACTOR * timings.retry_period:
        errors.append(
            f"the renew deadline ({timings.renew_deadline:g} s) must be greater than {JITTER_FACTOR:g} x the "
            f"retry period ({timings.retry_period:g} s)"
        )
    return errors


def new_identity(hostname: str | None = None, suffix: str | None = None) -> str:
    """``<hostname>_<uuid>``, as controller-runtime: unique even when two pods share a hostname."""
    return f"{hostname or socket.gethostname()}_{suffix or uuid.uuid4()}"


def in_cluster_namespace(read_text: Callable[[str], str]) -> str:
    """The pod's namespace from its service account mount; ``default`` outside a cluster."""
    try:
        namespace = read_text(SERVICE_ACCOUNT_NAMESPACE_FILE).strip()
    except OSError:
        return FALLBACK_NAMESPACE
    return namespace or FALLBACK_NAMESPACE


def own_namespace(config: Any) -> str:
    """The controller's own namespace, where the Lease and the proof key's Secret live: the
    ``leader_elect_namespace`` setting, else the pod's (its service account mount), else ``default``."""
    namespace: str = config.leader_elect_namespace
    return namespace or in_cluster_namespace(_read_text)


def _read_text(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


# ----- the elector ---------------------------------------------------------------------------------------
class Requester(Protocol):
    """``taskset.runtime.kube.KubeClient.request``: what the elector needs of the client."""

    def request(
        self,
        method: str,
        path: str,
        *,
        resource: str,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
    ) -> Response: ...


class LeaderMetrics(Protocol):
    """``taskset.daemon.metrics.ControllerMetrics``' leader election series."""

    def set_leader(self, name: str, leading: bool) -> None: ...

    def observe_leader_slow_path(self, name: str) -> None: ...


def _wait(event: threading.Event, seconds: float) -> bool:
    return event.wait(max(0.0, seconds))


@dataclass
class _State:
    observation: Observation | None = None
    lease: dict[str, Any] | None = None  # the Lease as last read or written (its resourceVersion guards PUTs)
    reported_holder: str = ""
    leading: bool = False


@dataclass
class LeaderElector:
    """One candidate for one Lease. ``acquire`` blocks until it leads; ``renew`` until it stops leading.

    Thread-safety: ``acquire``, ``renew`` and ``release`` run on one thread at a time (the daemon calls
    them in sequence); ``is_leader``, ``leader`` and ``healthy`` may be called from any thread.
    ``wait(event, seconds)`` sleeps between attempts and returns True when ``event`` is set; tests inject
    one that moves a fake clock instead.
    """

    client: Requester
    namespace: str
    name: str
    identity: str
    logger: Any
    timings: Timings = field(default_factory=Timings)
    clock: Clock = field(default_factory=RealClock)
    metrics: LeaderMetrics | None = None
    wait: Callable[[threading.Event, float], bool] = _wait
    rng: Callable[[], float] = random.random
    _state: _State = field(default_factory=_State, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    @property
    def description(self) -> str:
        return f"{self.namespace}/{self.name}"

    def is_leader(self) -> bool:
        with self._lock:
            return self._state.leading

    def leader(self) -> str:
        """The holder last observed ("" before the first read or after a release)."""
        with self._lock:
            observation = self._state.observation
        return observation.record.holder if observation is not None else ""

    def healthy(self, tolerance: float) -> bool:
        """client-go's HealthzAdaptor: False when leading yet unrenewed for lease duration + ``tolerance``.

        The renew loop gives up long before that; this catches a renew thread that is stuck for good."""
        with self._lock:
            leading, observation = self._state.leading, self._state.observation
        if not leading or observation is None:
            return True
        return self.clock.now() - observation.time <= self.timings.lease_duration + tolerance

    # ----- loops ---------------------------------------------------------------------------------------
    def acquire(self, stop: threading.Event) -> bool:
        """Try until the lease is ours (True) or ``stop`` is set (False), every retry period plus jitter."""
        self.logger.info("attempting to acquire leader lease", lease=self.description, identity=self.identity)
        while not stop.is_set():
            if self.try_acquire_or_renew(deadline=None):
                self.logger.info(
                    "successfully acquired lease", lease=self.description, identity=self.identity
                )
                self._set_leading(True)
                return True
            delay = self.timings.retry_period * (1.0 + self.rng() * JITTER_FACTOR)
            if self.wait(stop, delay):
                break
        return False

    def renew(self, stop: threading.Event) -> bool:
        """Keep the lease until ``stop`` is set (returns True) or a renewal round fails (returns False).

        Each round starts ``retry_period`` after the previous success and retries every ``retry_period``
        until ``renew_deadline`` has passed since the round began; then the lease counts as lost.
        """
        timings = self.timings
        while not self.wait(stop, timings.retry_period):
            round_started = self.clock.now()
            while not self.try_acquire_or_renew(deadline=round_started + timings.renew_deadline):
                holder = self.leader()
                if holder and holder != self.identity:  # someone else took it: no point retrying
                    self.logger.error("lease taken by another holder; leadership lost", holder=holder)
                    self._set_leading(False)
                    return False
                if round_expired(round_started, timings.renew_deadline, self.clock.now()):
                    self.logger.error(
                        "failed to renew lease in time; leadership lost",
                        lease=self.description,
                        renew_deadline=timings.renew_deadline,
                    )
                    self._set_leading(False)
                    return False
                remaining = round_started + timings.renew_deadline - self.clock.now()
                if self.wait(stop, min(timings.retry_period, max(0.0, remaining))):
                    return True
        return True

    def release(self) -> bool:
        """Give the lease up (if held), so a standby acquires it at its next retry. True on success."""
        with self._lock:
            leading, lease, observation = self._state.leading, self._state.lease, self._state.observation
        if not leading or lease is None or observation is None:
            return True
        record = release_record(observation.record, self.clock.wall())
        try:
            written = self._put(lease, record, timeout=self.timings.renew_deadline)
        except KubeError as err:
            self.logger.error("failed to release lease", lease=self.description, error=str(err))
            return False
        with self._lock:
            self._state.lease = written
            self._state.observation = Observation(record, self.clock.now())
        self._set_leading(False)
        self.logger.info("released lease", lease=self.description, identity=self.identity)
        return True

    # ----- one attempt -----------------------------------------------------------------------------------
    def try_acquire_or_renew(self, deadline: float | None) -> bool:
        """One attempt: the fast path for a leader, else read, decide, write. True when we hold the lease."""
        now = self.clock.now()
        with self._lock:
            leading, lease, observation = self._state.leading, self._state.lease, self._state.observation
        if leading and lease is not None and lease_valid(observation, now) and observation is not None:
            record = desired_record(
                Step.RENEW, observation.record, self.identity, self._duration(), self.clock.wall()
            )
            try:
                self._remember(self._put(lease, record, timeout=self._timeout(deadline)), record)
                return True
            except KubeError as err:
                self.logger.warning("fast-path lease renewal failed", lease=self.description, error=str(err))
                if self.metrics is not None:
                    self.metrics.observe_leader_slow_path(self.name)
        try:
            live = self._get(timeout=self._timeout(deadline))
        except KubeError as err:
            self.logger.warning("cannot read lease", lease=self.description, error=str(err))
            return False
        current = record_from_lease(live) if live is not None else None
        now = self.clock.now()
        if current is not None:
            with self._lock:
                self._state.observation = observe(self._state.observation, current, now)
                self._state.lease = live
                observation = self._state.observation
            self._report_holder(current.holder)
        step = decide(current, observation, self.identity, now)
        if step is Step.WAIT:
            return False
        record = desired_record(step, current, self.identity, self._duration(), self.clock.wall())
        try:
            if live is None:
                written = self._create(record, timeout=self._timeout(deadline))
            else:
                written = self._put(live, record, timeout=self._timeout(deadline))
        except KubeError as err:
            if not (err.conflict or err.already_exists):  # losing a race is routine; anything else is news
                self.logger.warning(
                    "cannot write lease", lease=self.description, step=str(step), error=str(err)
                )
            return False
        self._remember(written, record)
        self._report_holder(self.identity)
        return True

    # ----- helpers -----------------------------------------------------------------------------------------
    def _duration(self) -> int:
        return self.timings.lease_duration_seconds

    def _timeout(self, deadline: float | None) -> float:
        """A request must not outlive the renewal round (client-go passes the round's context)."""
        if deadline is None:
            return self.timings.renew_deadline
        return max(MIN_REQUEST_TIMEOUT, deadline - self.clock.now())

    def _remember(self, written: dict[str, Any], record: LeaseRecord) -> None:
        with self._lock:
            self._state.lease = written
            self._state.observation = Observation(record, self.clock.now())

    def _set_leading(self, leading: bool) -> None:
        with self._lock:
            self._state.leading = leading
        if self.metrics is not None:
            self.metrics.set_leader(self.name, leading)

    def _report_holder(self, holder: str) -> None:
        with self._lock:
            if holder == self._state.reported_holder:
                return
            self._state.reported_holder = holder
        if holder:
            self.logger.info("new leader observed", lease=self.description, holder=holder)

    def _get(self, timeout: float) -> dict[str, Any] | None:
        try:
            response = self.client.request(
                "GET", lease_path(self.namespace, self.name), resource=RESOURCE, timeout=timeout
            )
        except KubeError as err:
            if err.not_found:
                return None
            raise
        lease: dict[str, Any] = response.body
        return lease

    def _create(self, record: LeaseRecord, timeout: float) -> dict[str, Any]:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": lease_spec(record),
        }
        response = self.client.request(
            "POST", lease_path(self.namespace), resource=RESOURCE, body=body, timeout=timeout
        )
        created: dict[str, Any] = response.body
        return created

    def _put(self, lease: Mapping[str, Any], record: LeaseRecord, timeout: float) -> dict[str, Any]:
        """Replace the spec of ``lease`` (as last seen: its resourceVersion makes a stale write a 409)."""
        body = {**lease, "spec": lease_spec(record)}
        response = self.client.request(
            "PUT", lease_path(self.namespace, self.name), resource=RESOURCE, body=body, timeout=timeout
        )
        updated: dict[str, Any] = response.body
        return updated
