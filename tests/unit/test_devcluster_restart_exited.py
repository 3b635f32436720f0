"""``Cluster.restart_exited``: what a kubelet does for a crashed static Pod, without starting a cluster
(the components here are small shell commands)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from devcluster.cluster import Cluster, _Process


def component(tmp_path: Path, name: str, script: str) -> _Process:
    process = _Process(name, ["sh", "-c", script], tmp_path / f"{name}.log")
    process.start()
    return process


def wait_exited(process: _Process) -> None:
    assert process.popen is not None
    process.popen.wait(10)


def test_a_component_that_exited_on_its_own_is_started_again_with_its_arguments(tmp_path: Path) -> None:
    cluster = Cluster()
    started = tmp_path / "started"
    crashed = component(tmp_path, "kube-scheduler", f"echo run >> {started}; exit 1")
    healthy = component(tmp_path, "kwok", "sleep 30")
    cluster._processes.update({"kube-scheduler": crashed, "kwok": healthy})
    try:
        wait_exited(crashed)
        first = crashed.popen

        assert cluster.restart_exited() == {"kube-scheduler": 1}
        assert crashed.popen is not first
        wait_exited(crashed)
        assert started.read_text() == "run\nrun\n"
        assert healthy.running()
    finally:
        cluster.stop()


def test_a_component_stopped_on_purpose_is_left_stopped(tmp_path: Path) -> None:
    cluster = Cluster()
    etcd = component(tmp_path, "etcd", "sleep 30")
    cluster._processes["etcd"] = etcd
    etcd.stop()
    assert cluster.restart_exited() == {}
    assert etcd.popen is None


def test_a_component_being_stopped_is_never_mistaken_for_a_crashed_one(tmp_path: Path) -> None:
    """``stop`` forgets the process before signalling it: however a concurrent ``restart_exited`` is
    timed against the exit, it sees nothing to restart (a second kube-apiserver on the same port)."""
    cluster = Cluster()
    apiserver = component(tmp_path, "kube-apiserver", "trap 'sleep 0.3; exit 0' TERM; sleep 30 & wait")
    cluster._processes["kube-apiserver"] = apiserver
    time.sleep(0.2)  # the trap is installed
    restarted: dict[str, int] = {}
    stopping = threading.Thread(target=apiserver.stop)
    stopping.start()
    while stopping.is_alive():
        restarted |= cluster.restart_exited()
    stopping.join()
    assert restarted == {}
    assert apiserver.popen is None
