"""Every wait says why in the TaskSet, not only in an event.

On the embedded control plane (its API server runs ServiceAccount, ResourceQuota and PodSecurity
admission; kube-controller-manager computes quota usage and collects garbage), each case asserts what
``kubectl get ts -o yaml`` and ``kubectl describe ts`` show: the replica's phaseMessage, the TaskSet's
conditions and state message, and the Warning events.

* a missing ServiceAccount and a ``pods: 0`` quota are waits that clear up: the replica's phaseMessage
  and the Running condition quote the API server and say the create is retried, one Warning event
  says it for all the Pods the quota refuses; once the ServiceAccount exists, or the quota is lifted,
  the TaskSet goes on and succeeds;
* a PodSecurity ``restricted`` namespace refuses a privileged template for good: the TaskSet fails,
  and the ``PodCreationRefused`` condition names the Pod and the API server's words;
* a Pod held in Terminating by a finalizer: its replica's phaseMessage names the finalizer at once, and
  after ``stuck_terminating_after`` (short here) the ``PodsStuckTerminating`` condition and a Warning
  event do; released, the TaskSet ends saying the Pod was deleted;
* a ControlUnit or a Pod deleted by someone else: the messages name what was deleted;
* a ControlUnit deleted with orphan propagation: its Pods, found by the UIDs the status recorded, are
  deleted; a stranger's Pod carrying the TaskSet's name and UID annotations is not.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from devcluster import Cluster
from taskset.api import constants as c
from taskset.decide.roles import UNFINISHED_AT_END
from taskset.runtime.controller import Controller
from tests.builders import TaskSetBuilder, pod_template
from tests.integration.conftest import start_controller
from tests.integration.harness import TaskSets, eventually, exits, replica, run_forever

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

STUCK_AFTER = 3.0  # seconds: the controller's --stuck-terminating-after in this module
REPORT = 60.0  # seconds until a status says what the test did
FINAL = 120.0  # seconds until a TaskSet completes once nothing holds it
HOLD = "example.com/hold"
REFUSED_PREFIX = "Waiting to create Pod "
QUOTA_REPLICAS = 5  # a full quota refuses each of them, in the same words but its name


@pytest.fixture
def controller(cluster: Cluster, namespace: str, crd_installed: None) -> Iterator[Controller]:
    running = start_controller(cluster, namespace, workers=2, stuck_terminating_after=STUCK_AFTER)
    yield running
    running.stop(5)


def condition(status: dict[str, Any], kind: str) -> dict[str, Any]:
    found = [cond for cond in status.get("conditions") or [] if cond["type"] == kind]
    return found[0] if found else {}


def warnings(ts: TaskSets, name: str, reason: str) -> list[str]:
    items = ts.core.list_namespaced_event(
        ts.namespace, field_selector=f"involvedObject.name={name},involvedObject.kind={c.KIND}"
    ).items
    return [e.message or "" for e in items if e.reason == reason and e.type == c.EVENT_TYPE_WARNING]


def normal_events(ts: TaskSets, name: str, reason: str) -> list[str]:
    items = ts.core.list_namespaced_event(
        ts.namespace, field_selector=f"involvedObject.name={name},involvedObject.kind={c.KIND}"
    ).items
    return [e.message or "" for e in items if e.reason == reason and e.type == c.EVENT_TYPE_NORMAL]


def one_replica(name: str, template: dict[str, Any]) -> dict[str, Any]:
    return TaskSetBuilder(name).role("w", 1, template=template).obj()


def replica_message(ts: TaskSets, name: str) -> str:
    status = ts.status(name)
    return str(replica(status, "w", 0).get("phaseMessage", "")) if status.get("roleStatus") else ""


def completed(ts: TaskSets, name: str) -> dict[str, Any]:
    return ts.final(name, timeout=FINAL)


# ----- waits that clear up: admission denies the Pod for now ----------------------------------------------


def test_a_missing_service_account_is_a_wait_the_status_names_until_it_exists(ts: TaskSets) -> None:
    template = pod_template(annotations=exits(0, 0.3).annotations(), serviceAccountName="builder")
    ts.create(one_replica("nosa", template))
    message = eventually(
        lambda: (m := replica_message(ts, "nosa")).startswith(REFUSED_PREFIX) and m, REPORT, "the refusal"
    )
    assert message.startswith("Waiting to create Pod nosa-w-0, retrying with backoff: ")
    assert 'serviceaccount "builder" not found' in message
    status = ts.status("nosa")
    running = condition(status, c.ConditionType.RUNNING)
    assert status["state"] == c.State.WAITING
    assert running["status"] == "False" and running["reason"] == "Waiting", running
    assert running["message"].startswith("1 replica waiting: w-0: Waiting to create Pod nosa-w-0"), running
    eventually(lambda: warnings(ts, "nosa", c.EventReason.POD_CREATION_FAILED), REPORT, "the event")

    ts.core.create_namespaced_service_account(ts.namespace, {"metadata": {"name": "builder"}})
    final = completed(ts, "nosa")
    assert final["state"] == c.State.SUCCEEDED, final
    assert replica(final, "w", 0)["totalRetriedCount"] == 0  # one attempt: the wait was no failure


def test_a_quota_of_no_pods_is_a_wait_the_status_names_until_it_is_lifted(ts: TaskSets) -> None:
    quota = {"metadata": {"name": "no-pods"}, "spec": {"hard": {"pods": "0"}}}
    ts.core.create_namespaced_resource_quota(ts.namespace, quota)
    eventually(
        lambda: ts.core.read_namespaced_resource_quota("no-pods", ts.namespace).status.hard or {},
        REPORT,
        "the quota's usage computed",
    )
    template = pod_template(annotations=exits(0, 0.3).annotations())
    ts.create(TaskSetBuilder("quota").role("w", QUOTA_REPLICAS, template=template).obj())

    def refused() -> list[str] | None:
        status = ts.status("quota")
        messages = [
            str(replica(status, "w", i).get("phaseMessage", "")) if status.get("roleStatus") else ""
            for i in range(QUOTA_REPLICAS)
        ]
        return messages if all("exceeded quota" in m for m in messages) else None

    message = eventually(refused, REPORT, "the quota named by every replica")[0]
    assert message.startswith("Waiting to create Pod quota-w-0, retrying with backoff: "), message
    assert "no-pods" in message
    running = condition(ts.status("quota"), c.ConditionType.RUNNING)
    assert "exceeded quota" in running["message"] and running["reason"] == "Waiting", running
    eventually(lambda: warnings(ts, "quota", c.EventReason.POD_CREATION_FAILED), REPORT, "the event")

    ts.core.delete_namespaced_resource_quota("no-pods", ts.namespace)
    final = completed(ts, "quota")
    assert final["state"] == c.State.SUCCEEDED, final
    assert not any("waiting" in cond["message"] for cond in final.get("conditions") or []), (
        "nothing says it still waits"
    )
    # A TaskSet's events go out in order: once its end is said, every refusal before it was.
    eventually(lambda: normal_events(ts, "quota", c.EventReason.TASKSET_SUCCEEDED), REPORT, "the end said")
    refusals = warnings(ts, "quota", c.EventReason.POD_CREATION_FAILED)
    assert len(refusals) == 1, f"one event for the refusal every Pod met, not one per Pod: {refusals}"


# ----- a refusal for good ----------------------------------------------------------------------------------


def test_a_privileged_pod_in_a_restricted_namespace_fails_naming_pod_security(ts: TaskSets) -> None:
    labels = {"pod-security.kubernetes.io/enforce": "restricted"}
    ts.core.patch_namespace(ts.namespace, {"metadata": {"labels": labels}})
    template = pod_template(annotations=exits(0, 0.3).annotations())
    template["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    ts.create(one_replica("privileged", template))
    final = completed(ts, "privileged")
    assert final["state"] == c.State.FAILED, final
    refused = condition(final, c.ConditionType.POD_CREATION_REFUSED)
    assert refused["status"] == "True" and refused["reason"] == "Refused", refused
    assert refused["message"].startswith("Pod privileged-w-0: "), refused
    assert "violates PodSecurity" in refused["message"], refused
    assert "violates PodSecurity" in replica(final, "w", 0)["phaseMessage"]
    assert replica(final, "w", 0)["podReason"] == c.POD_REASON_CREATION_FAILED
    eventually(
        lambda: any("violates PodSecurity" in m for m in warnings(ts, "privileged", "PodCreationFailed")),
        REPORT,
        "the event",
    )


# ----- a Pod held in Terminating --------------------------------------------------------------------------


def test_a_pod_held_by_a_finalizer_is_named_and_then_warned_about(ts: TaskSets) -> None:
    ts.create(one_replica("held", pod_template(annotations=run_forever().annotations())))
    eventually(lambda: ts.status("held").get("state") == c.State.RUNNING, REPORT, "Running")
    ts.core.patch_namespaced_pod("held-w-0", ts.namespace, {"metadata": {"finalizers": [HOLD]}})
    try:
        ts.delete_pod("held-w-0")
        expected = f"Pod held-w-0 is terminating, held by finalizers: {HOLD}"
        eventually(lambda: replica_message(ts, "held") == expected, REPORT, "the finalizer named")
        running = condition(ts.status("held"), c.ConditionType.RUNNING)
        assert running["message"] == f"1 replica waiting: w-0: {expected}", running
        stuck = eventually(
            lambda: (
                (s := condition(ts.status("held"), c.ConditionType.PODS_STUCK_TERMINATING))
                and s["status"] == "True"
                and s
            ),
            REPORT,
            "PodsStuckTerminating",
        )
        assert stuck["reason"] == "StuckTerminating", stuck
        assert stuck["message"] == (
            f"1 Pod still terminating {STUCK_AFTER:g} s after its deletion: "
            f"held-w-0 (held by finalizers: {HOLD})"
        ), stuck
        assert ts.status("held")["state"] == c.State.RUNNING  # the TaskSet waits for the Pod, and says so
        events = eventually(
            lambda: warnings(ts, "held", c.EventReason.POD_STUCK_TERMINATING), REPORT, "the event"
        )
        assert events == [stuck["message"]], events
    finally:
        with contextlib.suppress(client.ApiException):
            ts.core.patch_namespaced_pod("held-w-0", ts.namespace, {"metadata": {"finalizers": None}})
    final = completed(ts, "held")
    assert final["state"] == c.State.FAILED, final
    assert replica(final, "w", 0)["phaseMessage"] == "Pod held-w-0 was deleted; Retry is forbidden"
    released = condition(final, c.ConditionType.PODS_STUCK_TERMINATING)
    assert released["status"] == "False" and released["reason"] == "Released", released


# ----- objects deleted by someone else ---------------------------------------------------------------------


def test_a_pod_deleted_by_someone_else_is_named(ts: TaskSets) -> None:
    ts.create(one_replica("podgone", pod_template(annotations=run_forever().annotations())))
    eventually(lambda: ts.status("podgone").get("state") == c.State.RUNNING, REPORT, "Running")
    ts.delete_pod("podgone-w-0", grace_period_seconds=0)
    final = completed(ts, "podgone")
    assert final["state"] == c.State.FAILED, final
    assert replica(final, "w", 0)["phaseMessage"] == "Pod podgone-w-0 was deleted; Retry is forbidden"


def test_a_control_unit_deleted_by_someone_else_is_named(ts: TaskSets) -> None:
    ts.create(one_replica("unitgone", pod_template(annotations=run_forever().annotations())))
    eventually(lambda: ts.status("unitgone").get("state") == c.State.RUNNING, REPORT, "Running")
    ts.core.delete_namespaced_config_map("c-unitgone-0", ts.namespace)
    final = completed(ts, "unitgone")
    assert final["state"] == c.State.FAILED, final
    assert final["stateMessage"] == "ControlUnit c-unitgone-0 was deleted", final
    failed = condition(final, c.ConditionType.FAILED)
    assert failed["message"] == "ControlUnit c-unitgone-0 was deleted", failed
    # The replica the end overtook says so, not "Pod is running".
    assert replica(final, "w", 0)["phaseMessage"] == UNFINISHED_AT_END, final
    # Deleted in the background, the ControlUnit left its Pod to the garbage collector: no orphans.
    eventually(lambda: not ts.pods("unitgone"), REPORT, "the Pod collected")
    eventually(lambda: warnings(ts, "unitgone", c.EventReason.TASKSET_FAILED), REPORT, "the end said")
    assert warnings(ts, "unitgone", c.EventReason.ORPHANED_POD_DELETED) == []


def test_the_chiefs_success_closes_the_workers_it_overtook(ts: TaskSets) -> None:
    """The chief succeeds while its workers run: the end deletes their Pods, and the final status says
    every role and replica is completed, the workers stopped by the end, not still Running."""
    chief = pod_template(annotations=exits(0, 2.0).annotations())
    worker = pod_template(annotations=run_forever().annotations())
    builder = TaskSetBuilder("chiefend")
    builder = builder.role("chief", 1, template=chief, event_policy=[("RoleSucceeded", "TaskSetSucceeded")])
    ts.create(builder.role("w", 2, template=worker).obj())
    final = completed(ts, "chiefend")
    assert final["state"] == c.State.SUCCEEDED, final
    roles = {role["name"]: role for role in final["roleStatus"]}
    assert {role["phase"] for role in roles.values()} == {c.RolePhase.COMPLETED}, final
    assert roles["chief"]["state"] == c.State.SUCCEEDED, final
    assert roles["w"]["phaseMessage"] == UNFINISHED_AT_END, final
    for index in (0, 1):
        closed = replica(final, "w", index)
        assert closed["phase"] == c.ReplicaPhase.COMPLETED, final
        assert (closed["stopped"], closed["phaseMessage"]) == (True, UNFINISHED_AT_END), final
    assert replica(final, "chief", 0)["phase"] == c.ReplicaPhase.COMPLETED, final
    eventually(lambda: not ts.pods("chiefend"), REPORT, "the workers' Pods deleted with the attempt")


def _stranger(ts: TaskSets, name: str, taskset: dict[str, Any]) -> str:
    """A Pod someone else made, labelled and annotated as the TaskSet's (its name, its UID): returns
    its UID."""
    meta = taskset["metadata"]
    body = {
        "metadata": {
            "name": name,
            "labels": {c.LABEL_TASKSET: meta["name"]},
            "annotations": {
                c.ANNOTATION_TASKSET: meta["name"],
                c.ANNOTATION_TASKSET_UID: meta["uid"],
                **run_forever().annotations(),
            },
        },
        "spec": pod_template(annotations={})["spec"],
    }
    created = ts.core.create_namespaced_pod(ts.namespace, body)
    return str(created.metadata.uid)


def test_pods_orphaned_by_a_control_unit_delete_are_cleaned_up_and_a_strangers_are_not(
    ts: TaskSets,
) -> None:
    created = ts.create(
        TaskSetBuilder("orphans")
        .role("w", 2, template=pod_template(annotations=run_forever().annotations()))
        .obj()
    )
    eventually(lambda: ts.status("orphans").get("state") == c.State.RUNNING, REPORT, "Running")
    stranger = _stranger(ts, "orphans-w-9", created)
    replicas = {p["metadata"]["uid"] for p in ts.pods("orphans")} - {stranger}
    assert len(replicas) == 2
    ts.core.delete_namespaced_config_map(
        "c-orphans-0", ts.namespace, body=client.V1DeleteOptions(propagation_policy="Orphan")
    )
    final = completed(ts, "orphans")
    assert final["state"] == c.State.FAILED, final
    assert final["stateMessage"] == "ControlUnit c-orphans-0 was deleted", final
    eventually(
        lambda: {p["metadata"]["uid"] for p in ts.pods("orphans")} == {stranger},
        REPORT,
        "the orphaned Pods deleted, the stranger's left",
    )
    expected = [
        f"Pod orphans-w-{i} was left running after its ControlUnit was deleted without its Pods "
        "(orphan propagation): deleting it"
        for i in (0, 1)
    ]
    # Events go out from one sender thread after the pass, one request each: the first can be listed
    # before the second is sent, so wait for as many as expected, then compare them.
    events = eventually(
        lambda: (
            (found := warnings(ts, "orphans", c.EventReason.ORPHANED_POD_DELETED))
            and len(found) >= 2
            and found
        ),
        REPORT,
        "both orphan events",
    )
    assert sorted(events) == expected, events
    stranger_pod = ts.pod("orphans-w-9")
    assert stranger_pod is not None and not stranger_pod["metadata"].get("deletionTimestamp")
    ts.delete_pod("orphans-w-9", grace_period_seconds=0)
