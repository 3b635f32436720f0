"""Chaos while sharded: four replicas (``--shards auto``, ``ShardedListAndWatch`` on) split eight
namespaces while one of them, chosen at random, is SIGKILLed every 18-28 s and restarted (each kill
comes after the bound on the last one's hand-over, ``UNOWNED_BOUND``, has passed). Its buckets
move only once their Leases expire (the dead replica neither renews nor releases), the new holder relists
before acting, and the restarted replica takes buckets back as the others release them. Nothing may be
lost or done twice: every TaskSet succeeds with no retry counted, and each namespace's history shows at
most one Pod per replica and one attempt per TaskSet alive at any revision.

200 TaskSets of two 4 s Pods over 8 namespaces (two in each replica's share of a balanced ring), arriving
in waves, one wave before each kill: 8 kills, about three minutes of them, so that ``make test`` keeps its
time budget; ``CHAOS_SCALE=long`` makes it 20 kills, about eight minutes. Lease timings: lease 10 s, renew
deadline 7 s.

How long a bucket goes without a live holder is measured from the bucket Leases themselves, watched
throughout (``RingWatch``): for every hand-over, from the old holder's last renewal to the new holder's
acquisition. A killed holder's bucket waits out its Lease; the new holder takes it in its first round
after that, and a round slower than the renew deadline would drop its own buckets, so the bound is the
lease duration plus the renew deadline. The relist the new holder makes before acting follows it and is
not in the figure.
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from devcluster import Cluster, Settings, sim
from informers.listwatch import Resource
from informers.shards import Buckets
from taskset.api import constants as c
from taskset.daemon.buckets import LABEL_RING, LABEL_RING_ROLE, ROLE_BUCKET
from tests.builders import TaskSetBuilder, pod_template
from tests.chaos.history import History, _Watch
from tests.integration.conftest import CRD_FILE, install_crd
from tests.integration.daemon import Daemon
from tests.integration.harness import TaskSets, eventually
from tests.integration.test_sharding import GATE, LEASE_NAMESPACE, RING, start_replicas

pytestmark = [pytest.mark.timeout(1800)]

LEASE_SECONDS = 10.0  # shard_args' --leader-elect-lease-duration
RENEW_DEADLINE = 7.0  # and --leader-elect-renew-deadline
UNOWNED_BOUND = LEASE_SECONDS + RENEW_DEADLINE
# Seconds between a wave's TaskSets and the next kill: at least the last hand-over's bound, so that each
# kill meets a ring that has settled from the one before; the spread varies which moment it hits.
KILL_SPACING = (UNOWNED_BOUND + 1.0, UNOWNED_BOUND + 11.0)

LONG = os.environ.get("CHAOS_SCALE") == "long"
KILLS = 20 if LONG else 8
TASKSETS = 200
SEED = int(os.environ.get("CHAOS_SEED", "40"))
FINAL_TIMEOUT = 300.0


def lease_time(text: object) -> datetime | None:
    """A Lease's MicroTime (``2026-01-01T00:00:00.000000Z``), or None when absent."""
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if isinstance(text, str) and text else None


@dataclass
class RingWatch:
    """Watches the bucket Leases and keeps, per bucket, each holder's last renewal and each hand-over's
    gap: from the previous holder's last renewal to the new holder's acquisition. A watch, not polls: it
    hears every renewal, so the last one before a kill is never missed (a missed one would count the
    renewal interval into the gap)."""

    cluster: Cluster
    gaps: list[tuple[int, str, str, float]] = field(default_factory=list)  # bucket, from, to, seconds
    _last: dict[int, tuple[str, datetime]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _watch: _Watch | None = None

    def start(self) -> RingWatch:
        leases = Resource(group="coordination.k8s.io", version="v1", plural="leases")
        self._watch = _Watch(self.cluster, LEASE_NAMESPACE, leases, self._on_lease)
        self._watch.start()
        return self

    def stop(self) -> None:
        if self._watch is not None:
            self._watch.stop()

    def _on_lease(self, event: str, lease: dict[str, Any], _revision: int, _exact: bool) -> None:
        labels = (lease.get("metadata") or {}).get("labels") or {}
        if event == "DELETED" or labels.get(LABEL_RING) != RING or labels.get(LABEL_RING_ROLE) != ROLE_BUCKET:
            return
        with self._lock:
            self._observe(lease)

    def _observe(self, lease: dict[str, Any]) -> None:
        spec = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        renewed, acquired = lease_time(spec.get("renewTime")), lease_time(spec.get("acquireTime"))
        bucket = int(str(lease["metadata"]["name"]).rsplit("-", 1)[1])
        if not holder or renewed is None:
            return  # released: the gap runs until someone acquires it
        last = self._last.get(bucket)
        if last is not None and last[0] != holder and acquired is not None:
            self.gaps.append((bucket, last[0], holder, (acquired - last[1]).total_seconds()))
        self._last[bucket] = (holder, renewed)


def spread_namespaces() -> list[str]:
    """Eight namespaces, one in every fourth bucket: two in each quarter of the ring."""
    buckets = Buckets()
    wanted = set(range(0, buckets.count, 4))
    names: dict[int, str] = {}
    for i in range(100_000):
        bucket = buckets.of_namespace(f"chaos-{i}")
        if bucket in wanted:
            names.setdefault(bucket, f"chaos-{i}")
        if len(names) == len(wanted):
            break
    return [names[bucket] for bucket in sorted(names)]


@pytest.fixture(scope="module")
def gated_cluster() -> Iterator[Cluster]:
    with Cluster(Settings(nodes=2, extra_apiserver_args=(GATE,))) as running:
        install_crd(running, CRD_FILE.read_text(), c.CRD_NAME, c.PLURAL)
        for name in [LEASE_NAMESPACE, *spread_namespaces()]:
            running.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
        yield running


def test_sigkill_of_random_sharded_replicas_loses_nothing_and_repeats_nothing(
    gated_cluster: Cluster, tmp_path: Path
) -> None:
    cluster = gated_cluster
    namespaces = spread_namespaces()
    histories = {ns: History(cluster, ns).start() for ns in namespaces}
    ring = RingWatch(cluster).start()
    daemons: list[Daemon] = []
    rng = random.Random(SEED)
    try:
        start_replicas(cluster, tmp_path, daemons)
        template = pod_template(annotations=sim.outcome(duration=4))
        names = [(ns, f"job-{i}") for i in range(TASKSETS // len(namespaces)) for ns in namespaces]
        waves = [names[i::KILLS] for i in range(KILLS)]
        for batch in waves:
            for namespace, name in batch:
                TaskSets(cluster, namespace).create(
                    TaskSetBuilder(name).role("worker", 2, template=template).obj()
                )
            time.sleep(rng.uniform(*KILL_SPACING))
            victim = rng.choice(daemons)
            victim.kill()
            time.sleep(1.0)
            victim.start(wait_ready=False)
        for daemon in daemons:
            daemon.wait_ready()

        def unfinished() -> list[str]:
            return [
                f"{ns}/{name}"
                for ns, name in names
                if TaskSets(cluster, ns).status(name).get("phase") != c.TaskSetPhase.COMPLETED
            ]

        try:
            eventually(lambda: not unfinished(), FINAL_TIMEOUT, "every TaskSet completed", poll=2)
        except AssertionError as failed:
            raise AssertionError(f"{failed}: unfinished {unfinished()}") from None
        time.sleep(1.0)  # the records' watches see the last writes
        for ns, name in names:
            status = TaskSets(cluster, ns).status(name)
            assert status.get("state") == "Succeeded", (ns, name, status.get("state"))
            assert int(status.get("totalRetriedCount", 0)) == 0, (ns, name)
        for namespace, history in histories.items():
            verdict = history.verdict()
            assert not verdict.violations, (namespace, verdict.violations)
            pods = history.lifetimes("Pod")
            assert len(pods) == len({(p.taskset_uid, p.role, p.index) for p in pods}), (
                f"{namespace}: a replica's Pod was created twice"
            )
        ring.stop()
        assert ring.gaps, "no bucket changed hands: the kills moved nothing"
        longest = max(ring.gaps, key=lambda gap: gap[3])
        assert longest[3] <= UNOWNED_BOUND, (
            f"bucket {longest[0]} without a live holder for {longest[3]:.1f} s"
        )
        print(
            f"{KILLS} kills over {len(names)} TaskSets in {len(namespaces)} namespaces: all Succeeded; "
            f"{len(ring.gaps)} hand-overs, the longest {longest[3]:.1f} s without a live holder "
            f"(bound {UNOWNED_BOUND:.0f} s)"
        )
    finally:
        ring.stop()
        for history in histories.values():
            history.stop()
        for daemon in daemons:
            if daemon.running():
                daemon.stop(timeout=30)
