"""Stable network identity on the real control plane: the TaskSet's headless Service,
the Pods' hostnames under it, the EndpointSlices that list every replica, and a stranger's Service
under the name, never taken over."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from devcluster import Cluster, sim
from devcluster.coredns import CLUSTER_DOMAIN, CoreDNS
from taskset.runtime.controller import Controller
from tests.builders import TaskSetBuilder, pod_template
from tests.integration.harness import TaskSets, eventually

pytestmark = pytest.mark.integration

PORT = 2222


def endpoint_addresses(cluster: Cluster, namespace: str, service_name: str) -> dict[str, str]:
    """Hostname -> address over the Service's EndpointSlices."""
    api = client.DiscoveryV1Api(cluster.api_client())
    slices = api.list_namespaced_endpoint_slice(
        namespace, label_selector=f"kubernetes.io/service-name={service_name}"
    ).items
    return {
        endpoint.hostname: endpoint.addresses[0]
        for piece in slices
        for endpoint in piece.endpoints or []
        if endpoint.hostname and endpoint.addresses
    }


def stranger_service(name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"clusterIP": "None", "selector": {"app": "someone-else"}},
    }


def test_every_replica_is_named_under_the_taskset_service_and_listed_in_its_endpoint_slices(
    cluster: Cluster, namespace: str, controller: object
) -> None:
    ts = TaskSets(cluster, namespace)
    template = pod_template(annotations=sim.outcome())
    template["spec"]["containers"][0]["ports"] = [{"containerPort": PORT}]
    ts.create(
        TaskSetBuilder("net").role("ps", 1, template=template).role("worker", 2, template=template).obj()
    )

    made = eventually(lambda: ts.service("net"), 30, "the headless Service")
    spec = made["spec"]
    assert (spec["clusterIP"], spec["publishNotReadyAddresses"], spec["selector"]) == (
        "None",
        True,
        {"TaskSet": "net"},
    )
    assert [(p["name"], p["port"]) for p in spec["ports"]] == [("tcp-2222", PORT)]
    [owner] = made["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("TaskSet", "net", True)

    names = ["net-ps-0", "net-worker-0", "net-worker-1"]

    def running_ips() -> dict[str, str] | None:
        pods = {pod["metadata"]["name"]: pod for pod in ts.pods("net")}
        ips = {name: (pods.get(name) or {}).get("status", {}).get("podIP") for name in names}
        return {k: v for k, v in ips.items() if v} if all(ips.values()) else None

    ips = eventually(running_ips, 60, "every replica's Pod with an IP")
    for name in names:
        pod = ts.pod(name)
        assert pod is not None
        assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == (name, "net")
    eventually(
        lambda: endpoint_addresses(cluster, namespace, "net") == ips, 60, "EndpointSlices of every replica"
    )


def test_opting_out_makes_no_service_and_names_no_pod(
    cluster: Cluster, namespace: str, controller: object
) -> None:
    ts = TaskSets(cluster, namespace)
    template = pod_template(annotations=sim.outcome())
    ts.create(
        TaskSetBuilder("quiet")
        .role("r", 1, template=template)
        .spec_field("network", {"enableDNSHostnames": False})
        .obj()
    )
    pod = eventually(lambda: ts.pod("quiet-r-0"), 30, "the Pod")
    assert "hostname" not in pod["spec"] and "subdomain" not in pod["spec"]
    assert ts.service("quiet") is None


@pytest.mark.parametrize(
    "labels",
    [pytest.param({}, id="unlabelled"), pytest.param({"TaskSet": "taken"}, id="labelled as the TaskSet's")],
)
def test_a_strangers_service_under_the_name_ends_the_attempt_naming_it(
    cluster: Cluster, namespace: str, controller: Controller, labels: dict[str, str]
) -> None:
    """Never taken over: the create finds it (the decisions see only what the TaskSet controls, whatever
    its labels say), the attempt ends saying whose name it is, and the Service is left as it was."""
    ts = TaskSets(cluster, namespace)
    ts.core.create_namespaced_service(namespace, stranger_service("taken", labels))
    ts.create(TaskSetBuilder("taken").role("r", 1).obj())
    status = ts.final("taken")
    why = "Service taken exists and is not controlled by this TaskSet (headless-service)"
    assert (status["state"], status["stateMessage"]) == ("Failed", why), status
    failed = [cond for cond in status["conditions"] if cond["type"] == "Failed"]
    assert failed and failed[0]["message"] == why
    assert any(why in message for _, message in ts.events("taken"))
    left = ts.service("taken")
    assert left is not None and not left["metadata"].get("ownerReferences")
    assert left["spec"]["selector"] == {"app": "someone-else"}


@pytest.fixture(scope="module")
def coredns(cluster: Cluster) -> Iterator[CoreDNS]:
    """CoreDNS over the embedded API server, for the tests that resolve names (built by ``make
    binaries``; built here if missing, never skipped)."""
    server = CoreDNS(cluster).start()
    yield server
    server.stop()


def pod_ips(ts: TaskSets, taskset: str, names: list[str]) -> dict[str, tuple[str, str]] | None:
    """Name -> (UID, IP) of every named Pod, once each has an IP."""
    pods = {pod["metadata"]["name"]: pod for pod in ts.pods(taskset)}
    found: dict[str, tuple[str, str]] = {
        name: (pods[name]["metadata"]["uid"], (pods[name].get("status") or {}).get("podIP") or "")
        for name in names
        if name in pods and not pods[name]["metadata"].get("deletionTimestamp")
    }
    return found if len(found) == len(names) and all(ip for _, ip in found.values()) else None


def test_every_replica_resolves_through_coredns_and_follows_a_retry_to_the_new_pod(
    cluster: Cluster, namespace: str, controller: Controller, coredns: CoreDNS
) -> None:
    ts = TaskSets(cluster, namespace)
    template = pod_template(annotations=sim.outcome())
    ts.create(
        TaskSetBuilder("dns")
        .role("ps", 1, template=template)
        .role("worker", 2, template=template, retry=(True, 1, 0))
        .obj()
    )
    names = ["dns-ps-0", "dns-worker-0", "dns-worker-1"]
    fqdn = {name: f"{name}.dns.{namespace}.svc.{CLUSTER_DOMAIN}" for name in names}

    def all_resolve() -> dict[str, tuple[str, str]] | None:
        pods = pod_ips(ts, "dns", names)
        if pods is None:
            return None
        ok = all(coredns.resolve(fqdn[name]) == [ip] for name, (_, ip) in pods.items())
        return pods if ok else None

    before = eventually(all_resolve, 60, "every replica's name to resolve to its Pod's IP")

    # A replica's retry: a new Pod under the same name, and the name follows it.
    ts.end_pod("dns-worker-0", 1)

    def moved() -> tuple[str, str] | None:
        pods = pod_ips(ts, "dns", names)
        if pods is None or pods["dns-worker-0"][0] == before["dns-worker-0"][0]:
            return None
        uid, ip = pods["dns-worker-0"]
        return (uid, ip) if coredns.resolve(fqdn["dns-worker-0"]) == [ip] else None

    eventually(moved, 60, "the retried replica's name to point at its new Pod")
