"""``python -m devcluster up --with ... --pool ...`` run as a user runs it, from the shell: every add-on
answers where ``up`` says (CoreDNS resolves a name, Kueue admits, the coscheduling scheduler places a Pod
that names it), the pool's nodes carry their labels and taints, and ``down`` leaves no process behind."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import yaml

from devcluster import build, free_port
from informers.shards import Buckets, selector_for
from tests.doc_blocks import Block, params
from tests.integration.harness import eventually
from tests.integration.test_docs_examples import READY

pytestmark = [pytest.mark.integration, pytest.mark.addons]

ROOT = Path(__file__).resolve().parents[2]
MANUAL = ROOT / "docs" / "user-manual.md"
POOL = "name=gpu,count=2,label=pool=gpu,taint=gpu:NoSchedule"
NODE_GRACE = 10  # seconds; the README's example says 20, the commands are the same


def devcluster(directory: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "devcluster", *args, f"--dir={directory}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    directory = tmp_path_factory.mktemp("devcluster-cli")
    up = devcluster(
        directory,
        "up",
        "--nodes=1",
        "--with=coredns,kueue,coscheduling",
        f"--pool={POOL}",
        f"--node-health={NODE_GRACE}",
    )
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        yield directory, up.stdout
    finally:
        down = devcluster(directory, "down", timeout=120)
        assert down.returncode == 0, down.stderr


def kubectl(directory: Path, *args: str, input: str | None = None) -> str:
    done = subprocess.run(
        [str(build.component_dir(build.KUBERNETES) / "kubectl"), *args],
        env={**os.environ, "KUBECONFIG": str(directory / "admin.kubeconfig")},
        capture_output=True,
        text=True,
        input=input,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_up_says_where_each_add_on_answers(started: tuple[Path, str]) -> None:
    directory, out = started
    assert f"export KUBECONFIG={directory / 'admin.kubeconfig'}" in out
    assert re.search(r"coredns: 127\.0\.0\.1:\d+ \(UDP\), zone cluster\.local", out), out
    assert "kueue: ready" in out and "--kueue" in out
    assert "coscheduling: ready; Pods set schedulerName: coscheduling" in out
    assert "nodes: 2 nodes gpu-0..1, label pool=gpu, taint gpu:NoSchedule" in out
    again = devcluster(directory, "up", "--with=kueue")
    assert again.returncode == 0 and "already running" in again.stdout, "a second up changes nothing"


def test_coredns_resolves_the_api_servers_name(started: tuple[Path, str]) -> None:
    directory, _ = started
    resolved = devcluster(directory, "resolve", "kubernetes.default.svc.cluster.local", timeout=60)
    assert resolved.returncode == 0, resolved.stderr
    assert resolved.stdout.split() == ["10.96.0.1"]
    env = devcluster(directory, "env", timeout=60).stdout
    assert re.search(r"^export DEVCLUSTER_DNS=127\.0\.0\.1:\d+$", env, re.MULTILINE), env
    missing = devcluster(directory, "resolve", "nobody.default.svc.cluster.local", timeout=60)
    assert missing.returncode == 1 and "no A record" in missing.stderr


def test_the_pools_nodes_carry_their_labels_and_taints(started: tuple[Path, str]) -> None:
    directory, _ = started
    nodes = json.loads(kubectl(directory, "get", "nodes", "-l", "pool=gpu", "-o", "json"))["items"]
    assert sorted(n["metadata"]["name"] for n in nodes) == ["gpu-0", "gpu-1"]
    assert all(n["spec"]["taints"] == [{"key": "gpu", "effect": "NoSchedule"}] for n in nodes)


def manual_queue_objects() -> list[dict[str, Any]]:
    """The ResourceFlavor, ClusterQueue and LocalQueue of the manual's Kueue section, as written."""
    found = []
    for block in re.findall(r"```yaml\n(.*?)```", MANUAL.read_text(), re.DOTALL):
        for document in yaml.safe_load_all(block):
            if isinstance(document, dict) and document.get("kind") in (
                "ResourceFlavor",
                "ClusterQueue",
                "LocalQueue",
            ):
                found.append(document)
    return found


def test_kueue_admits_a_workload_into_the_manuals_queue(started: tuple[Path, str]) -> None:
    directory, _ = started
    objects = manual_queue_objects()
    assert [o["kind"] for o in objects] == ["ResourceFlavor", "ClusterQueue", "LocalQueue"]
    kubectl(directory, "apply", "-n", "default", "-f", "-", input=yaml.safe_dump_all(objects))
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
    workload = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "tried"},
        "spec": {
            "queueName": "team",
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {"spec": {"containers": [container], "restartPolicy": "Never"}},
                }
            ],
        },
    }
    kubectl(directory, "create", "-n", "default", "-f", "-", input=json.dumps(workload))

    def admission() -> Any:
        got = json.loads(kubectl(directory, "get", "-n", "default", "workload", "tried", "-o", "json"))
        return (got.get("status") or {}).get("admission")

    admitted = eventually(admission, 120, "the Workload admitted")
    assert admitted["clusterQueue"] == "team-a"


def test_the_coscheduling_scheduler_places_a_pod_that_names_it_on_the_pool(started: tuple[Path, str]) -> None:
    """The control plane's own scheduler leaves a Pod naming another scheduler alone, so a bound Pod
    here was placed by the coscheduling scheduler; the pool's taint and label steer it there."""
    directory, _ = started
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "placed"},
        "spec": {
            "schedulerName": "coscheduling",
            "nodeSelector": {"pool": "gpu"},
            "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "main", "image": "busybox"}],
        },
    }
    kubectl(directory, "create", "-n", "default", "-f", "-", input=json.dumps(pod))

    def node() -> str:
        got = json.loads(kubectl(directory, "get", "-n", "default", "pod", "placed", "-o", "json"))
        return str(got["spec"].get("nodeName") or "")

    assert eventually(node, 60, "the Pod placed") in ("gpu-0", "gpu-1")


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (an exited one not yet reaped is a zombie, not running)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize("block", **params("devcluster-up"))
def test_the_documented_lines_run_as_written(started: tuple[Path, str], block: Block) -> None:
    """The block as one shell script on the cluster ``started`` runs (a second ``up`` of add-ons it has
    changes nothing), naming its state directory; its ``down`` is the fixture's, after every test. A
    controller started in the background must be ready a moment later."""
    directory, _ = started
    script = ["set -e"]
    for command in block.commands():
        if re.match(r"python -m devcluster down\b", command):
            continue
        line = re.sub(r"python -m devcluster ([\w-]+)", rf"\g<0> --dir={directory}", command)
        script.append(f"{line} {READY}" if line.endswith("&") else line)
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "TASKSET_METRICS_BIND_ADDRESS": f"127.0.0.1:{free_port()}",
        "TASKSET_HEALTH_PROBE_BIND_ADDRESS": f"127.0.0.1:{free_port()}",
    }
    done = subprocess.run(
        ["bash", "-c", "\n".join(script)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, f"{block.where}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    daemons = sum(line.endswith("&") for line in block.commands())
    assert done.stdout.count("daemon-was-ready") == daemons, f"{block.where}: {done.stdout[-3000:]}"


def test_a_node_lost_from_the_shell_turns_unknown_and_comes_back(started: tuple[Path, str]) -> None:
    directory, _ = started

    def ready() -> str:
        node = json.loads(kubectl(directory, "get", "node", "kwok-node-0", "-o", "json"))
        return str(next(c["status"] for c in node["status"]["conditions"] if c["type"] == "Ready"))

    lost = devcluster(directory, "lose-node", "kwok-node-0", timeout=60)
    assert lost.returncode == 0, lost.stderr
    eventually(lambda: ready() == "Unknown", NODE_GRACE + 60, "the lost node turns Unknown")
    restored = devcluster(directory, "restore-node", "kwok-node-0", timeout=120)
    assert restored.returncode == 0, restored.stderr
    eventually(lambda: ready() == "True", 60, "the restored node is Ready again")


def test_down_stops_every_component(tmp_path: Path) -> None:
    """A cluster with every add-on, then ``down``: no process that ``up`` started is left."""
    up = devcluster(tmp_path, "up", "--nodes=1", "--with=coredns,coscheduling")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        pids = [int(p) for p in json.loads((tmp_path / "state.json").read_text())["pids"].values()]
        supervisor = int((tmp_path / "supervisor.pid").read_text())
        children = subprocess.run(
            ["pgrep", "-P", str(supervisor)], capture_output=True, text=True, check=False
        ).stdout.split()
        assert len(children) >= len(pids) + 2, "the control plane and the two add-ons"
    finally:
        down = devcluster(tmp_path, "down", timeout=120)
    assert down.returncode == 0 and "devcluster down" in down.stdout
    assert [pid for pid in (supervisor, *map(int, children)) if running(pid)] == []
    assert not (tmp_path / "state.json").exists()


@pytest.mark.parametrize("block", **params("feature-gates"))
def test_a_documented_feature_gate_is_on_in_the_cluster_it_starts(tmp_path: Path, block: Block) -> None:
    """The block's ``up`` line starts a cluster of its own (gates cannot be added to a running one), whose
    kube-apiserver then filters a ConfigMap list by the shard selector and says so in ``shardInfo``."""
    (command,) = block.commands()
    args = command.removeprefix("python -m devcluster ").split()
    up = devcluster(tmp_path, *args, "--nodes=1")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        every = selector_for(Buckets(32), range(32))
        listed = json.loads(
            kubectl(tmp_path, "get", "--raw", f"/api/v1/configmaps?shardSelector={quote(every)}&limit=1")
        )
        assert listed["metadata"]["shardInfo"]["selector"] == every, listed["metadata"]
    finally:
        down = devcluster(tmp_path, "down", timeout=120)
        assert down.returncode == 0, down.stderr
