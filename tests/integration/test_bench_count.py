"""The benchmark driver's count of listed objects (``bench.kube.Api.count``) reads every page: the
``cache`` scenario waits on it for its 10,000 Running Pods, listed 1,000 at a time."""

from __future__ import annotations

import pytest

from bench.kube import Api
from devcluster import Cluster

pytestmark = pytest.mark.integration


def test_a_count_over_several_pages_counts_each_object_once(cluster: Cluster, namespace: str) -> None:
    for i in range(5):
        cluster.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/configmaps",
            {"metadata": {"name": f"counted-{i}", "labels": {"counted": "yes" if i % 2 == 0 else "no"}}},
        )
    api = Api(cluster)
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    assert api.count(path, "labelSelector=counted%3Dyes", page=1) == 3
    assert api.count(path, "labelSelector=counted", page=2) == 5
    assert api.count(path, "labelSelector=counted%3Dnone", page=2) == 0
