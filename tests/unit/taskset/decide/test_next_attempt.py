"""Retries that learn from the failure: the pure rule (``next_effect``) table-tested, the order of
failures as a property, the parser's refusals naming the field, and decide passes in which an
OOMKilled replica's next Pod has more memory and a replica's next Pod avoids the node it failed on."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taskset.api.retry_effects import (
    MAX_AVOIDED_NODES,
    ContainerMemory,
    MemoryGrowth,
    NextAttempt,
    RetryEffect,
    parse_quantity,
)
from taskset.api.spec import ValidationFailure, parse_taskset
from taskset.api.status import ReplicaStatus
from taskset.decide.next_attempt import next_effect
from taskset.objects.decorations import PodDecoration
from taskset.objects.pods import PodIdentity, build_pod
from taskset.observed.views import ContainerExit
from tests.builders import TaskSetBuilder, pod_template
from tests.unit.taskset.decide.scenes import running
from tests.unit.taskset.world import World, replica

pytestmark = pytest.mark.unit

GIB = Decimal(2**30)
GROW = MemoryGrowth(Decimal("1.5"), 4 * GIB, "4Gi")
AVOID = NextAttempt(avoid_failed_nodes=True)
MEMORY = NextAttempt(memory=GROW)
BOTH = NextAttempt(True, GROW)
OOM = (ContainerExit("main", 137, "OOMKilled"),)
ERROR = (ContainerExit("main", 1, "Error"),)


def template(request: str | None = "1Gi", limit: str | None = "2Gi") -> dict[str, Any]:
    resources: dict[str, Any] = {}
    if request:
        resources["requests"] = {"memory": request}
    if limit:
        resources["limits"] = {"memory": limit}
    return {"spec": {"containers": [{"name": "main", "image": "busybox", "resources": resources}]}}


# (rule, exits, node, what earlier failures changed, template, expected nodes, expected memory)
CASES = [
    pytest.param((AVOID, ERROR, "n1", None, template(), ("n1",), ()), id="avoid the failed node"),
    pytest.param((AVOID, ERROR, "", None, template(), None, None), id="no node known: nothing changes"),
    pytest.param(
        (
            AVOID,
            ERROR,
            "n2",
            RetryEffect(0, ("n1",)),
            template(),
            ("n1", "n2"),
            (),
        ),
        id="the nodes add up",
    ),
    pytest.param(
        (
            AVOID,
            ERROR,
            "n1",
            RetryEffect(0, ("n1", "n2")),
            template(),
            ("n2", "n1"),
            (),
        ),
        id="a node failed on again moves last",
    ),
    pytest.param(
        (
            MEMORY,
            OOM,
            "n1",
            None,
            template(),
            (),
            (ContainerMemory("main", "1536Mi", "3072Mi"),),
        ),
        id="OOMKilled: request and limit grow",
    ),
    pytest.param((MEMORY, ERROR, "n1", None, template(), None, None), id="no OOMKilled: memory unchanged"),
    pytest.param(
        (
            MEMORY,
            OOM,
            "n1",
            RetryEffect(0, (), (ContainerMemory("main", "1536Mi", "3072Mi"),)),
            template(),
            (),
            (ContainerMemory("main", "2304Mi", "4Gi"),),
        ),
        id="grows from the last attempt's, up to the ceiling",
    ),
    pytest.param(
        (
            MEMORY,
            OOM,
            "n1",
            RetryEffect(0, (), (ContainerMemory("main", "2304Mi", "4Gi"),)),
            template(),
            (),
            (ContainerMemory("main", "3456Mi", "4Gi"),),
        ),
        id="the limit stays at its ceiling",
    ),
    pytest.param(
        (
            MEMORY,
            OOM,
            "n1",
            None,
            template(request=None),
            (),
            (ContainerMemory("main", None, "3072Mi"),),
        ),
        id="only a limit: only it grows (the API server defaults the request to it)",
    ),
    pytest.param(
        (
            MEMORY,
            OOM,
            "n1",
            None,
            template(request="1000M", limit=None),
            (),
            (ContainerMemory("main", "1431Mi", None),),
        ),
        id="decimal units, rounded up to whole mebibytes",
    ),
    pytest.param(
        (
            BOTH,
            OOM,
            "n1",
            None,
            template(),
            ("n1",),
            (ContainerMemory("main", "1536Mi", "3072Mi"),),
        ),
        id="both at once",
    ),
]


@pytest.mark.parametrize("case", CASES)
def test_next_effect(case: tuple[Any, ...]) -> None:
    rule, exits, node, current, tmpl, nodes, memory = case
    effect = next_effect(rule, exits=exits, node=node, current=current, template=tmpl, attempt=1)
    if nodes is None:
        assert effect == current
        return
    assert effect is not None
    assert (effect.avoid_nodes, effect.memory, effect.after_attempt) == (nodes, memory, 1)
    assert effect.reason


def test_an_oomkilled_container_without_memory_says_so_and_changes_nothing() -> None:
    effect = next_effect(MEMORY, exits=OOM, node="", current=None, template=template(None, None), attempt=0)
    assert effect is not None and effect.memory == ()
    assert "sets no memory to grow" in effect.reason


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["n1", "n2", "n3", "n4"]), st.booleans()), max_size=40))
def test_whatever_the_order_of_failures_memory_never_shrinks_nor_passes_the_ceiling(
    failures: list[tuple[str, bool]],
) -> None:
    """The last failure's node is always avoided, at most MAX_AVOIDED_NODES are, each once; the memory
    only grows and never past the ceiling, the request never above the limit."""
    effect: RetryEffect | None = None
    last = (Decimal(GIB), Decimal(2 * GIB))
    for attempt, (node, oom) in enumerate(failures):
        effect = next_effect(
            BOTH, exits=OOM if oom else ERROR, node=node, current=effect, template=template(), attempt=attempt
        )
        assert effect is not None
        assert effect.avoid_nodes[-1] == node
        assert len(effect.avoid_nodes) == len(set(effect.avoid_nodes)) <= MAX_AVOIDED_NODES
        memory = effect.memory_of("main")
        if memory is None:
            continue
        request, limit = parse_quantity(memory.request), parse_quantity(memory.limit)
        assert request is not None and limit is not None
        assert last[0] <= request <= limit <= GROW.ceiling
        assert last[1] <= limit
        last = (request, limit)


def test_the_next_pod_avoids_the_nodes_and_has_the_memory_and_the_template_is_untouched() -> None:
    tmpl = template()
    tmpl["spec"]["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
                ]
            }
        }
    }
    before = repr(tmpl)
    identity = PodIdentity("job", "ns", "uid", "r", 0, "job-r-0", "c-job-0", "cu-uid", 0, 1, "proof")
    decoration = PodDecoration(avoid_nodes=("n1", "n2"), container_memory=(("main", "1536Mi", "3Gi"),))
    pod = build_pod(tmpl, identity, (decoration,))
    assert repr(tmpl) == before, "the user's template is never edited"
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    expressions = terms["nodeSelectorTerms"][0]["matchExpressions"]
    assert expressions == [
        {"key": "zone", "operator": "In", "values": ["a"]},
        {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["n1", "n2"]},
    ]
    resources = pod["spec"]["containers"][0]["resources"]
    assert resources == {"requests": {"memory": "1536Mi"}, "limits": {"memory": "3Gi"}}


# ----- the parser ----------------------------------------------------------------------------------------


def with_rule(next_attempt: dict[str, Any], *, request: str = "1Gi") -> dict[str, Any]:
    rule = {"name": "oom", "action": "RetryCounted", "onTerminatedReasons": ["OOMKilled"]}
    tmpl = pod_template()
    tmpl["spec"]["containers"][0]["resources"] = {"requests": {"memory": request}}
    return (
        TaskSetBuilder("job")
        .role("r", template=tmpl, failureRules=[{**rule, "nextAttempt": next_attempt}])
        .obj()
    )


@pytest.mark.parametrize(
    ("next_attempt", "field"),
    [
        pytest.param({"memory": {"factor": 1, "ceiling": "4Gi"}}, "memory.factor", id="factor 1"),
        pytest.param({"memory": {"factor": 0.5, "ceiling": "4Gi"}}, "memory.factor", id="factor below 1"),
        pytest.param({"memory": {"factor": 11, "ceiling": "4Gi"}}, "memory.factor", id="factor past 10"),
        pytest.param({"memory": {"factor": 2, "ceiling": "lots"}}, "memory.ceiling", id="not a quantity"),
        pytest.param({"memory": {"factor": 2, "ceiling": "512Mi"}}, "memory.ceiling", id="below the request"),
        pytest.param({"avoidFailedNodes": "yes"}, "avoidFailedNodes", id="not a boolean"),
    ],
)
def test_bad_next_attempts_are_refused_naming_the_field(next_attempt: dict[str, Any], field: str) -> None:
    parsed = parse_taskset(with_rule(next_attempt))
    assert isinstance(parsed, ValidationFailure)
    assert parsed.field == f"spec.roles[0].failureRules[0].nextAttempt.{field}"


def test_a_ceiling_of_the_taskset_s_rules_is_checked_against_every_role() -> None:
    obj = with_rule({"memory": {"factor": 2, "ceiling": "8Gi"}}, request="1Gi")
    rule = obj["spec"]["roles"][0].pop("failureRules")[0]
    obj["spec"]["failureRules"] = [{**rule, "nextAttempt": {"memory": {"factor": 2, "ceiling": "1G"}}}]
    parsed = parse_taskset(obj)
    assert isinstance(parsed, ValidationFailure)
    assert parsed.field == "spec.failureRules[0].nextAttempt.memory.ceiling"


# ----- decide passes -------------------------------------------------------------------------------------


def oom_world(next_attempt: dict[str, Any]) -> World:
    rule = {"name": "oom", "action": "RetryCounted", "onTerminatedReasons": ["OOMKilled"]}
    tmpl = pod_template()
    tmpl["spec"]["containers"][0]["resources"] = {"requests": {"memory": "1Gi"}, "limits": {"memory": "1Gi"}}
    avoid = {"avoidFailedNodes": True}
    rules = [
        {**rule, "nextAttempt": next_attempt},
        {
            "name": "any",
            "action": "RetryCounted",
            "onExitCodes": {"operator": "NotIn", "values": [0]},
            "nextAttempt": avoid,
        },
    ]
    builder = TaskSetBuilder("job").role("r", retry=(True, 5, 0), template=tmpl, failureRules=rules)
    return running(World(builder.obj()))


def fail_on(world: World, node: str, reason: str) -> None:
    world.pods["job-r-0"]["spec"]["nodeName"] = node
    world.exit("job-r-0", 137)
    world.pods["job-r-0"]["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] = reason
    world.settle()


def test_an_oomkilled_replica_s_next_pod_has_more_memory_and_the_status_says_why() -> None:
    world = oom_world({"memory": {"factor": 2, "ceiling": "3Gi"}, "avoidFailedNodes": True})
    fail_on(world, "n1", "OOMKilled")
    pod = world.pods["job-r-0"]
    assert replica(world, "r").total_retried_count == 1, "the next attempt's Pod"
    resources = pod["spec"]["containers"][0]["resources"]
    assert resources == {"requests": {"memory": "2048Mi"}, "limits": {"memory": "2048Mi"}}
    rep = replica(world, "r")
    assert rep.next_attempt is not None
    assert rep.next_attempt.avoid_nodes == ("n1",)
    assert "container c0 OOMKilled: memory x2 to 2048Mi (ceiling 3Gi)" in rep.next_attempt.reason
    assert any("next attempt: attempt 0 failed on node n1" in e for e in world.events)
    world.run("job-r-0")
    fail_on(world, "n2", "OOMKilled")
    resources = world.pods["job-r-0"]["spec"]["containers"][0]["resources"]
    assert resources == {"requests": {"memory": "3Gi"}, "limits": {"memory": "3Gi"}}, "capped at the ceiling"
    rep = replica(world, "r")
    assert rep.next_attempt is not None and rep.next_attempt.avoid_nodes == ("n1", "n2")


def test_a_replica_failing_on_a_node_is_not_placed_there_again() -> None:
    world = oom_world({"memory": {"factor": 2, "ceiling": "3Gi"}})
    fail_on(world, "n7", "Error")  # the second rule: any failure avoids its node
    affinity = world.pods["job-r-0"]["spec"]["affinity"]["nodeAffinity"]
    terms = affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["n7"]}]}
    ]
    assert world.pods["job-r-0"]["spec"]["containers"][0]["resources"]["limits"] == {"memory": "1Gi"}


def test_what_was_learned_survives_a_status_round_trip() -> None:
    world = oom_world({"memory": {"factor": 2, "ceiling": "3Gi"}, "avoidFailedNodes": True})
    fail_on(world, "n1", "OOMKilled")
    rep = replica(world, "r")
    wire = rep.to_json()
    assert ReplicaStatus.from_json(wire, rep.index, rep.name).next_attempt == rep.next_attempt
