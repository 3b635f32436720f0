"""A new integration needs nothing outside ``taskset/integrations``' seam but its registration: this one
lives in the tests, is registered only by the controller it is passed to, and runs end to end against the
real control plane. It owns one ConfigMap per attempt (a hostfile of every replica), labels and mounts it
into every Pod, and holds the workers until the ps has finished (a start order)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

import pytest
import structlog

from devcluster import Cluster, sim
from taskset.api.names import pod_name
from taskset.api.spec import Role
from taskset.api.status import TaskSetStatus
from taskset.integrations import BUILT_IN, Attempt, DecoratesPods, GatesRoles, OwnsObjects
from taskset.objects.decorations import PodDecoration
from taskset.objects.owned import CONFIGMAPS, OwnedObject, Scope
from taskset.objects.pods import PodIdentity
from taskset.observed.views import Observed
from taskset.runtime.controller import Controller, ControllerSettings
from tests.builders import TaskSetBuilder, pod_template
from tests.integration.conftest import SYNC_TIMEOUT
from tests.integration.harness import TaskSets, eventually

pytestmark = pytest.mark.integration

LABEL = "example.test/decorated"
MOUNT = "/etc/example"
PS_SECONDS = 4.0
WORKER_SECONDS = 6.0


def hostfile_name(attempt: Attempt) -> str:
    return f"{attempt.taskset}-hosts-{attempt.attempt}"


class HostfileAndStartOrder(OwnsObjects, DecoratesPods, GatesRoles):
    """Made for this test only: three capabilities of the seam, each pure."""

    name = "example-hostfile"

    def owned_objects(self, attempt: Attempt) -> Sequence[OwnedObject]:
        hosts = [
            pod_name(attempt.taskset, role.name, index)
            for role in attempt.spec.roles
            for index in range(role.replicas)
        ]
        body = {"data": {"hosts": "".join(f"{host}\n" for host in hosts)}}
        return (OwnedObject(CONFIGMAPS, hostfile_name(attempt), Scope.ATTEMPT, body, self.name),)

    def decorate_pod(self, attempt: Attempt, role: Role, identity: PodIdentity) -> PodDecoration:
        volume = {"name": "example-hosts", "configMap": {"name": hostfile_name(attempt)}}
        return PodDecoration(
            labels={LABEL: "yes"},
            volumes=(volume,),
            volume_mounts=({"name": "example-hosts", "mountPath": MOUNT},),
        )

    def gate(self, attempt: Attempt, role: Role, observed: Observed, status: TaskSetStatus) -> str | None:
        if role.name != "worker":
            return None
        ps = pod_name(attempt.taskset, "ps", 0)
        pod = observed.pods.get(ps)
        return None if pod is not None and pod.terminal else f"waiting for {ps} to finish"


@pytest.fixture
def seam_controller(cluster: Cluster, namespace: str, crd_installed: None) -> Iterator[Controller]:
    controller = Controller(
        api_client=cluster.api_client(),
        settings=ControllerSettings(namespace=namespace, workers=2),
        logger=structlog.get_logger("taskset-test").bind(test_namespace=namespace),
        integrations=(*BUILT_IN, HostfileAndStartOrder()),
    )
    controller.start()
    assert controller.wait_for_sync(SYNC_TIMEOUT), "controller caches did not sync"
    yield controller
    controller.stop(5)


def created_at(obj: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(obj["metadata"]["creationTimestamp"].replace("Z", "+00:00"))


def test_an_integration_registered_only_in_a_test_owns_decorates_and_gates(
    cluster: Cluster, namespace: str, seam_controller: Controller
) -> None:
    ts = TaskSets(cluster, namespace)
    ps = pod_template(annotations=sim.outcome(PS_SECONDS))
    worker = pod_template(annotations=sim.outcome(WORKER_SECONDS))
    ts.create(
        TaskSetBuilder("seam")
        .role("ps", 1, template=ps)
        .role(
            "worker",
            2,
            min_succeeded=2,
            template=worker,
            event_policy=[("RoleSucceeded", "TaskSetSucceeded")],
        )
        .obj()
    )

    # The gate: while the ps runs, the workers wait, and their status says why.
    def workers_held() -> bool:
        roles = ts.status("seam").get("roleStatus") or []
        replicas = roles[1]["replicaStatus"] if len(roles) > 1 else []
        return bool(replicas) and all(
            "waiting for seam-ps-0 to finish" in r["phaseMessage"] for r in replicas
        )

    # The gate names the ps from the first pass on, and the ps Pod may come a pass later: in a namespace
    # this new, the API server refuses Pods until its default ServiceAccount exists, and the controller
    # retries the create (a transient refusal).
    eventually(
        lambda: workers_held() and ts.pod("seam-ps-0") is not None,
        60,
        "the workers' status to name the gate, and the ps Pod created",
    )
    ps_pod = ts.pod("seam-ps-0")
    assert ps_pod is not None and ts.pod("seam-worker-0") is None

    # While the workers run: the owned object, controlled by the attempt's ControlUnit, lists every
    # replica; every Pod carries the decorations beside the built-in identity variables.
    def workers_running() -> dict[str, dict[str, Any]] | None:
        pods = {pod["metadata"]["name"]: pod for pod in ts.pods("seam")}
        workers = [pods.get(f"seam-worker-{index}") for index in range(2)]
        return pods if all(w and (w.get("status") or {}).get("phase") == "Running" for w in workers) else None

    pods = eventually(workers_running, 60, "both workers running")
    unit = ts.configmap("c-seam-0")
    hosts = ts.configmap("seam-hosts-0")
    assert unit is not None and hosts is not None
    [owner] = hosts["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("ConfigMap", unit["metadata"]["uid"], True)
    assert hosts["data"]["hosts"] == "seam-ps-0\nseam-worker-0\nseam-worker-1\n"
    assert sorted(pods) == ["seam-worker-0", "seam-worker-1"]  # the ps is done, and deleted
    for pod in [ps_pod, *pods.values()]:
        assert pod["metadata"]["labels"][LABEL] == "yes"
        [container] = pod["spec"]["containers"]
        assert MOUNT in [mount["mountPath"] for mount in container["volumeMounts"]]
        assert [var["name"] for var in container["env"]][:2] == ["TASKSET_NAMESPACE", "TASKSET_NAME"]
    # The start order: no worker was created before the ps had run its course.
    started = created_at(ps_pod)
    for name in ("seam-worker-0", "seam-worker-1"):
        assert (created_at(pods[name]) - started).total_seconds() >= PS_SECONDS - 1, name

    status = ts.final("seam")
    assert status["state"] == "Succeeded", status
    # The attempt's owned object goes with its ControlUnit.
    eventually(
        lambda: ts.configmap("seam-hosts-0") is None, 60, "the hostfile to be collected with the attempt"
    )
