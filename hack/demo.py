"""`make demo`: the TaskSet controller running the seed README's ps-worker TaskSet to its end on an
embedded control plane (no cluster needed).

It starts etcd, kube-apiserver, the scheduler, the controller-manager and kwok's simulated nodes on
loopback, runs the real daemon (`python -m taskset.daemon.main --kubeconfig ...`, which registers the CRD),
applies `tests/examples/readme-zh-quickstart.yaml` unchanged except for simulation annotations (each
container's `sleep N; exit K` becomes "run N/10 s, then exit K"), prints the TaskSet's progress live,
and cleans everything up. Exit status 0 means the TaskSet ended Succeeded, as the README promises.

On the way it prints the layout injected into one worker (the peer lists every container
gets) and resolves that worker's DNS name through CoreDNS, started beside the control plane as a real
cluster runs it, to the IP of its Pod.
"""

from __future__ import annotations

import copy
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from devcluster import Cluster, Settings, sim
from devcluster.coredns import CLUSTER_DOMAIN, CoreDNS
from taskset_sdk.kubectl import main as kubectl_taskset

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "tests" / "examples" / "readme-zh-quickstart.yaml"
TIME_SCALE = 10  # simulated seconds per real second: "sleep 30" runs 3 s
DEADLINE = 120.0  # seconds for the TaskSet to finish
COMMAND = re.compile(r"sleep (\d+)\s*;\s*exit (\d+)")


def simulate(taskset: dict[str, Any]) -> dict[str, Any]:
    """Turn each role's `sleep N; exit K` command into kwok simulation annotations on its template."""
    result = copy.deepcopy(taskset)
    for role in result["spec"]["roles"]:
        template = role.setdefault("template", {})
        command = " ".join(template["spec"]["containers"][0].get("command") or [])
        match = COMMAND.search(command)
        if match:
            seconds, code = int(match.group(1)) / TIME_SCALE, int(match.group(2))
            annotations = template.setdefault("metadata", {}).setdefault("annotations", {})
            annotations.update(sim.outcome(duration=seconds, exit_code=code))
    return result


def progress_line(status: dict[str, Any]) -> str:
    roles = []
    for role in status.get("roleStatus") or []:
        phases = [
            r["phase"].removeprefix("TaskRoleReplica").removeprefix("Attempt") for r in role["replicaStatus"]
        ]
        roles.append(f"{role['name']}[{role['state']}: {' '.join(phases)}]")
    phase = str(status.get("phase", "")).removeprefix("TaskSet")
    return f"{status.get('state', '?'):9} {phase:26} {'  '.join(roles)}"


def main() -> int:
    started = time.monotonic()
    with Cluster(Settings(nodes=2)) as cluster:
        print(f"control plane ready in {time.monotonic() - started:.1f}s: {cluster.server}", flush=True)
        print(cluster.kubectl("get", "nodes").stdout, flush=True)
        log_path = cluster.directory / "logs" / "taskset-controller.log"
        with log_path.open("wb") as log:
            daemon = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "taskset.daemon.main",
                    f"--kubeconfig={cluster.kubeconfig}",
                    "--metrics-bind-address=127.0.0.1:0",
                    "--metrics-secure=false",  # one plain-HTTP port for all three paths, on loopback
                    "--health-probe-bind-address=127.0.0.1:0",
                    "--workers=4",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            coredns = CoreDNS(cluster).start()
            try:
                return run_demo(cluster, log_path, coredns)
            finally:
                coredns.stop()
                daemon.send_signal(signal.SIGTERM)
                code = daemon.wait(30)
                print(f"controller stopped (exit code {code})", flush=True)


def show_layout(cluster: Cluster, coredns: CoreDNS, pod_name: str) -> bool:
    """Print the peer lists injected into ``pod_name`` and resolve its name through CoreDNS, once the
    Pod has an IP; False while it has none yet."""
    got = cluster.kubectl("get", "pod", pod_name, "-o", "json", check=False)
    pod = json.loads(got.stdout) if got.returncode == 0 else {}
    ip = (pod.get("status") or {}).get("podIP")
    if not ip:
        return False
    env = {e["name"]: e.get("value", "") for e in pod["spec"]["containers"][0].get("env") or []}
    print(f"\nthe layout injected into {pod_name}:")
    for name in sorted(key for key in env if key.startswith(("TASKSET_", "TASKROLE_"))):
        print(f"  {name}={env[name]}")
    namespace = pod["metadata"]["namespace"]
    fqdn = f"{pod['spec']['hostname']}.{pod['spec']['subdomain']}.{namespace}.svc.{CLUSTER_DOMAIN}"
    print(f"CoreDNS: {fqdn} -> {', '.join(coredns.resolve(fqdn)) or 'no answer'} (the Pod's IP: {ip})\n")
    return True


def run_demo(cluster: Cluster, log_path: Path, coredns: CoreDNS) -> int:
    taskset = simulate(yaml.safe_load(EXAMPLE.read_text()))
    name = taskset["metadata"]["name"]
    deadline = time.monotonic() + 60
    while cluster.kubectl("get", "tasksets", check=False).returncode != 0:  # the daemon registers the CRD
        if time.monotonic() > deadline:
            print("the controller did not register the CRD; its log:\n" + log_path.read_text()[-3000:])
            return 1
        time.sleep(0.5)
    print(cluster.kubectl("apply", "-f", "-", input=json.dumps(taskset)).stdout, flush=True)
    last = ""
    status: dict[str, Any] = {}
    deadline = time.monotonic() + DEADLINE
    shown = False
    while time.monotonic() < deadline:
        got = cluster.kubectl("get", "taskset", name, "-o", "json", check=False)
        status = json.loads(got.stdout).get("status") or {} if got.returncode == 0 else {}
        line = progress_line(status) if status else "(no status yet)"
        if line != last:
            print(f"[{time.strftime('%H:%M:%S')}] {line}", flush=True)
            last = line
        if not shown and status.get("phase") == "TaskSetAttemptRunning":
            shown = show_layout(cluster, coredns, f"{name}-worker-0")
        if status.get("phase") == "TaskSetCompleted":
            break
        time.sleep(0.3)
    print()
    print(cluster.kubectl("get", "taskset", name, "-o", "wide").stdout)
    print(
        cluster.kubectl(
            "get", "events", "--field-selector", f"involvedObject.name={name}", "--sort-by=.lastTimestamp"
        ).stdout
    )
    print(f"final state: {status.get('state')} — {status.get('stateMessage')}")
    print("\n$ kubectl taskset get " + name, flush=True)  # the plugin's tree (taskset_sdk.kubectl)
    kubectl_taskset(["get", name, "--kubeconfig", str(cluster.kubeconfig), "-n", "default"])
    cluster.kubectl("delete", "taskset", name, "--wait=true", check=False)
    return 0 if status.get("state") == "Succeeded" else 1


if __name__ == "__main__":
    sys.exit(main())
