"""The manifests read as files (no kubectl): the RBAC rules equal the table in docs/deployment.md (which
test_rbac compares with the live API server), and the namespaced overlay keeps the same rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.docs import Rule, documented_rbac_rules

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "manifests" / "base"


def load(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def named(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    [found] = [o for o in objects if o["kind"] == kind]
    return found


def as_can_i(rules: list[dict[str, Any]]) -> set[Rule]:
    """Each (group, resource) of the rules as `kubectl auth can-i --list` prints it: `plural.group/sub`."""
    rows: set[Rule] = set()
    for rule in rules:
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                plural, _, sub = resource.partition("/")
                name = f"{plural}.{group}" if group else plural
                rows.add(
                    (
                        f"{name}/{sub}" if sub else name,
                        tuple(rule.get("resourceNames", ())),
                        frozenset(rule["verbs"]),
                    )
                )
    return rows


def test_the_cluster_role_and_the_lease_role_are_the_documented_table() -> None:
    cluster_role = named(load(BASE / "rbac.yaml"), "ClusterRole")
    lease_role = named(load(BASE / "leader-election-rbac.yaml"), "Role")
    assert as_can_i(cluster_role["rules"]) | as_can_i(lease_role["rules"]) == documented_rbac_rules()


def test_no_wildcards_and_no_secrets_but_the_proof_key() -> None:
    """Tenants' Secrets are out of reach; the controller's own namespace holds the one it may read (the
    creation proofs' key) and it may create it there."""
    from taskset.daemon.config import Config  # noqa: PLC0415

    everywhere = [
        *named(load(BASE / "rbac.yaml"), "ClusterRole")["rules"],
        *named(load(ROOT / "manifests" / "overlays" / "namespaced" / "role.yaml"), "Role")["rules"],
    ]
    own = named(load(BASE / "leader-election-rbac.yaml"), "Role")["rules"]
    for rule in [*everywhere, *own]:
        for values in (rule["apiGroups"], rule["resources"], rule["verbs"]):
            assert "*" not in values, rule
    assert all("secrets" not in rule["resources"] for rule in everywhere)
    assert [rule for rule in own if "secrets" in rule["resources"]] == [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
        {
            "apiGroups": [""],
            "resources": ["secrets"],
            "resourceNames": [Config().proof_key_secret],
            "verbs": ["get"],
        },
    ]


# Cluster-scoped requests a Role cannot grant: CRD registration (off in the overlay) and the reviews of
# /metrics callers (granted by a cluster admin there, with system:auth-delegator).
# Cluster-scoped resources a Role cannot grant (Nodes: the namespaced overlay runs with --watch-nodes=false).
CLUSTER_ONLY = ("customresourcedefinitions", "tokenreviews.", "subjectaccessreviews.", "nodes")


def test_the_namespaced_role_is_the_cluster_role_without_the_cluster_scoped_rules() -> None:
    cluster_rules = as_can_i(named(load(BASE / "rbac.yaml"), "ClusterRole")["rules"])
    role = named(load(ROOT / "manifests" / "overlays" / "namespaced" / "role.yaml"), "Role")
    assert as_can_i(role["rules"]) == {r for r in cluster_rules if not r[0].startswith(CLUSTER_ONLY)}


def test_the_controller_may_review_metrics_callers_and_readers_may_get_metrics_only() -> None:
    cluster_rules = as_can_i(named(load(BASE / "rbac.yaml"), "ClusterRole")["rules"])
    assert {
        ("tokenreviews.authentication.k8s.io", (), frozenset({"create"})),
        ("subjectaccessreviews.authorization.k8s.io", (), frozenset({"create"})),
    } <= cluster_rules
    reader = named(load(BASE / "metrics-reader-rbac.yaml"), "ClusterRole")
    assert reader["metadata"]["name"] == "taskset-metrics-reader"
    assert reader["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]


def test_the_deployment_serves_secure_metrics_and_the_service_monitor_scrapes_them_so() -> None:
    pod = named(load(BASE / "deployment.yaml"), "Deployment")["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert "--metrics-secure=true" in container["args"]
    assert container["livenessProbe"]["httpGet"].get("scheme", "HTTP") == "HTTP"  # probes stay plain
    prometheus = ROOT / "manifests" / "overlays" / "prometheus"
    [endpoint] = named(load(prometheus / "servicemonitor.yaml"), "ServiceMonitor")["spec"]["endpoints"]
    assert endpoint["scheme"] == "https"
    assert endpoint["bearerTokenFile"] == "/var/run/secrets/kubernetes.io/serviceaccount/token"
    assert endpoint["tlsConfig"] == {"insecureSkipVerify": True}  # the certificate is self-signed
    binding = named(load(prometheus / "metrics-reader-binding.yaml"), "ClusterRoleBinding")
    assert binding["roleRef"]["name"] == "taskset-metrics-reader"


def test_the_lease_rules_name_the_default_lease() -> None:
    from taskset.daemon.config import Config  # noqa: PLC0415

    lease_role = named(load(BASE / "leader-election-rbac.yaml"), "Role")
    named_rules = [r for r in lease_role["rules"] if r.get("resourceNames") and "leases" in r["resources"]]
    assert named_rules == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": [Config().leader_elect_id],
            "verbs": ["get", "update"],
        }
    ]
