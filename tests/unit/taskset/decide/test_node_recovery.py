"""Replicas on lost nodes: named while they wait, and recovered as ``spec.nodeLossPolicy`` says.

Pure parts table-driven (the policy as written, a node's view, when a Pod may be force-deleted), then
passes over a ``World`` whose Pods are bound to nodes: with ``Wait`` the replicas' messages and the
Running condition name the node and nothing else happens; with ``Recover`` an evicted Pod is
force-deleted after the grace, once, and recorded; the notes go when the node is back. Last, a property
test over interleavings of node loss and return, evictions, kubelet confirmations, passes, lost status
writes and time: a Pod on a node that answers is never force-deleted, each Pod is recorded at most once,
and once the node stays lost the TaskSet runs again on the others.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from taskset.api.constants import ConditionType, State
from taskset.api.constants import EventReason as E
from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import TaskSetPhase as T
from taskset.api.failures import FieldError
from taskset.api.node_loss import NodeLossAction as A
from taskset.api.node_loss import NodeLossPolicy, parse_node_loss_policy
from taskset.api.spec import ValidationFailure, parse_taskset
from taskset.decide import DeletePod
from taskset.decide.node_recovery import CONDITION_PREFIX, NOTE_START, due_in, strip_note
from taskset.observed.nodes import node_view, slim_node
from taskset.observed.views import pod_view
from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import World, execute, execute_write_lost, pass_once

pytestmark = pytest.mark.unit

START = datetime(2026, 1, 1, tzinfo=UTC)


def at(seconds: float) -> str:
    return (START + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def node(
    name: str, ready: str = "True", since: float = 0, taints: tuple[tuple[str, float], ...] = ()
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1", "labels": {"big": "x"}},
        "spec": {
            "taints": [{"key": key, "effect": "NoExecute", "timeAdded": at(added)} for key, added in taints]
            + [{"key": "dedicated", "effect": "NoSchedule"}]
        },
        "status": {
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "lastTransitionTime": at(0)},
                {"type": "Ready", "status": ready, "lastTransitionTime": at(since)},
            ],
            "images": [{"names": ["x"] * 10}],
        },
    }


UNREACHABLE = "node.kubernetes.io/unreachable"
OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"


# ----- the policy as written -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "policy"),
    [
        (None, NodeLossPolicy()),
        ({}, NodeLossPolicy()),
        ({"action": "Wait"}, NodeLossPolicy(A.WAIT, 60)),
        ({"action": "Recover", "graceSeconds": 30}, NodeLossPolicy(A.RECOVER, 30)),
        ({"action": "OutOfService"}, NodeLossPolicy(A.OUT_OF_SERVICE, 60)),
    ],
)
def test_the_policy_as_written(raw: object, policy: NodeLossPolicy) -> None:
    assert parse_node_loss_policy(raw) == policy


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ("Recover", "spec.nodeLossPolicy"),
        ({"action": "Evict"}, "spec.nodeLossPolicy.action"),
        ({"action": "Recover", "graceSeconds": 0}, "spec.nodeLossPolicy.graceSeconds"),
        ({"action": "Recover", "graceSeconds": "60"}, "spec.nodeLossPolicy.graceSeconds"),
        ({"action": "Recover", "graceSeconds": True}, "spec.nodeLossPolicy.graceSeconds"),
        ({"grace": 5}, "spec.nodeLossPolicy.grace"),
    ],
)
def test_a_policy_written_wrongly_names_its_field(raw: object, field: str) -> None:
    with pytest.raises(FieldError) as error:
        parse_node_loss_policy(raw)
    assert str(error.value).startswith(f"{field}: ")
    taskset = TaskSetBuilder("job").role("r", replicas=1).obj()
    taskset["spec"]["nodeLossPolicy"] = raw
    failure = parse_taskset(taskset)
    assert isinstance(failure, ValidationFailure)
    assert failure.field == field


# ----- a node as the cache keeps it -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "lost", "unreachable", "since", "out_of_service"),
    [
        (node("n"), False, False, None, False),
        (node("n", "False", 5), False, False, None, False),  # NotReady answers: its kubelet says so
        (node("n", "Unknown", 20), True, True, at(20), False),
        (node("n", "Unknown", 20, ((UNREACHABLE, 21),)), True, True, at(20), False),
        (node("n", "True", 0, ((UNREACHABLE, 7),)), True, True, at(7), False),
        (node("n", "Unknown", 20, ((OUT_OF_SERVICE, 90),)), True, True, at(20), True),
        (node("n", "True", 0, ((OUT_OF_SERVICE, 90),)), True, False, None, True),
    ],
)
def test_a_nodes_view(
    raw: dict[str, Any], lost: bool, unreachable: bool, since: str | None, out_of_service: bool
) -> None:
    for obj in (raw, slim_node(raw)):
        view = node_view(obj)
        assert (view.lost, view.unreachable, view.unreachable_since, view.out_of_service) == (
            lost,
            unreachable,
            since,
            out_of_service,
        )


def test_the_node_cache_keeps_only_health_and_is_idempotent() -> None:
    raw = node("n", "Unknown", 20, ((UNREACHABLE, 21),))
    before = copy.deepcopy(raw)
    slim = slim_node(raw)
    assert raw == before
    assert slim_node(slim) == slim
    assert "images" not in slim["status"] and "labels" not in slim["metadata"]
    assert [t["key"] for t in slim["spec"]["taints"]] == [UNREACHABLE]
    assert [c["type"] for c in slim["status"]["conditions"]] == ["Ready"]


# ----- when the wait is over ----------------------------------------------------------------------------


def a_pod(deleting: bool) -> Any:
    meta: dict[str, Any] = {"name": "job-r-0", "uid": "u"}
    if deleting:
        meta["deletionTimestamp"] = at(30)
    return pod_view({"metadata": meta, "spec": {"nodeName": "n"}, "status": {"phase": "Running"}})


@pytest.mark.parametrize(
    ("policy", "raw", "deleting", "now", "due"),
    [
        (NodeLossPolicy(A.WAIT), node("n", "Unknown", 20), True, 1000, None),
        (NodeLossPolicy(A.RECOVER, 60), node("n", "Unknown", 20), False, 1000, None),  # not evicted
        (NodeLossPolicy(A.RECOVER, 60), node("n", "Unknown", 20), True, 50, 30.0),
        (NodeLossPolicy(A.RECOVER, 60), node("n", "Unknown", 20), True, 80, 0.0),
        (NodeLossPolicy(A.RECOVER, 60), node("n", "Unknown", 20), True, 500, 0.0),
        (NodeLossPolicy(A.RECOVER, 60), node("n"), True, 500, None),  # answers: never
        (NodeLossPolicy(A.OUT_OF_SERVICE), node("n", "Unknown", 20), True, 5000, None),
        (NodeLossPolicy(A.OUT_OF_SERVICE), node("n", "Unknown", 20, ((OUT_OF_SERVICE, 40),)), True, 41, 0.0),
        (
            NodeLossPolicy(A.OUT_OF_SERVICE),
            node("n", "Unknown", 20, ((OUT_OF_SERVICE, 40),)),
            False,
            41,
            None,
        ),
    ],
)
def test_when_a_pod_on_a_lost_node_may_be_force_deleted(
    policy: NodeLossPolicy, raw: dict[str, Any], deleting: bool, now: float, due: float | None
) -> None:
    assert due_in(policy, node_view(raw), a_pod(deleting), START + timedelta(seconds=now)) == due


# ----- passes over a world ---------------------------------------------------------------------------


NODES = ("n0", "n1", "n2")


def world_on_nodes(replicas: int, policy: dict[str, Any] | None = None) -> World:
    taskset = TaskSetBuilder("job").role("r", replicas=replicas).obj()
    if policy is not None:
        taskset["spec"]["nodeLossPolicy"] = policy
    world = World(taskset, graceful=True, now=START)
    world.nodes = {name: node(name) for name in NODES}
    return world


def schedule(world: World) -> None:
    """The scheduler and kubelets: each new Pod is bound to the next reachable node and runs."""
    alive = [n for n in NODES if not node_view(world.nodes[n]).lost]
    for i, (name, pod) in enumerate(sorted(world.pods.items())):
        if not pod.get("spec", {}).get("nodeName") and alive:
            pod.setdefault("spec", {})["nodeName"] = alive[i % len(alive)]
        if pod["status"].get("phase") == "Pending" and pod["spec"].get("nodeName") in alive:
            world.run(name)


def settled(world: World) -> None:
    for _ in range(6):
        world.settle()
        schedule(world)
    world.settle()


def lose(world: World, name: str) -> None:
    world.nodes[name] = node(
        name,
        "Unknown",
        (world.now - START).total_seconds(),
        ((UNREACHABLE, (world.now - START).total_seconds()),),
    )


def restore(world: World, name: str) -> None:
    world.nodes[name] = node(name)


def evict(world: World, name: str) -> None:
    """The taint-eviction controller: every Pod on ``name`` is deleted; no kubelet confirms it."""
    for pod in world.pods.values():
        if pod["spec"].get("nodeName") == name and "deletionTimestamp" not in pod["metadata"]:
            pod["metadata"]["deletionTimestamp"] = world.now.strftime("%Y-%m-%dT%H:%M:%SZ")
            disrupted = {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager"}
            pod["status"].setdefault("conditions", []).append(disrupted)


def confirm_answering(world: World, nodes: tuple[str, ...] = NODES) -> None:
    """The kubelets of ``nodes`` that answer: each Pod deleted on them stops and is removed."""
    for name in nodes:
        if not node_view(world.nodes[name]).lost:
            for pod in [p for p in on(world, name) if "deletionTimestamp" in world.pods[p]["metadata"]]:
                world.remove(pod)


def on(world: World, name: str) -> list[str]:
    return sorted(p for p, pod in world.pods.items() if pod["spec"].get("nodeName") == name)


def running_condition(world: World) -> str:
    assert world.status is not None
    condition = world.status.condition(ConditionType.RUNNING)
    assert condition is not None
    return condition.message


def test_with_wait_the_running_condition_and_the_replicas_name_the_lost_node_and_nothing_else_happens() -> (
    None
):
    world = world_on_nodes(6)
    settled(world)
    assert world.status is not None and world.status.phase == T.ATTEMPT_RUNNING
    stranded = on(world, "n1")
    assert len(stranded) == 2
    world.tick(30)
    lose(world, "n1")
    evict(world, "n1")
    plan = world.reconcile()
    assert not plan.intents
    message = running_condition(world)
    assert message.startswith(
        CONDITION_PREFIX + f"node n1 unreachable since {at(30)}: 2 replicas wait on it: "
    )
    assert "r-1, r-4" in message and "(nodeLossPolicy Wait)" in message
    notes = {f"r-{r.index}": r.phase_message for r in world.status.roles[0].replicas}
    for name, text in notes.items():
        on_lost = f"job-{name}" in stranded
        assert (NOTE_START + f"Pod job-{name} is on node n1" in text) == on_lost
    assert [e for e in world.events if e.startswith(str(E.NODE_LOST))]
    # A resync over the same cluster writes nothing and says nothing again.
    world.tick(600)  # past --stuck-terminating-after: that condition names the Pods too, once
    assert not world.reconcile().intents
    before, said = world.status.to_json(), len(world.events)
    world.tick(60)
    assert not world.reconcile().intents
    assert world.status.to_json() == before and len(world.events) == said
    assert set(stranded) <= set(world.pods)
    # The node comes back and confirms the deletions: the notes go, the replicas are replaced.
    restore(world, "n1")
    for name in stranded:
        world.remove(name)
    settled(world)
    assert world.status.phase == T.ATTEMPT_RUNNING
    assert not running_condition(world).startswith(CONDITION_PREFIX)
    assert all(NOTE_START not in r.phase_message for r in world.status.roles[0].replicas)
    assert all(r.phase == P.ATTEMPT_RUNNING for r in world.status.roles[0].replicas)


def test_with_recover_an_evicted_pod_is_force_deleted_after_the_grace_once_and_recorded() -> None:
    world = world_on_nodes(6, {"action": "Recover", "graceSeconds": 60})
    settled(world)
    stranded = on(world, "n2")
    world.tick(100)
    lose(world, "n2")
    world.reconcile()
    assert "waiting for the Pod's eviction" in running_condition(world) or all(
        "waiting for the Pod's eviction" in r.phase_message
        for r in world.status.roles[0].replicas
        if f"job-r-{r.index}" in stranded
    )
    world.tick(10)
    evict(world, "n2")
    plan = world.reconcile()
    assert not [i for i in plan.intents if isinstance(i, DeletePod)]
    assert plan.requeue_after is not None and plan.requeue_after <= 50  # looks again by the grace
    world.tick(50)
    step = pass_once(world)
    forced = [i for i in step.plan.intents if isinstance(i, DeletePod)]
    assert sorted(i.name for i in forced) == stranded and all(i.force for i in forced)
    execute(world, step)
    assert world.status is not None
    records = world.status.node_recoveries.recoveries
    assert [(r.node, r.pod, r.lost_at, r.recovered_at, r.action) for r in records] == [
        ("n2", name, at(100), at(160), A.RECOVER) for name in stranded
    ]
    settled(world)
    assert world.status.phase == T.ATTEMPT_RUNNING
    assert all(r.phase == P.ATTEMPT_RUNNING for r in world.status.roles[0].replicas)
    assert on(world, "n2") == []  # no replacement on the lost node
    assert len(world.status.node_recoveries.recoveries) == 2
    assert not running_condition(world).startswith(CONDITION_PREFIX)
    wire = world.status.to_json()["nodeRecoveries"]
    assert wire["recoveries"][0]["node"] == "n2" and wire["dropped"] == 0


def test_out_of_service_waits_for_the_operators_taint_and_says_so() -> None:
    world = world_on_nodes(3, {"action": "OutOfService"})
    settled(world)
    stranded = on(world, "n0")
    world.tick(20)
    lose(world, "n0")
    evict(world, "n0")
    world.tick(3600)
    assert not [i for i in world.reconcile().intents if isinstance(i, DeletePod)]
    replica = next(r for r in world.status.roles[0].replicas if f"job-r-{r.index}" in stranded)
    assert "waiting for the node's node.kubernetes.io/out-of-service taint" in replica.phase_message
    world.nodes["n0"]["spec"]["taints"].append(
        {"key": OUT_OF_SERVICE, "effect": "NoExecute", "timeAdded": at(3620)}
    )
    forced = [i for i in world.reconcile().intents if isinstance(i, DeletePod)]
    assert [i.name for i in forced] == stranded and all(i.force for i in forced)


def test_a_pod_on_a_node_that_answers_is_never_force_deleted_even_if_deleted() -> None:
    world = world_on_nodes(3, {"action": "Recover", "graceSeconds": 1})
    settled(world)
    evict(world, "n0")  # deleted, terminating, but its kubelet answers
    world.tick(3600)
    assert not [i for i in world.reconcile().intents if isinstance(i, DeletePod) and i.force]


def test_strip_note_gives_back_the_machines_words() -> None:
    assert (
        strip_note("Pod job-r-0 was deleted [NodeLost: Pod job-r-0 is on node n]")
        == "Pod job-r-0 was deleted"
    )
    assert strip_note("TaskRole replica is running") == "TaskRole replica is running"


# ----- any order ----------------------------------------------------------------------------------------

LOSE, BACK, EVICT, CONFIRM, PASS, LOST, TICK = "lose", "back", "evict", "confirm", "pass", "lost", "tick"
STEPS = st.lists(
    st.tuples(
        st.sampled_from([LOSE, BACK, EVICT, CONFIRM, PASS, PASS, PASS, LOST, TICK]), st.sampled_from(NODES)
    ),
    max_size=30,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS, action=st.sampled_from(["Wait", "Recover", "OutOfService"]))
# Evicted while lost, then back: the node's kubelet, answering again, confirms the eviction.
@example(steps=[(LOSE, "n1"), (EVICT, "n1"), (BACK, "n1")], action="Recover")
def test_any_interleaving_never_force_deletes_on_a_node_that_answers(
    steps: list[tuple[str, str]], action: str
) -> None:
    world = world_on_nodes(4, {"action": action, "graceSeconds": 30})
    settled(world)
    recorded: list[str] = []
    for step, name in steps:
        if step == LOSE:
            lose(world, name)
            if action == "OutOfService":
                world.nodes[name]["spec"]["taints"].append({"key": OUT_OF_SERVICE, "effect": "NoExecute"})
        elif step == BACK:
            restore(world, name)
        elif step == EVICT and node_view(world.nodes[name]).lost:
            evict(world, name)
        elif step == CONFIRM:
            confirm_answering(world, (name,))
        elif step == TICK:
            world.tick(20)
        elif step in (PASS, LOST):
            before = {n: node_view(obj).lost for n, obj in world.nodes.items()}
            where = {p: pod["spec"].get("nodeName") for p, pod in world.pods.items()}
            one = pass_once(world)
            for intent in one.plan.intents:
                if isinstance(intent, DeletePod) and intent.force:
                    assert before[where[intent.name]], f"{intent.name} force-deleted on a node that answers"
                    assert action != "Wait"
            (execute if step == PASS else execute_write_lost)(world, one)
            schedule(world)
        assert world.status is not None
        # A lost node is the platform's failure: it never counts (the TaskSet may not retry at all).
        assert world.status.state != State.FAILED, world.status.phase_message
        uids = [r.pod_uid for r in world.status.node_recoveries.recoveries]
        assert len(uids) == len(set(uids))
        recorded += [u for u in uids if u not in recorded]
    # The nodes lost stay lost; the evictions land: the TaskSet runs again on the nodes that answer.
    if action == "Wait":
        return
    for name in NODES:
        if node_view(world.nodes[name]).lost:
            evict(world, name)
    for _ in range(4):
        world.tick(40)
        confirm_answering(world)
        settled(world)
    if any(not node_view(world.nodes[n]).lost for n in NODES):
        assert world.status.phase == T.ATTEMPT_RUNNING
        assert all(r.phase == P.ATTEMPT_RUNNING for r in world.status.roles[0].replicas)
        assert not [p for n in NODES if node_view(world.nodes[n]).lost for p in on(world, n)]
