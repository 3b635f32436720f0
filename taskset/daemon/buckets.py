"""Bucket Leases: N active replicas split the namespaces between them, one ``coordination.k8s.io`` Lease
per bucket, with the leader election's semantics per Lease (``taskset.daemon.leader``).

Each replica, every retry period:

1. **Reads the ring** with one LIST of the Leases labelled with the ring's name: ``<ring>-bucket-<i>``
   for each of the ``B`` buckets (``informers.shards``) and one ``<ring>-member-<digest>`` per replica.
   As in the leader election, a Lease is judged live on the local monotonic clock: its holder counts
   until ``leaseDurationSeconds`` pass without the record changing (skew between nodes does not matter).
2. **Renews its member Lease** (creating it the first time), so the others count it.
3. **Plans** with ``informers.shards.assign``: the live members, the live holders of the buckets. Every
   replica computes the same plan from the same Leases, so each only writes its own part of it:
   *release* a bucket it holds that the plan gives away (after it stopped acting for it: the fence says
   no from that moment), *renew* one it keeps, *acquire* one the plan gives it whose Lease is free
   (released, expired or absent). A bucket still held, validly, by another replica is waited for: it
   moves only when released or expired, never on a guess.
   A member that holds nothing is given buckets only once it has *settled*: renewed its member Lease for
   a whole lease duration (its own renewTime that far past its own acquireTime: one clock, no skew). A
   replica that has just (re)started has seen each Lease for less than that, so it cannot yet tell a
   dead holder's Lease from a live one; planned as the next holder of a dead replica's buckets, it would
   leave them unowned for its own start-up on top of the lease duration. The settled members take them
   as soon as they expire, and the newcomer gets its share from them by release once it has settled.
   (While no member has settled, in a fresh ring, all are counted.)
4. **Hands the held set to the informers** (``informers.sharding.ShardView.hold``), which relist.

**The fence.** ``owns(namespace)`` is what a worker asks before it reconciles a key and before every
write: the namespace's bucket is held, its last successful renewal (timed from just *before* its request
was sent) is less than ``renew_deadline`` old, which is shorter than the lease duration another replica
waits out before taking over, and the informers have relisted since it was acquired (the new holder
relists before acting). A write already in flight when the tenure ends is guarded by the API server:
status writes carry the resourceVersion they were decided on, deletes the UID, creates the names and
proofs the decisions chose, so a late write fails rather than clobbers.

All decisions are pure (``plan_round``), so they are table-driven unit tests; ``BucketElector`` adds the
requests and the loop.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import quote

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from clock import Clock, RealClock
from informers.sharding import ShardView
from informers.shards import DEFAULT_BUCKET_COUNT, assign
from taskset.api.constants import GROUP
from taskset.daemon.leader import (
    LeaseRecord,
    Observation,
    Requester,
    Step,
    Timings,
    desired_record,
    lease_path,
    lease_spec,
    lease_valid,
    micro_time,
    observe,
    record_from_lease,
    release_record,
)
from taskset.runtime.kube import KubeError

__all__ = [
    "LABEL_RING",
    "LABEL_RING_ROLE",
    "LEASE_WRITES_IN_FLIGHT",
    "MSG_HELD_CHANGED",
    "MSG_LAPSED",
    "BucketElector",
    "RoundPlan",
    "ShardCollector",
    "bucket_lease_name",
    "bucket_of_lease",
    "member_lease_name",
    "plan_round",
    "settled",
]

LABEL_RING: Final = f"{GROUP}/shard-ring"
LABEL_RING_ROLE: Final = f"{GROUP}/shard-lease"  # "bucket" or "member"
ROLE_BUCKET: Final = "bucket"
ROLE_MEMBER: Final = "member"
RESOURCE: Final = "leases"
# Twelve hex digits of sha256 name a member's Lease: identities are ``<hostname>_<uuid>``, longer than
# a Lease name may safely grow, and 48 bits make a collision between a fleet's replicas unthinkable.
MEMBER_DIGEST_CHARS: Final = 12
# Bucket Lease writes in flight at once in a round: every bucket's, so a round takes one request's time
# however many buckets the replica holds (as Knative's bucket electors, one loop per bucket). One after
# another, a replica holding all 32 buckets on a loaded API server spent longer than the renew deadline
# renewing them, and the last ones lapsed every round: each lapse closed the fence and relisted the
# informers (the bench with 10,000 Pods counted 361 lapses in 11 minutes); eight at a time, the first
# eight still lapsed when a round's four request times passed the renew deadline (8 in 5 minutes).
LEASE_WRITES_IN_FLIGHT: Final = DEFAULT_BUCKET_COUNT
# The log messages of a lapse and of a change of the held set (each one a relist): the bench counts them.
MSG_LAPSED: Final = "bucket lease not renewed in time; dropped"
MSG_HELD_CHANGED: Final = "shard buckets changed"


def bucket_lease_name(ring: str, bucket: int) -> str:
    return f"{ring}-bucket-{bucket}"


def member_lease_name(ring: str, identity: str) -> str:
    return f"{ring}-member-{hashlib.sha256(identity.encode()).hexdigest()[:MEMBER_DIGEST_CHARS]}"


def bucket_of_lease(ring: str, name: str) -> int | None:
    prefix = f"{ring}-bucket-"
    if not name.startswith(prefix) or not name[len(prefix) :].isdigit():
        return None
    return int(name[len(prefix) :])


# ----- pure decisions ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RoundPlan:
    """What one replica writes in one round, and the plan it followed (for the status endpoint)."""

    acquire: frozenset[int] = frozenset()
    renew: frozenset[int] = frozenset()
    release: frozenset[int] = frozenset()
    plan: Mapping[int, str] = field(default_factory=dict)


def plan_round(
    *,
    bucket_count: int,
    identity: str,
    held: frozenset[int],
    buckets: Mapping[int, Observation],
    members: Mapping[str, Observation],
    now: float,
) -> RoundPlan:
    """The round's writes, from the Leases as observed (``buckets`` by number, ``members`` by holder).

    ``held``: the buckets this replica holds by its own account. A bucket counts as held by another only
    while its Lease is live; this replica is always a member (it renews its member Lease this round).
    """
    live_members = {identity} | {
        holder for holder, seen in members.items() if seen.record.holder and lease_valid(seen, now)
    }
    current: dict[int, str] = {
        bucket: seen.record.holder
        for bucket, seen in buckets.items()
        if seen.record.holder and lease_valid(seen, now)
    }
    for bucket in held:  # our own account wins over a stale read of our own Lease
        current.setdefault(bucket, identity)
    plan = assign(bucket_count, current, planned_members(live_members, current, members))
    mine = frozenset(bucket for bucket, holder in plan.items() if holder == identity)
    # Free: no live holder, or the Lease names us though we dropped it (a renewal came too late): taking
    # it back is a PUT on the version we read, so it fails if anyone else wrote it since.
    free = frozenset(
        bucket
        for bucket in range(bucket_count)
        if bucket not in current or (bucket not in held and current[bucket] == identity)
    )
    return RoundPlan(
        acquire=frozenset((mine - held) & free),
        renew=mine & held,
        release=held - mine,
        plan=plan,
    )


def settled(member: Observation | None) -> bool:
    """Whether a member has renewed its member Lease for a whole lease duration (module docstring, 3.):
    both times are the member's own writes, so no two clocks are compared."""
    if member is None:
        return False
    record = member.record
    acquired, renewed = micro_time(record.acquire_time), micro_time(record.renew_time)
    if acquired is None or renewed is None:
        return False
    return (renewed - acquired).total_seconds() >= record.lease_duration_seconds


def planned_members(
    live: set[str], current: Mapping[int, str], members: Mapping[str, Observation]
) -> set[str]:
    """The members the plan shares the buckets between: the settled ones and those already holding some
    (taking a member's buckets away because it has not settled would only move them twice). All of them
    while none has settled (a fresh ring: none can tell a dead holder's Lease better than the others)."""
    settled_members = {member for member in live if settled(members.get(member))}
    if not settled_members:
        return live
    return settled_members | (live & set(current.values()))


# ----- the loop ------------------------------------------------------------------------------------------
@dataclass
class _Held:
    lease: dict[str, Any]  # as last written: its resourceVersion guards the next PUT
    record: LeaseRecord
    renewed_at: float  # monotonic, taken just before the request that renewed it was sent
    generation: int = 0  # the ShardView generation that first held it


class BucketElector:
    """Holds this replica's share of the buckets. ``run`` loops until stopped, then releases everything.

    ``owns`` and ``status`` may be called from any thread; the loop runs on one.
    """

    def __init__(
        self,
        *,
        client: Requester,
        namespace: str,
        ring: str,
        identity: str,
        view: ShardView,
        logger: Any,
        timings: Timings | None = None,
        clock: Clock | None = None,
        on_change: Callable[[frozenset[int], frozenset[int]], None] | None = None,
    ) -> None:
        """``on_change(gained, lost)`` runs after every round that changed the held set, as does every
        callback given to ``subscribe``."""
        self.client: Final = client
        self.namespace: Final = namespace
        self.ring: Final = ring
        self.identity: Final = identity
        self.view: Final = view
        self.timings: Final = timings or Timings()
        self._log = logger
        self._clock: Final = clock or RealClock()
        self._subscribers: list[Callable[[frozenset[int], frozenset[int]], None]] = (
            [on_change] if on_change is not None else []
        )
        self._lock = threading.Lock()
        self._held: dict[int, _Held] = {}  # guarded by _lock
        self._member: dict[str, Any] | None = None
        self._observed: dict[str, Observation] = {}  # by Lease name
        self._last_plan: Mapping[int, str] = {}
        # Threads start on the first write that has company (``_each``), end after ``release_all``.
        self._writes = ThreadPoolExecutor(LEASE_WRITES_IN_FLIGHT, thread_name_prefix="bucket-lease")

    def subscribe(self, on_change: Callable[[frozenset[int], frozenset[int]], None]) -> None:
        """Call ``on_change(gained, lost)`` after every round that changed the held set (the controller
        picks up the TaskSets of a gained bucket that its cache already holds)."""
        self._subscribers.append(on_change)

    # ----- the fence -----------------------------------------------------------------------------------
    def owns(self, namespace: str) -> bool:
        """Whether this replica may act for ``namespace`` now (module docstring, "The fence")."""
        bucket = self.view.buckets.of_namespace(namespace)
        with self._lock:
            held = self._held.get(bucket)
            if held is None:
                return False
            fresh = self._clock.now() - held.renewed_at < self.timings.renew_deadline
            generation = held.generation
        return fresh and self.view.listed_generation() >= generation > 0

    def pending(self, namespace: str) -> bool:
        """Held by this replica, whether or not its fence is open at this moment: a worker refused by
        ``owns`` must come back to a key it may soon act for again (the informers are relisting a gained
        bucket, or a round is renewing late, within the renew deadline). Only a bucket that left the held
        set is another replica's; its keys come back with the gain that brings it back (``subscribe``).
        Asked after ``owns``, it must not depend on the moment: a renewal landing between the two calls
        would make the key look like another replica's, and a TaskSet of a held bucket would never be
        looked at again."""
        bucket = self.view.buckets.of_namespace(namespace)
        with self._lock:
            return bucket in self._held

    def held(self) -> frozenset[int]:
        with self._lock:
            return frozenset(self._held)

    def status(self) -> dict[str, Any]:
        """The ring as this replica last saw it: who holds which bucket, and what it holds itself."""
        with self._lock:
            plan = dict(self._last_plan)
            held = sorted(self._held)
        return {
            "identity": self.identity,
            "buckets": self.view.buckets.count,
            "held": held,
            "holders": {str(bucket): holder for bucket, holder in sorted(plan.items())},
        }

    # ----- the loop ------------------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        while True:
            try:
                self.round()
            except Exception:  # a bug must not stop the renewals silently; the fence lapses meanwhile
                self._log.exception("bucket lease round failed")
            if stop.wait(self.timings.retry_period):
                break
        self.release_all()
        self._writes.shutdown(wait=True)

    def round(self) -> None:
        started = self._clock.now()
        try:
            leases = self._list(timeout=self.timings.renew_deadline)
        except KubeError as err:
            self._log.warning("cannot read the bucket leases", error=str(err))
            self._expire(started)
            return
        buckets: dict[int, Observation] = {}
        members: dict[str, Observation] = {}
        by_name: dict[str, dict[str, Any]] = {}
        for lease in leases:
            name = str(lease.get("metadata", {}).get("name", ""))
            by_name[name] = lease
            seen = observe(self._observed.get(name), record_from_lease(lease), started)
            self._observed[name] = seen
            bucket = bucket_of_lease(self.ring, name)
            if bucket is not None and bucket < self.view.buckets.count:
                buckets[bucket] = seen
            elif name.startswith(f"{self.ring}-member-") and seen.record.holder:
                members[seen.record.holder] = seen
        self._renew_member(by_name.get(member_lease_name(self.ring, self.identity)))
        before = self.held()
        plan = plan_round(
            bucket_count=self.view.buckets.count,
            identity=self.identity,
            held=before,
            buckets=buckets,
            members=members,
            now=started,
        )
        with self._lock:
            self._last_plan = plan.plan
        self._release(plan.release)
        self._each(
            [functools.partial(self._renew, bucket) for bucket in sorted(plan.renew)]
            + [
                functools.partial(self._acquire, bucket, by_name.get(bucket_lease_name(self.ring, bucket)))
                for bucket in sorted(plan.acquire)
            ]
        )
        self._expire(self._clock.now())
        self._publish(before)

    def release_all(self) -> None:
        """On a clean shutdown, after the workers stopped: free every bucket and leave the ring."""
        before = self.held()
        self._release(before)
        self._publish(before)
        if self._member is not None:
            record = release_record(record_from_lease(self._member), self._clock.wall())
            try:
                self._put(self._member, record)
            except KubeError as err:
                self._log.warning("cannot release the member lease", error=str(err))

    # ----- steps ---------------------------------------------------------------------------------------
    def _each(self, writes: Sequence[Callable[[], None]]) -> None:
        """Send the round's Lease writes, up to ``LEASE_WRITES_IN_FLIGHT`` at once, and wait for all of them.
        Each write times its tenure from just before its own request, so sending them together changes
        nothing in the fence, only how late the last one lands."""
        if len(writes) <= 1:
            for write in writes:
                write()
            return
        for future in [self._writes.submit(write) for write in writes]:
            future.result()

    def _publish(self, before: frozenset[int]) -> None:
        after = self.held()
        generation = self.view.hold(after)
        with self._lock:
            for bucket in after - before:
                self._held[bucket].generation = generation
        if after != before:
            self._log.info(
                MSG_HELD_CHANGED,
                held=sorted(after),
                gained=sorted(after - before),
                lost=sorted(before - after),
            )
            for on_change in self._subscribers:
                on_change(after - before, before - after)

    def _expire(self, now: float) -> None:
        """Drop every bucket whose tenure lapsed: unrenewed for the renew deadline, another may take it."""
        with self._lock:
            lapsed = [b for b, h in self._held.items() if now - h.renewed_at >= self.timings.renew_deadline]
            for bucket in lapsed:
                del self._held[bucket]
        for bucket in lapsed:
            self._log.error(MSG_LAPSED, bucket=bucket)

    def _release(self, buckets: Iterable[int]) -> None:
        """Give buckets up: the fence closes and the informers forget them (one change of the held set for
        all of them) before their Leases are freed, together."""
        with self._lock:
            popped = [(bucket, self._held.pop(bucket, None)) for bucket in sorted(buckets)]
        freed = [(bucket, held) for bucket, held in popped if held is not None]
        if not freed:
            return
        self.view.hold(self.held())
        self._each([functools.partial(self._free, bucket, held) for bucket, held in freed])

    def _free(self, bucket: int, held: _Held) -> None:
        try:
            self._put(held.lease, release_record(held.record, self._clock.wall()))
        except KubeError as err:  # it expires by itself
            self._log.warning("cannot release a bucket lease", bucket=bucket, error=str(err))

    def _renew(self, bucket: int) -> None:
        started = self._clock.now()  # before the request: the others' wait starts after it lands
        with self._lock:
            held = self._held.get(bucket)
        if held is None:
            return
        record = desired_record(
            Step.RENEW, held.record, self.identity, self.timings.lease_duration_seconds, self._clock.wall()
        )
        try:
            written = self._put(held.lease, record)
        except KubeError as err:
            self._log.warning("cannot renew a bucket lease", bucket=bucket, error=str(err))
            if err.conflict:  # someone else wrote it: it is not ours any more
                with self._lock:
                    self._held.pop(bucket, None)
            return
        with self._lock:
            if bucket in self._held:
                self._held[bucket] = _Held(written, record, started, held.generation)

    def _acquire(self, bucket: int, lease: dict[str, Any] | None) -> None:
        started = self._clock.now()  # before the request: the others' wait starts after it lands
        current = record_from_lease(lease) if lease is not None else None
        step = Step.CREATE if lease is None else Step.ACQUIRE
        record = desired_record(
            step, current, self.identity, self.timings.lease_duration_seconds, self._clock.wall()
        )
        name = bucket_lease_name(self.ring, bucket)
        try:
            written = self._create(name, ROLE_BUCKET, record) if lease is None else self._put(lease, record)
        except KubeError as err:
            if not (err.conflict or err.already_exists):
                self._log.warning("cannot acquire a bucket lease", bucket=bucket, error=str(err))
            return
        with self._lock:
            self._held[bucket] = _Held(written, record, started)

    def _renew_member(self, lease: dict[str, Any] | None) -> None:
        step = Step.CREATE if lease is None else Step.ACQUIRE
        current = record_from_lease(lease) if lease is not None else None
        if current is not None and current.holder == self.identity:
            step = Step.RENEW
        record = desired_record(
            step, current, self.identity, self.timings.lease_duration_seconds, self._clock.wall()
        )
        try:
            if lease is None:
                self._member = self._create(member_lease_name(self.ring, self.identity), ROLE_MEMBER, record)
            else:
                self._member = self._put(lease, record)
        except KubeError as err:
            self._log.warning("cannot renew the member lease", error=str(err))

    # ----- requests ------------------------------------------------------------------------------------
    def _list(self, timeout: float) -> list[dict[str, Any]]:
        selector = quote(f"{LABEL_RING}={self.ring}", safe="")
        response = self.client.request(
            "GET",
            f"{lease_path(self.namespace)}?labelSelector={selector}",
            resource=RESOURCE,
            timeout=timeout,
        )
        items: list[dict[str, Any]] = (response.body or {}).get("items") or []
        return items

    def _create(self, name: str, role: str, record: LeaseRecord) -> dict[str, Any]:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": name,
                "namespace": self.namespace,
                "labels": {LABEL_RING: self.ring, LABEL_RING_ROLE: role},
            },
            "spec": lease_spec(record),
        }
        response = self.client.request(
            "POST",
            lease_path(self.namespace),
            resource=RESOURCE,
            body=body,
            timeout=self.timings.renew_deadline,
        )
        created: dict[str, Any] = response.body
        return created

    def _put(self, lease: Mapping[str, Any], record: LeaseRecord) -> dict[str, Any]:
        name = str(lease["metadata"]["name"])
        body = {**lease, "spec": lease_spec(record)}
        response = self.client.request(
            "PUT",
            lease_path(self.namespace, name),
            resource=RESOURCE,
            body=body,
            timeout=self.timings.renew_deadline,
        )
        updated: dict[str, Any] = response.body
        return updated


class ShardCollector(Collector):
    """This replica's share, read at scrape time: buckets held, TaskSets cached, and per collection the
    objects the server sent, those the client-side filter dropped, and whether the server filtered."""

    def __init__(self, elector: BucketElector, keys: Callable[[], int]) -> None:
        self._elector = elector
        self._keys = keys

    def collect(self) -> Iterable[Metric]:
        held = GaugeMetricFamily("taskset_shard_buckets_held", "Shard buckets this replica holds.")
        held.add_metric([], len(self._elector.held()))
        yield held
        keys = GaugeMetricFamily("taskset_shard_tasksets", "TaskSets in this replica's cache (its share).")
        keys.add_metric([], self._keys())
        yield keys
        counts = self._elector.view.counts()
        received = CounterMetricFamily(
            "taskset_shard_objects_received",
            "Objects listed and watch events received from the API server, per collection.",
            labels=["collection"],
        )
        dropped = CounterMetricFamily(
            "taskset_shard_objects_dropped",
            "Of those, the ones outside the held buckets, dropped by the client-side filter.",
            labels=["collection"],
        )
        filtered = GaugeMetricFamily(
            "taskset_shard_server_filtered",
            "1 when the API server echoed the shard selector on the last list (shardInfo), else 0.",
            labels=["collection"],
        )
        follows = CounterMetricFamily(
            "taskset_shard_follows",
            "Changes of the held buckets followed by listing only the gained buckets, per collection.",
            labels=["collection"],
        )
        refused = CounterMetricFamily(
            "taskset_shard_follows_refused",
            "Lists of gained buckets the API server refused, each followed by a full relist.",
            labels=["collection"],
        )
        for name, count in sorted(counts.items()):
            received.add_metric([name], count.received)
            dropped.add_metric([name], count.dropped)
            filtered.add_metric([name], 1 if count.server_filtered else 0)
            follows.add_metric([name], count.follows)
            refused.add_metric([name], count.follows_refused)
        yield from (received, dropped, filtered, follows, refused)
