"""``spec.scale`` and who asked for a scale (``taskset.api.scale``)."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.api.scale import (
    SCALE_ENTRIES_MAX,
    elastic_roles,
    scale_entries,
    scale_of,
    scale_requesters,
    scale_selector,
    scaled_roles,
)
from taskset.api.spec import ParsedTaskSet, parse_taskset
from taskset.observed.slim import slim_taskset
from tests.builders import TaskSetBuilder

pytestmark = pytest.mark.unit

ROLES = [{"name": "m", "replicas": 1}, {"name": "w", "replicas": 2, "maxReplicas": 8}]


@pytest.mark.parametrize(
    ("scale", "expected"),
    [
        pytest.param(None, None, id="absent"),
        pytest.param({"role": "w", "replicas": 4}, ("w", 4), id="named"),
        pytest.param({"role": "w"}, None, id="no count"),
        pytest.param({"role": "w", "replicas": True}, None, id="a boolean is no count"),
        pytest.param({"role": 3, "replicas": 4}, None, id="no name"),
        pytest.param("w", None, id="not an object"),
    ],
)
def test_scale_of(scale: object, expected: tuple[str, int] | None) -> None:
    assert scale_of({"scale": scale}) == expected


@pytest.mark.parametrize(
    ("scale", "counts"),
    [
        pytest.param(None, [1, 2], id="nothing named: the roles' own"),
        pytest.param({"role": "w", "replicas": 5}, [1, 5], id="the named role takes scale.replicas"),
        pytest.param({"role": "x", "replicas": 5}, [1, 2], id="a name no role has changes nothing"),
    ],
)
def test_scaled_roles(scale: object, counts: list[int]) -> None:
    roles = scaled_roles({"roles": ROLES, "scale": scale})
    assert isinstance(roles, list) and [r["replicas"] for r in roles] == counts
    assert [r["replicas"] for r in ROLES] == [1, 2]  # the raw spec is never changed


def test_the_parse_reads_the_named_roles_count_from_spec_scale() -> None:
    obj = TaskSetBuilder("job").role("w", 2, maxReplicas=8).obj()
    obj["spec"]["scale"] = {"role": "w", "replicas": 6}
    parsed = parse_taskset(obj)
    assert isinstance(parsed, ParsedTaskSet) and parsed.spec.roles[0].replicas == 6
    obj["spec"]["scale"]["replicas"] = 9  # above maxReplicas: refused as a role's count is, naming it
    refused = parse_taskset(obj)
    assert not isinstance(refused, ParsedTaskSet) and refused.field == "spec.roles[0].replicas"


@pytest.mark.parametrize(
    ("spec", "elastic"),
    [
        pytest.param({"roles": [{"name": "a"}]}, set(), id="no bounds"),
        pytest.param({"roles": [{"name": "a", "minReplicas": 1}, {"name": "b"}]}, {"a"}, id="a bound"),
        pytest.param({"roles": [{"name": "a"}], "scale": {"role": "a", "replicas": 1}}, {"a"}, id="scaled"),
        pytest.param({"roles": "x"}, set(), id="malformed"),
    ],
)
def test_elastic_roles(spec: dict[str, Any], elastic: set[str]) -> None:
    assert elastic_roles(spec) == elastic


def test_scale_selector_is_the_role_pods_labels() -> None:
    assert scale_selector("job", "w") == "TaskSet=job,PodTaskRole=w"


def entry(
    manager: str, time: str | None, fields: dict[str, Any], subresource: str | None = None
) -> dict[str, Any]:
    raw = {"manager": manager, "operation": "Update", "fieldsV1": fields}
    return raw | ({"time": time} if time else {}) | ({"subresource": subresource} if subresource else {})


def role_count(*roles: str) -> dict[str, Any]:
    return {"f:spec": {"f:roles": {f'k:{{"name":"{r}"}}': {"f:replicas": {}, ".": {}} for r in roles}}}


SCALE_COUNT: dict[str, Any] = {"f:spec": {"f:scale": {"f:replicas": {}}, "f:roles": {'k:{"name":"w"}': {}}}}
OTHER: dict[str, Any] = {"f:spec": {"f:suspend": {}, "f:roles": {'k:{"name":"w"}': {"f:template": {}}}}}
CREATED = entry("kubectl-create", "2026-01-01T00:00:00Z", role_count("m", "w"))


@pytest.mark.parametrize(
    ("managed", "scale", "who"),
    [
        pytest.param([], None, {}, id="no entries"),
        pytest.param([CREATED], None, {"m": "kubectl-create", "w": "kubectl-create"}, id="the creator"),
        pytest.param(
            [CREATED, entry("kubectl-edit", "2026-01-01T00:00:05Z", role_count("w"))],
            None,
            {"m": "kubectl-create", "w": "kubectl-edit"},
            id="an edit took the count of w only",
        ),
        pytest.param(
            [
                CREATED,
                entry("kubectl", None, SCALE_COUNT, "scale"),
                entry("x", "2026-01-01T00:00:09Z", OTHER),
            ],
            {"role": "w", "replicas": 3},
            {"m": "kubectl-create", "w": "kubectl via /scale"},
            id="spec.scale's owner for its role (the scale subresource writes no time), not the newest entry",
        ),
        pytest.param(
            [CREATED, entry("kubectl", None, SCALE_COUNT, "scale")],
            None,
            {"m": "kubectl-create", "w": "kubectl-create"},
            id="without spec.scale, roles' own counts",
        ),
        pytest.param([entry("x", "t", OTHER), "junk", {"fieldsV1": 3}], None, {}, id="nothing owns a count"),
    ],
)
def test_scale_requesters(managed: list[Any], scale: object, who: dict[str, str]) -> None:
    spec = {"scale": scale} if scale else {}
    assert scale_requesters({"metadata": {"managedFields": managed}, "spec": spec}) == who


def test_the_cache_keeps_only_the_entries_owning_a_count_bounded_and_idempotent() -> None:
    managed = [entry(f"m{i}", f"2026-01-01T00:00:{i:02d}Z", role_count("w")) for i in range(20)]
    managed.append(entry("other", "2026-01-01T00:01:00Z", OTHER))
    obj = {"metadata": {"name": "job", "managedFields": managed}, "spec": {}}
    slim = slim_taskset(obj)
    kept = slim["metadata"]["managedFields"]
    assert len(kept) == SCALE_ENTRIES_MAX and kept[0]["manager"] == "m19"
    assert kept[0]["fieldsV1"] == {"f:spec": {"f:roles": {'k:{"name":"w"}': {"f:replicas": {}}}}}
    assert slim_taskset(slim) == slim and scale_entries(kept) == kept
    assert scale_requesters(slim) == {"w": "m19"}
    bare = slim_taskset({"metadata": {"managedFields": [entry("o", "t", OTHER)]}})
    assert "managedFields" not in bare["metadata"]
