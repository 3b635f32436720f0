"""What each kind of request costs the control plane: CPU seconds of kube-apiserver and etcd (and of the
components it sets to work) per request, on the embedded control plane, with no controller running.
Not a test: run it and read the table.

    python -m bench.prices [--requests 300] [--threads 10]

It is the evidence behind the throughput bound of ``bench/README.md``: on a 2-core machine the API server
is the bottleneck, so a TaskSet's requests other than its Pod creates (its own create, the ControlUnit,
status writes, events) come out of the Pod-create budget. Each kind is sent ``--requests`` times from
``--threads`` threads; CPU is read from ``/proc`` before and after (plus a settle second for the work a
request sets off in other components). The TaskSet status is a 5-replica one, as a burst TaskSet's, and
the Pods are the controller's own (``bench.scenarios.raw_pod``).
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from bench.controller import cpu_by_process
from bench.kube import Api
from bench.run import install_crd
from bench.scenarios import raw_pod, taskset
from devcluster import Cluster, Settings
from taskset.api import constants as c

NAMESPACE = "prices"
SETTLE = 1.5  # seconds for the work a request sets off elsewhere (scheduler, kwok, GC) to be done
Request = Callable[[int], None]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.prices", description=__doc__)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--threads", type=int, default=10)
    args = parser.parse_args(argv)
    with Cluster(Settings(nodes=4, disable_qps_limits=True)) as cluster:
        api = Api(cluster, maxsize=2 * args.threads)
        install_crd(cluster, api)
        api.request("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        time.sleep(2.0)  # the namespace's service account
        print("| request | per second | kube-apiserver ms | etcd ms | others ms |")
        print("|---|---|---|---|---|")
        for label, request in requests(api, args.requests):
            print(measure(cluster, label, request, args.requests, args.threads), flush=True)
    return 0


def requests(api: Api, n: int) -> list[tuple[str, Request]]:
    tasksets = f"/apis/{c.GROUP}/{c.VERSION}/namespaces/{NAMESPACE}/{c.PLURAL}"
    pods = f"/api/v1/namespaces/{NAMESPACE}/pods"
    created: list[dict[str, Any]] = [{} for _ in range(n)]
    unit = api.request("POST", f"/api/v1/namespaces/{NAMESPACE}/configmaps", {"metadata": {"name": "unit"}})

    def create_taskset(i: int) -> None:
        created[i] = api.request("POST", tasksets, taskset(f"t{i:05d}", 4))

    def write_status(i: int) -> None:
        meta = created[i]["metadata"]
        body = {
            "apiVersion": created[i]["apiVersion"],
            "kind": "TaskSet",
            "metadata": {
                "name": meta["name"],
                "namespace": NAMESPACE,
                "resourceVersion": meta["resourceVersion"],
            },
            "status": five_replica_status(),
        }
        created[i] = api.request("PUT", f"{tasksets}/{meta['name']}/status", body)

    def create_event(i: int) -> None:
        involved = {"kind": "TaskSet", "name": f"t{i:05d}", "namespace": NAMESPACE, "uid": str(uuid.uuid4())}
        event = {
            "metadata": {"name": f"t{i:05d}.{uuid.uuid4().hex[:16]}"},
            "involvedObject": involved,
            "reason": "TaskSet State Transition",
            "message": "Pre:TaskSetAttemptPreparing,Next:TaskSetAttemptRunning",
            "type": "Normal",
            "source": {"component": "taskset-controller"},
            "count": 1,
        }
        api.request("POST", f"/api/v1/namespaces/{NAMESPACE}/events", event)

    def create_configmap(i: int) -> None:
        api.request(
            "POST", f"/api/v1/namespaces/{NAMESPACE}/configmaps", {"metadata": {"name": f"cm{i:05d}"}}
        )

    def create_unscheduled_pod(i: int) -> None:
        pod = raw_pod(f"u{i:05d}", NAMESPACE, unit)
        pod["spec"]["schedulerName"] = "none"  # no scheduler picks it: the create alone
        api.request("POST", pods, pod)

    def create_pod(i: int) -> None:
        api.request("POST", pods, raw_pod(f"p{i:05d}", NAMESPACE, unit))

    def delete_pod(i: int) -> None:
        options = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}
        api.request("DELETE", f"{pods}/u{i:05d}", options)

    return [
        ("POST TaskSet", create_taskset),
        ("PUT TaskSet status (5 replicas)", write_status),
        ("POST Event", create_event),
        ("POST ConfigMap", create_configmap),
        ("POST Pod, never scheduled", create_unscheduled_pod),
        ("POST Pod, scheduled and run (kwok)", create_pod),
        ("DELETE Pod, never scheduled", delete_pod),
    ]


def five_replica_status() -> dict[str, Any]:
    def replica(index: int) -> dict[str, Any]:
        return {
            "index": index,
            "name": f"worker-{index}",
            "phase": "TaskRoleReplicaAttemptRunning",
            "phaseMessage": "TaskRole replica is running",
            "transitionTime": "2026-11-22T10:00:00Z",
            "startAt": "2026-11-22T10:00:00Z",
            "podName": f"t-worker-{index}",
            "podUID": str(uuid.uuid4()),
            "podIP": "10.0.0.1",
            "podHostIP": "10.1.0.1",
            "totalRetriedCount": 0,
        }

    def role(name: str, replicas: int) -> dict[str, Any]:
        return {
            "name": name,
            "phase": "TaskRoleRunning",
            "state": "Running",
            "replicaStatus": [replica(i) for i in range(replicas)],
        }

    return {
        "phase": "TaskSetAttemptRunning",
        "state": "Running",
        "phaseMessage": "TaskSet is running",
        "transitionTime": "2026-11-22T10:00:00Z",
        "controlUnitUID": str(uuid.uuid4()),
        "totalRetriedCount": 0,
        "roleStatus": [role("ps", 1), role("worker", 4)],
    }


def measure(cluster: Cluster, label: str, request: Request, n: int, threads: int) -> str:
    pids = cluster.pids()
    time.sleep(SETTLE)
    before = cpu_by_process(pids)
    started = time.monotonic()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(request, range(n)))
    elapsed = time.monotonic() - started
    time.sleep(SETTLE)
    after = cpu_by_process(pids)
    used = {name: (after[name] - before[name]) / n * 1000 for name in after if name in before}
    others = sum(v for name, v in used.items() if name not in ("kube-apiserver", "etcd"))
    return (
        f"| {label} | {n / elapsed:.0f} | {used.get('kube-apiserver', 0):.2f} | {used.get('etcd', 0):.2f} "
        f"| {others:.2f} |"
    )


if __name__ == "__main__":
    raise SystemExit(main())
