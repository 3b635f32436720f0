"""Gang scheduling of TaskSets: with the real coscheduling scheduler on simulated
nodes of limited capacity, a TaskSet whose gang does not fit gets no Pod bound at all, one that fits
runs, and the waiting gang is placed whole once capacity frees; Volcano's PodGroup against a CRD
written from Volcano's API reference (unproven against the real Volcano scheduler)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, cast

import pytest
import yaml
from kubernetes import client

from devcluster import Cluster
from devcluster.coscheduling import SCHEDULER_NAME, Coscheduler
from taskset.api import constants as c
from taskset.integrations import BUILT_IN
from taskset.integrations.gang import (
    COSCHEDULING_LABEL,
    COSCHEDULING_PODGROUPS,
    VOLCANO_ANNOTATION,
    VOLCANO_PODGROUPS,
    gang_integrations,
)
from taskset.runtime.controller import Controller
from tests.builders import TaskSetBuilder, pod_template
from tests.integration.conftest import install_crd, start_controller
from tests.integration.harness import TaskSets, eventually
from tests.integration.scenarios.steps import FOREVER

pytestmark = pytest.mark.integration

NOT_PLACED_FOR = 5.0  # seconds: the scheduler has tried the gang by then (its Permit wait is 10 s)
# Volcano's PodGroup (scheduling.volcano.sh/v1beta1) as its API reference describes the fields the
# controller writes; enough for the API server to store and serve one. Not Volcano's own CRD.
VOLCANO_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "podgroups.scheduling.volcano.sh"},
    "spec": {
        "group": "scheduling.volcano.sh",
        "scope": "Namespaced",
        "names": {"plural": "podgroups", "singular": "podgroup", "kind": "PodGroup", "shortNames": ["pg"]},
        "versions": [
            {
                "name": "v1beta1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "minMember": {"type": "integer", "format": "int32"},
                                    "minResources": {
                                        "type": "object",
                                        "x-kubernetes-preserve-unknown-fields": True,
                                    },
                                    "priorityClassName": {"type": "string"},
                                    "queue": {"type": "string"},
                                },
                            },
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}


@pytest.fixture
def gang_controller(
    cluster: Cluster, namespace: str, crd_installed: None, coscheduler: Coscheduler
) -> Iterator[Controller]:
    controller = start_controller(cluster, namespace, (*BUILT_IN, *gang_integrations(("coscheduling",))))
    yield controller
    controller.stop(5)


def gang_taskset(name: str, replicas: int, namespace: str) -> dict[str, Any]:
    """``replicas`` Pods of one CPU each, for the test's small nodes, gang-scheduled by coscheduling."""
    template = pod_template(FOREVER)
    template["spec"] |= {
        "schedulerName": SCHEDULER_NAME,
        "nodeSelector": {"gang-test": namespace},
        "tolerations": [{"key": "gang-test", "operator": "Exists", "effect": "NoSchedule"}],
    }
    template["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    obj = TaskSetBuilder(name).role("r", replicas, template=template).obj()
    obj["spec"]["gang"] = {"scheduler": "coscheduling"}
    return obj


def bound(ts: TaskSets, name: str) -> list[str]:
    return sorted(p["metadata"]["name"] for p in ts.pods(name) if (p.get("spec") or {}).get("nodeName"))


def test_a_gang_that_does_not_fit_gets_no_pod_bound_and_is_placed_whole_once_capacity_frees(
    cluster: Cluster, namespace: str, gang_controller: Controller, small_nodes: str
) -> None:
    ts = TaskSets(cluster, namespace)
    ts.create(gang_taskset("fits", 2, namespace))
    eventually(lambda: bound(ts, "fits") == ["fits-r-0", "fits-r-1"], 60, "the gang that fits placed")
    api = client.CustomObjectsApi(cluster.api_client())
    kind = COSCHEDULING_PODGROUPS
    group = cast(
        "dict[str, Any]",
        api.get_namespaced_custom_object(kind.group, kind.version, namespace, kind.plural, "taskset-fits-0"),
    )
    assert group["spec"]["minMember"] == 2
    assert [o["name"] for o in group["metadata"]["ownerReferences"]] == ["c-fits-0"], "the attempt's gang"
    assert {p["metadata"]["labels"][COSCHEDULING_LABEL] for p in ts.pods("fits")} == {"taskset-fits-0"}

    ts.end_pod("fits-r-0", 0)
    eventually(lambda: ts.pod("fits-r-0") is None, 60, "one CPU freed")
    ts.create(gang_taskset("waits", 2, namespace))  # one of its Pods would fit now, but not both
    eventually(lambda: len(ts.pods("waits")) == 2, 60, "the waiting gang's Pods created")
    time.sleep(NOT_PLACED_FOR)
    assert bound(ts, "waits") == [], "no Pod of a gang that does not fit is bound"

    ts.end_pod("fits-r-1", 0)
    assert ts.final("fits")["state"] == "Succeeded"
    eventually(lambda: bound(ts, "waits") == ["waits-r-0", "waits-r-1"], 60, "the waiting gang placed whole")


@pytest.fixture
def volcano_controller(cluster: Cluster, namespace: str, crd_installed: None) -> Iterator[Controller]:
    install_crd(
        cluster,
        yaml.safe_dump(VOLCANO_CRD),
        "podgroups.scheduling.volcano.sh",
        "podgroups.scheduling.volcano.sh",
    )
    controller = start_controller(cluster, namespace, (*BUILT_IN, *gang_integrations(("volcano",))))
    yield controller
    controller.stop(5)


def test_a_volcano_gang_gets_its_podgroup_and_every_pod_its_annotation(
    cluster: Cluster, namespace: str, volcano_controller: Controller
) -> None:
    ts = TaskSets(cluster, namespace)
    obj = TaskSetBuilder("vc").role("ps", 1, command=FOREVER).role("worker", 2, command=FOREVER).obj()
    obj["spec"]["gang"] = {"scheduler": "volcano", "minAvailable": 3, "queue": "research"}
    ts.create(obj)
    eventually(lambda: len(ts.pods("vc")) == 3, 60, "the three Pods created")
    kind = VOLCANO_PODGROUPS
    group = cast(
        "dict[str, Any]",
        api_of(cluster).get_namespaced_custom_object(
            kind.group, kind.version, namespace, kind.plural, "taskset-vc-0"
        ),
    )
    assert group["spec"] == {"minMember": 3, "queue": "research"}
    assert {p["metadata"]["annotations"][VOLCANO_ANNOTATION] for p in ts.pods("vc")} == {"taskset-vc-0"}
    assert all(p["metadata"]["annotations"].get(c.ANNOTATION_TASKSET) == "vc" for p in ts.pods("vc"))


def api_of(cluster: Cluster) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(cluster.api_client())
