"""An admitting system plugs in like any other integration: its module and its registration, nothing
else. This one lives in the tests. It is Kueue in miniature: per attempt it asks for a ``Ticket`` (a
custom resource this test installs), holds every role until someone grants the ticket, then runs each
role with the replicas the grant gives it (fewer than asked is a partial admission) and labels its Pods
with the zone the grant names. The test plays the granting system by writing the ticket's status, and
everything else runs for real on the embedded control plane."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar, Final, cast

import pytest
import yaml
from kubernetes import client

from devcluster import Cluster
from taskset.integrations import BUILT_IN, Admission, Admits, Attempt, OwnsObjects, RoleAdmission
from taskset.objects.decorations import PodDecoration
from taskset.objects.owned import ObjectKind, OwnedObject, Scope
from taskset.observed.views import Observed
from taskset.runtime.controller import Controller
from tests.builders import TaskSetBuilder, pod_template
from tests.integration.conftest import install_crd, start_controller
from tests.integration.harness import TaskSets, eventually
from tests.integration.scenarios.steps import FOREVER

pytestmark = pytest.mark.integration

TICKETS: Final = ObjectKind(
    group="tickets.example.test", version="v1", plural="tickets", kind="Ticket", kept=(("status", "grant"),)
)
GRANTED: Final = "Granted"
ZONE_LABEL: Final = "tickets.example.test/zone"
TICKET_CRD: Final = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": f"{TICKETS.plural}.{TICKETS.group}"},
    "spec": {
        "group": TICKETS.group,
        "names": {"plural": TICKETS.plural, "singular": "ticket", "kind": TICKETS.kind},
        "scope": "Namespaced",
        "versions": [
            {
                "name": TICKETS.version,
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            }
        ],
    },
}


def ticket_name(attempt: Attempt) -> str:
    return f"{attempt.taskset}-ticket-{attempt.attempt}"


class TicketAdmission(OwnsObjects, Admits):
    """Made for this test only: a ticket per attempt, and the grant written on it as the admission."""

    name: ClassVar[str] = "example-tickets"
    kinds: ClassVar[tuple[ObjectKind, ...]] = (TICKETS,)

    def owned_objects(self, attempt: Attempt) -> Sequence[OwnedObject]:
        asked = {role.name: role.replicas for role in attempt.spec.roles}
        body = {"spec": {"asked": asked}}
        return (OwnedObject(TICKETS, ticket_name(attempt), Scope.TASKSET, body, self.name),)

    def admission(self, attempt: Attempt, observed: Observed) -> Admission | None:
        seen = observed.owned.get((TICKETS.key, ticket_name(attempt)))
        if seen is None or GRANTED not in seen.true_conditions:
            return Admission(waiting=f"waiting for ticket {ticket_name(attempt)} to be granted")
        grant = seen.status.get("grant")
        grant = grant if isinstance(grant, Mapping) else {}
        return Admission(roles={role.name: given(grant.get(role.name)) for role in attempt.spec.roles})


def given(grant: object) -> RoleAdmission:
    if not isinstance(grant, Mapping):
        return RoleAdmission()
    count, zone = grant.get("count"), grant.get("zone")
    return RoleAdmission(
        cap=count if isinstance(count, int) else None,
        decoration=PodDecoration(labels={ZONE_LABEL: zone}) if isinstance(zone, str) else None,
    )


@pytest.fixture
def ticket_controller(cluster: Cluster, namespace: str, crd_installed: None) -> Iterator[Controller]:
    install_crd(cluster, yaml.safe_dump(TICKET_CRD), f"{TICKETS.plural}.{TICKETS.group}", TICKETS.plural)
    controller = start_controller(cluster, namespace, (*BUILT_IN, TicketAdmission()), workers=2)
    yield controller
    controller.stop(5)


def grant(cluster: Cluster, namespace: str, name: str, given: Mapping[str, Any]) -> None:
    """What the granting system would do: mark the ticket granted, with what it gives each role."""
    condition = {"type": GRANTED, "status": "True", "reason": "Granted", "message": "granted by the test"}
    client.CustomObjectsApi(cluster.api_client()).patch_namespaced_custom_object_status(
        TICKETS.group,
        TICKETS.version,
        namespace,
        TICKETS.plural,
        name,
        {"status": {"conditions": [condition], "grant": dict(given)}},
    )


def test_an_admission_registered_only_in_a_test_holds_caps_and_decorates(
    cluster: Cluster, namespace: str, ticket_controller: Controller
) -> None:
    ts = TaskSets(cluster, namespace)
    template = pod_template(FOREVER)
    ts.create(TaskSetBuilder("ticketed").role("worker", 3, template=template, minReplicas=1).obj())

    # Until the ticket is granted: the ticket exists, owned by the TaskSet, and every replica waits for it.
    def held() -> bool:
        roles = ts.status("ticketed").get("roleStatus") or []
        replicas = roles[0]["replicaStatus"] if roles else []
        return len(replicas) == 3 and all(
            "waiting for ticket ticketed-ticket-0 to be granted" in r["phaseMessage"] for r in replicas
        )

    eventually(held, 60, "every replica's status to name the ticket it waits for")
    api = client.CustomObjectsApi(cluster.api_client())
    ticket = cast(
        "dict[str, Any]",
        api.get_namespaced_custom_object(
            TICKETS.group, TICKETS.version, namespace, TICKETS.plural, "ticketed-ticket-0"
        ),
    )
    assert ticket["spec"] == {"asked": {"worker": 3}}
    (owner,) = ticket["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("TaskSet", "ticketed", True)
    assert ts.pods("ticketed") == []

    # Granted two of three, in zone-a: two Pods, each labelled, and the role completes at two.
    grant(cluster, namespace, "ticketed-ticket-0", {"worker": {"count": 2, "zone": "zone-a"}})
    eventually(lambda: len(ts.pods("ticketed")) == 2, 60, "the two granted Pods created")
    pods = {pod["metadata"]["name"]: pod for pod in ts.pods("ticketed")}
    assert sorted(pods) == ["ticketed-worker-0", "ticketed-worker-1"]
    assert {pod["metadata"]["labels"].get(ZONE_LABEL) for pod in pods.values()} == {"zone-a"}
    for name in pods:
        ts.end_pod(name)
    final = ts.final("ticketed")
    assert final["state"] == "Succeeded", final
    (role,) = final["roleStatus"]
    assert (role["targetReplicas"], role["replicaCounts"]["succeeded"]) == (2, 2)
    assert [r["index"] for r in role["replicaStatus"] if r["phase"] == "TaskRoleReplicaCompleted"] == [0, 1]
    assert ts.pod("ticketed-worker-2") is None
