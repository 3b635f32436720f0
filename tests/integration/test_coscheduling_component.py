"""The coscheduling devcluster component: scheduler-plugins' kube-scheduler, built
from its pinned module and started only by the tests that ask for it, placing gangs all or nothing on
simulated nodes of limited capacity. Here with hand-made PodGroups and Pods; the TaskSet's own gang is
the gang-scheduling integration's."""

from __future__ import annotations

import contextlib
import functools
import time
from typing import Any

import pytest
from kubernetes import client

from devcluster import Cluster, sim
from devcluster.coscheduling import POD_GROUP_LABEL, SCHEDULER_NAME, Coscheduler
from tests.integration.harness import eventually

pytestmark = pytest.mark.integration

GROUP, VERSION = "scheduling.x-k8s.io", "v1alpha1"
# Long enough for the scheduler to have tried a gang that does not fit (its Permit wait is 10 s).
NOT_PLACED_FOR = 5.0


def gang(api: client.CustomObjectsApi, core: client.CoreV1Api, namespace: str, name: str, size: int) -> None:
    group = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "PodGroup", "metadata": {"name": name}}
    api.create_namespaced_custom_object(
        GROUP, VERSION, namespace, "podgroups", {**group, "spec": {"minMember": size}}
    )
    for index in range(size):
        pod: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{name}-{index}", "labels": {POD_GROUP_LABEL: name}},
            "spec": {
                "schedulerName": SCHEDULER_NAME,
                "nodeSelector": {"gang-test": namespace},
                "tolerations": [{"key": "gang-test", "operator": "Exists", "effect": "NoSchedule"}],
                "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
            },
        }
        core.create_namespaced_pod(namespace, pod)


def names(core: client.CoreV1Api, namespace: str) -> list[str]:
    return [str(p.metadata.name) for p in core.list_namespaced_pod(namespace).items]


def bound(core: client.CoreV1Api, namespace: str, prefix: str) -> list[str]:
    pods = core.list_namespaced_pod(namespace).items
    return sorted(
        str(p.metadata.name) for p in pods if str(p.metadata.name).startswith(prefix) and p.spec.node_name
    )


def test_a_gang_is_placed_whole_or_not_at_all(
    cluster: Cluster, coscheduler: Coscheduler, namespace: str, small_nodes: str
) -> None:
    api = client.CustomObjectsApi(cluster.api_client())
    core = client.CoreV1Api(cluster.api_client())
    gang(api, core, namespace, "fits", 2)
    assert eventually(lambda: bound(core, namespace, "fits-") == ["fits-0", "fits-1"], 60, "the gang placed")

    core.delete_namespaced_pod("fits-0", namespace, grace_period_seconds=0)
    eventually(lambda: "fits-0" not in names(core, namespace), 30, "one CPU freed")
    gang(api, core, namespace, "waits", 2)  # one of its Pods would fit now, but not both
    time.sleep(NOT_PLACED_FOR)
    assert bound(core, namespace, "waits-") == [], "no Pod of a gang that does not fit is bound"

    core.delete_namespaced_pod("fits-1", namespace, grace_period_seconds=0)
    eventually(
        lambda: bound(core, namespace, "waits-") == ["waits-0", "waits-1"], 60, "the waiting gang placed"
    )


# A waiting gang is placed within about 35 s of the capacity freeing (the scheduler's 30 s flush plus
# ``UNSCHEDULABLE_FLUSH``), however the Coscheduling plugin's rejections left its Pods; before, they could
# sleep through up to 5 minutes. The bound leaves room for a loaded machine and is far below 5 minutes.
PLACED_WITHIN = 120.0


def test_a_gang_waiting_for_capacity_is_placed_soon_after_it_frees(
    cluster: Cluster, coscheduler: Coscheduler, namespace: str
) -> None:
    """Four one-CPU nodes held by one gang; a second gang of four waits. The first gang's Pods end one
    by one, each freeing a node: every partial freeing lets some waiting Pods reach Permit, whose
    rejections cascade (PostFilter, Unreserve) until the plugin itself has rejected every Pod of the gang.
    The plugin wakes the Pods it rejected only when a Pod or PodGroup is added, not when a node frees:
    the last freeing wakes nobody, and the gang waits for the scheduler's flush of unschedulable Pods."""
    api = client.CustomObjectsApi(cluster.api_client())
    core = client.CoreV1Api(cluster.api_client())
    names = cluster.create_nodes(
        4,
        namespace[:60],
        capacity={"cpu": "1", "memory": "4Gi", "pods": "10"},
        labels={"gang-test": namespace},
        taints=({"key": "gang-test", "value": namespace, "effect": "NoSchedule"},),
    )
    try:
        gang(api, core, namespace, "fits", 4)
        eventually(lambda: len(bound(core, namespace, "fits-")) == 4, 60, "the first gang placed")
        gang(api, core, namespace, "waits", 4)
        eventually(lambda: all(tried(core, namespace, f"waits-{i}") for i in range(4)), 60, "the gang tried")
        assert bound(core, namespace, "waits-") == []
        for index in range(4):
            core.patch_namespaced_pod(
                f"fits-{index}", namespace, {"metadata": {"annotations": {sim.DURATION: "0s"}}}
            )
            # Each node frees on its own, the scheduler has a turn in between (not a race to win).
            eventually(functools.partial(ended, core, namespace, f"fits-{index}"), 30, "a node freed")
            time.sleep(2)
        freed = time.monotonic()
        eventually(
            lambda: len(bound(core, namespace, "waits-")) == 4, PLACED_WITHIN, "the waiting gang placed"
        )
        print(f"placed {time.monotonic() - freed:.1f} s after the last node freed")
    finally:
        for name in names:
            with contextlib.suppress(client.ApiException):
                core.delete_node(name)


def ended(core: client.CoreV1Api, namespace: str, name: str) -> bool:
    return bool(core.read_namespaced_pod(name, namespace).status.phase == "Succeeded")


def tried(core: client.CoreV1Api, namespace: str, name: str) -> bool:
    """Whether the scheduler has tried the Pod and found it unschedulable."""
    conditions = core.read_namespaced_pod(name, namespace).status.conditions or []
    return any(c.type == "PodScheduled" and c.reason == "Unschedulable" for c in conditions)
