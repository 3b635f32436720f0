"""The Kueue devcluster component: built from its pinned module, started only by the
tests that ask for it, and really admitting by quota on the embedded control plane. Here with
hand-made Workloads; the TaskSet's own Workload is the Kueue integration's."""

from __future__ import annotations

import time
from typing import Any, cast

import pytest
from kubernetes import client

from devcluster import Cluster
from devcluster.kueue import Kueue
from tests.integration.harness import eventually

pytestmark = pytest.mark.integration

GROUP, VERSION = "kueue.x-k8s.io", "v1beta2"


def workload(name: str, queue: str, cpu: str) -> dict[str, Any]:
    container = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {
            "queueName": queue,
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {"spec": {"containers": [container], "restartPolicy": "Never"}},
                }
            ],
        },
    }


def admitted(api: client.CustomObjectsApi, namespace: str, name: str) -> bool:
    found = cast(
        "dict[str, Any]", api.get_namespaced_custom_object(GROUP, VERSION, namespace, "workloads", name)
    )
    return bool((found.get("status") or {}).get("admission"))


def test_kueue_admits_by_quota_and_frees_it_when_a_workload_finishes(
    cluster: Cluster, kueue: Kueue, namespace: str
) -> None:
    api = client.CustomObjectsApi(cluster.api_client())
    flavor = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceFlavor", "metadata": {"name": "default"}}
    quota = {"name": "cpu", "nominalQuota": "1"}
    queue = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ClusterQueue",
        "metadata": {"name": namespace},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {"coveredResources": ["cpu"], "flavors": [{"name": "default", "resources": [quota]}]}
            ],
        },
    }
    local = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "LocalQueue",
        "metadata": {"name": "team"},
        "spec": {"clusterQueue": namespace},
    }
    try:
        api.create_cluster_custom_object(GROUP, VERSION, "resourceflavors", flavor)
    except client.ApiException as err:
        if err.status != 409:
            raise
    api.create_cluster_custom_object(GROUP, VERSION, "clusterqueues", queue)
    try:
        api.create_namespaced_custom_object(GROUP, VERSION, namespace, "localqueues", local)
        for name in ("first", "second"):
            api.create_namespaced_custom_object(
                GROUP, VERSION, namespace, "workloads", workload(name, "team", "1")
            )

        def one_admitted() -> list[str] | None:
            names = [name for name in ("first", "second") if admitted(api, namespace, name)]
            return names if names else None

        winners = eventually(one_admitted, 60, "a Workload admitted")
        assert len(winners) == 1, "quota for one only"
        waiting = "second" if winners == ["first"] else "first"

        done = cast(
            "dict[str, Any]",
            api.get_namespaced_custom_object(GROUP, VERSION, namespace, "workloads", winners[0]),
        )
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        finished = {
            "type": "Finished",
            "status": "True",
            "reason": "Succeeded",
            "message": "done",
            "lastTransitionTime": now,
        }
        done["status"]["conditions"].append(finished)
        api.replace_namespaced_custom_object_status(GROUP, VERSION, namespace, "workloads", winners[0], done)
        eventually(lambda: admitted(api, namespace, waiting), 60, "the other Workload admitted")
    finally:
        api.delete_cluster_custom_object(GROUP, VERSION, "clusterqueues", namespace)
