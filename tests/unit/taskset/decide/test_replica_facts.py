"""A replica's facts are worked out as its machine's guards read them: a pass over many replicas that
have nothing new pays only for what their rows look at, and what a guard reads is what the eager facts
held."""

from __future__ import annotations

from dataclasses import fields

import pytest
from pytest_mock import MockerFixture

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

# What the rows of a running or completed replica never need: a parse of a time, the retry policy,
# the deadlines, the role's gates, the other Pods.
COSTLY = (
    "seconds_since",
    "replica_may_retry",
    "replica_delay",
    "deadline_exceeded",
    "gate",
    "start_deadline_passed",
    "keeps_pods",
    "earlier_attempt_alive",
)


def forbid_costly(mocker: MockerFixture) -> None:
    for name in COSTLY:
        mocker.patch(f"taskset.decide.replica_facts.{name}", side_effect=AssertionError(f"{name} was asked"))


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
    return LazyReplicaFacts(ctx, 0, role, replica, pod=pod, kind=kind)


def values(facts: ReplicaFacts) -> dict[str, object]:
    return {field.name: getattr(facts, field.name) for field in fields(ReplicaFacts)}


@pytest.mark.parametrize("phase", [P.ATTEMPT_RUNNING, P.COMPLETED])
def test_a_running_or_completed_replica_with_nothing_new_works_out_none_of_the_costly_facts(
    mocker: MockerFixture, phase: P
) -> None:
    world = running(single(replicas=2))
    facts = facts_of(world, 0)
    forbid_costly(mocker)
    row = REPLICA_MACHINE.step(phase, facts)
    assert (row.label if row else None) == ("P-wait" if phase == P.ATTEMPT_RUNNING else None)


def test_a_pending_retry_asks_for_its_delay(mocker: MockerFixture) -> None:
    """The check above can fail: the fact a retry waits on does ask for it."""
    world = running(single(replicas=2))
    facts = facts_of(world, 0)
    forbid_costly(mocker)
    with pytest.raises(AssertionError, match="was asked"):
        REPLICA_MACHINE.step(P.ATTEMPT_RETRY_PENDING, facts)


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
