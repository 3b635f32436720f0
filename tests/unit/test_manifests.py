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


def test_the_namespaced_role_is_the_cluster_role_without_the_crd_rules() -> None:
    cluster_rules = as_can_i(named(load(BASE / "rbac.yaml"), "ClusterRole")["rules"])
    role = named(load(ROOT / "manifests" / "overlays" / "namespaced" / "role.yaml"), "Role")
    assert as_can_i(role["rules"]) == {
        r for r in cluster_rules if not r[0].startswith("customresourcedefinitions")
    }


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
