"""Smoke demo of the embedded control plane: start it, show the nodes, run one simulated pod to success."""

from __future__ import annotations

import json
import sys
import time

from devcluster import Cluster, Settings, sim

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "hello", "namespace": "default", "annotations": sim.annotations(duration=2)},
    "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]},
}


def main() -> int:
    started = time.monotonic()
    with Cluster(Settings(nodes=2)) as cluster:
        print(f"control plane ready in {time.monotonic() - started:.1f}s at {cluster.server}", flush=True)
        print(cluster.kubectl("version").stdout, flush=True)
        print(cluster.kubectl("get", "nodes", "-o", "wide").stdout, flush=True)
        cluster.kubectl("apply", "-f", "-", input=json.dumps(POD))
        phase = ""
        deadline = time.monotonic() + 60
        while phase not in ("Succeeded", "Failed") and time.monotonic() < deadline:
            time.sleep(0.5)
            phase = cluster.kubectl("get", "pod", "hello", "-o", "jsonpath={.status.phase}").stdout
            print(f"pod/hello: {phase}", flush=True)
        print(cluster.kubectl("get", "pod", "hello", "-o", "wide").stdout, flush=True)
    return 0 if phase == "Succeeded" else 1


if __name__ == "__main__":
    sys.exit(main())
