"""``python -m bench.shards``: what a sharded controller costs per replica, at 1, 2 and 4 replicas, with
the same Pods cached.

One embedded control plane with ``ShardedListAndWatch`` on. For each configuration in turn (the
single-process install, ``--shards=off``, then ``--shards=auto`` with each count of ``--replicas``), the
replicas start, split the 32 buckets, and one TaskSet per bucket (one namespace in each, chosen by its
hash) asks for ``--pods`` Pods in all, that run until deleted. Once every Pod is Running (so in the
caches) each replica's resident memory, its CPU since it started, the objects its informers received
and dropped, the TaskSets it holds and its reconciles are read; then the TaskSets are deleted and the
replicas stopped. ``--rounds`` repeats the configurations, interleaved.

Not a test: on a 2-core machine the replicas share the cores with the control plane, so the figures
are each replica's own cost (and the throughput seen), not the speed-up a cluster would give.

    python -m bench.shards [--pods 10000] [--replicas 1,2,4] [--rounds 1] [--out bench/results]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.controller import Controller, Samples, cpu_by_process, cpu_seconds, memory_kib, total
from bench.kube import Api
from bench.recorder import TASKSETS_PATH, wait_until
from bench.run import DEFAULT_BURST, install_crd
from bench.scenarios import long_running
from devcluster import Cluster, Settings
from informers.shards import Buckets
from taskset.daemon.buckets import MSG_HELD_CHANGED, MSG_LAPSED

GATE = "--feature-gates=ShardedListAndWatch=true"
LEASE_NAMESPACE = "taskset-system"
SETTLE = 5.0  # seconds after the last Pod runs: the replicas' last passes and writes
TIMEOUT = 1800.0  # seconds for every Pod to run, and for every Pod to be gone again (a loaded 2-core machine)
WORKERS = 10


@dataclass(frozen=True)
class Config:
    """One configuration: ``replicas`` processes, sharded or the single-process install."""

    replicas: int
    sharded: bool

    @property
    def label(self) -> str:
        return f"{self.replicas} sharded" if self.sharded else "1 unsharded"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.shards", description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000, help="Pods cached, over all the TaskSets")
    parser.add_argument(
        "--replicas", default="1,2,4", help="sharded replica counts, each a divisor of the 32 buckets"
    )
    parser.add_argument("--rounds", type=int, default=1, help="times each configuration runs, interleaved")
    parser.add_argument("--nodes", type=int, default=4, help="simulated nodes")
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.replicas.split(",")]
    if any(n < 1 or Buckets().count % n for n in counts):
        parser.error(f"--replicas: each count must divide {Buckets().count}, got {args.replicas}")
    args.configs = [Config(1, sharded=False), *(Config(n, sharded=True) for n in counts)]
    return args


def namespace_per_bucket(prefix: str) -> list[str]:
    """One namespace name in each bucket, bucket by bucket."""
    buckets = Buckets()
    found: dict[int, str] = {}
    index = 0
    while len(found) < buckets.count:
        name = f"{prefix}-{index}"
        found.setdefault(buckets.of_namespace(name), name)
        index += 1
    return [found[bucket] for bucket in range(buckets.count)]


def pods_per_taskset(pods: int, tasksets: int) -> list[int]:
    """``pods`` split over ``tasksets`` as evenly as integers allow."""
    each, extra = divmod(pods, tasksets)
    return [each + (i < extra) for i in range(tasksets)]


def replica_args(config: Config, ring: str) -> list[str]:
    if not config.sharded:
        return []
    return [
        "--shards=auto",
        "--leader-elect-lease-duration=10",
        "--leader-elect-renew-deadline=7",
        "--leader-elect-retry-period=1",
        f"--leader-elect-namespace={LEASE_NAMESPACE}",
        f"--leader-elect-id={ring}",
    ]


@contextmanager
def replicas(cluster: Cluster, config: Config, ring: str) -> Iterator[list[Controller]]:
    """The configuration's controller processes, each with a log of its own; stopped on the way out."""
    started: list[Controller] = []
    try:
        for index in range(config.replicas):
            controller = Controller(cluster, workers=WORKERS, qps=0, burst=DEFAULT_BURST)
            controller.argv += replica_args(config, ring)
            controller.log_path = cluster.directory / "logs" / f"{ring}-{index}.log"
            controller.start(timeout=120.0)
            started.append(controller)
        yield started
    finally:
        for controller in started:
            controller.stop()


def received(samples: Samples) -> tuple[float, float]:
    """Objects the replica's informers received, and of those dropped by its client-side filter."""
    return (
        total(samples, "taskset_shard_objects_received_total"),
        total(samples, "taskset_shard_objects_dropped_total"),
    )


def tenure_troubles(log: Path) -> tuple[int, int]:
    """From a replica's log: its bucket Leases that lapsed (not renewed within the renew deadline) and the
    changes of its held set (each one a relist of its informers). A replica that keeps its share from
    start to end has no lapse and one change, the first acquisition."""
    counts = {MSG_LAPSED: 0, MSG_HELD_CHANGED: 0}
    for line in log.read_text(errors="replace").splitlines():
        try:
            msg = json.loads(line).get("msg")
        except (ValueError, AttributeError):
            continue
        if msg in counts:
            counts[msg] += 1
    return counts[MSG_LAPSED], counts[MSG_HELD_CHANGED]


def running_pods(api: Api, namespaces: list[str]) -> int:
    selector = "fieldSelector=status.phase%3DRunning"
    return sum(
        len(api.request("GET", f"/api/v1/namespaces/{ns}/pods?{selector}").get("items") or [])
        for ns in namespaces
    )


def any_pods(api: Api, namespaces: list[str]) -> bool:
    return any(api.request("GET", f"/api/v1/namespaces/{ns}/pods?limit=1").get("items") for ns in namespaces)


def measure(cluster: Cluster, api: Api, config: Config, pods: int, run: int) -> dict[str, Any]:
    ring = f"bench-shards-{run}-{config.replicas}{'s' if config.sharded else 'u'}"
    namespaces = namespace_per_bucket(ring)
    for namespace in namespaces:
        api.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    sizes = pods_per_taskset(pods, len(namespaces))
    with replicas(cluster, config, ring) as started:
        if config.sharded:
            share = Buckets().count // config.replicas
            wait_until(
                lambda: all(total(c.scrape(), "taskset_shard_buckets_held") == share for c in started),
                120,
                f"{config.label}: every replica holds {share} buckets",
                poll=1.0,
            )
        before = {c.pid: (cpu_seconds(c.pid), received(c.scrape())) for c in started}
        plane_before = cpu_by_process(cluster.pids())
        begun = time.monotonic()
        for namespace, size in zip(namespaces, sizes, strict=True):
            api.request("POST", TASKSETS_PATH.format(ns=namespace), long_running("cached", size))
        wait_until(lambda: running_pods(api, namespaces) >= pods, TIMEOUT, "every Pod Running", poll=3.0)
        all_running = time.monotonic() - begun
        time.sleep(SETTLE)
        plane = cpu_by_process(cluster.pids())
        rows = []
        for index, controller in enumerate(started):
            samples = controller.scrape()
            memory = memory_kib(controller.pid)
            cpu_then, (got_then, dropped_then) = before[controller.pid]
            got, dropped = received(samples)
            lapsed, changed = tenure_troubles(controller.log_path)
            rows.append(
                {
                    "replica": index,
                    "rss_mib": round(memory.get("VmRSS", 0) / 1024, 1),
                    "peak_rss_mib": round(memory.get("VmHWM", 0) / 1024, 1),
                    "cpu_s": round(cpu_seconds(controller.pid) - cpu_then, 2),
                    "objects_received": int(got - got_then) if config.sharded else None,
                    "objects_dropped": int(dropped - dropped_then) if config.sharded else None,
                    "tasksets_held": int(total(samples, "taskset_shard_tasksets"))
                    if config.sharded
                    else None,
                    "reconciles": int(total(samples, "controller_runtime_reconcile_total")),
                    "leases_lapsed": lapsed if config.sharded else None,
                    "held_set_changes": changed if config.sharded else None,
                    "follows_refused": int(total(samples, "taskset_shard_follows_refused_total"))
                    if config.sharded
                    else None,
                }
            )
        for namespace in namespaces:
            api.request("DELETE", TASKSETS_PATH.format(ns=namespace) + "/cached", allow=(404,))
        wait_until(lambda: not any_pods(api, namespaces), TIMEOUT, "every Pod gone", poll=3.0)
    for namespace in namespaces:
        api.request("DELETE", f"/api/v1/namespaces/{namespace}", allow=(404,))
    return {
        "config": config.label,
        "replicas": config.replicas,
        "sharded": config.sharded,
        "pods": pods,
        "seconds_to_all_running": round(all_running, 1),
        "pods_per_second": round(pods / all_running, 1),
        "kube_apiserver_cpu_s": round(
            plane.get("kube-apiserver", 0.0) - plane_before.get("kube-apiserver", 0.0), 1
        ),
        "per_replica": rows,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }


def table(results: list[dict[str, Any]]) -> list[str]:
    """One row per configuration (medians over its rounds, per replica means within a round)."""
    lines = [
        "| configuration | RSS MiB per replica | peak RSS MiB per replica | CPU s per replica | objects "
        "received per replica | dropped | TaskSets held per replica | Leases lapsed | held-set changes "
        "| full relists after a refused follow | Pods/s | kube-apiserver CPU s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    by_config: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        by_config.setdefault(result["config"], []).append(result)

    def per_replica(runs: list[dict[str, Any]], key: str) -> str:
        values = [r[key] for run in runs for r in run["per_replica"] if r[key] is not None]
        if not values:
            return "-"
        return f"{statistics.median(values):g} ({min(values):g}-{max(values):g})"

    for label, runs in by_config.items():
        rate = statistics.median(run["pods_per_second"] for run in runs)
        server = statistics.median(run["kube_apiserver_cpu_s"] for run in runs)
        cells = [per_replica(runs, key) for key in ("rss_mib", "peak_rss_mib", "cpu_s", "objects_received")]
        cells += [
            per_replica(runs, key)
            for key in (
                "objects_dropped",
                "tasksets_held",
                "leases_lapsed",
                "held_set_changes",
                "follows_refused",
            )
        ]
        lines.append(f"| {label} | {' | '.join(cells)} | {rate:g} | {server:g} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    results: list[dict[str, Any]] = []
    settings = Settings(nodes=args.nodes, disable_qps_limits=True, extra_apiserver_args=(GATE,))
    with Cluster(settings) as cluster:
        api = Api(cluster)
        install_crd(cluster, api)
        api.request("POST", "/api/v1/namespaces", {"metadata": {"name": LEASE_NAMESPACE}})
        for run in range(1, args.rounds + 1):
            for config in args.configs:
                result = measure(cluster, api, config, args.pods, run)
                results.append(result)
                print(json.dumps(result), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"shards-{args.pods}.json"
    path.write_text(json.dumps(results, indent=2))
    print("\n".join(table(results)))
    print(f"written {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
