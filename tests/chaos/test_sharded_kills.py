"""Chaos while sharded: four replicas (``--shards auto``, ``ShardedListAndWatch`` on) split eight
namespaces while one of them, chosen at random, is SIGKILLed every 20-40 s and restarted. Its buckets
move only once their Leases expire (the dead replica neither renews nor releases), the new holder relists
before acting, and the restarted replica takes buckets back as the others release them. Nothing may be
lost or done twice: every TaskSet succeeds with no retry counted, and each namespace's history shows at
most one Pod per replica and one attempt per TaskSet alive at any revision.

Sized for a busy 2-core machine: 8 namespaces (two in each replica's share of a balanced ring), 48
TaskSets of two 4 s Pods arriving in waves over about two minutes, 5 kills (the issue asks 10 minutes of
kills; ``CHAOS_SCALE=long`` runs 20 kills, about 10 minutes). Lease timings: lease 10 s, renew 7 s.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from devcluster import Cluster, Settings, sim
from informers.shards import Buckets
from taskset.api import constants as c
from tests.builders import TaskSetBuilder, pod_template
from tests.chaos.history import History
from tests.integration.conftest import CRD_FILE, install_crd
from tests.integration.daemon import Daemon
from tests.integration.harness import TaskSets, eventually
from tests.integration.test_sharding import GATE, LEASE_NAMESPACE, metric, shard_args

pytestmark = [pytest.mark.timeout(1800)]

LONG = os.environ.get("CHAOS_SCALE") == "long"
REPLICAS = 4
KILLS = 20 if LONG else 5
WAVES = 6
SEED = int(os.environ.get("CHAOS_SEED", "40"))
FINAL_TIMEOUT = 300.0


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
    daemons: list[Daemon] = []
    rng = random.Random(SEED)
    try:
        for n in range(REPLICAS):
            log_dir = tmp_path / f"replica-{n}"
            log_dir.mkdir()
            daemons.append(Daemon(cluster, None, log_dir, *shard_args()).start(wait_ready=False))
        for daemon in daemons:
            daemon.wait_ready()
        eventually(
            lambda: [metric(d, "taskset_shard_buckets_held") for d in daemons] == [8.0] * REPLICAS,
            60,
            "every replica holds eight buckets",
        )
        template = pod_template(annotations=sim.outcome(duration=4))
        names = [(ns, f"job-{wave}") for wave in range(WAVES) for ns in namespaces]
        waves = [names[i::KILLS] for i in range(KILLS)]
        for batch in waves:
            for namespace, name in batch:
                TaskSets(cluster, namespace).create(
                    TaskSetBuilder(name).role("worker", 2, template=template).obj()
                )
            time.sleep(rng.uniform(20, 40))
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

        eventually(lambda: not unfinished(), FINAL_TIMEOUT, "every TaskSet completed", poll=2)
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
        print(f"{KILLS} kills over {len(names)} TaskSets in {len(namespaces)} namespaces: all Succeeded")
    finally:
        for history in histories.values():
            history.stop()
        for daemon in daemons:
            if daemon.running():
                daemon.stop(timeout=30)
