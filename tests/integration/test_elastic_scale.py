"""A running role scaled on the embedded control plane, by its spec and by ``kubectl scale``.

The API server's CEL rules refuse a count outside ``minReplicas``/``maxReplicas``; within them, a patch
of ``replicas`` while the attempt runs creates the new indices in the same attempt, and removes the
highest ones on the way down, which end neither failed nor retried: the TaskSet then succeeds on the
replicas it has.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from devcluster import Cluster, sim
from taskset.api import constants as c
from taskset.integrations.membership import (
    CONFIG_MAP_DATA_MAX,
    GENERATION_FILE,
    MEMBERSHIP_DIR,
    MEMBERSHIP_FILE,
    MEMBERSHIP_VOLUME,
    data_size,
)
from taskset.runtime.controller import Controller
from tests.builders import TaskSetBuilder, pod_template
from tests.integration.conftest import install_crd, start_controller
from tests.integration.harness import TaskSets, eventually, replica, role_status

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

SEEN = 60.0  # seconds until the controller acts on a scale


@pytest.fixture
def controller(cluster: Cluster, namespace: str, crd_installed: None) -> Iterator[Controller]:
    running = start_controller(cluster, namespace, workers=2)
    yield running
    running.stop(5)


def pod_names(ts: TaskSets, name: str) -> list[str]:
    return sorted(p["metadata"]["name"] for p in ts.live_pods(name))


def running_pods(ts: TaskSets, name: str, count: int) -> bool:
    pods = ts.live_pods(name)
    return len(pods) == count and all((p.get("status") or {}).get("phase") == "Running" for p in pods)


def workers(name: str, replicas: int) -> dict[str, Any]:
    return TaskSetBuilder(name).role("w", replicas, minReplicas=1, maxReplicas=4).obj()


def test_scale_up_and_down_while_running(ts: TaskSets) -> None:
    ts.create(workers("elastic", 2))
    eventually(lambda: running_pods(ts, "elastic", 2), SEEN, "two Pods running")
    uid = ts.status("elastic")["controlUnitUID"]
    ts.set_replicas("elastic", 4)
    eventually(lambda: running_pods(ts, "elastic", 4), SEEN, "four Pods running")
    role = role_status(ts.status("elastic"), "w")
    assert role["targetReplicas"] == 4 and (role["lastScale"]["from"], role["lastScale"]["to"]) == (2, 4)
    assert ts.status("elastic")["controlUnitUID"] == uid  # the same attempt
    ts.set_replicas("elastic", 1)
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
        ts.set_replicas("bounded", replicas)
    assert refused.value.status == 422


# ----- /scale ----------------------------------------------------------------------


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


PROBE_CRD = "probes.elastic.example.com"


@pytest.fixture
def probe_crd(cluster: Cluster) -> Iterator[None]:
    """A CRD whose scale subresource points into a list, as ``.spec.roles[0].replicas`` would for a
    TaskSet; deleted afterwards."""
    version = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
        "subresources": {
            "scale": {"specReplicasPath": ".spec.roles[0].replicas", "statusReplicasPath": ".status.n"}
        },
    }
    names = {"plural": "probes", "singular": "probe", "kind": "Probe", "listKind": "ProbeList"}
    spec = {"group": "elastic.example.com", "scope": "Namespaced", "names": names, "versions": [version]}
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": PROBE_CRD},
    }
    install_crd(cluster, json.dumps({**crd, "spec": spec}), PROBE_CRD, "probes")
    yield
    cluster.kubectl("delete", "crd", PROBE_CRD, "--wait=false", check=False)


def test_a_list_index_in_a_scale_path_is_no_index(cluster: Cluster, namespace: str, probe_crd: None) -> None:
    """Why /scale needs spec.scale: the API server takes ``.spec.roles[0].replicas`` as a path, but as the
    name of a field, ``roles[0]``: a scale writes ``spec["roles[0]"].replicas`` and the role's count stays."""
    obj = {
        "apiVersion": "elastic.example.com/v1",
        "kind": "Probe",
        "metadata": {"name": "p", "namespace": namespace},
        "spec": {"roles": [{"name": "w", "replicas": 1}]},
    }
    cluster.kubectl("create", "-f", "-", input=json.dumps(obj))
    cluster.kubectl("-n", namespace, "scale", "probe/p", "--replicas=3")
    spec = json.loads(cluster.kubectl("-n", namespace, "get", "probe/p", "-o", "json").stdout)["spec"]
    assert spec == {"roles": [{"name": "w", "replicas": 1}], "roles[0]": {"replicas": 3}}


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

    def outside(obj: dict[str, Any]) -> None:
        obj["spec"]["scale"]["replicas"] = 5

    body = refusal(lambda: ts.edit("outside", outside))
    assert "spec.scale.replicas" in body and "maxReplicas" in body


def test_scaling_a_finished_taskset_is_refused(ts: TaskSets) -> None:
    template = pod_template(annotations=sim.outcome(0.5, 0))
    ts.create(TaskSetBuilder("done").role("w", 1, maxReplicas=3, template=template).obj())
    assert ts.final("done")["state"] == c.State.SUCCEEDED
    body = refusal(lambda: ts.set_replicas("done", 2))
    assert "finished TaskSet" in body


# ----- live membership --------------------------------------------------------------
# Its content (what the mounted file shows) is read after each change: a scale up and down while Running,
# a replica retry, a scale during a replica's retry delay (the scaled-down replica is never retried), and
# a scale during a TaskSet retry (the next attempt runs at the new count, and says so with a new
# generation).

RETRY_DELAY = 8  # seconds: long enough to scale within it


def membership(ts: TaskSets, name: str) -> dict[str, Any] | None:
    """The mounted file's content, as the ConfigMap holds it (None before it exists)."""
    cm = ts.configmap(f"{name}-membership")
    if cm is None:
        return None
    data = cm.get("data") or {}
    document: dict[str, Any] = json.loads(data[MEMBERSHIP_FILE])
    assert data[GENERATION_FILE] == str(document["generation"])
    return document


def peers_are(ts: TaskSets, name: str, count: int, after: int) -> dict[str, Any] | None:
    """The membership once it lists ``count`` peers of role w at a generation above ``after``."""
    doc = membership(ts, name)
    ok = doc is not None and doc["generation"] > after and len(doc["roles"]["w"]["peers"]) == count
    return doc if ok else None


def test_the_membership_follows_scales_and_a_replica_retry(ts: TaskSets) -> None:
    ts.create(TaskSetBuilder("m").role("w", 2, minReplicas=1, maxReplicas=4, retry=(True, 3, 0)).obj())
    eventually(lambda: running_pods(ts, "m", 2), SEEN, "two Pods running")
    first = eventually(lambda: peers_are(ts, "m", 2, 0), SEEN, "the membership of two")
    ns = ts.namespace
    assert first["roles"]["w"]["peers"] == [f"m-w-0.m.{ns}.svc", f"m-w-1.m.{ns}.svc"]
    pod = ts.pod("m-w-0")
    assert pod is not None
    volume = {"name": MEMBERSHIP_VOLUME, "configMap": {"name": "m-membership", "defaultMode": 420}}
    assert volume in pod["spec"]["volumes"]
    mount = {"name": MEMBERSHIP_VOLUME, "mountPath": MEMBERSHIP_DIR, "readOnly": True}
    assert all(mount in container["volumeMounts"] for container in pod["spec"]["containers"])

    ts.set_replicas("m", 3)
    up = eventually(lambda: peers_are(ts, "m", 3, first["generation"]), SEEN, "the membership of three")
    assert ts.status("m")["membership"]["generation"] >= up["generation"]

    ts.end_pod("m-w-1", 1)  # a replica retry: the same name, a new instance
    retried = eventually(
        lambda: (d := membership(ts, "m")) and d["roles"]["w"]["instances"][1] == 1 and d,
        SEEN,
        "the retried replica as a new instance",
    )
    assert retried["generation"] > up["generation"]

    ts.set_replicas("m", 1)
    down = eventually(lambda: peers_are(ts, "m", 1, retried["generation"]), SEEN, "the membership of one")
    assert down["roles"]["w"]["instances"] == [0]
    eventually(lambda: pod_names(ts, "m") == ["m-w-0"], SEEN, "only index 0 left")


def test_a_scale_down_during_a_replica_retry_delay_is_never_retried(ts: TaskSets) -> None:
    ts.create(
        TaskSetBuilder("d").role("w", 3, minReplicas=1, maxReplicas=4, retry=(True, 3, RETRY_DELAY)).obj()
    )
    eventually(lambda: running_pods(ts, "d", 3), SEEN, "three Pods running")
    ts.end_pod("d-w-2", 1)
    eventually(
        lambda: replica(ts.status("d"), "w", 2).get("nextRetryAt"), SEEN, "replica 2 waiting for its retry"
    )
    before = membership(ts, "d")
    assert before is not None
    ts.set_replicas("d", 4)  # up during the delay: index 3 is made, index 2 still waits
    eventually(lambda: "d-w-3" in pod_names(ts, "d"), SEEN, "index 3 made")
    ts.set_replicas("d", 2)  # down during the delay: index 2 is stopped, never retried
    eventually(lambda: pod_names(ts, "d") == ["d-w-0", "d-w-1"], SEEN, "indices 2 and 3 gone")
    eventually(lambda: peers_are(ts, "d", 2, before["generation"]), SEEN, "the membership of two")
    eventually(lambda: len(role_status(ts.status("d"), "w")["replicaStatus"]) == 2, SEEN, "two replicas")
    status = ts.status("d")
    assert status["phase"] == c.TaskSetPhase.ATTEMPT_RUNNING
    time.sleep(RETRY_DELAY + 2)  # past the retry delay, nothing came back under index 2
    assert pod_names(ts, "d") == ["d-w-0", "d-w-1"]
    assert all(len(role["replicaStatus"]) == 2 for role in ts.status("d")["roleStatus"])


def test_a_scale_during_a_taskset_retry_is_the_next_attempts_count(ts: TaskSets) -> None:
    obj = TaskSetBuilder("r").role("w", 2, minReplicas=1, maxReplicas=4).obj()
    obj["spec"]["retryPolicy"] = {"retry": True, "maxRetryCount": 1, "delay": 8}
    ts.create(obj)
    eventually(lambda: running_pods(ts, "r", 2), SEEN, "two Pods running")
    first = eventually(lambda: peers_are(ts, "r", 2, 0), SEEN, "the membership of two")
    ts.end_pod("r-w-0", 1)
    eventually(
        lambda: ts.status("r")["phase"] == c.TaskSetPhase.ATTEMPT_RETRY_PENDING,
        SEEN,
        "the TaskSet retry's delay",
    )
    ts.set_replicas("r", 3)
    eventually(lambda: running_pods(ts, "r", 3), SEEN, "the next attempt's three Pods")
    second = eventually(lambda: peers_are(ts, "r", 3, first["generation"]), SEEN, "the membership of three")
    assert second["attempt"] == 1 and ts.status("r")["totalRetriedCount"] == 1


def test_the_membership_bound_is_the_api_servers(cluster: Cluster, namespace: str) -> None:
    """The controller refuses a membership above ``CONFIG_MAP_DATA_MAX`` (by ``data_size``) rather than
    announce a generation the API server would then refuse to store: the bound is exactly the server's."""
    core = client.CoreV1Api(cluster.api_client())

    def configmap(name: str, size: int) -> client.V1ConfigMap:
        data = {MEMBERSHIP_FILE: "x" * (size - 1), GENERATION_FILE: "1"}
        assert data_size(data) == size
        return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data=data)

    core.create_namespaced_config_map(namespace, configmap("at-the-bound", CONFIG_MAP_DATA_MAX))
    with pytest.raises(client.ApiException) as refused:
        core.create_namespaced_config_map(namespace, configmap("above-it", CONFIG_MAP_DATA_MAX + 1))
    assert refused.value.status == 422, refused.value.body
