"""Every owned object is kept as declared, over the in-memory world: a field its kind declares that
someone else changed is patched back by UID with an event (Service, PodGroup, a framework's ConfigMap),
or, for a Kueue Workload, which may not be written back, the attempt ends naming it; what the API server
adds beside the declared fields is never drift, and a stranger's object under the name is never written.
And a running attempt whose Workload is deleted stops its Pods, counting nothing, until a new one is
admitted, as Kueue's jobframework stops a job whose Workload is deleted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from taskset.api.constants import ReplicaPhase, TaskSetPhase
from taskset.decide import CreatePod, DeletePod, Settings, UpdateOwned
from taskset.integrations import BUILT_IN, Framework
from taskset.integrations.gang import COSCHEDULING_PODGROUPS, REPLACEMENTS_ANNOTATION, Coscheduling
from taskset.integrations.kueue import QUEUE_LABEL, WORKLOADS, KueueWorkload
from taskset.objects.network import SERVICES
from tests.builders import TaskSetBuilder, pod_template
from tests.unit.taskset.world import World, replica

pytestmark = pytest.mark.unit

SERVICE = (SERVICES.key, "job")
PODGROUP = (COSCHEDULING_PODGROUPS.key, "taskset-job-0")
WORKLOAD = (WORKLOADS.key, "taskset-job-0")


def running(*, gang: bool = False, queued: bool = False) -> World:
    """A TaskSet of two replicas running: its headless Service, and its PodGroup or Workload."""
    template = pod_template()
    template["spec"]["containers"][0]["ports"] = [{"containerPort": 2222}]
    template["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    builder = TaskSetBuilder("job").role("r", 2, template=template, retry=(True, 3, 0))
    if gang:
        builder = builder.spec_field("gang", {"scheduler": "coscheduling"})
    obj = builder.obj()
    integrations: tuple[Any, ...] = BUILT_IN
    if gang:
        integrations = (*integrations, Coscheduling(("coscheduling",)))
    if queued:
        obj["metadata"]["labels"] = {QUEUE_LABEL: "team"}
        integrations = (*integrations, KueueWorkload())
    world = World(obj, settings=Settings(framework=Framework(integrations)))
    world.settle()
    if queued:
        admit(world)
    for index in range(2):
        world.run(f"job-r-{index}")
    world.settle()
    assert world.status is not None and world.status.phase == TaskSetPhase.ATTEMPT_RUNNING
    return world


def admit(world: World) -> None:
    world.owned[WORKLOAD]["status"] = {
        "conditions": [{"type": "Admitted", "status": "True"}],
        "admission": {"podSetAssignments": [{"name": "r"}]},
    }
    world.settle()


def events(world: World, reason: str) -> list[str]:
    return [e.split(": ", 1)[1] for e in world.events if e.startswith(f"{reason}: ")]


def restores(world: World) -> list[UpdateOwned]:
    return [i for plan in world.plans for i in plan.intents if isinstance(i, UpdateOwned)]


def _selector(obj: dict[str, Any]) -> None:
    obj["spec"]["selector"] = {"app": "someone-else"}


def _no_ports(obj: dict[str, Any]) -> None:
    del obj["spec"]["ports"]


def _unready_hidden(obj: dict[str, Any]) -> None:
    obj["spec"]["publishNotReadyAddresses"] = False


def _min_member(obj: dict[str, Any]) -> None:
    obj["spec"]["minMember"] = 1


@pytest.mark.parametrize(
    ("gang", "key", "edit", "field", "declared"),
    [
        pytest.param(False, SERVICE, _selector, "spec.selector", {"TaskSet": "job"}, id="Service selector"),
        pytest.param(False, SERVICE, _no_ports, "spec.ports", None, id="Service ports removed"),
        pytest.param(
            False, SERVICE, _unready_hidden, "spec.publishNotReadyAddresses", True, id="Service unready"
        ),
        pytest.param(True, PODGROUP, _min_member, "spec.minMember", 2, id="PodGroup minMember"),
    ],
)
def test_a_changed_declared_field_is_patched_back_by_uid_and_said(
    gang: bool, key: tuple[str, str], edit: Callable[[dict[str, Any]], None], field: str, declared: Any
) -> None:
    world = running(gang=gang)
    obj = world.owned[key]
    uid = obj["metadata"]["uid"]
    edit(obj)

    world.settle()

    [restore] = restores(world)
    assert (restore.name, restore.uid) == (key[1], uid)
    assert [".".join(path) for path, _ in restore.fields] == [field]
    restored = world.owned[key]
    assert restored["metadata"]["uid"] == uid, "patched in place, never made anew"
    top, name = field.split(".")
    if declared is not None:
        assert restored[top][name] == declared
    assert restored[top][name] == world.owned[key][top][name]
    kind = "Service" if key == SERVICE else "PodGroup"
    integration = "coscheduling" if gang else "headless-service"
    assert events(world, "OwnedObjectRestored") == [
        f"{kind} {key[1]}: {field} changed by someone else, restored as declared ({integration})"
    ]
    assert world.status is not None and world.status.phase == TaskSetPhase.ATTEMPT_RUNNING
    assert world.status.attempt_result is None


def test_what_the_api_server_adds_beside_the_declared_fields_is_not_drift() -> None:
    """A Service's defaults (its type, cluster IPs, session affinity) and a Workload's (a port's protocol
    inside its pod templates, a pod set's count Kueue's partial admission leaves as asked) are not
    fields the controller declares: nothing is written and nothing ends."""
    world = running(queued=True)
    world.owned[SERVICE]["spec"].update(
        {"type": "ClusterIP", "clusterIPs": ["None"], "sessionAffinity": "None", "ipFamilies": ["IPv4"]}
    )
    pod_set = world.owned[WORKLOAD]["spec"]["podSets"][0]
    pod_set["template"]["spec"]["containers"][0]["ports"][0]["protocol"] = "TCP"
    world.owned[WORKLOAD]["spec"]["active"] = True

    world.settle()

    assert restores(world) == []
    assert events(world, "OwnedObjectRestored") == events(world, "OwnedObjectChanged") == []
    assert world.status is not None and world.status.attempt_result is None


def _resources(obj: dict[str, Any]) -> None:
    obj["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1m"}}


def _queue(obj: dict[str, Any]) -> None:
    obj["spec"]["queueName"] = "someone-elses"


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        pytest.param(_resources, "spec.podSets.*.template.spec.containers.*.resources", id="requests"),
        pytest.param(_queue, "spec.queueName", id="queue"),
    ],
)
def test_a_changed_workload_is_never_written_back_the_attempt_ends_naming_it(
    edit: Callable[[dict[str, Any]], None], field: str
) -> None:
    """Kueue forbids changing the pod sets of a Workload that holds quota, and a changed one may have been
    counted as changed: the attempt ends (its retry queues a new Workload), with an event."""
    world = running(queued=True)
    edit(world.owned[WORKLOAD])

    plan = world.reconcile()

    message = (
        f"Workload taskset-job-0 was changed by someone else ({field}) and may not be written back (kueue)"
    )
    assert not [i for i in plan.intents if isinstance(i, UpdateOwned)]
    assert events(world, "OwnedObjectChanged") == [message]
    assert world.status is not None and world.status.attempt_result is not None
    assert (world.status.attempt_result.succeeded, world.status.attempt_result.reason) == (False, message)


def test_the_live_membership_is_written_back_without_an_event() -> None:
    """The membership follows the TaskSet, so writing it is the controller's own doing: the same
    mechanism, no event."""
    obj = TaskSetBuilder("job").role("r", 2, minReplicas=1).obj()
    world = World(obj)
    world.settle()
    key = ("configmaps", "job-membership")
    declared = dict(world.owned[key]["data"])
    world.owned[key]["data"] = {"membership.json": "{}"}

    world.settle()

    assert world.owned[key]["data"] == declared
    assert events(world, "OwnedObjectRestored") == []


def test_a_strangers_object_under_the_name_is_never_written() -> None:
    world = running()
    stranger = world.owned[SERVICE]
    stranger["metadata"]["ownerReferences"] = [{"uid": "someone-else", "controller": True}]
    _selector(stranger)

    world.settle()

    assert restores(world) == []
    assert world.owned[SERVICE]["spec"]["selector"] == {"app": "someone-else"}


def test_a_deleted_workload_stops_the_running_pods_counting_nothing_until_a_new_one_is_admitted() -> None:
    world = running(queued=True)
    first = world.owned[WORKLOAD]["metadata"]["uid"]

    del world.owned[WORKLOAD]  # Kueue frees its quota at once
    world.settle()

    assert world.pods == {}, "no Pod runs outside the quota"
    assert world.owned[WORKLOAD]["metadata"]["uid"] != first, "a new Workload queues"
    assert "status" not in world.owned[WORKLOAD]
    assert world.status is not None and world.status.total_retried_count == 0
    for index in range(2):
        kept = replica(world, "r", index)
        assert (kept.phase, kept.total_retried_count) == (ReplicaPhase.ATTEMPT_PENDING, 0)
        assert "waiting for Kueue to admit Workload taskset-job-0" in kept.phase_message

    admit(world)

    assert sorted(world.pods) == ["job-r-0", "job-r-1"], "they start again once it is admitted"
    assert all(replica(world, "r", index).total_retried_count == 0 for index in range(2))


def test_a_workload_being_deleted_no_longer_admits_the_running_pods() -> None:
    """Kueue drops a Workload it sees deleted from its quota, as its jobframework stops the job then."""
    world = running(queued=True)
    world.owned[WORKLOAD]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:05Z"

    plan = world.reconcile()

    assert sorted(i.name for i in plan.intents if isinstance(i, DeletePod)) == ["job-r-0", "job-r-1"]
    assert all(replica(world, "r", index).suspended for index in range(2)), "their end counts nothing"


def test_a_gang_s_podgroup_changes_after_the_pods_that_replace_its_members_are_created() -> None:
    """Replacements created together are each turned away by the gang scheduler while the others are
    still being created; the PodGroup's change, written after all of them in the same pass, wakes them."""
    world = running(gang=True)
    assert world.owned[PODGROUP]["metadata"]["annotations"][REPLACEMENTS_ANNOTATION] == "0"
    for index in range(2):  # the Pods of a lost node, gone together
        world.exit(f"job-r-{index}", 1)
    before = len(world.plans)
    world.settle()
    assert world.owned[PODGROUP]["metadata"]["annotations"][REPLACEMENTS_ANNOTATION] == "2"
    intents = [
        i for plan in world.plans[before:] for i in plan.intents if isinstance(i, CreatePod | UpdateOwned)
    ]
    created = [n for n, i in enumerate(intents) if isinstance(i, CreatePod)]
    updated = [n for n, i in enumerate(intents) if isinstance(i, UpdateOwned) and i.name == PODGROUP[1]]
    assert len(created) == 2 and updated and min(updated) > max(created), intents
    assert not events(world, "OwnedObjectRestored"), "the controller's own change, not a restore"
