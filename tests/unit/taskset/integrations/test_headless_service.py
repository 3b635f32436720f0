"""The headless Service integration: which Service, its body, the Pods' names, the
spec's ``network`` field, and a stranger's Service under the name."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.api.constants import ANNOTATION_CREATION_PROOF
from taskset.api.constants import TaskSetPhase as T
from taskset.api.spec import ParsedTaskSet, ValidationFailure, parse_taskset
from taskset.decide import ActionResult, CreateOwned, DeleteOwned, ResultKind, Settings, decide
from taskset.integrations import BUILT_IN, Framework
from taskset.integrations.base import Attempt
from taskset.integrations.headless_service import HeadlessService, service_ports
from taskset.objects.network import SERVICES, replica_fqdn, service_name
from taskset.objects.owned import Scope
from taskset.objects.pods import PodIdentity
from taskset.observed.views import OwnedView
from tests.builders import TaskSetBuilder, pod_template
from tests.unit.taskset.world import World

pytestmark = pytest.mark.unit


def parsed(builder: TaskSetBuilder) -> ParsedTaskSet:
    result = parse_taskset(builder.namespace("ns").uid("u").obj(), Framework(BUILT_IN).spec_checks())
    assert isinstance(result, ParsedTaskSet), result
    return result


def attempt_of(builder: TaskSetBuilder) -> Attempt:
    ts = parsed(builder)
    return Attempt(ts.name, ts.namespace, ts.uid, 0, ts.spec)


def identity(taskset: str, role: str, index: int) -> PodIdentity:
    return PodIdentity(
        taskset, "ns", "u", role, index, f"{taskset}-{role}-{index}", "c", "cu", 0, 0, "0" * 64
    )


@pytest.mark.parametrize(
    ("taskset", "network", "expected"),
    [
        pytest.param("tfjob", None, "tfjob", id="default: the TaskSet's name"),
        pytest.param("tfjob", {}, "tfjob", id="an empty network: the defaults"),
        pytest.param("tfjob", {"enableDNSHostnames": True}, "tfjob", id="switched on"),
        pytest.param("tfjob", {"subdomain": "peers"}, "peers", id="a chosen name"),
        pytest.param("tfjob", {"enableDNSHostnames": False}, None, id="opted out"),
        pytest.param("tfjob", {"enableDNSHostnames": False, "subdomain": "p"}, None, id="opted out, named"),
        pytest.param("1job", None, None, id="a name no Service can have: no names"),
        pytest.param("1job", {"subdomain": "job"}, "job", id="unless one is chosen"),
    ],
)
def test_which_service_names_the_replicas(taskset: str, network: Any, expected: str | None) -> None:
    spec = {} if network is None else {"network": network}
    assert service_name(taskset, spec) == expected


@pytest.mark.parametrize(
    ("network", "field", "message"),
    [
        pytest.param("yes", "spec.network", "spec.network: must be an object", id="not an object"),
        pytest.param(
            {"enableDNSHostnames": "true"},
            "spec.network.enableDNSHostnames",
            "spec.network.enableDNSHostnames: must be a boolean",
            id="a string for a boolean",
        ),
        pytest.param({"subdomain": "9lives"}, "spec.network.subdomain", "DNS-1035", id="starts with a digit"),
        pytest.param({"subdomain": "Peers"}, "spec.network.subdomain", "DNS-1035", id="upper case"),
        pytest.param({"subdomain": "a" * 64}, "spec.network.subdomain", "DNS-1035", id="64 characters"),
        pytest.param({"subdomain": 7}, "spec.network.subdomain", "DNS-1035", id="a number"),
        pytest.param({"subdomain": ""}, "spec.network.subdomain", "DNS-1035", id="empty"),
    ],
)
def test_a_bad_network_field_makes_the_taskset_illegal_naming_it(
    network: Any, field: str, message: str
) -> None:
    obj = TaskSetBuilder("job").role("r").spec_field("network", network).obj()
    result = parse_taskset(obj, Framework(BUILT_IN).spec_checks())
    assert isinstance(result, ValidationFailure)
    assert result.field == field and message in result.message


def test_the_service_is_headless_publishes_unready_replicas_and_selects_the_taskset() -> None:
    ps = pod_template()
    ps["spec"]["containers"][0]["ports"] = [{"containerPort": 2222}, {"containerPort": 2222, "name": "again"}]
    worker = pod_template()
    worker["spec"]["containers"].append(
        {
            "name": "side",
            "image": "x",
            "ports": [{"containerPort": 53, "protocol": "UDP"}, {"containerPort": 2222}],
        }
    )
    attempt = attempt_of(TaskSetBuilder("tf").role("ps", template=ps).role("worker", 2, template=worker))
    [service] = HeadlessService().owned_objects(attempt)
    assert (service.kind, service.name, service.scope, service.holds) == (
        SERVICES,
        "tf",
        Scope.TASKSET,
        False,
    )
    assert service.body == {
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": {"TaskSet": "tf"},
            "ports": [
                {"name": "tcp-2222", "port": 2222, "protocol": "TCP", "targetPort": 2222},
                {"name": "udp-53", "port": 53, "protocol": "UDP", "targetPort": 53},
            ],
        }
    }


@pytest.mark.parametrize(
    ("ports", "expected"),
    [
        pytest.param(None, [], id="none declared: a headless Service needs none"),
        pytest.param("many", [], id="not a list"),
        pytest.param([{"containerPort": 0}, {"containerPort": 65536}], [], id="out of range"),
        pytest.param([{"containerPort": True}, {"containerPort": "80"}], [], id="not integers"),
        pytest.param([{"containerPort": 80, "protocol": "HTTP"}], [], id="an unknown protocol"),
        pytest.param([{"containerPort": 65535, "protocol": "SCTP"}], ["sctp-65535"], id="the highest port"),
        pytest.param([7, {"containerPort": 80}], ["tcp-80"], id="a stray entry"),
    ],
)
def test_only_ports_a_pod_could_declare_reach_the_service(ports: Any, expected: list[str]) -> None:
    template = pod_template()
    if ports is not None:
        template["spec"]["containers"][0]["ports"] = ports
    spec = parsed(TaskSetBuilder("job").role("r", template=template)).spec
    assert [port["name"] for port in service_ports(spec)] == expected


def test_every_pod_is_named_under_the_service_and_opting_out_names_none() -> None:
    attempt = attempt_of(TaskSetBuilder("tf").role("worker", 2).spec_field("network", {"subdomain": "peers"}))
    decoration = HeadlessService().decorate_pod(attempt, attempt.spec.roles[0], identity("tf", "worker", 1))
    assert decoration is not None
    assert (decoration.hostname, decoration.subdomain) == ("tf-worker-1", "peers")
    assert replica_fqdn("tf", "worker", 1, "peers", "ns") == "tf-worker-1.peers.ns.svc"
    off = attempt_of(TaskSetBuilder("tf").role("worker").spec_field("network", {"enableDNSHostnames": False}))
    assert HeadlessService().owned_objects(off) == ()
    assert HeadlessService().decorate_pod(off, off.spec.roles[0], identity("tf", "worker", 0)) is None


def test_the_longest_legal_name_is_a_legal_hostname() -> None:
    """D2's rule covers the hostname: it is the Pod's name, at most 63 characters."""
    world = World(TaskSetBuilder("a" * 59).role("r", replicas=10).obj())
    world.settle()
    hostnames = [pod["spec"]["hostname"] for pod in world.pods.values()]
    assert max(len(name) for name in hostnames) == 63
    assert {pod["spec"]["subdomain"] for pod in world.pods.values()} == {"a" * 59}
    too_long = parse_taskset(
        TaskSetBuilder("a" * 60).role("r", replicas=10).obj(), Framework(BUILT_IN).spec_checks()
    )
    assert isinstance(too_long, ValidationFailure) and too_long.field == "spec.roles[0].name"


def test_the_service_is_made_with_the_pods_and_owned_by_the_taskset() -> None:
    world = World(TaskSetBuilder("tf").role("ps").role("worker", 2).obj())
    world.reconcile()
    assert sorted(world.pods) == ["tf-ps-0", "tf-worker-0", "tf-worker-1"]  # nobody waited
    service = world.owned[(SERVICES.key, "tf")]
    [owner] = service["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"]) == ("TaskSet", world.ref.uid)
    assert world.pods["tf-worker-1"]["spec"]["hostname"] == "tf-worker-1"
    assert world.pods["tf-worker-1"]["spec"]["subdomain"] == "tf"


def test_a_strangers_service_found_by_the_create_ends_the_attempt_naming_it() -> None:
    """The decisions see only what the TaskSet controls, so a stranger's Service is known only by the
    create's answer: the attempt ends there, naming it, as for a refused create."""
    world = World(TaskSetBuilder("tf").role("ps").obj())
    world.reconcile()  # the ControlUnit
    world.owned.clear()
    step = decide(world.ref, parse_taskset(world.taskset), world.status, world.observed(), world.now)
    [create] = [i for i in step.plan.intents if isinstance(i, CreateOwned) and i.kind == SERVICES]
    step.fold(create, ActionResult(ResultKind.EXISTS, OwnedView("tf", "x", False, None), "already exists"))
    status = step.plan.status
    assert status.attempt_result is not None and not status.attempt_result.succeeded
    message = "Service tf exists and is not controlled by this TaskSet (headless-service)"
    assert status.attempt_result.reason == message
    assert message in [event.message for event in step.plan.events]
    assert status.phase in (T.ATTEMPT_PREPARING, T.ATTEMPT_RUNNING)


def test_our_own_service_found_by_a_create_is_no_news() -> None:
    world = World(TaskSetBuilder("tf").role("ps").obj())
    world.reconcile()
    world.owned.clear()
    step = decide(world.ref, parse_taskset(world.taskset), world.status, world.observed(), world.now)
    [create] = [i for i in step.plan.intents if isinstance(i, CreateOwned) and i.kind == SERVICES]
    ours = OwnedView("tf", "y", False, world.ref.uid)
    step.fold(create, ActionResult(ResultKind.EXISTS, ours, "already exists"))
    assert step.plan.status.attempt_result is None
    assert Settings().framework.integrations == BUILT_IN


@pytest.mark.parametrize(
    "controller", [None, "uid-of-the-deleted-taskset"], ids=["orphaned", "not yet collected"]
)
def test_a_service_left_by_an_earlier_taskset_of_the_name_is_deleted_and_made_anew(
    controller: str | None,
) -> None:
    """W-16 for owned objects: a TaskSet deleted with orphan propagation (or whose garbage the collector
    has not reached) leaves its Service; its proof is bound to the TaskSet's name, so the re-created
    TaskSet knows it for this controller's and deletes it (UID precondition) rather than failing."""
    world = World(TaskSetBuilder("tf").role("ps").obj())
    world.reconcile()
    world.owned.clear()
    step = decide(world.ref, parse_taskset(world.taskset), world.status, world.observed(), world.now)
    [create] = [i for i in step.plan.intents if isinstance(i, CreateOwned) and i.kind == SERVICES]
    proof = create.manifest["metadata"]["annotations"][ANNOTATION_CREATION_PROOF]
    left = OwnedView("tf", "old", False, controller, proof=proof)
    step.fold(create, ActionResult(ResultKind.EXISTS, left, "already exists"))
    assert step.plan.status.attempt_result is None
    assert DeleteOwned("tf", "old", False, SERVICES, create.integration) in step.plan.intents
    assert step.plan.requeue_after is not None
