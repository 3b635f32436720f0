"""Kueue admission of TaskSets against the real Kueue: a queued TaskSet's Pods wait
for its Workload's admission, and a ClusterQueue with quota for two runs two of three at once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest
from kubernetes import client

from devcluster import Cluster
from devcluster.kueue import Kueue
from taskset.integrations import BUILT_IN
from taskset.integrations.kueue import QUEUE_LABEL, WORKLOADS, KueueWorkload, workload_name
from taskset.runtime.controller import Controller
from tests.builders import TaskSetBuilder, pod_template
from tests.integration.conftest import start_controller
from tests.integration.harness import TaskSets, eventually, never_overlapping, recording, replica
from tests.integration.scenarios.steps import FOREVER

pytestmark = pytest.mark.integration

GROUP, VERSION = WORKLOADS.group, WORKLOADS.version


@pytest.fixture
def kueue_controller(
    cluster: Cluster, namespace: str, crd_installed: None, kueue: Kueue
) -> Iterator[Controller]:
    controller = start_controller(cluster, namespace, (*BUILT_IN, KueueWorkload()), workers=2)
    yield controller
    controller.stop(5)


def make_queue(cluster: Cluster, namespace: str, cpu: str, flavor: str = "default", **spec: Any) -> None:
    """A ClusterQueue named after the namespace with ``cpu`` CPUs of quota of ``flavor`` (and ``spec``),
    and a LocalQueue ``team`` of it in the namespace."""
    api = client.CustomObjectsApi(cluster.api_client())
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceFlavor", "metadata": {"name": flavor}}
    try:
        api.create_cluster_custom_object(GROUP, VERSION, "resourceflavors", body)
    except client.ApiException as err:
        if err.status != 409:
            raise
    quota = {"name": "cpu", "nominalQuota": cpu}
    group = {"coveredResources": ["cpu"], "flavors": [{"name": flavor, "resources": [quota]}]}
    queue = {"namespaceSelector": {}, "resourceGroups": [group], **spec}
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ClusterQueue", "metadata": {"name": namespace}}
    api.create_cluster_custom_object(GROUP, VERSION, "clusterqueues", {**body, "spec": queue})
    local = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "LocalQueue", "metadata": {"name": "team"}}
    api.create_namespaced_custom_object(
        GROUP, VERSION, namespace, "localqueues", {**local, "spec": {"clusterQueue": namespace}}
    )


@pytest.fixture
def queue_for_two(cluster: Cluster, namespace: str, kueue: Kueue) -> Iterator[str]:
    """Quota for two one-CPU TaskSets."""
    make_queue(cluster, namespace, "2")
    yield "team"
    client.CustomObjectsApi(cluster.api_client()).delete_cluster_custom_object(
        GROUP, VERSION, "clusterqueues", namespace
    )


@pytest.fixture
def preempting_queue_for_one(cluster: Cluster, namespace: str, kueue: Kueue) -> Iterator[str]:
    """Quota for one one-CPU TaskSet, which a higher priority preempts."""
    make_queue(cluster, namespace, "1", preemption={"withinClusterQueue": "LowerPriority"})
    yield "team"
    client.CustomObjectsApi(cluster.api_client()).delete_cluster_custom_object(
        GROUP, VERSION, "clusterqueues", namespace
    )


def queued(name: str, queue: str, priority: int | None = None) -> dict[str, Any]:
    """One replica asking for one CPU, running until it is told to exit, in ``queue``."""
    template = pod_template(FOREVER)
    template["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    builder = TaskSetBuilder(name).role("r", 1, template=template)
    obj = (builder if priority is None else builder.priority(priority)).obj()
    obj["metadata"]["labels"] = {QUEUE_LABEL: queue}
    return obj


def workload_of(cluster: Cluster, namespace: str, taskset: str, attempt: int = 0) -> dict[str, Any]:
    api = client.CustomObjectsApi(cluster.api_client())
    name = workload_name(taskset, attempt)
    return cast(
        "dict[str, Any]", api.get_namespaced_custom_object(GROUP, VERSION, namespace, "workloads", name)
    )


def running(ts: TaskSets, name: str) -> bool:
    pods = ts.pods(name)
    return len(pods) == 1 and (pods[0].get("status") or {}).get("phase") == "Running"


def test_a_queue_with_quota_for_two_runs_two_of_three_and_the_third_when_one_finishes(
    cluster: Cluster, namespace: str, kueue_controller: Controller, queue_for_two: str
) -> None:
    ts = TaskSets(cluster, namespace)
    names = ("q-a", "q-b", "q-c")
    for name in names:
        ts.create(queued(name, queue_for_two))

    def two_running() -> list[str] | None:
        found = [name for name in names if running(ts, name)]
        return found if len(found) == 2 else None

    first = eventually(two_running, 90, "two TaskSets admitted and running")
    (third,) = [name for name in names if name not in first]
    # Its Workload may not be in the controller's cache yet ("waiting for Workload ..."): it is there soon,
    # and then the replica says it waits for the admission.
    eventually(
        lambda: "waiting for Kueue to admit Workload" in replica(ts.status(third), "r", 0)["phaseMessage"],
        30,
        f"{third} waiting for admission",
    )
    assert ts.pods(third) == []
    workload = workload_of(cluster, namespace, third)
    assert [s["name"] for s in workload["spec"]["podSets"]] == ["r"]

    ts.end_pod(f"{first[0]}-r-0", 0)
    assert ts.final(first[0])["state"] == "Succeeded"
    eventually(lambda: running(ts, third), 90, "the third admitted once the first finished")
    assert running(ts, first[1])
    # The finished TaskSet's Workload stays, marked Finished as Kueue's own integrations mark a job's,
    # which is what freed its quota for the third.
    done = workload_of(cluster, namespace, first[0])
    finished = {c["type"]: c for c in done["status"]["conditions"]}["Finished"]
    assert (finished["status"], finished["reason"]) == ("True", "Succeeded")
    assert done["metadata"]["ownerReferences"][0]["kind"] == "TaskSet"


def test_a_higher_priority_preempts_a_running_taskset_which_requeues_and_finishes_counting_nothing(
    cluster: Cluster, namespace: str, kueue_controller: Controller, preempting_queue_for_one: str
) -> None:
    ts = TaskSets(cluster, namespace)
    with recording(cluster, namespace) as recorder:
        ts.create(queued("low", preempting_queue_for_one, priority=0))
        eventually(lambda: running(ts, "low"), 90, "the low-priority TaskSet running")
        ts.create(queued("high", preempting_queue_for_one, priority=100))
        eventually(lambda: running(ts, "high"), 90, "the high-priority TaskSet admitted and running")
        wide = cluster.kubectl("get", "ts", "high", "-n", namespace, "-o", "wide").stdout.split("\n")
        assert wide[0].split()[-2:] == ["QUEUE", "PRIORITY"]
        assert wide[1].split()[-2:] == [preempting_queue_for_one, "100"]
        assert ts.pods("low") == [], "the preempted TaskSet's Pod is gone"
        low = ts.status("low")
        assert (low["totalRetriedCount"], replica(low, "r", 0)["totalRetriedCount"]) == (0, 0)

        ts.end_pod("high-r-0", 0)
        assert ts.final("high")["state"] == "Succeeded"
        eventually(lambda: running(ts, "low"), 90, "the preempted TaskSet admitted again and running")
        ts.end_pod("low-r-0", 0)
        final = ts.final("low")
        log = recorder.pod_log("low-r-0")
    assert (final["state"], final["totalRetriedCount"]) == ("Succeeded", 0)
    assert replica(final, "r", 0)["totalRetriedCount"] == 0
    assert len(log) == 2, "one Pod before the preemption, one after"
    assert never_overlapping(log)


@pytest.fixture
def queue_for_one(cluster: Cluster, namespace: str, kueue: Kueue) -> Iterator[str]:
    """Quota for one one-CPU TaskSet, without preemption."""
    make_queue(cluster, namespace, "1")
    yield "team"
    client.CustomObjectsApi(cluster.api_client()).delete_cluster_custom_object(
        GROUP, VERSION, "clusterqueues", namespace
    )


def waiting(ts: TaskSets, name: str) -> bool:
    """Whether the TaskSet's replica says it waits for Kueue (its status may not list it yet)."""
    status = ts.status(name)
    listed = bool(status.get("roleStatus"))
    return listed and "waiting for Kueue to admit" in replica(status, "r", 0)["phaseMessage"]


def test_a_deleted_workload_stops_the_running_pods_until_a_new_one_is_admitted_within_quota(
    cluster: Cluster, namespace: str, kueue_controller: Controller, queue_for_one: str
) -> None:
    """As Kueue's jobframework stops a running job whose Workload is deleted: the Pod stops counting
    nothing and a new Workload queues; the Pod starts again only once that one is admitted (before or
    after the TaskSet waiting for the freed quota, as Kueue orders them), and at no time do both
    TaskSets' Pods run on quota for one."""
    ts = TaskSets(cluster, namespace)
    api = client.CustomObjectsApi(cluster.api_client())
    with recording(cluster, namespace) as recorder:
        ts.create(queued("first", queue_for_one))
        eventually(lambda: running(ts, "first"), 90, "the first TaskSet admitted and running")
        ts.create(queued("second", queue_for_one))
        eventually(lambda: waiting(ts, "second"), 30, "the second waiting for quota")
        (pod,) = ts.pods("first")
        deleted = workload_of(cluster, namespace, "first")["metadata"]["uid"]
        api.delete_namespaced_custom_object(GROUP, VERSION, namespace, "workloads", workload_name("first", 0))

        eventually(
            lambda: all(p["metadata"]["uid"] != pod["metadata"]["uid"] for p in ts.pods("first")),
            30,
            "the first's running Pod stopped",
        )
        assert workload_of(cluster, namespace, "first")["metadata"]["uid"] != deleted, "a new one queues"
        for _ in range(2):  # each runs alone on the quota, in the order Kueue admits them, to the end
            (now,) = eventually(
                lambda: [n for n in ("first", "second") if running(ts, n)] or None,
                90,
                "one TaskSet admitted and running",
            )
            ts.end_pod(f"{now}-r-0", 0)
            assert ts.final(now)["state"] == "Succeeded"
        final = ts.final("first")
        first, second = recorder.pod_log("first-r-0"), recorder.pod_log("second-r-0")
    assert (final["state"], final["totalRetriedCount"]) == ("Succeeded", 0)
    assert replica(final, "r", 0)["totalRetriedCount"] == 0, "the stop counted nothing"
    assert len(first) == 2, "one Pod before the deletion, one after the new Workload's admission"
    assert never_overlapping(first + second), "never two Pods on quota for one"


GPU_TOLERATION = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}


@pytest.fixture
def flavored_queue(cluster: Cluster, namespace: str, kueue: Kueue) -> Iterator[str]:
    """A ResourceFlavor with node labels and a toleration, named after the namespace (flavors are
    cluster-scoped), and a queue with quota of it for one one-CPU TaskSet."""
    api = client.CustomObjectsApi(cluster.api_client())
    flavor = f"gpu-{namespace}"
    spec = {"nodeLabels": {"pool": "gpu", "zone": "z1"}, "tolerations": [GPU_TOLERATION]}
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceFlavor", "metadata": {"name": flavor}}
    api.create_cluster_custom_object(GROUP, VERSION, "resourceflavors", {**body, "spec": spec})
    make_queue(cluster, namespace, "1", flavor=flavor)
    yield "team"
    api.delete_cluster_custom_object(GROUP, VERSION, "clusterqueues", namespace)
    api.delete_cluster_custom_object(GROUP, VERSION, "resourceflavors", flavor)


def test_an_admitted_tasksets_pods_carry_the_flavors_node_labels_and_tolerations(
    cluster: Cluster, namespace: str, kueue_controller: Controller, flavored_queue: str
) -> None:
    ts = TaskSets(cluster, namespace)
    obj = queued("flavored", flavored_queue)
    template = obj["spec"]["roles"][0]["template"]
    template["spec"]["nodeSelector"] = {"zone": "z1"}  # the same value as the flavor's: no conflict
    ts.create(obj)
    (pod,) = eventually(lambda: ts.pods("flavored") or None, 90, "the admitted TaskSet's Pod")
    assert pod["spec"]["nodeSelector"] == {"zone": "z1", "pool": "gpu"}
    assert GPU_TOLERATION in pod["spec"]["tolerations"]
    admission = workload_of(cluster, namespace, "flavored")["status"]["admission"]
    assert admission["podSetAssignments"][0]["flavors"] == {"cpu": f"gpu-{namespace}"}


@pytest.fixture
def checked_queue(cluster: Cluster, namespace: str, kueue: Kueue) -> Iterator[str]:
    """A queue for one one-CPU TaskSet whose admissions wait for an admission check, whose controller
    this test plays (it says the check is Active, then passes each Workload's check with updates)."""
    api = client.CustomObjectsApi(cluster.api_client())
    check = f"check-{namespace}"
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "AdmissionCheck", "metadata": {"name": check}}
    api.create_cluster_custom_object(
        GROUP, VERSION, "admissionchecks", {**body, "spec": {"controllerName": "example.com/taskset-test"}}
    )
    active = {
        "type": "Active",
        "status": "True",
        "reason": "Active",
        "message": "the test's",
        "lastTransitionTime": NOW,
    }
    api.patch_cluster_custom_object_status(
        GROUP, VERSION, "admissionchecks", check, {"status": {"conditions": [active]}}
    )
    make_queue(cluster, namespace, "1", admissionChecksStrategy={"admissionChecks": [{"name": check}]})
    yield check
    api.delete_cluster_custom_object(GROUP, VERSION, "clusterqueues", namespace)
    api.delete_cluster_custom_object(GROUP, VERSION, "admissionchecks", check)


NOW = "2026-01-01T00:00:00Z"


def pass_check(cluster: Cluster, namespace: str, taskset: str, check: str, update: dict[str, Any]) -> None:
    """Once Kueue reserved quota and waits for the check, pass it with ``update`` for pod set ``r``."""

    def waiting() -> bool:
        try:
            found = workload_of(cluster, namespace, taskset)
        except client.ApiException as err:
            if err.status == 404:  # not created yet
                return False
            raise
        return any(c.get("name") == check for c in found.get("status", {}).get("admissionChecks") or [])

    eventually(waiting, 60, f"{taskset}'s Workload waiting for {check}")
    state = {
        "name": check,
        "state": "Ready",
        "message": "passed",
        "lastTransitionTime": NOW,
        "podSetUpdates": [{"name": "r", **update}],
    }
    client.CustomObjectsApi(cluster.api_client()).patch_namespaced_custom_object_status(
        GROUP,
        VERSION,
        namespace,
        "workloads",
        workload_name(taskset, 0),
        {"status": {"admissionChecks": [state]}},
    )


def test_an_admission_checks_pod_set_updates_reach_the_pods(
    cluster: Cluster, namespace: str, kueue_controller: Controller, checked_queue: str
) -> None:
    ts = TaskSets(cluster, namespace)
    ts.create(queued("checked", "team"))
    update = {"labels": {"checked": "yes"}, "nodeSelector": {"rack": "r1"}, "tolerations": [GPU_TOLERATION]}
    pass_check(cluster, namespace, "checked", checked_queue, update)
    (pod,) = eventually(lambda: ts.pods("checked") or None, 60, "the admitted TaskSet's Pod")
    assert pod["metadata"]["labels"]["checked"] == "yes"
    assert pod["spec"]["nodeSelector"] == {"rack": "r1"}
    assert GPU_TOLERATION in pod["spec"]["tolerations"]


def test_an_admission_that_contradicts_the_template_fails_the_taskset_naming_the_key(
    cluster: Cluster, namespace: str, kueue_controller: Controller, checked_queue: str
) -> None:
    """Kueue's flavor assignment never picks a flavor whose node labels contradict the template's node
    selector, so a contradiction comes from an admission check's update: the attempt fails naming it."""
    ts = TaskSets(cluster, namespace)
    obj = queued("contradicted", "team")
    obj["spec"]["roles"][0]["template"].setdefault("metadata", {}).setdefault("labels", {})["team"] = "a"
    ts.create(obj)
    pass_check(cluster, namespace, "contradicted", checked_queue, {"labels": {"team": "b"}})
    final = ts.final("contradicted")
    assert final["state"] == "Failed"
    assert (
        f"admission check {checked_queue} sets labels team=b, but the Pod template has team=a"
        in final["stateMessage"]
    )
    assert ts.pods("contradicted") == []
    finished = {c["type"]: c for c in workload_of(cluster, namespace, "contradicted")["status"]["conditions"]}
    assert (finished["Finished"]["status"], finished["Finished"]["reason"]) == ("True", "Failed")


def test_a_role_with_min_replicas_is_admitted_partially_and_runs_with_the_admitted_count(
    cluster: Cluster, namespace: str, kueue_controller: Controller, queue_for_two: str
) -> None:
    """Quota for two one-CPU Pods, a role of four that accepts two: Kueue's partial admission (on by
    default in 0.17) admits two, and the TaskSet runs and completes with two."""
    template = pod_template(FOREVER)
    template["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    obj = TaskSetBuilder("partial").role("w", 4, template=template, minReplicas=2).obj()
    obj["metadata"]["labels"] = {QUEUE_LABEL: queue_for_two}
    ts = TaskSets(cluster, namespace)
    ts.create(obj)
    pods = eventually(lambda: (found := ts.pods("partial")) and len(found) == 2 and found, 90, "two Pods")
    workload = workload_of(cluster, namespace, "partial")
    assert workload["spec"]["podSets"][0]["minCount"] == 2
    assert workload["status"]["admission"]["podSetAssignments"][0]["count"] == 2
    assert sorted(p["metadata"]["name"] for p in pods) == ["partial-w-0", "partial-w-1"]
    assert ts.status("partial")["roleStatus"][0]["targetReplicas"] == 2
    eventually(
        lambda: all((p.get("status") or {}).get("phase") == "Running" for p in ts.pods("partial")),
        60,
        "running",
    )
    for index in range(2):
        ts.end_pod(f"partial-w-{index}", 0)
    assert ts.final("partial")["state"] == "Succeeded"
    assert len(ts.pods("partial")) <= 2, "never more Pods than admitted"
