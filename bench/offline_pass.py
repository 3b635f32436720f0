"""``python -m bench.offline_pass [REPLICAS]``: the workers' pass over one large TaskSet, offline.

The real ``Reconciler`` over in-memory caches and a client that answers at once
(``tests/unit/taskset/world.py``): one TaskSet of ``REPLICAS`` Pods (2,000, as the ``large`` scenario)
created, then Running and then Succeeded 80 Pods a pass, as the scenario's pacing gives. It prints the
passes and their CPU time, measured around ``reconcile`` alone, with the collector set as the daemon
sets it once its caches synced (``taskset.daemon.main``). No API server, no watch: what is left is the
pass itself, so that a change to it is measured without the control plane's noise. Two checkouts
compare by running it from each (``cd <worktree> && python -m bench.offline_pass``), alternately.
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


class Driver:
    """One TaskSet's API server side and caches, and the passes its changes bring."""

    def __init__(self, replicas: int) -> None:
        world = World(TaskSetBuilder("job").role("worker", replicas).obj())
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
                cached = self.caches.pods.get_by_key(f"ns/{name}")
                if cached is not None:
                    # a new object, as a watch event brings: the cached one is never changed
                    pod = copy.deepcopy(cached)
                    change(pod)
                    pod["metadata"]["resourceVersion"] = str(int(cached["metadata"]["resourceVersion"]) + 1)
                    self.caches.pods.update(pod)
            self.one_pass()


def succeeded(pod: dict[str, Any]) -> None:
    exit_pod(pod, 0)


def main(replicas: int = REPLICAS) -> Driver:
    configure_logging("info", stream=io.StringIO())  # the daemon's records, rendered, kept nowhere
    driver = Driver(replicas)
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
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
    main(int(sys.argv[1]) if len(sys.argv) > 1 else REPLICAS)
