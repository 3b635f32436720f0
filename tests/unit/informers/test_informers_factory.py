"""The factory shares one informer per (resource, namespace, selectors) and runs them together."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from clock import FakeClock
from informers import (
    IndexConflictError,
    Resource,
    SharedInformerFactory,
    WatchTarget,
    strip_managed_fields,
)
from informers.testing import FakeSource, RecordingLogger, eventually

pytestmark = [pytest.mark.unit, pytest.mark.timeout(20)]

PODS = Resource(group="", version="v1", plural="pods")
WIDGETS = Resource(group="example.com", version="v1alpha1", plural="widgets")


def by_app(o: dict[str, Any]) -> list[str]:
    return [o["metadata"].get("labels", {}).get("app", "")]


def by_node(o: dict[str, Any]) -> list[str]:
    return [o.get("spec", {}).get("nodeName", "")]


@pytest.fixture
def sources() -> dict[WatchTarget, FakeSource]:
    return {}


@pytest.fixture
def factory(
    sources: dict[WatchTarget, FakeSource], clock: FakeClock, rng: random.Random, logger: RecordingLogger
) -> Iterator[SharedInformerFactory]:
    def lister_watcher_for(target: WatchTarget) -> FakeSource:
        sources[target] = FakeSource(clock=clock)
        return sources[target]

    made = SharedInformerFactory(lister_watcher_for=lister_watcher_for, clock=clock, rng=rng, logger=logger)
    yield made
    made.stop()


@pytest.mark.parametrize(
    ("first", "second", "shared"),
    [
        pytest.param({}, {}, True, id="the same resource everywhere is one informer"),
        pytest.param({"namespace": "a"}, {"namespace": "a"}, True, id="the same namespace is one informer"),
        pytest.param(
            {"namespace": "a"}, {"namespace": "b"}, False, id="another namespace is another informer"
        ),
        pytest.param({}, {"label_selector": "app=web"}, False, id="a label selector makes another informer"),
        pytest.param(
            {}, {"field_selector": "spec.nodeName=n1"}, False, id="a field selector makes another one"
        ),
    ],
)
def test_informers_are_shared_per_target(
    first: dict[str, Any], second: dict[str, Any], shared: bool, factory: SharedInformerFactory
) -> None:
    one = factory.informer_for(PODS, **first)
    other = factory.informer_for(PODS, **second)

    assert (one is other) == shared


def test_another_resource_is_another_informer(factory: SharedInformerFactory) -> None:
    assert factory.informer_for(PODS) is not factory.informer_for(WIDGETS)


def test_indexes_requested_by_different_callers_are_merged(factory: SharedInformerFactory) -> None:
    informer = factory.informer_for(PODS, indexers={"app": by_app})
    factory.informer_for(PODS, indexers={"node": by_node})

    assert informer.store.list_index_values("app") == []
    assert informer.store.list_index_values("node") == []
    with pytest.raises(IndexConflictError):
        factory.informer_for(PODS, indexers={"app": by_node})


def test_a_different_transform_for_an_existing_informer_is_refused(factory: SharedInformerFactory) -> None:
    factory.informer_for(PODS, transform=strip_managed_fields)

    with pytest.raises(ValueError, match="different transform"):
        factory.informer_for(PODS, transform=None)


def test_start_runs_every_informer_and_stop_ends_them(
    sources: dict[WatchTarget, FakeSource], factory: SharedInformerFactory
) -> None:
    pods = factory.informer_for(PODS, namespace="ns")
    widgets = factory.informer_for(WIDGETS)
    sources[WatchTarget(resource=PODS, namespace="ns")].create(
        {"metadata": {"name": "p", "namespace": "ns"}, "spec": {}}
    )

    factory.start()
    synced = factory.wait_for_cache_sync(timeout=5)

    assert synced == {WatchTarget(resource=PODS, namespace="ns"): True, WatchTarget(resource=WIDGETS): True}
    assert pods.store.list_keys() == ["ns/p"]
    assert widgets.store.list_keys() == []
    eventually(lambda: all(s.open_watches() for s in sources.values()))

    factory.stop()

    assert all(s.open_watches() == [] for s in sources.values())
    with pytest.raises(RuntimeError, match="stopped"):
        factory.informer_for(PODS)


def test_informer_names_describe_their_target(factory: SharedInformerFactory) -> None:
    informer = factory.informer_for(WIDGETS, namespace="ns", label_selector="app=web")

    assert informer.name == "widgets.v1alpha1.example.com namespace=ns labels=app=web"
