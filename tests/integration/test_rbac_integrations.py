"""Least privilege with the integrations, proven on the real API server with the real Kueue:
the base's RBAC plus the rules of the ``kueue`` and ``coscheduling`` overlays, applied in the test's
namespace, and the controller process running AS that ServiceAccount with ``--kueue`` and
``--gang-scheduling=coscheduling`` through a queued TaskSet (admitted with a flavor's node label and
toleration injected, its Workload marked Finished at the end) and a gang TaskSet (its PodGroup created).
Nothing it does is forbidden, and ``kubectl auth can-i --list`` grants exactly the base's documented rules
plus the overlays' (tests/integration/test_rbac.py proves the base alone)."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from kubernetes import client

from devcluster import Cluster, sim
from devcluster.coscheduling import Coscheduler
from devcluster.kueue import Kueue
from taskset.integrations.gang import COSCHEDULING_PODGROUPS
from taskset.integrations.kueue import QUEUE_LABEL, RESOURCE_FLAVORS, WORKLOADS
from tests.builders import TaskSetBuilder, pod_template
from tests.docs import documented_rbac_rules
from tests.integration.daemon import Daemon, account_kubeconfig, scratch_namespace
from tests.integration.harness import TaskSets, eventually
from tests.integration.manifests import MANIFESTS, into_namespace, render, to_yaml
from tests.integration.test_rbac import EVERYONE, can_i_list

pytestmark = pytest.mark.integration

SERVICE_ACCOUNT = "taskset-controller"
RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
OVERLAYS = ("kueue", "coscheduling")
TOLERATION = {"key": "rbac-test", "operator": "Exists", "effect": "NoSchedule"}


@pytest.fixture(scope="module")
def namespace(cluster: Cluster) -> Iterator[str]:
    with scratch_namespace(cluster, "rbac-int") as name:
        yield name


def overlay_rbac(cluster: Cluster) -> list[dict[str, Any]]:
    """The RBAC objects of the base and of each overlay, once each."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for overlay in OVERLAYS:
        for obj in render(cluster, MANIFESTS / "overlays" / overlay):
            if obj["kind"] in RBAC_KINDS:
                found[(obj["kind"], obj["metadata"]["name"])] = obj
    return list(found.values())


@pytest.fixture(scope="module")
def components(kueue: Kueue, coscheduler: Coscheduler) -> None:
    """Kueue and the coscheduling scheduler (its PodGroup CRD) beside the control plane."""


@pytest.fixture(scope="module")
def account(
    cluster: Cluster,
    namespace: str,
    crd_installed: None,
    components: None,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Path]:
    """The RBAC of the base and the two overlays in this namespace, and a kubeconfig of its SA."""
    suffix = f"-{namespace}"
    rbac = [into_namespace(o, namespace, suffix) for o in overlay_rbac(cluster)]
    cluster.kubectl("apply", "-f", "-", input=to_yaml(rbac))
    path = tmp_path_factory.mktemp("rbac-int") / "controller.kubeconfig"
    yield account_kubeconfig(cluster, namespace, SERVICE_ACCOUNT, path)
    for obj in rbac:
        if obj["kind"] in ("ClusterRole", "ClusterRoleBinding"):
            cluster.kubectl("delete", obj["kind"], obj["metadata"]["name"], "--ignore-not-found", check=False)


@pytest.fixture(scope="module")
def queue(cluster: Cluster, namespace: str, kueue: Kueue) -> Iterator[str]:
    """A flavor with a node label and a toleration, a ClusterQueue of it and a LocalQueue ``team``."""
    api = client.CustomObjectsApi(cluster.api_client())
    group, version = WORKLOADS.group, WORKLOADS.version
    flavor = f"rbac-{namespace}"
    meta = {"apiVersion": f"{group}/{version}"}
    spec = {"nodeLabels": {"rbac-flavor": flavor}, "tolerations": [TOLERATION]}
    api.create_cluster_custom_object(
        group,
        version,
        RESOURCE_FLAVORS.plural,
        {**meta, "kind": "ResourceFlavor", "metadata": {"name": flavor}, "spec": spec},
    )
    quota = {
        "coveredResources": ["cpu"],
        "flavors": [{"name": flavor, "resources": [{"name": "cpu", "nominalQuota": "4"}]}],
    }
    cq = {"namespaceSelector": {}, "resourceGroups": [quota]}
    api.create_cluster_custom_object(
        group,
        version,
        "clusterqueues",
        {**meta, "kind": "ClusterQueue", "metadata": {"name": namespace}, "spec": cq},
    )
    local = {**meta, "kind": "LocalQueue", "metadata": {"name": "team"}, "spec": {"clusterQueue": namespace}}
    api.create_namespaced_custom_object(group, version, namespace, "localqueues", local)
    yield "team"
    api.delete_cluster_custom_object(group, version, "clusterqueues", namespace)
    api.delete_cluster_custom_object(group, version, RESOURCE_FLAVORS.plural, flavor)


def test_the_controller_runs_queued_and_gang_tasksets_as_its_service_account(
    cluster: Cluster, namespace: str, account: Path, queue: str, tmp_path: Path
) -> None:
    nodes = cluster.create_nodes(
        1, namespace[:50], labels={"rbac-flavor": f"rbac-{namespace}"}, taints=({**TOLERATION, "value": "x"},)
    )
    daemon = Daemon(
        cluster,
        namespace,
        tmp_path / "logs",
        f"--kubeconfig={account}",
        "--kueue",
        "--gang-scheduling=coscheduling",
        f"--leader-elect-namespace={namespace}",  # where its creation-proof Secret lives
    )
    (tmp_path / "logs").mkdir()
    daemon.start()
    try:
        ts = TaskSets(cluster, namespace)
        template = pod_template(annotations=sim.outcome(duration=1))
        template["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
        queued = TaskSetBuilder("queued").role("r", 1, template=template).obj()
        queued["metadata"]["labels"] = {QUEUE_LABEL: queue}
        ts.create(queued)
        gang = (
            TaskSetBuilder("gang")
            .role("r", 2, template=pod_template(annotations=sim.outcome(duration=1)))
            .obj()
        )
        gang["spec"]["gang"] = {"scheduler": "coscheduling"}
        # Keep the last attempt's ControlUnit, and so its PodGroup, after the end: with the default `All`
        # the PodGroup goes with the ControlUnit, racing the listing below (a cold CI run lost that race).
        gang["spec"]["cleanPodPolicy"] = "None"
        ts.create(gang)
        (pod,) = eventually(lambda: ts.pods("queued") or None, 90, "the queued TaskSet admitted")
        assert pod["spec"]["nodeSelector"] == {"rbac-flavor": f"rbac-{namespace}"}
        assert TOLERATION in pod["spec"]["tolerations"]
        assert ts.final("queued", timeout=90)["state"] == "Succeeded"
        assert ts.final("gang", timeout=90)["state"] == "Succeeded"
        api = client.CustomObjectsApi(cluster.api_client())
        workload = cast(
            "dict[str, Any]",
            api.get_namespaced_custom_object(
                WORKLOADS.group, WORKLOADS.version, namespace, WORKLOADS.plural, "taskset-queued-0"
            ),
        )
        finished = {c["type"]: c["status"] for c in workload["status"]["conditions"]}
        assert finished.get("Finished") == "True", "the status apply was allowed"
        kind = COSCHEDULING_PODGROUPS
        groups = cast(
            "dict[str, Any]",
            api.list_namespaced_custom_object(kind.group, kind.version, namespace, kind.plural),
        )
        assert [g["metadata"]["name"] for g in groups["items"]] == ["taskset-gang-0"]
        assert daemon.stop() == 0
    finally:
        if daemon.running():
            daemon.kill()
        for node in nodes:
            with contextlib.suppress(client.ApiException):
                client.CoreV1Api(cluster.api_client()).delete_node(node)
    denied = [r for r in daemon.records() if re.search(r"forbidden|\b403\b", json.dumps(r), re.IGNORECASE)]
    assert denied == [], denied[:3]


def test_can_i_list_adds_exactly_the_overlays_rules(cluster: Cluster, namespace: str, account: Path) -> None:
    """The base's documented rules, and of Kueue's and the coscheduling scheduler's resources exactly what
    the overlays grant."""
    rules = can_i_list(cluster, account, namespace)
    added = {
        ("workloads.kueue.x-k8s.io", (), frozenset({"get", "list", "watch", "create", "delete"})),
        ("workloads.kueue.x-k8s.io/status", (), frozenset({"patch"})),
        ("resourceflavors.kueue.x-k8s.io", (), frozenset({"list", "watch"})),
        ("podgroups.scheduling.x-k8s.io", (), frozenset({"get", "list", "watch", "create", "patch"})),
    }
    ours = {rule for rule in rules if rule[0] not in EVERYONE}
    assert ours == documented_rbac_rules() | added
