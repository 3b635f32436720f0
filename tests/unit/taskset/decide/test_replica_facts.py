"""A replica's facts are worked out as its machine's guards read them: a pass over many replicas that
have nothing new pays only for what their rows look at, and what a guard reads is what the eager facts
held."""

from __future__ import annotations

from dataclasses import fields

import pytest

from taskset.api.constants import ReplicaPhase as P
from taskset.api.spec import parse_taskset
from taskset.decide import decide
from taskset.decide.context import PassContext
from taskset.decide.machines import REPLICA_MACHINE, ReplicaFacts
from taskset.decide.plan import Plan
from taskset.decide.replica_facts import LazyReplicaFacts
from taskset.observed.views import PodClass
from tests.unit.taskset.decide.scenes import running, single
from tests.unit.taskset.world import World

pytestmark = pytest.mark.unit

# What the rows of these phases never read: each needs a parse of a time, the retry policy, the
# deadlines or the role's gates.
COSTLY = {"creates_allowed", "creation_timed_out", "may_retry", "retry_due", "start_deadline_passed"}


def facts_of(world: World, index: int) -> LazyReplicaFacts:
    assert world.status is not None
    status = world.status.copy()
    ctx = PassContext(
        world.ref,
        parse_taskset(world.taskset),
        world.observed(),
        world.now,
        world.settings,
        Plan(status=status, spec=None),
    )
    ctx.plan.spec = decide(world.ref, ctx.live, world.status, ctx.observed, world.now).plan.spec
    assert ctx.plan.spec is not None
    role, replica = ctx.plan.spec.roles[0], status.roles[0].replicas[index]
    pod = ctx.observed.pods.get(replica.pod_name)
    kind = PodClass.CURRENT if pod is not None else PodClass.ABSENT
    return LazyReplicaFacts(ctx, (0, role, replica), pod, kind)


def values(facts: ReplicaFacts) -> dict[str, object]:
    return {field.name: getattr(facts, field.name) for field in fields(ReplicaFacts)}


def computed(facts: LazyReplicaFacts) -> set[str]:
    return set(vars(facts)) - {"_in"}


def test_a_running_replica_with_nothing_new_works_out_none_of_the_costly_facts() -> None:
    world = running(single(replicas=2))
    facts = facts_of(world, 0)
    assert REPLICA_MACHINE.step(P.ATTEMPT_RUNNING, facts).label == "P-wait"
    assert computed(facts) and not computed(facts) & COSTLY


def test_a_completed_replica_works_out_no_fact_at_all() -> None:
    world = running(single(replicas=2))
    facts = facts_of(world, 0)
    assert REPLICA_MACHINE.step(P.COMPLETED, facts) is None
    assert computed(facts) == set()


def test_the_lazy_facts_equal_the_facts_given_whole() -> None:
    """Every field read, as equality reads them, gives the values the eager facts of the same replica
    hold; so does a fact a guard reads that the role sets (``taskset_ended``: its default)."""
    world = running(single(replicas=2))
    facts = facts_of(world, 1)
    whole = ReplicaFacts(
        pod=PodClass.CURRENT,
        pod_running=True,
        pod_assigned=True,
        creates_allowed=True,
        creation_timed_out=False,
        retry_due=True,  # the default retry policy waits no delay
        keeps_finished=False,
    )
    assert values(facts) == values(whole)
    assert not facts.taskset_ended
