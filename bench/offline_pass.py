"""``python -m bench.offline_pass [REPLICAS]``: the workers' pass over one large TaskSet, offline;
``python -m bench.offline_pass --small``: the passes of ``burst``'s small TaskSets, at four sizes.

The real ``Reconciler`` over in-memory caches and a client that answers at once
(``tests/unit/taskset/world.py``): one TaskSet of ``REPLICAS`` Pods (2,000, as the ``large`` scenario)
created, then Running and then Succeeded 80 Pods a pass, as the scenario's pacing gives. It prints the
passes and their CPU time, measured around ``reconcile`` alone, with the collector set as the daemon
sets it once its caches synced (``taskset.daemon.main``). No API server, no watch: what is left is the
pass itself, so that a change to it is measured without the control plane's noise. Two checkouts
compare by running it from each (``cd <worktree> && python -m bench.offline_pass``), alternately.

``--small`` runs the life of ``burst``'s TaskSet (one ``ps`` and four workers whose success ends it) many
times over, and of the same TaskSet with 9, 19 and 39 workers: created, its Pods shown, all Running,
the workers exited, their Pods gone, the ``ps`` Pod gone, a pass each, as the scenario's waves give. It
prints the CPU a pass costs at each size, and the straight line through them: what a pass costs
whatever its size, and what each replica adds (bench/README.md, "What a small TaskSet's pass is made of").
"""

from __future__ import annotations

import copy
import gc
import io
import sys
import time
from collections.abc import Callable
from typing import Any

from taskset.daemon.logs import configure_logging
from taskset.daemon.main import GC_THRESHOLDS
from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import (
    RecordingClient,
    World,
    cached_taskset,
    exit_pod,
    reconciler_over,
    run_pod,
    show_created,
)

REPLICAS = 2000
STEP = 80  # Pods that change between two passes
KEY = "ns/job"
SMALL_WORKERS = (4, 9, 19, 39)  # burst's TaskSet has 4 workers and a ps
SMALL_REPLICAS = 4000  # replicas' lives per size: as many passes at every size as the noise needs


class Driver:
    """One TaskSet's API server side and caches, and the passes its changes bring."""

    def __init__(self, replicas: int, taskset: dict[str, Any] | None = None) -> None:
        world = World(taskset or TaskSetBuilder("job").role("worker", replicas).obj())
        self.client = RecordingClient(cached_taskset(world))
        self.reconciler, self.caches = reconciler_over(world, self.client)
        self.names = [f"job-worker-{i}" for i in range(replicas)]
        self.passes = 0
        self.cpu = 0.0

    def one_pass(self) -> None:
        started = time.process_time()
        self.reconciler.reconcile(KEY)
        self.cpu += time.process_time() - started
        self.passes += 1
        live = {key: value for key, value in self.client.live.items() if key != "status"}
        self.caches.tasksets.update({**live, "metadata": dict(live["metadata"])})  # as slim_taskset
        show_created(self.reconciler, self.client, self.caches)

    def move(self, change: Callable[[dict[str, Any]], None]) -> None:
        """``change`` every cached Pod, ``STEP`` of them before each pass."""
        for start in range(0, len(self.names), STEP):
            for name in self.names[start : start + STEP]:
                self._update(name, change)
            self.one_pass()

    def _update(self, name: str, change: Callable[[dict[str, Any]], None]) -> bool:
        """``change`` the cached Pod ``name``, if there is one: a new object, as a watch event brings (the
        cached one is never changed)."""
        cached = self.caches.pods.get_by_key(f"ns/{name}")
        if cached is None:
            return False
        pod = copy.deepcopy(cached)
        change(pod)
        pod["metadata"]["resourceVersion"] = str(int(cached["metadata"]["resourceVersion"]) + 1)
        self.caches.pods.update(pod)
        return True

    def change(self, names: list[str], change: Callable[[dict[str, Any]], None]) -> None:
        """``change`` the cached Pods ``names``, each of which is there, then a pass."""
        for name in names:
            if not self._update(name, change):
                raise LookupError(f"Pod {name} is not cached")
        self.one_pass()

    def remove(self, names: list[str]) -> None:
        """The Pods ``names`` leave the cache, as their delete events take them out, then a pass."""
        for name in names:
            cached = self.caches.pods.get_by_key(f"ns/{name}")
            if cached is None:
                raise LookupError(f"Pod {name} is not cached")
            self.caches.pods.delete(cached)
        # show_created puts back every created object the cache lacks: a removed Pod must not come back
        self.client.created = [obj for obj in self.client.created if obj["metadata"]["name"] not in names]
        self.one_pass()


def succeeded(pod: dict[str, Any]) -> None:
    exit_pod(pod, 0)


def _settled_collector() -> None:
    """The collector as the daemon sets it once its caches synced."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def small_life(workers: int) -> Driver:
    """The passes of one small TaskSet's life, as ``burst``'s waves bring them (the module's doc)."""
    taskset = (
        TaskSetBuilder("job")
        .role("ps", 1)
        .role("worker", workers, event_policy=[("RoleSucceeded", "TaskSetSucceeded")])
        .obj()
    )
    driver = Driver(workers, taskset)
    driver.one_pass()  # the ControlUnit, and the Pods from its create's response
    driver.one_pass()  # the creates shown by the cache
    driver.change(["job-ps-0", *driver.names], run_pod)
    driver.change(driver.names, succeeded)  # the workers' Pods deleted once their ends are written
    driver.remove(driver.names)
    driver.remove(["job-ps-0"])
    return driver


def small(sizes: tuple[int, ...] = SMALL_WORKERS, replicas: int = SMALL_REPLICAS) -> dict[int, float]:
    """CPU ms a pass at each number of workers, and the line through them (printed)."""
    configure_logging("info", stream=io.StringIO())
    _settled_collector()
    small_life(sizes[0])  # imports and first-use caches out of the figures
    per_pass = {}
    for workers in sizes:
        passes, cpu = 0, 0.0
        for _ in range(max(1, replicas // (workers + 1))):
            driver = small_life(workers)
            passes, cpu = passes + driver.passes, cpu + driver.cpu
        per_pass[workers + 1] = cpu / passes * 1000
        print(f"{workers + 1} replicas: {passes} passes, {per_pass[workers + 1]:.3f} ms a pass", flush=True)
    fixed, each = straight_line(per_pass)
    print(f"a pass: {fixed:.3f} ms whatever its size, {each:.4f} ms a replica", flush=True)
    return per_pass


def straight_line(points: dict[int, float]) -> tuple[float, float]:
    """Least squares: the intercept and the slope of the line through ``points``."""
    n = len(points)
    mean_x, mean_y = sum(points) / n, sum(points.values()) / n
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points.items()) / sum(
        (x - mean_x) ** 2 for x in points
    )
    return mean_y - slope * mean_x, slope


def main(replicas: int = REPLICAS) -> Driver:
    configure_logging("info", stream=io.StringIO())  # the daemon's records, rendered, kept nowhere
    driver = Driver(replicas)
    _settled_collector()
    driver.one_pass()  # the ControlUnit and the Pods
    driver.one_pass()
    driver.move(run_pod)
    driver.move(succeeded)
    print(
        f"{driver.passes} passes of {replicas} replicas: {driver.cpu:.2f} CPU s, "
        f"{driver.cpu / driver.passes * 1000:.1f} ms a pass",
        flush=True,
    )
    return driver


if __name__ == "__main__":
    if sys.argv[1:] == ["--small"]:
        small()
    else:
        main(int(sys.argv[1]) if len(sys.argv) > 1 else REPLICAS)
