"""Rendering the kustomize manifests with the built kubectl (offline), and moving objects into a test's
namespace so that tests never touch ``taskset-system`` or each other's cluster-scoped objects."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import yaml

from devcluster import Cluster

ROOT = Path(__file__).resolve().parents[2]
MANIFESTS = ROOT / "manifests"
BASE_NAMESPACE = "taskset-system"


def render(cluster: Cluster, path: Path) -> list[dict[str, Any]]:
    """``kubectl kustomize <path>``: no API server is contacted."""
    done = subprocess.run(
        [str(cluster.binaries["kubectl"]), "kustomize", str(path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def find(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    matches = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(matches) == 1, f"{kind}/{name}: {len(matches)} found"
    return copy.deepcopy(matches[0])


def into_namespace(obj: dict[str, Any], namespace: str, suffix: str = "") -> dict[str, Any]:
    """The object moved to ``namespace`` (subjects too); cluster-scoped RBAC objects get ``suffix``."""
    moved = copy.deepcopy(obj)
    meta = moved["metadata"]
    if meta.get("namespace") == BASE_NAMESPACE:
        meta["namespace"] = namespace
    if moved["kind"] in ("ClusterRole", "ClusterRoleBinding"):
        meta["name"] += suffix
    if moved["kind"] == "ClusterRoleBinding":
        moved["roleRef"]["name"] += suffix
    for subject in moved.get("subjects") or ():
        if subject.get("namespace") == BASE_NAMESPACE:
            subject["namespace"] = namespace
    return moved


def to_yaml(objects: list[dict[str, Any]]) -> str:
    return yaml.safe_dump_all(objects, sort_keys=False)


RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")


def apply_base_rbac(cluster: Cluster, namespace: str) -> list[dict[str, Any]]:
    """The base's ServiceAccount and RBAC, moved into ``namespace`` and applied. Cluster-scoped names get
    ``-<namespace>`` so tests never collide; ``remove_cluster_rbac`` deletes those afterwards (the
    namespace's deletion takes the rest)."""
    rbac = [
        into_namespace(o, namespace, f"-{namespace}")
        for o in render(cluster, MANIFESTS / "base")
        if o["kind"] in RBAC_KINDS
    ]
    cluster.kubectl("apply", "-f", "-", input=to_yaml(rbac))
    return rbac


def remove_cluster_rbac(cluster: Cluster, rbac: list[dict[str, Any]]) -> None:
    for obj in rbac:
        if obj["kind"] in ("ClusterRole", "ClusterRoleBinding"):
            cluster.kubectl("delete", obj["kind"], obj["metadata"]["name"], "--ignore-not-found", check=False)
