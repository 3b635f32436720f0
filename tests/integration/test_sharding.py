"""A horizontally sharded controller on the embedded control plane: four replicas (real daemon processes,
``--shards auto``) split the namespaces by bucket Leases, every TaskSet succeeds, each is reconciled by
one replica only, and each replica receives about a quarter of the events, by its own counters.

Run twice, on a control plane of its own each: with ``ShardedListAndWatch`` on (kube-apiserver filters
by ``shardSelector``) and off (everything arrives; the client-side filter drops three quarters, and the
counters show it). 200 TaskSets of one 1 s Pod each over 40 namespaces, names chosen by their hash so
that every bucket holds six or seven TaskSets (``LAYOUT``): a balanced ring gives every replica eight
buckets, so 48 to 56 TaskSets whichever eight it gets, a quarter within the tolerance. Lease timings
shorter than the defaults (lease 10 s, renew deadline 7 s, retry 1 s): a round renews eight Leases one
after another, which on a loaded machine takes seconds.
"""

from __future__ import annotations

import collections
import io
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from devcluster import Cluster, Settings, sim
from informers.shards import Buckets
from taskset.api import constants as c
from taskset_sdk.kubectl import main as kubectl_taskset
from tests.builders import TaskSetBuilder, pod_template
from tests.integration.conftest import CRD_FILE, install_crd
from tests.integration.daemon import Daemon
from tests.integration.harness import TaskSets, eventually

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]

REPLICAS = 4
NAMESPACES = 40
TASKSETS = 200
BUCKETS = Buckets()
RING = "taskset-shards"
LEASE_NAMESPACE = "taskset-system"
GATE = "--feature-gates=ShardedListAndWatch=true"
SHARE_TOLERANCE = 0.30  # each replica's share of the events: a quarter, within 30 %


def namespaces_by_bucket(wanted: int) -> list[list[str]]:
    """``wanted`` namespace names, by bucket: one in every bucket, and the rest one more in every fourth
    bucket (so the extra ones fall to replicas alike, whichever buckets each holds)."""
    assert BUCKETS.count <= wanted <= BUCKETS.count * 2
    doubled = set(range(0, BUCKETS.count, BUCKETS.count // (wanted - BUCKETS.count)))
    found: list[list[str]] = [[] for _ in range(BUCKETS.count)]
    for i in range(100_000):
        name = f"shard-{i}"
        bucket = BUCKETS.of_namespace(name)
        if len(found[bucket]) < 1 + (bucket in doubled):
            found[bucket].append(name)
        if sum(map(len, found)) == wanted:
            return found
    raise AssertionError("no names found for every bucket")


def layout() -> dict[str, int]:
    """TaskSets per namespace: ``TASKSETS`` spread over the buckets as evenly as integers allow (each
    bucket six or seven), a bucket's share split between its namespaces."""
    per_bucket, extra = divmod(TASKSETS, BUCKETS.count)
    counts: dict[str, int] = {}
    for bucket, names in enumerate(namespaces_by_bucket(NAMESPACES)):
        share = per_bucket + (bucket % (BUCKETS.count // extra) == 0 if extra else 0)
        for index, name in enumerate(names):
            counts[name] = share // len(names) + (index < share % len(names))
    return counts


LAYOUT = layout()


@pytest.fixture(scope="module", params=[True, False], ids=["gate-on", "gate-off"])
def sharded_cluster(request: pytest.FixtureRequest) -> Iterator[tuple[Cluster, bool]]:
    gate: bool = request.param
    settings = Settings(nodes=2, extra_apiserver_args=(GATE,) if gate else ())
    with Cluster(settings) as running:
        install_crd(running, CRD_FILE.read_text(), c.CRD_NAME, c.PLURAL)
        for name in [LEASE_NAMESPACE, *LAYOUT]:
            running.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
        yield running, gate


def shard_args() -> list[str]:
    return [
        "--shards=auto",
        "--leader-elect-lease-duration=10",
        "--leader-elect-renew-deadline=7",
        "--leader-elect-retry-period=1",
        f"--leader-elect-namespace={LEASE_NAMESPACE}",
        f"--leader-elect-id={RING}",
        "--shutdown-grace-period=5",
        "--workers=4",
    ]


def start_replicas(cluster: Cluster, tmp_path: Path, daemons: list[Daemon]) -> None:
    """Start ``REPLICAS`` sharded daemons, each logging in a folder of its own under ``tmp_path``, and wait
    until each holds its share of a balanced ring. They go into the caller's ``daemons`` as they start,
    so the caller's clean-up stops them even when a later one fails to start."""
    for n in range(REPLICAS):
        log_dir = tmp_path / f"replica-{n}"
        log_dir.mkdir()
        daemons.append(Daemon(cluster, None, log_dir, *shard_args()).start(wait_ready=False))
    for daemon in daemons:
        daemon.wait_ready()
    share = float(BUCKETS.count // REPLICAS)
    eventually(
        lambda: [metric(d, "taskset_shard_buckets_held") for d in daemons] == [share] * REPLICAS,
        60,
        "every replica holds its share of the buckets",
    )


def keys() -> list[tuple[str, int]]:
    return [(namespace, i) for namespace, count in LAYOUT.items() for i in range(count)]


def unfinished(cluster: Cluster) -> dict[str, object]:
    """The TaskSets not completed yet, with their phase (one list per namespace)."""
    found: dict[str, object] = {}
    for namespace, count in LAYOUT.items():
        listed = cluster.request("GET", f"/apis/{c.GROUP}/{c.VERSION}/namespaces/{namespace}/{c.PLURAL}")
        phases = {
            item["metadata"]["name"]: (item.get("status") or {}).get("phase") for item in listed["items"]
        }
        for i in range(count):
            if phases.get(f"job-{i}") != c.TaskSetPhase.COMPLETED:
                found[f"{namespace}/job-{i}"] = phases.get(f"job-{i}")
    return found


def metric(daemon: Daemon, name: str, collection: str | None = None) -> float:
    status, text = daemon.get(daemon.metrics_port, "/metrics")
    assert status == 200, text[-500:]
    labels = f'{{collection="{collection}"}}' if collection else ""
    match = re.search(rf"^{re.escape(name + labels)} (\S+)$", text, re.MULTILINE)
    return float(match.group(1)) if match else 0.0


def reconciled_keys(daemon: Daemon) -> set[str]:
    return {
        f"{r['namespace']}/{r['name']}"
        for r in daemon.records()
        if r.get("msg") == "reconciled" and "namespace" in r
    }


def owner_shown(cluster: Cluster, namespace: str) -> str:
    """The holder ``kubectl taskset owner`` prints for ``namespace``."""
    out = io.StringIO()
    argv = ["owner", "job-0", "-n", namespace, f"--kubeconfig={cluster.kubeconfig}"]
    assert kubectl_taskset([*argv, f"--controller-namespace={LEASE_NAMESPACE}", f"--ring={RING}"], out) == 0
    printed = out.getvalue().strip()
    assert printed.startswith(f"taskset/job-0: bucket {BUCKETS.of_namespace(namespace)} "), printed
    return printed.split("): ", 1)[1].split(", renewed", 1)[0]


def test_four_replicas_split_the_namespaces_and_each_taskset_has_one_writer(
    sharded_cluster: tuple[Cluster, bool], tmp_path: Path
) -> None:
    cluster, gate = sharded_cluster
    daemons: list[Daemon] = []
    try:
        start_replicas(cluster, tmp_path, daemons)
        template = pod_template(annotations=sim.outcome(duration=1))
        for namespace, i in keys():
            TaskSets(cluster, namespace).create(
                TaskSetBuilder(f"job-{i}").role("worker", 1, template=template).obj()
            )
        eventually(lambda: not unfinished(cluster), 300, "every TaskSet completed", poll=2)
        states = {(ns, i): TaskSets(cluster, ns).status(f"job-{i}").get("state") for ns, i in keys()}
        assert len(states) == TASKSETS
        assert set(states.values()) == {"Succeeded"}, states

        writers = collections.Counter(key for d in daemons for key in reconciled_keys(d))
        assert len(writers) == TASKSETS
        shared = {key: count for key, count in writers.items() if count > 1}
        assert not shared, f"TaskSets reconciled by more than one replica: {shared}"

        collection = "tasksets.v1alpha1.octopus.openi.pcl.cn"
        kept = [
            metric(d, "taskset_shard_objects_received_total", collection)
            - metric(d, "taskset_shard_objects_dropped_total", collection)
            for d in daemons
        ]
        total = sum(kept)
        assert total > 0
        for share in (k / total for k in kept):
            assert abs(share - 1 / REPLICAS) <= SHARE_TOLERANCE / REPLICAS, kept
        dropped = sum(metric(d, "taskset_shard_objects_dropped_total", collection) for d in daemons)
        if gate:
            # Custom resources are filtered by the server (v1.36.3 without the shardInfo echo).
            assert dropped == 0, dropped
        else:
            assert dropped >= total * (REPLICAS - 1) * 0.9, (dropped, total)
        pods = f"pods.v1 labels={c.LABEL_TASKSET}"
        server = [metric(d, "taskset_shard_server_filtered", pods) for d in daemons]
        assert server == ([1.0] * REPLICAS if gate else [0.0] * REPLICAS)

        # Each replica gained its buckets after its caches first listed (holding none), and followed each
        # change by listing only the gained buckets at the cache's exact resourceVersion: the server
        # served every such list, with or without the gate (a refused one would have cost a full relist).
        follows = [metric(d, "taskset_shard_follows_total", collection) for d in daemons]
        assert all(count >= 1 for count in follows), follows
        for name in (collection, pods):
            refused = [metric(d, "taskset_shard_follows_refused_total", name) for d in daemons]
            assert refused == [0.0] * REPLICAS, (name, refused)

        # `kubectl taskset owner` names, for every namespace, the replica that reconciled its TaskSets.
        shown = {
            daemon_index: {owner_shown(cluster, key.split("/")[0]) for key in reconciled_keys(d)}
            for daemon_index, d in enumerate(daemons)
        }
        assert all(len(holders) == 1 for holders in shown.values()), shown
        assert len({next(iter(holders)) for holders in shown.values()}) == REPLICAS, shown
    finally:
        for daemon in daemons:
            if daemon.running():
                daemon.stop(timeout=30)
    assert all(d.process is not None and d.process.returncode == 0 for d in daemons)
