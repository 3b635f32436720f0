"""The informers' indexes and the event routing relate an object to a TaskSet of its
own ``metadata.namespace`` only. Annotations (``TaskSet``, ``Namespace``) and owner references are
written by whoever creates the object, so an object whose annotations or owner name another namespace
is filed under its own namespace, or not at all. Pure: the index functions, a Store with the
controller's indexers, and the controller's routing of an event to a key."""

from __future__ import annotations

from typing import Any

import pytest

from informers import DeletedFinalStateUnknown, Store
from taskset.api.constants import ANNOTATION_NAMESPACE, ANNOTATION_TASKSET
from taskset.runtime.controller import _owner_keys
from taskset.runtime.indexes import (
    OWNER_INDEX,
    POD_INDEX,
    controller_uid_index,
    owner_key,
    taskset_index,
)

pytestmark = pytest.mark.unit


def obj(
    namespace: object = "a",
    *,
    name: str = "victim-w-0",
    taskset: object = "victim",
    claimed: object = None,
    owner: str | None = None,
) -> dict[str, Any]:
    """An object in ``namespace`` annotated ``TaskSet: <taskset>`` and, when given, ``Namespace:
    <claimed>``; controlled by ``owner`` (a UID) when given."""
    annotations: dict[str, object] = {ANNOTATION_TASKSET: taskset}
    if claimed is not None:
        annotations[ANNOTATION_NAMESPACE] = claimed
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "annotations": annotations}
    if owner is not None:
        meta["ownerReferences"] = [{"kind": "ConfigMap", "name": "c", "uid": owner, "controller": True}]
    return {"metadata": meta}


@pytest.mark.parametrize(
    ("raw", "keys"),
    [
        pytest.param(
            obj("a", claimed="a"), ["a/victim"], id="the controller's own Pod is filed under its TaskSet"
        ),
        pytest.param(
            obj("evil", claimed="a"),
            ["evil/victim"],
            id="a Pod whose Namespace annotation names another namespace is filed under its own",
        ),
        pytest.param(
            obj("a"), ["a/victim"], id="a Pod without the Namespace annotation is filed under its own"
        ),
        pytest.param(obj("a", claimed=7), ["a/victim"], id="a malformed Namespace annotation is never read"),
        pytest.param(obj(None, claimed="a"), [], id="an object without a namespace is filed nowhere"),
        pytest.param(obj("", claimed="a"), [], id="an object with an empty namespace is filed nowhere"),
        pytest.param(obj("a", taskset=""), [], id="an empty TaskSet annotation is filed nowhere"),
        pytest.param(
            obj("a", taskset=["victim"]), [], id="a TaskSet annotation that is no string is filed nowhere"
        ),
        pytest.param({"metadata": None}, [], id="an object without metadata is filed nowhere"),
        pytest.param({}, [], id="an empty object is filed nowhere"),
    ],
)
def test_a_pod_is_indexed_under_its_own_namespace_only(raw: dict[str, Any], keys: list[str]) -> None:
    assert taskset_index(raw) == keys


@pytest.mark.parametrize(
    ("raw", "keys"),
    [
        pytest.param(
            obj("a", owner="uid-1"), ["a/uid-1"], id="an owned object is filed under its namespace and owner"
        ),
        pytest.param(
            obj("evil", owner="uid-1", claimed="a"),
            ["evil/uid-1"],
            id="an owner reference to a UID of another namespace files the object under its own namespace",
        ),
        pytest.param(obj("a"), [], id="an object without a controlling owner is filed nowhere"),
        pytest.param(obj(None, owner="uid-1"), [], id="an owned object without a namespace is filed nowhere"),
    ],
)
def test_an_owned_object_is_indexed_under_its_own_namespace_and_owner(
    raw: dict[str, Any], keys: list[str]
) -> None:
    assert controller_uid_index(raw) == keys


@pytest.mark.parametrize(
    ("event", "keys"),
    [
        pytest.param(obj("a", claimed="a"), ["a/victim"], id="a change of our Pod wakes its TaskSet"),
        pytest.param(
            obj("evil", claimed="a"),
            ["evil/victim"],
            id="a change of a stranger's Pod claiming another namespace wakes only a TaskSet of its own",
        ),
        pytest.param(
            DeletedFinalStateUnknown("evil/victim-w-0", obj("evil", claimed="a")),
            ["evil/victim"],
            id="a missed deletion of a stranger's Pod wakes only a TaskSet of its own namespace",
        ),
        pytest.param(
            DeletedFinalStateUnknown("a/victim-w-0", obj("a")),
            ["a/victim"],
            id="a missed deletion of our Pod wakes its TaskSet",
        ),
    ],
)
def test_an_event_is_routed_to_a_taskset_of_the_objects_own_namespace(
    event: dict[str, Any] | DeletedFinalStateUnknown, keys: list[str]
) -> None:
    assert _owner_keys(event) == keys


def test_a_strangers_pod_under_the_victims_name_is_not_among_the_victims_pods() -> None:
    pods = Store(indexers={POD_INDEX: taskset_index})
    ours, strangers = obj("a", claimed="a"), obj("evil", claimed="a")
    pods.add(ours)
    pods.add(strangers)
    assert pods.by_index(POD_INDEX, "a/victim") == [ours]


def test_a_strangers_object_controlled_by_the_victims_uid_is_not_among_the_victims_objects() -> None:
    units = Store(indexers={OWNER_INDEX: controller_uid_index})
    ours = obj("a", name="c-victim-0", owner="ts-uid")
    units.add(ours)
    units.add(obj("evil", name="c-victim-1", owner="ts-uid"))
    assert units.by_index(OWNER_INDEX, owner_key("a", "ts-uid")) == [ours]
