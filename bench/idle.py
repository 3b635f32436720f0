"""``python -m bench.idle``: the controller's RSS once it is ready, before it has seen a single object.

One embedded control plane with the CRD installed and no TaskSet; the controller is started as the
bench starts it (``--kubeconfig``, so the kubeconfig loader is in), its RSS read once ``/readyz`` says
its caches synced (after a short settle), then stopped; ``--rounds`` times. ``--tree DIR`` (repeatable)
runs the daemon of another checkout instead, interleaved round by round, so two versions meet the same
machine. Prints one line per start and the median with its range per tree.

    python -m bench.idle --rounds 5 --tree . --tree /path/to/previous
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from bench.controller import Controller, memory_kib
from bench.kube import Api
from bench.run import install_crd
from devcluster import Cluster, Settings

ROOT = Path(__file__).resolve().parents[1]
SETTLE_SECONDS = 2.0  # after ready: the informers' first (empty) lists are in and their watches open


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.idle", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tree", action="append", type=Path, help="a checkout whose daemon to start")
    args = parser.parse_args(argv)
    trees = [tree.resolve() for tree in args.tree or [ROOT]]
    figures: dict[Path, list[float]] = {tree: [] for tree in trees}
    with Cluster(Settings(nodes=1)) as cluster:
        install_crd(cluster, Api(cluster))
        for round_ in range(1, args.rounds + 1):
            for tree in trees:
                controller = Controller(cluster, workers=10, qps=0, burst=100)
                controller.start(cwd=tree)
                time.sleep(SETTLE_SECONDS)
                rss = memory_kib(controller.pid).get("VmRSS", 0) / 1024
                controller.stop()
                figures[tree].append(rss)
                print(f"round {round_} {tree}: RSS after start {rss:.1f} MiB", flush=True)
    for tree, values in figures.items():
        print(
            f"{tree}: median {statistics.median(values):.1f} MiB "
            f"(range {min(values):.1f}-{max(values):.1f}, {len(values)} starts)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
