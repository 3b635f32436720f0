"""The embedded control plane behaves like a real cluster: versions, nodes, scheduling, simulated
pod lifecycles, garbage collection, and clean teardown."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from devcluster import Cluster, Settings, sim
from devcluster.ports import free_port

POD_TIMEOUT = 60.0


def wait_until(predicate: Callable[[], Any], timeout: float = POD_TIMEOUT, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s")


def pod(
    name: str, annotations: dict[str, str] | None = None, owner: dict[str, Any] | None = None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "annotations": annotations or {}}
    if owner:
        metadata["ownerReferences"] = [owner]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]},
    }


def read_pod(core: client.CoreV1Api, namespace: str, name: str) -> Any:
    return core.read_namespaced_pod(name, namespace)


def test_kubectl_reports_the_pinned_server_version(cluster: Cluster) -> None:
    out = json.loads(cluster.kubectl("version", "-o", "json").stdout)
    assert out["serverVersion"]["gitVersion"].startswith("v1.36.")
    assert out["serverVersion"]["minor"] == "36"
    assert out["clientVersion"]["gitVersion"] == out["serverVersion"]["gitVersion"]


def test_kubectl_lists_the_simulated_nodes_ready(cluster: Cluster) -> None:
    out = json.loads(cluster.kubectl("get", "nodes", "-l", "type=kwok", "-o", "json").stdout)
    ready = {
        n["metadata"]["name"]
        for n in out["items"]
        if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"])
    }
    assert ready == {f"kwok-node-{i}" for i in range(4)}


def test_a_pod_without_node_name_is_scheduled_and_runs(cluster: Cluster, namespace: str) -> None:
    core = client.CoreV1Api(cluster.api_client())
    core.create_namespaced_pod(namespace, pod("runner"))
    running = wait_until(lambda: (p := read_pod(core, namespace, "runner")).status.phase == "Running" and p)
    assert running.spec.node_name.startswith("kwok-node-")
    assert running.status.pod_ip
    assert running.status.container_statuses[0].state.running is not None


def test_a_pod_annotated_to_fail_ends_failed_with_its_exit_code(cluster: Cluster, namespace: str) -> None:
    core = client.CoreV1Api(cluster.api_client())
    core.create_namespaced_pod(namespace, pod("fails", sim.outcome(duration=1, exit_code=3)))
    failed = wait_until(lambda: (p := read_pod(core, namespace, "fails")).status.phase == "Failed" and p)
    terminated = failed.status.container_statuses[0].state.terminated
    assert terminated.exit_code == 3
    assert terminated.reason == "Error"
    assert terminated.finished_at is not None


def test_a_pod_annotated_to_succeed_ends_succeeded_with_exit_code_zero(
    cluster: Cluster, namespace: str
) -> None:
    core = client.CoreV1Api(cluster.api_client())
    core.create_namespaced_pod(namespace, pod("succeeds", sim.outcome(duration=0.5)))
    done = wait_until(lambda: (p := read_pod(core, namespace, "succeeds")).status.phase == "Succeeded" and p)
    terminated = done.status.container_statuses[0].state.terminated
    assert (terminated.exit_code, terminated.reason) == (0, "Completed")


def test_patching_the_duration_onto_a_running_pod_ends_it_on_demand(cluster: Cluster, namespace: str) -> None:
    core = client.CoreV1Api(cluster.api_client())
    core.create_namespaced_pod(namespace, pod("on-demand"))
    wait_until(lambda: read_pod(core, namespace, "on-demand").status.phase == "Running")
    time.sleep(1)
    assert read_pod(core, namespace, "on-demand").status.phase == "Running"  # no annotation: runs on
    core.patch_namespaced_pod(
        "on-demand", namespace, {"metadata": {"annotations": {sim.DURATION: "0s", sim.EXIT_CODE: "7"}}}
    )
    ended = wait_until(lambda: (p := read_pod(core, namespace, "on-demand")).status.phase == "Failed" and p)
    assert ended.status.container_statuses[0].state.terminated.exit_code == 7


def test_pods_owned_by_a_configmap_are_collected_after_foreground_deletion(
    cluster: Cluster, namespace: str
) -> None:
    core = client.CoreV1Api(cluster.api_client())
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "unit"}})
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "unit",
        "uid": owner.metadata.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }
    for i in range(3):
        core.create_namespaced_pod(namespace, pod(f"child-{i}", owner=ref))
    core.delete_namespaced_config_map("unit", namespace, body={"propagationPolicy": "Foreground"})
    wait_until(lambda: not core.list_namespaced_pod(namespace).items)
    wait_until(
        lambda: not core.list_namespaced_config_map(namespace, field_selector="metadata.name=unit").items
    )


def test_default_service_account_exists_so_pods_pass_service_account_admission(
    cluster: Cluster, namespace: str
) -> None:
    core = client.CoreV1Api(cluster.api_client())
    account = wait_until(lambda: core.list_namespaced_service_account(namespace).items)
    assert [a.metadata.name for a in account] == ["default"]


def _pids_alive(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        alive.append(pid)
    return alive


def test_a_second_cluster_coexists_and_leaves_no_process_after_stop(cluster: Cluster) -> None:
    second = Cluster(Settings(nodes=1))
    with second:
        assert second.server != cluster.server
        pids = list(second.pids().values())
        assert len(pids) == 6
        assert json.loads(second.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    assert _pids_alive(pids) == []


def test_a_port_bound_by_another_process_before_the_apiserver_is_chosen_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The race CI lost once: a port free when chosen, bound by someone else before the child binds it."""
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        taken = squatter.getsockname()[1]
        picks = iter([free_port(), free_port(), taken])  # etcd, etcd-peer, apiserver
        monkeypatch.setattr("devcluster.cluster.free_port", lambda: next(picks, None) or free_port())
        with Cluster(Settings(nodes=1)) as started:
            assert not started.server.endswith(f":{taken}")
            log = (started.directory / "logs" / "kube-apiserver.log").read_text()
            assert f"127.0.0.1:{taken}: bind: address already in use" in log
            assert json.loads(started.kubectl("get", "nodes", "-o", "json").stdout)["items"]


@pytest.mark.timeout(300)
def test_components_die_with_a_killed_parent(tmp_path: Any) -> None:
    """SIGKILL the process that started a cluster: the kernel must take every component down with it."""
    script = (
        "import json, sys, time\n"
        "from devcluster import Cluster, Settings\n"
        "c = Cluster(Settings(nodes=1)).start()\n"
        "print(json.dumps(list(c.pids().values())), flush=True)\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    pids = json.loads(parent.stdout.readline())
    assert len(_pids_alive(pids)) == 6
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    wait_until(lambda: _pids_alive(pids) == [], timeout=15)


def test_containers_of_one_pod_can_exit_differently_with_messages_and_a_pod_reason(
    cluster: Cluster, namespace: str
) -> None:
    core = client.CoreV1Api(cluster.api_client())
    body = pod(
        "multi",
        {
            sim.DURATION: "500ms",
            sim.container_exit_code("side"): "3",
            sim.MESSAGE: "bye",
            sim.POD_REASON: "DeadlineExceeded",
        },
    )
    body["spec"]["containers"].append({"name": "side", "image": "busybox"})
    core.create_namespaced_pod(namespace, body)
    done = wait_until(lambda: (p := read_pod(core, namespace, "multi")).status.phase == "Failed" and p)
    codes = {s.name: s.state.terminated.exit_code for s in done.status.container_statuses}
    assert codes == {"main": 0, "side": 3}
    assert {s.state.terminated.message for s in done.status.container_statuses} == {"bye"}
    assert done.status.reason == "DeadlineExceeded"


def test_a_held_pod_is_assigned_but_stays_pending_until_released(cluster: Cluster, namespace: str) -> None:
    core = client.CoreV1Api(cluster.api_client())
    core.create_namespaced_pod(namespace, pod("held", {sim.HOLD: "init", **sim.outcome(duration=0.5)}))
    held = wait_until(lambda: (p := read_pod(core, namespace, "held")).status.pod_ip and p)
    assert held.status.phase == "Pending" and held.status.host_ip
    time.sleep(1)
    assert read_pod(core, namespace, "held").status.phase == "Pending"
    core.patch_namespaced_pod("held", namespace, {"metadata": {"annotations": {sim.HOLD: None}}})
    wait_until(lambda: read_pod(core, namespace, "held").status.phase == "Succeeded")


def test_an_attempt_annotation_fails_only_the_pod_of_that_attempt(cluster: Cluster, namespace: str) -> None:
    """``exit-code.t<T>.r<I>.a<A>`` in a template picks one attempt of one replica by the controller's
    identity annotations; the same template on the next attempt's Pod exits with the default code."""
    core = client.CoreV1Api(cluster.api_client())
    template = {**sim.outcome(duration=0.3, exit_code=0), sim.attempt_exit_code(1, 2, 0): "7"}
    identity = {"TaskSetAttemptID": "1", "RoleReplicaIndex": "2"}
    core.create_namespaced_pod(namespace, pod("first", {**template, **identity, "ReplicaAttemptID": "0"}))
    core.create_namespaced_pod(namespace, pod("second", {**template, **identity, "ReplicaAttemptID": "1"}))
    first = wait_until(lambda: (p := read_pod(core, namespace, "first")).status.phase == "Failed" and p)
    second = wait_until(lambda: (p := read_pod(core, namespace, "second")).status.phase == "Succeeded" and p)
    assert first.status.container_statuses[0].state.terminated.exit_code == 7
    assert second.status.container_statuses[0].state.terminated.exit_code == 0


def test_a_status_patch_naming_a_replaced_pods_uid_is_refused(cluster: Cluster, namespace: str) -> None:
    """kwok's Pod stages name the Pod's UID in their status patches (``stages.yaml``). Under load kwok
    retries a patch by name, possibly after the Pod was replaced by one of the same name (a retry); the
    API server must refuse that patch rather than give the new Pod the old one's end."""
    core = client.CoreV1Api(cluster.api_client())
    core.create_namespaced_pod(namespace, pod("same-name", {sim.HOLD: "init"}))
    old = wait_until(lambda: (p := read_pod(core, namespace, "same-name")).status.pod_ip and p)
    core.delete_namespaced_pod("same-name", namespace, grace_period_seconds=0)
    wait_until(
        lambda: not core.list_namespaced_pod(namespace, field_selector="metadata.name=same-name").items
    )
    core.create_namespaced_pod(namespace, pod("same-name", {sim.HOLD: "init"}))
    new = wait_until(lambda: (p := read_pod(core, namespace, "same-name")).status.pod_ip and p)
    assert new.metadata.uid != old.metadata.uid

    def patch_status(uid: str) -> subprocess.CompletedProcess[str]:
        body = json.dumps({"metadata": {"uid": uid}, "status": {"phase": "Failed"}})
        return cluster.kubectl(
            *("-n", namespace, "patch", "pod", "same-name", "--subresource=status", "--type=strategic"),
            *("-p", body),
            check=False,
        )

    refused = patch_status(old.metadata.uid)
    assert refused.returncode != 0 and "immutable" in refused.stderr
    assert read_pod(core, namespace, "same-name").status.phase == "Pending"
    accepted = patch_status(new.metadata.uid)
    assert accepted.returncode == 0, accepted.stderr
    assert read_pod(core, namespace, "same-name").status.phase == "Failed"
