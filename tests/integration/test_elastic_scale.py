"""Issue 26: a running role scaled on the embedded control plane, by its spec and by ``kubectl scale``.

The API server's CEL rules refuse a count outside ``minReplicas``/``maxReplicas``; within them, a patch
of ``replicas`` while the attempt runs creates the new indices in the same attempt, and removes the
highest ones on the way down, which end neither failed nor retried: the TaskSet then succeeds on the
replicas it has.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from devcluster import Cluster, sim
from taskset.api import constants as c
from taskset.runtime.controller import Controller
from tests.builders import TaskSetBuilder, pod_template
from tests.integration.conftest import start_controller
from tests.integration.harness import TaskSets, eventually, role_status

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SEEN = 60.0  # seconds until the controller acts on a scale


@pytest.fixture
def controller(cluster: Cluster, namespace: str, crd_installed: None) -> Iterator[Controller]:
    running = start_controller(cluster, namespace, workers=2)
    yield running
    running.stop(5)


@pytest.fixture
def ts(cluster: Cluster, namespace: str, controller: Controller) -> TaskSets:
    return TaskSets(cluster, namespace)


def patch_replicas(ts: TaskSets, name: str, replicas: int) -> None:
    """Write the role's count as ``kubectl edit`` would: read, change, replace (resourceVersion held)."""
    obj = ts.get(name)
    assert obj is not None
    obj["spec"]["roles"][0]["replicas"] = replicas
    ts.custom.replace_namespaced_custom_object(c.GROUP, c.VERSION, ts.namespace, c.PLURAL, name, obj)


def pod_names(ts: TaskSets, name: str) -> list[str]:
    return sorted(p["metadata"]["name"] for p in ts.pods(name) if not p["metadata"].get("deletionTimestamp"))


def running_pods(ts: TaskSets, name: str, count: int) -> bool:
    pods = [p for p in ts.pods(name) if not p["metadata"].get("deletionTimestamp")]
    return len(pods) == count and all((p.get("status") or {}).get("phase") == "Running" for p in pods)


def workers(name: str, replicas: int) -> dict[str, Any]:
    return TaskSetBuilder(name).role("w", replicas, minReplicas=1, maxReplicas=4).obj()


def test_scale_up_and_down_while_running(ts: TaskSets) -> None:
    ts.create(workers("elastic", 2))
    eventually(lambda: running_pods(ts, "elastic", 2), SEEN, "two Pods running")
    uid = ts.status("elastic")["controlUnitUID"]
    patch_replicas(ts, "elastic", 4)
    eventually(lambda: running_pods(ts, "elastic", 4), SEEN, "four Pods running")
    role = role_status(ts.status("elastic"), "w")
    assert role["targetReplicas"] == 4 and (role["lastScale"]["from"], role["lastScale"]["to"]) == (2, 4)
    assert ts.status("elastic")["controlUnitUID"] == uid  # the same attempt
    patch_replicas(ts, "elastic", 1)
    eventually(lambda: pod_names(ts, "elastic") == ["elastic-w-0"], SEEN, "only index 0 left")
    status = eventually(
        lambda: (s := ts.status("elastic")) and len(role_status(s, "w")["replicaStatus"]) == 1 and s,
        SEEN,
        "the scaled-down replicas dropped from the status",
    )
    assert status["phase"] == c.TaskSetPhase.ATTEMPT_RUNNING and status["totalRetriedCount"] == 0
    assert role_status(status, "w")["state"] == c.State.RUNNING  # the removed replicas failed nothing


@pytest.mark.parametrize(
    "replicas", [pytest.param(0, id="below minReplicas"), pytest.param(5, id="above max")]
)
def test_a_scale_outside_the_bounds_is_refused_by_the_api_server(ts: TaskSets, replicas: int) -> None:
    ts.create(workers("bounded", 2))
    with pytest.raises(client.ApiException) as refused:
        patch_replicas(ts, "bounded", replicas)
    assert refused.value.status == 422


# ----- /scale (issue 26, item 2) ----------------------------------------------------------------------


def scaled_workers(name: str, replicas: int) -> dict[str, Any]:
    obj = workers(name, replicas)
    obj["spec"]["scale"] = {"role": "w", "replicas": replicas}
    return obj


def kubectl_scale(cluster: Cluster, namespace: str, name: str, replicas: int) -> Any:
    return cluster.kubectl("-n", namespace, "scale", f"ts/{name}", f"--replicas={replicas}", check=False)


def test_kubectl_scale_drives_the_role_spec_scale_names(
    cluster: Cluster, namespace: str, ts: TaskSets
) -> None:
    ts.create(scaled_workers("hpa", 2))
    eventually(lambda: running_pods(ts, "hpa", 2), SEEN, "two Pods running")
    scaled = kubectl_scale(cluster, namespace, "hpa", 3)
    assert scaled.returncode == 0, scaled.stderr
    eventually(lambda: running_pods(ts, "hpa", 3), SEEN, "three Pods running")
    selector = f"{c.LABEL_TASKSET}=hpa,{c.LABEL_ROLE}=w"
    eventually(lambda: ts.status("hpa").get("scale") == {"replicas": 3, "selector": selector}, SEEN, "status")
    # What an HPA reads: the scale subresource, through the paths the CRD declares.
    shown = cluster.kubectl("-n", namespace, "get", "ts/hpa", "--subresource=scale", "-o", "json")
    scale = json.loads(shown.stdout)
    assert (scale["spec"]["replicas"], scale["status"]["replicas"]) == (3, 3)
    assert scale["status"]["selector"] == selector
    last = role_status(ts.status("hpa"), "w")["lastScale"]
    assert (
        (last["from"], last["to"]) == (2, 3) and last["by"].endswith("via /scale") and last["generation"] > 1
    )
    assert any(r == c.EventReason.ROLE_SCALED and "2 -> 3 by " in m for r, m in ts.events("hpa"))
    assert (ts.get("hpa") or {})["spec"]["roles"][0]["replicas"] == 2  # /scale wrote spec.scale only
    refused = kubectl_scale(cluster, namespace, "hpa", 5)  # above maxReplicas
    assert refused.returncode != 0 and "spec.scale.replicas" in refused.stderr, refused.stderr


def test_the_api_server_takes_no_list_index_in_a_scale_path(cluster: Cluster) -> None:
    """Why /scale needs spec.scale: a specReplicasPath into a list is refused (a plain field path only)."""
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "probes.elastic.example.com"},
        "spec": {
            "group": "elastic.example.com",
            "scope": "Namespaced",
            "names": {"plural": "probes", "singular": "probe", "kind": "Probe", "listKind": "ProbeList"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                    "subresources": {
                        "scale": {
                            "specReplicasPath": ".spec.roles[0].replicas",
                            "statusReplicasPath": ".status.replicas",
                        }
                    },
                }
            ],
        },
    }
    applied = cluster.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(crd), check=False)
    assert applied.returncode != 0 and "specReplicasPath" in applied.stderr, applied.stderr


# ----- hostile input ----------------------------------------------------------------------------------


def refusal(call: Any) -> str:
    with pytest.raises(client.ApiException) as refused:
        call()
    assert refused.value.status == 422
    return str(refused.value.body)


def test_a_scale_role_that_does_not_exist_is_refused_naming_the_field(ts: TaskSets) -> None:
    obj = scaled_workers("ghost", 2)
    obj["spec"]["scale"]["role"] = "nope"
    assert "spec.scale.role" in refusal(lambda: ts.create(obj))


def test_a_scale_of_a_role_without_max_replicas_is_refused_naming_the_field(ts: TaskSets) -> None:
    obj = TaskSetBuilder("unbounded").role("w", 2).obj()
    obj["spec"]["scale"] = {"role": "w", "replicas": 2}
    assert "spec.scale.role" in refusal(lambda: ts.create(obj))


def test_a_scale_count_outside_the_bounds_is_refused_naming_the_field(ts: TaskSets) -> None:
    ts.create(scaled_workers("outside", 2))
    obj = ts.get("outside")
    assert obj is not None
    obj["spec"]["scale"]["replicas"] = 5
    replace = ts.custom.replace_namespaced_custom_object
    body = refusal(lambda: replace(c.GROUP, c.VERSION, ts.namespace, c.PLURAL, "outside", obj))
    assert "spec.scale.replicas" in body and "maxReplicas" in body


def test_scaling_a_finished_taskset_is_refused(ts: TaskSets) -> None:
    template = pod_template(annotations=sim.outcome(0.5, 0))
    ts.create(TaskSetBuilder("done").role("w", 1, maxReplicas=3, template=template).obj())
    assert ts.final("done")["state"] == c.State.SUCCEEDED
    body = refusal(lambda: patch_replicas(ts, "done", 2))
    assert "finished TaskSet" in body
