"""``Observed.read`` over the caches of the kinds integrations read (Kueue's ResourceFlavors):
a lookup by (kind key, name) reads the cluster-scoped cache, as its transform left the object."""

from __future__ import annotations

import functools

import pytest

from informers import Store
from taskset.integrations.kueue import RESOURCE_FLAVORS
from taskset.observed.slim import slim_owned
from taskset.runtime.read_objects import ReadObjects

pytestmark = pytest.mark.unit


def test_a_read_object_is_found_by_kind_and_name_as_its_cache_keeps_it() -> None:
    store = Store(transform=functools.partial(slim_owned, kept=RESOURCE_FLAVORS.kept))
    store.add({"metadata": {"name": "a100"}, "spec": {"nodeLabels": {"gpu": "a100"}, "nodeTaints": []}})
    read = ReadObjects({RESOURCE_FLAVORS.key: store})
    key = (RESOURCE_FLAVORS.key, "a100")
    assert read[key]["spec"] == {"nodeLabels": {"gpu": "a100"}}
    assert read.get((RESOURCE_FLAVORS.key, "h100")) is None
    assert read.get(("resourceflavors.other", "a100")) is None, "another kind's cache is not asked"
    assert list(read) == [key] and len(read) == 1
    assert ReadObjects({}).get(key) is None
