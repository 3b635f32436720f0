"""Owned objects kept as declared on the real control plane: an edit of the headless Service's selector
(which would send the replicas' DNS names to someone else's Pods, or to none) and of the PodGroup's
minMember (which would let the scheduler place a smaller gang) is patched back in place, and an event on
the TaskSet says so; the running attempt goes on."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest
from kubernetes import client

from devcluster import Cluster
from devcluster.coscheduling import Coscheduler
from taskset.integrations import BUILT_IN
from taskset.integrations.gang import COSCHEDULING_PODGROUPS, gang_integrations
from taskset.runtime.controller import Controller
from tests.builders import TaskSetBuilder, pod_template
from tests.integration.conftest import start_controller
from tests.integration.harness import TaskSets, eventually
from tests.integration.scenarios.steps import FOREVER

pytestmark = pytest.mark.integration

RESTORED = "OwnedObjectRestored"


def running_taskset(ts: TaskSets, name: str, **spec: Any) -> None:
    """Two replicas that run until told to exit, running; they declare a port, so the Service has one
    (whose defaults the API server fills in are not drift)."""
    template = pod_template(FOREVER)
    template["spec"]["containers"][0]["ports"] = [{"containerPort": 2222}]
    builder = TaskSetBuilder(name).role("r", 2, template=template)
    for key, value in spec.items():
        builder = builder.spec_field(key, value)
    ts.create(builder.obj())
    eventually(lambda: ts.status(name).get("phase") == "TaskSetAttemptRunning", 60, f"{name} running")


def restored_events(ts: TaskSets, name: str) -> list[str]:
    return [message for reason, message in ts.events(name) if reason == RESTORED]


def test_an_edited_service_selector_is_patched_back_and_said(
    cluster: Cluster, namespace: str, controller: Controller
) -> None:
    ts = TaskSets(cluster, namespace)
    running_taskset(ts, "dns")
    made = eventually(lambda: ts.service("dns"), 30, "the headless Service")
    uid = made["metadata"]["uid"]
    assert restored_events(ts, "dns") == [], "what the API server filled in is not drift"

    patch = {"spec": {"selector": {"app": "someone-else"}}}
    ts.core.patch_namespaced_service("dns", namespace, patch)

    eventually(lambda: (ts.service("dns") or {})["spec"]["selector"] == {"TaskSet": "dns"}, 30, "restored")
    after = ts.service("dns")
    assert after is not None and after["metadata"]["uid"] == uid, "patched in place, never made anew"
    assert [p["port"] for p in after["spec"]["ports"]] == [2222]
    said = eventually(lambda: restored_events(ts, "dns"), 30, "the event")
    assert said == [
        "Service dns: spec.selector changed by someone else, restored as declared (headless-service)"
    ]
    assert ts.status("dns")["phase"] == "TaskSetAttemptRunning"


@pytest.fixture
def gang_controller(
    cluster: Cluster, namespace: str, crd_installed: None, coscheduler: Coscheduler
) -> Iterator[Controller]:
    controller = start_controller(cluster, namespace, (*BUILT_IN, *gang_integrations(("coscheduling",))))
    yield controller
    controller.stop(5)


def test_an_edited_podgroup_min_member_is_patched_back_and_said(
    cluster: Cluster, namespace: str, gang_controller: Controller
) -> None:
    ts = TaskSets(cluster, namespace)
    running_taskset(ts, "gang", gang={"scheduler": "coscheduling"})
    api = client.CustomObjectsApi(cluster.api_client())
    kind, name = COSCHEDULING_PODGROUPS, "taskset-gang-0"

    def group() -> dict[str, Any]:
        return cast(
            "dict[str, Any]",
            api.get_namespaced_custom_object(kind.group, kind.version, namespace, kind.plural, name),
        )

    uid = group()["metadata"]["uid"]
    assert restored_events(ts, "gang") == [], "what the API server filled in is not drift"
    patch = {"spec": {"minMember": 1}}
    api.patch_namespaced_custom_object(kind.group, kind.version, namespace, kind.plural, name, patch)

    eventually(lambda: group()["spec"]["minMember"] == 2, 30, "minMember restored")
    assert group()["metadata"]["uid"] == uid, "patched in place, never made anew"
    said = eventually(lambda: restored_events(ts, "gang"), 30, "the event")
    assert said == [
        "PodGroup taskset-gang-0: spec.minMember changed by someone else, restored as declared (coscheduling)"
    ]
    assert ts.status("gang")["phase"] == "TaskSetAttemptRunning"
