"""A TaskSet retry that learns from the failure: the pure rule (``gang_effect``) table-tested, its order
and bound as a property, the merge of the avoided nodes with a template's node affinity as Kubernetes
reads it (terms ORed, a term's requirements ANDed), and decide passes in which every Pod of every role of
the next attempt avoids the node a ``RestartTaskSet`` failure ran on."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taskset.api.retry_effects import MAX_AVOIDED_NODES, RetryEffect
from taskset.api.status import AttemptResult, ReplicaStatus, RoleStatus, TaskSetStatus
from taskset.decide.gang_avoidance import attempt_nodes, gang_effect, latest_once
from taskset.objects.decorations import PodDecoration
from taskset.objects.pods import PodIdentity, build_pod
from tests.builders import TaskSetBuilder, pod_template
from tests.unit.taskset.decide.scenes import running, the_status
from tests.unit.taskset.world import World

pytestmark = pytest.mark.unit

HOST = "kubernetes.io/hostname"


def avoid(*nodes: str) -> dict[str, Any]:
    return {"key": HOST, "operator": "NotIn", "values": list(nodes)}


def zone(*zones: str) -> dict[str, Any]:
    return {"key": "zone", "operator": "In", "values": list(zones)}


NAME_IS_N9 = {"key": "metadata.name", "operator": "In", "values": ["n9"]}

# ----- the avoided nodes meet the template's node affinity --------------------------------------------

# (the template's required nodeSelectorTerms, or None for no affinity at all; the terms expected)
MERGES = [
    pytest.param(None, [{"matchExpressions": [avoid("x")]}], id="no affinity: a term of its own"),
    pytest.param(
        [{"matchExpressions": [zone("a")]}],
        [{"matchExpressions": [zone("a"), avoid("x")]}],
        id="one term: ANDed inside it",
    ),
    pytest.param(
        [{"matchExpressions": [zone("a")]}, {"matchExpressions": [zone("b")]}],
        [{"matchExpressions": [zone("a"), avoid("x")]}, {"matchExpressions": [zone("b"), avoid("x")]}],
        id="two terms (ORed): ANDed into each, so neither alternative lets the Pod onto x",
    ),
    pytest.param(
        [{"matchFields": [NAME_IS_N9]}],
        [{"matchFields": [NAME_IS_N9], "matchExpressions": [avoid("x")]}],
        id="a term of fields only: ANDed beside them",
    ),
    pytest.param(
        [{}, {"matchExpressions": [zone("a")]}],
        [{}, {"matchExpressions": [zone("a"), avoid("x")]}],
        id="an empty term matches no node and stays so",
    ),
    pytest.param(
        [{"matchExpressions": []}], [{"matchExpressions": []}], id="only empty terms: still nowhere"
    ),
]


@pytest.mark.parametrize(("terms", "expected"), MERGES)
def test_the_avoided_nodes_are_anded_into_every_alternative_of_the_template(
    terms: list[dict[str, Any]] | None, expected: list[dict[str, Any]]
) -> None:
    template = pod_template()
    preferred = [{"weight": 1, "preference": {"matchExpressions": [zone("c")]}}]
    if terms is not None:
        template["spec"]["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms},
                "preferredDuringSchedulingIgnoredDuringExecution": preferred,
            },
            "podAntiAffinity": {"x": 1},
        }
    template["spec"]["nodeSelector"] = {"disk": "ssd"}
    before = copy.deepcopy(template)
    identity = PodIdentity("job", "ns", "uid", "r", 0, "job-r-0", "c-job-0", "cu-uid", 0, 1, "proof")
    pod = build_pod(template, identity, (PodDecoration(avoid_nodes=("x",)),))
    assert template == before, "the user's template is never edited"
    affinity = pod["spec"]["affinity"]
    required = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert required["nodeSelectorTerms"] == expected
    assert pod["spec"]["nodeSelector"] == {"disk": "ssd"}, "ANDed with the affinity by Kubernetes itself"
    if terms is not None:
        assert affinity["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] == preferred
        assert affinity["podAntiAffinity"] == {"x": 1}


# ----- the pure rule --------------------------------------------------------------------------------------


def failed_attempt(
    attempt: int,
    learned: dict[tuple[str, int], tuple[str, ...]],
    *,
    ending: tuple[str, int] | None = None,
    before: RetryEffect | None = None,
) -> TaskSetStatus:
    """A status at the end of attempt ``attempt``: what each replica (role, index) learned to avoid."""
    roles: dict[str, RoleStatus] = {}
    for (role, index), nodes in sorted(learned.items()):
        replica = ReplicaStatus(index, role, next_attempt=RetryEffect(0, nodes) if nodes else None)
        roles.setdefault(role, RoleStatus(role, [])).replicas.append(replica)
    return TaskSetStatus(
        total_retried_count=attempt,
        roles=list(roles.values()),
        attempt_result=AttemptResult(False, "failed", replica=ending),
        next_attempt=before,
    )


# (learned by (role, index), the ending replica, avoided before, the nodes expected; None: unchanged)
RULES = [
    pytest.param({("a", 0): ("n1",)}, ("a", 0), None, ("n1",), id="the ending replica's node"),
    pytest.param({("a", 0): ()}, ("a", 0), None, None, id="no rule asked: nothing learned"),
    pytest.param(
        {("a", 0): ("n1",), ("b", 0): ("n2",)},
        ("a", 0),
        None,
        ("n2", "n1"),
        id="every replica's, the ending one's last",
    ),
    pytest.param(
        {("a", 0): ("n1",), ("b", 1): ("n1", "n3")},
        ("b", 1),
        RetryEffect(0, ("n3", "n4")),
        ("n4", "n1", "n3"),
        id="added to those before, a node failed on again moves last",
    ),
    pytest.param(
        {("a", 0): tuple(f"m{i}" for i in range(6))},
        ("a", 0),
        RetryEffect(0, ("o1", "o2", "o3", "o4")),
        ("o3", "o4", *(f"m{i}" for i in range(6))),
        id="the latest eight",
    ),
    pytest.param(
        {("a", 0): ("n1",)}, None, None, ("n1",), id="no ending replica (a deadline): still learned"
    ),
]


@pytest.mark.parametrize(("learned", "ending", "before", "expected"), RULES)
def test_gang_effect(
    learned: dict[tuple[str, int], tuple[str, ...]],
    ending: tuple[str, int] | None,
    before: RetryEffect | None,
    expected: tuple[str, ...] | None,
) -> None:
    status = failed_attempt(1, learned, ending=ending, before=before)
    effect = gang_effect(status)
    if expected is None:
        assert effect == before
        return
    assert effect is not None
    assert (effect.avoid_nodes, effect.after_attempt, effect.memory) == (expected, 1, ())
    assert effect.reason.startswith("attempt 1 failed on node") and expected[-1] in effect.reason


def test_an_attempt_is_learned_from_once() -> None:
    status = failed_attempt(2, {("a", 0): ("n1",)}, ending=("a", 0), before=RetryEffect(2, ("n5",), (), "x"))
    assert gang_effect(status) == RetryEffect(2, ("n5",), (), "x"), "attempt 2 was answered already"


node_lists = st.lists(st.sampled_from([f"n{i}" for i in range(12)]), max_size=4)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.dictionaries(st.tuples(st.sampled_from("ab"), st.integers(0, 2)), node_lists), st.data()
        ),
        max_size=12,
    )
)
def test_whatever_the_failures_the_gang_keeps_the_latest_nodes_each_once(
    attempts: list[tuple[dict[tuple[str, int], list[str]], st.DataObject]],
) -> None:
    """Over attempts that fail anywhere: at most MAX_AVOIDED_NODES nodes, each once; the ending
    replica's last node is last; nothing of the attempt before is forgotten while there is room; and
    learning the same attempt again changes nothing."""
    effect: RetryEffect | None = None
    for attempt, (learned, data) in enumerate(attempts):
        ending = data.draw(st.sampled_from(sorted(learned))) if learned else None
        status = failed_attempt(
            attempt, {k: tuple(v) for k, v in learned.items()}, ending=ending, before=effect
        )
        new = gang_effect(status)
        failed = attempt_nodes(status)
        if not failed:
            assert new == effect
            continue
        assert new is not None
        nodes = new.avoid_nodes
        assert len(nodes) == len(set(nodes)) <= MAX_AVOIDED_NODES
        if ending is not None and learned[ending]:
            assert nodes[-1] == learned[ending][-1]
        everything = latest_once((*(effect.avoid_nodes if effect else ()), *failed))
        assert nodes == everything[-MAX_AVOIDED_NODES:]
        status.next_attempt = new
        assert gang_effect(status) == new
        effect = new


# ----- decide passes -------------------------------------------------------------------------------------

BAD_NODE = {
    "name": "bad-node",
    "action": "RestartTaskSet",
    "onExitCodes": {"operator": "In", "values": [42]},
    "nextAttempt": {"avoidFailedNodes": True},
}


def gang_world(rule: dict[str, Any]) -> World:
    builder = (
        TaskSetBuilder("job").retry(True, 2, 0).role("a", 2).role("b", 2).spec_field("failureRules", [rule])
    )
    return running(World(builder.obj()))


def fail_on(world: World, pod: str, node: str, code: int) -> None:
    for name, obj in world.pods.items():
        obj["spec"]["nodeName"] = node if name == pod else "n-other"
    world.exit(pod, code)
    world.settle()


def avoided(pod: dict[str, Any]) -> list[Any]:
    affinity = pod["spec"].get("affinity") or {}
    required = (affinity.get("nodeAffinity") or {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    return [] if required is None else required["nodeSelectorTerms"]


def test_every_pod_of_the_next_attempt_avoids_the_node_a_restart_taskset_failure_ran_on() -> None:
    world = gang_world(BAD_NODE)
    fail_on(world, "job-a-1", "n1", 42)
    status = the_status(world)
    assert status.total_retried_count == 1, "a new attempt"
    assert status.next_attempt is not None and status.next_attempt.avoid_nodes == ("n1",)
    assert status.next_attempt.after_attempt == 0
    assert status.next_attempt.reason == "attempt 0 failed on node n1: every Pod avoids n1"
    assert sorted(world.pods) == ["job-a-0", "job-a-1", "job-b-0", "job-b-1"]
    for pod in world.pods.values():
        assert avoided(pod) == [{"matchExpressions": [avoid("n1")]}], pod["metadata"]["name"]
    assert any("next attempt: attempt 0 failed on node n1: avoid n1" in e for e in world.events)
    spec = world.taskset["spec"]
    assert "affinity" not in spec["roles"][0]["template"]["spec"], "the template is never edited"
    wire = status.to_json()
    back = TaskSetStatus.from_json(wire)
    assert back is not None and back.next_attempt == status.next_attempt
    # The next attempt fails on another node: both are avoided, by every Pod of the attempt after.
    running(world)
    fail_on(world, "job-b-0", "n2", 42)
    status = the_status(world)
    assert status.total_retried_count == 2
    assert status.next_attempt is not None and status.next_attempt.avoid_nodes == ("n1", "n2")
    for pod in world.pods.values():
        assert avoided(pod) == [{"matchExpressions": [avoid("n1", "n2")]}]


def test_a_failed_role_s_retry_of_the_taskset_avoids_the_node_too() -> None:
    world = gang_world({**BAD_NODE, "action": "FailRole"})
    fail_on(world, "job-b-1", "n3", 42)
    status = the_status(world)
    assert status.total_retried_count == 1
    assert status.next_attempt is not None and status.next_attempt.avoid_nodes == ("n3",)
    assert all(avoided(pod) == [{"matchExpressions": [avoid("n3")]}] for pod in world.pods.values())


def test_a_rule_without_avoid_failed_nodes_changes_no_pod_of_the_next_attempt() -> None:
    world = gang_world({**BAD_NODE, "nextAttempt": {"memory": {"factor": 2, "ceiling": "8Gi"}}})
    fail_on(world, "job-a-1", "n1", 42)
    status = the_status(world)
    assert status.total_retried_count == 1 and status.next_attempt is None
    assert "nextAttempt" not in status.to_json()
    assert all(avoided(pod) == [] for pod in world.pods.values())
    assert all(
        "memory" not in str(pod["spec"]["containers"][0].get("resources")) for pod in world.pods.values()
    )


def test_a_replica_s_own_nodes_and_the_gang_s_make_one_expression() -> None:
    retried = {
        **BAD_NODE,
        "name": "retry-elsewhere",
        "action": "RetryCounted",
        "onExitCodes": {"operator": "In", "values": [7]},
    }
    builder = TaskSetBuilder("job").retry(True, 2, 0).role("a", 2, retry=(True, 3, 0)).role("b", 2)
    world = running(World(builder.spec_field("failureRules", [BAD_NODE, retried]).obj()))
    fail_on(world, "job-a-0", "n1", 42)  # the gang avoids n1
    running(world)
    fail_on(world, "job-a-0", "n2", 7)  # the replica alone avoids n2 too
    pod = world.pods["job-a-0"]
    assert avoided(pod) == [{"matchExpressions": [avoid("n1", "n2")]}]
    assert avoided(world.pods["job-a-1"]) == [{"matchExpressions": [avoid("n1")]}]
