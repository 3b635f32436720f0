"""Store, keys and transform: indexes follow every write, relists report vanished objects as tombstones,
readers keep the snapshot they read."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from informers import (
    LAST_APPLIED_ANNOTATION,
    NAMESPACE_INDEX,
    Change,
    ChangeType,
    DeletedFinalStateUnknown,
    IndexConflictError,
    ObjectKey,
    Store,
    deletion_handling_key,
    meta_namespace_key,
    namespace_index,
    split_key,
    strip_managed_fields,
)

pytestmark = [pytest.mark.unit, pytest.mark.timeout(10)]


def obj(name: str, namespace: str | None = "ns", rv: str = "1", **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "resourceVersion": rv, "labels": dict(labels)}
    if namespace is not None:
        meta["namespace"] = namespace
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta}


def by_app(o: dict[str, Any]) -> list[str]:
    app = o["metadata"]["labels"].get("app")
    return [app] if app else []


def by_roles(o: dict[str, Any]) -> list[str]:
    roles = o["metadata"]["labels"].get("roles", "")
    return roles.split(".") if roles else []


def store_with(*objects: dict[str, Any]) -> Store:
    store = Store(indexers={NAMESPACE_INDEX: namespace_index, "app": by_app, "role": by_roles})
    for o in objects:
        store.add(o)
    return store


def index_state(store: Store, index: str) -> dict[str, list[str]]:
    return {value: sorted(store.index_keys(index, value)) for value in sorted(store.list_index_values(index))}


# ----- keys ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("o", "key"),
    [
        pytest.param(obj("a", "ns"), "ns/a", id="a namespaced object is keyed namespace/name"),
        pytest.param(obj("node-1", None), "node-1", id="a cluster-scoped object is keyed by its name"),
        pytest.param(obj("a", ""), "a", id="an empty namespace counts as cluster-scoped"),
    ],
)
def test_meta_namespace_key(o: dict[str, Any], key: str) -> None:
    assert meta_namespace_key(o) == key


def test_an_object_without_a_name_has_no_key() -> None:
    with pytest.raises(ValueError, match=r"no metadata\.name"):
        meta_namespace_key({"metadata": {"namespace": "ns"}})


@pytest.mark.parametrize(
    ("key", "parts"),
    [
        pytest.param("ns/a", ("ns", "a"), id="a namespaced key splits in two"),
        pytest.param("a", ("", "a"), id="a cluster-scoped key has an empty namespace"),
    ],
)
def test_split_key(key: str, parts: tuple[str, str]) -> None:
    assert split_key(key) == parts


@pytest.mark.parametrize("key", ["/a", "ns/", "a/b/c"])
def test_split_key_rejects_malformed_keys(key: str) -> None:
    with pytest.raises(ValueError, match="unexpected key format"):
        split_key(key)


def test_deletion_handling_key_reads_the_tombstone_key() -> None:
    tombstone = DeletedFinalStateUnknown(key=ObjectKey("ns/gone"), obj=obj("gone"))
    assert deletion_handling_key(tombstone) == "ns/gone"
    assert deletion_handling_key(obj("here")) == "ns/here"


# ----- indexes -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("writes", "expected_app", "expected_role"),
    [
        pytest.param(
            [("add", obj("a", app="web")), ("add", obj("b", app="web")), ("add", obj("c", app="db"))],
            {"db": ["ns/c"], "web": ["ns/a", "ns/b"]},
            {},
            id="objects with the same value share an index entry",
        ),
        pytest.param(
            [("add", obj("a", app="web")), ("update", obj("a", rv="2", app="db"))],
            {"db": ["ns/a"]},
            {},
            id="an update moves the key to its new value and drops the emptied old one",
        ),
        pytest.param(
            [("add", obj("a", app="web")), ("add", obj("b", app="web")), ("delete", obj("a"))],
            {"web": ["ns/b"]},
            {},
            id="a delete removes the key from every index",
        ),
        pytest.param(
            [("add", obj("a", roles="master.worker")), ("add", obj("b", roles="worker"))],
            {},
            {"master": ["ns/a"], "worker": ["ns/a", "ns/b"]},
            id="an object with several values is found under each",
        ),
        pytest.param(
            [("add", obj("a", roles="master.worker")), ("update", obj("a", rv="2", roles="worker.ps"))],
            {},
            {"ps": ["ns/a"], "worker": ["ns/a"]},
            id="an update of a multi-valued object keeps shared values and swaps the rest",
        ),
        pytest.param(
            [("add", obj("a", app="web")), ("delete", obj("never-stored")), ("delete", obj("a"))],
            {},
            {},
            id="deleting an unknown object changes nothing",
        ),
    ],
)
def test_indexes_follow_writes(
    writes: list[tuple[str, dict[str, Any]]],
    expected_app: dict[str, list[str]],
    expected_role: dict[str, list[str]],
) -> None:
    store = store_with()
    for op, o in writes:
        getattr(store, op)(o)
    assert index_state(store, "app") == expected_app
    assert index_state(store, "role") == expected_role
    for name, expected in (("app", expected_app), ("role", expected_role)):
        assert {value: store.index_len(name, value) for value in expected} == {
            value: len(keys) for value, keys in expected.items()
        }


def test_queries_by_index() -> None:
    store = store_with(obj("a", app="web"), obj("b", app="web"), obj("c", "other", app="db"))

    assert sorted(o["metadata"]["name"] for o in store.by_index("app", "web")) == ["a", "b"]
    assert store.by_index("app", "nothing") == []
    assert (store.index_len("app", "web"), store.index_len("app", "nothing")) == (2, 0)
    assert sorted(o["metadata"]["name"] for o in store.index("app", obj("x", app="web"))) == ["a", "b"]
    assert sorted(store.index_keys(NAMESPACE_INDEX, "other")) == ["other/c"]
    assert sorted(store.list_index_values(NAMESPACE_INDEX)) == ["ns", "other"]
    with pytest.raises(KeyError, match="no index named 'missing'"):
        store.by_index("missing", "x")
    with pytest.raises(KeyError, match="no index named 'missing'"):
        store.index_len("missing", "x")


def test_indexes_added_later_cover_existing_objects() -> None:
    store = Store()
    store.add(obj("a", app="web"))
    store.add_indexers({"app": by_app})
    store.add_indexers({"app": by_app})  # same function again: a no-op

    assert store.index_keys("app", "web") == ["ns/a"]
    with pytest.raises(IndexConflictError):
        store.add_indexers({"app": by_roles})


def test_a_raising_index_function_leaves_the_store_untouched() -> None:
    def picky(o: dict[str, Any]) -> list[str]:
        if o["metadata"]["labels"].get("bad"):
            raise RuntimeError("cannot index")
        return []

    store = Store(indexers={"picky": picky})
    store.add(obj("a"))
    with pytest.raises(RuntimeError):
        store.add(obj("a", rv="2", bad="yes"))
    assert store.get_by_key("ns/a") == obj("a")


# ----- writes report changes; replace reports tombstones ------------------------------------------------


def test_add_and_delete_report_the_change() -> None:
    store = Store()
    first, second = obj("a", rv="1"), obj("a", rv="2")

    assert store.add(first) == Change(ChangeType.ADDED, ObjectKey("ns/a"), first)
    assert store.update(second) == Change(ChangeType.UPDATED, ObjectKey("ns/a"), second, first)
    final = obj("a", rv="3")
    assert store.delete(final) == Change(ChangeType.DELETED, ObjectKey("ns/a"), final)
    assert store.delete(final) is None


def test_replace_reports_vanished_objects_as_tombstones_of_their_last_state() -> None:
    kept_old, gone_old = obj("kept", rv="1"), obj("gone", rv="2", app="web")
    store = store_with(kept_old, gone_old)
    kept_new, fresh = obj("kept", rv="5"), obj("fresh", rv="6", app="web")

    changes = store.replace([kept_new, fresh], "7")

    assert changes == [
        Change(ChangeType.UPDATED, ObjectKey("ns/kept"), kept_new, kept_old),
        Change(ChangeType.ADDED, ObjectKey("ns/fresh"), fresh),
        Change(
            ChangeType.DELETED, ObjectKey("ns/gone"), DeletedFinalStateUnknown(ObjectKey("ns/gone"), gone_old)
        ),
    ]
    assert sorted(store.list_keys()) == ["ns/fresh", "ns/kept"]
    assert index_state(store, "app") == {"web": ["ns/fresh"]}


def test_replace_with_nothing_empties_the_store_and_its_indexes() -> None:
    store = store_with(obj("a", app="web"), obj("b", roles="x"))

    changes = store.replace([], "9")

    assert [(c.type, c.key) for c in changes] == [
        (ChangeType.DELETED, "ns/a"),
        (ChangeType.DELETED, "ns/b"),
    ]
    assert len(store) == 0
    assert index_state(store, "app") == {}
    assert index_state(store, "role") == {}


# ----- snapshots and transform ---------------------------------------------------------------------------


def test_a_read_object_keeps_its_state_after_later_writes() -> None:
    store = Store()
    store.add(obj("a", rv="1", app="web"))
    snapshot = store.get_by_key("ns/a")
    listed = store.list()
    frozen = copy.deepcopy(snapshot)

    store.update(obj("a", rv="2", app="db"))
    store.replace([obj("a", rv="3", app="batch")], "3")
    store.delete(obj("a", rv="4"))

    assert snapshot == frozen
    assert listed == [frozen]


def test_transform_runs_on_every_write_before_storing() -> None:
    seen: list[str] = []

    def mark(o: dict[str, Any]) -> dict[str, Any]:
        seen.append(o["metadata"]["resourceVersion"])
        return {**o, "transformed": True}

    store = Store(transform=mark)
    store.add(obj("a", rv="1"))
    store.replace([obj("a", rv="2"), obj("b", rv="3")], "3")
    change = store.delete(obj("b", rv="4"))

    assert seen == ["1", "2", "3", "4"]
    assert store.get_by_key("ns/a") == {**obj("a", rv="2"), "transformed": True}
    assert change is not None and change.obj == {**obj("b", rv="4"), "transformed": True}


@pytest.mark.parametrize(
    ("metadata", "slim"),
    [
        pytest.param(
            {"name": "a", "managedFields": [{"manager": "kubectl"}]},
            {"name": "a"},
            id="managed fields are dropped",
        ),
        pytest.param(
            {"name": "a", "annotations": {LAST_APPLIED_ANNOTATION: "{...}", "keep": "me"}},
            {"name": "a", "annotations": {"keep": "me"}},
            id="the last-applied annotation is dropped and the others kept",
        ),
        pytest.param(
            {"name": "a", "annotations": {LAST_APPLIED_ANNOTATION: "{...}"}, "managedFields": []},
            {"name": "a"},
            id="an annotations map left empty is dropped too",
        ),
        pytest.param(
            {"name": "a", "annotations": {"keep": "me"}},
            {"name": "a", "annotations": {"keep": "me"}},
            id="an object with nothing to strip is kept as it is",
        ),
    ],
)
def test_strip_managed_fields(metadata: dict[str, Any], slim: dict[str, Any]) -> None:
    original = {"kind": "Pod", "metadata": metadata, "spec": {"containers": []}}
    before = copy.deepcopy(original)

    stripped = strip_managed_fields(original)

    assert stripped == {"kind": "Pod", "metadata": slim, "spec": {"containers": []}}
    assert original == before, "the input must not be modified"
    assert strip_managed_fields(stripped) == stripped, "the transform must be idempotent"
    assert stripped["spec"] is original["spec"], "only the top level and metadata are copied"
