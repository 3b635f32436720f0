"""``python -m bench.cache_memory [PODS]``: what the controller's memory per cached Pod is made of, offline.

The ``cache`` scenario measures the whole process holding 10,000 Running Pods; this splits what the
largest parts hold, one step at a time in one fresh interpreter, reading the process's RSS around each:
the Pod cache (the recorded Pod, given each copy its own name, UID and IP, decoded and slimmed as the
watch does, in a store with the controller's indexes), the Pod views, the TaskSets' statuses (500 Running
replicas each, as read live and parsed), and those statuses as a TaskSet's record keeps them once a pass
wrote them (the JSON written, its parse, the status writer), in place of those read.
"""

from __future__ import annotations

import copy
import gc
import sys
from pathlib import Path
from typing import Any

import orjson

from informers.pruned import PrunedDecoder
from informers.store import Store
from taskset.api.constants import ANNOTATION_REPLICA_INDEX, ANNOTATION_TASKSET, LABEL_ROLE, LABEL_TASKSET
from taskset.api.status import TaskSetStatus
from taskset.api.status_writes import StatusWriter
from taskset.observed.slim import POD_SHAPE, slim_pod
from taskset.runtime.indexes import POD_INDEX, taskset_index
from taskset.runtime.lost_nodes import NODE_INDEX, pod_node_index
from taskset.runtime.pod_views import PodViews

RECORDED_POD = Path(__file__).resolve().parent / "data" / "pod.json"
REPLICAS = 500  # a TaskSet's, as in the ``cache`` scenario


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
    return 0.0


def watch_lines(pods: int) -> list[bytes]:
    """The ADDED events of ``pods`` copies of the recorded Pod, ``REPLICAS`` to a TaskSet."""
    pod = orjson.loads(RECORDED_POD.read_bytes())
    lines = []
    for i in range(pods):
        copied, taskset, index = copy.deepcopy(pod), f"cache-{i // REPLICAS}", i % REPLICAS
        meta = copied["metadata"]
        meta |= {"name": f"{taskset}-worker-{index}", "namespace": "bench-cache"}
        meta |= {"uid": f"{i:08d}-0000-0000-0000-000000000000", "resourceVersion": str(100000 + i)}
        meta["labels"] |= {LABEL_TASKSET: taskset, LABEL_ROLE: "worker"}
        meta["annotations"] |= {ANNOTATION_TASKSET: taskset, ANNOTATION_REPLICA_INDEX: str(index)}
        copied["status"]["podIP"] = f"10.0.{i // 250}.{i % 250}"
        lines.append(orjson.dumps({"type": "ADDED", "object": copied}))
    return lines


def running_replica(index: int, taskset: str) -> dict[str, Any]:
    return {
        "index": index,
        "name": "worker",
        "phase": "TaskRoleReplicaAttemptRunning",
        "phaseMessage": "Pod is running",
        "stopped": False,
        "transitionTime": f"2026-12-04T02:4{index % 10}:1{index % 7}Z",
        "startAt": f"2026-12-04T02:4{index % 10}:1{index % 7}Z",
        "finishAt": None,
        "totalRetriedCount": 0,
        "podName": f"{taskset}-worker-{index}",
        "podReason": "",
        "podUID": f"{index:08d}-1111-2222-3333-444444444444",
        "podIP": f"10.0.{index // 250}.{index % 250}",
        "podHostIP": "10.1.0.3",
        "containerName": "main",
        "containerID": f"containerd://{index:064d}",
        "terminatedInfo": None,
        "uncountedRetries": 0,
        "failure": None,
        "nextRetryAt": None,
    }


def main(pods: int) -> None:
    lines = watch_lines(pods)
    statuses: list[tuple[Any, TaskSetStatus | None]] = []  # as read live, dropped once recorded
    records: list[Any] = []  # held to the end, as the controller holds them

    def step(what: str, before: float) -> float:
        gc.collect()
        after = rss_mib()
        print(
            f"{what}: +{after - before:.1f} MiB, {(after - before) * 1024 / pods:.2f} KiB a Pod", flush=True
        )
        return after

    start = rss_mib()
    decoder = PrunedDecoder(POD_SHAPE)
    store = Store(indexers={POD_INDEX: taskset_index, NODE_INDEX: pod_node_index}, transform=slim_pod)
    for line in lines:
        store.add(decoder.event(line)["object"])
    mark = step("the Pod cache (slim Pods in the store, with its indexes)", start)
    views = PodViews()
    for obj in store.list():
        views.of(obj)
    mark = step("the Pod views", mark)
    for t in range(pods // REPLICAS):
        replicas = [running_replica(i, f"cache-{t}") for i in range(REPLICAS)]
        written = orjson.loads(
            orjson.dumps(
                {
                    "phase": "TaskSetAttemptRunning",
                    "state": "Running",
                    "roleStatus": [{"name": "worker", "phase": "TaskRoleRunning", "replicaStatus": replicas}],
                }
            )
        )
        statuses.append((written, TaskSetStatus.from_json(written)))
    step("the statuses, as read live (full shape) and parsed", mark)
    for read, parsed in statuses:
        if parsed is not None:  # a pass writes a copy; the record keeps what it wrote, parsed at the next
            writer = StatusWriter()
            written = writer.to_json(parsed.copy())
            again = TaskSetStatus.from_json(written, (read, parsed))
            if again is not None:
                writer.adopt(written, again)
            records.append((writer, written, again))
    statuses.clear()
    step("the statuses as the records keep them (written, parsed, and the writers)", mark)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000)
