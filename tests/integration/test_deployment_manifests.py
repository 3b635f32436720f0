"""The kustomize manifests render offline, and the API server accepts them: the base, moved into a test
namespace that enforces Pod Security "restricted", passes a server-side dry run, and so does a Pod made
from the Deployment's template (Pod Security enforces on Pods; on a Deployment it only warns)."""

from __future__ import annotations

import copy
import subprocess
from typing import Any

import pytest

from devcluster import Cluster
from tests.integration.manifests import MANIFESTS, find, into_namespace, render, to_yaml

pytestmark = pytest.mark.integration

RESTRICTED = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/enforce-version": "latest",
    "pod-security.kubernetes.io/warn": "restricted",
    "pod-security.kubernetes.io/audit": "restricted",
}


@pytest.fixture
def restricted(cluster: Cluster, namespace: str) -> str:
    labels = [f"{key}={value}" for key, value in RESTRICTED.items()]
    cluster.kubectl("label", "namespace", namespace, "--overwrite", *labels)
    return namespace


def dry_run(cluster: Cluster, objects: list[dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl("apply", "--dry-run=server", "-f", "-", input=to_yaml(objects), check=False)


BASE_KINDS = {
    "CustomResourceDefinition",
    "Namespace",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "Deployment",
    "Service",
    "PodDisruptionBudget",
}


@pytest.mark.parametrize(
    ("path", "kinds"),
    [
        pytest.param(
            "base",
            BASE_KINDS,
            id="base",
        ),
        pytest.param(
            "overlays/namespaced",
            {"ServiceAccount", "Role", "RoleBinding", "Deployment", "Service", "PodDisruptionBudget"},
            id="namespaced",
        ),
        pytest.param(
            "overlays/kueue",
            BASE_KINDS,
            id="kueue",
        ),
        pytest.param("overlays/coscheduling", BASE_KINDS, id="coscheduling"),
        pytest.param("overlays/volcano", BASE_KINDS, id="volcano"),
        pytest.param(
            "overlays/prometheus",
            BASE_KINDS | {"ServiceMonitor"},
            id="prometheus",
        ),
        pytest.param("crd", {"CustomResourceDefinition"}, id="crd alone"),
    ],
)
def test_the_manifests_render_offline(cluster: Cluster, path: str, kinds: set[str]) -> None:
    objects = render(cluster, MANIFESTS / path)
    assert {o["kind"] for o in objects} == kinds


def test_the_namespaced_overlay_watches_its_own_namespace_without_cluster_rights(cluster: Cluster) -> None:
    objects = render(cluster, MANIFESTS / "overlays" / "namespaced")
    assert all(o["metadata"].get("namespace") == "taskset-system" for o in objects)
    container = find(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert {
        "--leader-elect",
        "--namespace=$(POD_NAMESPACE)",
        "--register-crd=false",
        "--watch-nodes=false",
    } <= set(container["args"])
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"] == {"fieldRef": {"fieldPath": "metadata.namespace"}}
    binding = find(objects, "RoleBinding", "taskset-controller")
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "taskset-controller",
    }
    assert binding["subjects"][0]["namespace"] == "taskset-system"


def test_the_base_is_accepted_by_the_api_server_under_restricted_pod_security(
    cluster: Cluster, restricted: str, crd_installed: None
) -> None:
    objects = render(cluster, MANIFESTS / "base")
    moved = [
        into_namespace(o, restricted, suffix=f"-{restricted}")
        for o in objects
        if o["kind"] != "Namespace"  # the test's namespace stands in for taskset-system
    ]
    done = dry_run(cluster, moved)
    assert done.returncode == 0, done.stderr
    # warn=restricted: a template that did not comply would draw "Warning: would violate PodSecurity".
    assert "PodSecurity" not in done.stderr, done.stderr
    assert "deployment.apps/taskset-controller created (server dry run)" in done.stdout


def test_a_pod_from_the_deployment_template_is_admitted_and_a_weaker_one_is_not(
    cluster: Cluster, restricted: str
) -> None:
    objects = render(cluster, MANIFESTS / "base")
    # Pods need their ServiceAccount to exist (ServiceAccount admission): create it for real.
    account = into_namespace(find(objects, "ServiceAccount"), restricted)
    cluster.kubectl("apply", "-f", "-", input=to_yaml([account]))
    template = find(objects, "Deployment")["spec"]["template"]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "taskset-controller-dry-run", "namespace": restricted, **template["metadata"]},
        "spec": template["spec"],
    }
    admitted = dry_run(cluster, [pod])
    assert admitted.returncode == 0, admitted.stderr
    assert "created (server dry run)" in admitted.stdout

    weaker = copy.deepcopy(pod)  # the control: enforcement is really on in this namespace
    del weaker["spec"]["containers"][0]["securityContext"]["capabilities"]
    refused = dry_run(cluster, [weaker])
    assert refused.returncode != 0
    assert 'violates PodSecurity "restricted:latest"' in refused.stderr
    assert "capabilities" in refused.stderr


def test_the_deployment_is_production_shaped(cluster: Cluster) -> None:
    deployment = find(render(cluster, MANIFESTS / "base"), "Deployment")
    spec = deployment["spec"]["template"]["spec"]
    container = spec["containers"][0]
    assert deployment["spec"]["replicas"] == 2
    assert "--leader-elect" in container["args"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert {p["name"]: p["containerPort"] for p in container["ports"]} == {"metrics": 8080, "health": 8081}
    assert container["resources"] == {
        "requests": {"cpu": "100m", "memory": "128Mi"},
        "limits": {"cpu": "1", "memory": "512Mi"},
    }
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
    }
    # The drain (--shutdown-grace-period, 30 s by default) and the release fit in the pod's grace period.
    assert spec["terminationGracePeriodSeconds"] > 30


def test_a_client_side_apply_of_the_crd_is_accepted(cluster: Cluster, crd_installed: None) -> None:
    """``kubectl apply -k`` (client-side, as documented): the CRD's last-applied annotation fits."""
    done = cluster.kubectl("apply", "--dry-run=server", "-k", str(MANIFESTS / "crd"), check=False)
    assert done.returncode == 0, done.stderr
    assert "customresourcedefinition.apiextensions.k8s.io/tasksets.octopus.openi.pcl.cn" in done.stdout


def test_the_kueue_overlay_adds_the_flag_and_only_the_workloads_it_needs(cluster: Cluster) -> None:
    """--kueue, and on Kueue's objects only what it sends (Workloads: get, list, watch, create,
    delete; their status: patch; ResourceFlavors: list, watch), bound to the controller's
    ServiceAccount; nothing else of the base changes."""
    objects = render(cluster, MANIFESTS / "overlays" / "kueue")
    container = find(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert "--kueue" in container["args"]
    role = find(objects, "ClusterRole", "taskset-controller-kueue")
    assert role["rules"] == [
        {
            "apiGroups": ["kueue.x-k8s.io"],
            "resources": ["workloads"],
            "verbs": ["get", "list", "watch", "create", "delete"],
        },
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["workloads/status"], "verbs": ["patch"]},
        {"apiGroups": ["kueue.x-k8s.io"], "resources": ["resourceflavors"], "verbs": ["list", "watch"]},
    ]
    binding = find(objects, "ClusterRoleBinding", "taskset-controller-kueue")
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "taskset-controller", "namespace": "taskset-system"}
    ]
    base = render(cluster, MANIFESTS / "base")
    assert find(objects, "ClusterRole", "taskset-controller") == find(
        base, "ClusterRole", "taskset-controller"
    )


@pytest.mark.parametrize(
    ("overlay", "group"),
    [("coscheduling", "scheduling.x-k8s.io"), ("volcano", "scheduling.volcano.sh")],
)
def test_a_gang_overlay_adds_its_flag_and_only_its_podgroups(
    cluster: Cluster, overlay: str, group: str
) -> None:
    """--gang-scheduling=<scheduler>, and get/list/watch/create/patch on that scheduler's PodGroups
    bound to the controller's ServiceAccount; nothing else of the base changes."""
    objects = render(cluster, MANIFESTS / "overlays" / overlay)
    container = find(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]
    assert f"--gang-scheduling={overlay}" in container["args"]
    role = find(objects, "ClusterRole", f"taskset-controller-{overlay}")
    assert role["rules"] == [
        {
            "apiGroups": [group],
            "resources": ["podgroups"],
            "verbs": ["get", "list", "watch", "create", "patch"],
        }
    ]
    base = render(cluster, MANIFESTS / "base")
    assert find(objects, "ClusterRole", "taskset-controller") == find(
        base, "ClusterRole", "taskset-controller"
    )
