"""A bounded cache: the ConfigMap cache keeps a ControlUnit's snapshot digest, not its text. A
pass judges the snapshot by the digest, so a ControlUnit is never judged changed, adopted or passed over
for want of its data; only a trusted snapshot to be used needs its text, and then the pass decides
nothing and asks for it (``Plan.snapshot_wanted``)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from taskset.api.constants import ConditionType, EventReason
from taskset.api.spec import parse_taskset
from taskset.decide import CreateOwned, Plan, decide
from taskset.decide.snapshot import UNVERIFIED
from taskset.objects.controlunit import build_control_unit
from taskset.observed.slim import slim_config_map
from taskset.observed.views import ControlUnitView, control_unit_view
from tests.unit.taskset.decide.scenes import running, single, the_status
from tests.unit.taskset.decide.test_decide_snapshot import tamper
from tests.unit.taskset.world import World, adopted_unseen_control_unit, new_uid

pytestmark = pytest.mark.unit


def cached(world: World, name: str = "c-job-0") -> ControlUnitView:
    """The ControlUnit as the ConfigMap cache shows it: its digest, no text."""
    view = control_unit_view(slim_config_map(world.units[name]))
    assert not view.snapshot_known
    return view


def pass_with(world: World, unit: ControlUnitView) -> Plan:
    observed = replace(world.observed(), control_unit=unit)
    live = parse_taskset(world.taskset)
    return decide(world.ref, live, world.status, observed, world.now, settings=world.settings).plan


def test_a_trusted_snapshot_whose_text_is_not_fetched_yet_stops_the_pass_and_asks_for_it() -> None:
    world = running(single(retry=(True, 1, 0)))
    world.exit("job-r-0", 1)  # a pass now would retry the replica from the snapshot
    recorded = the_status(world).to_json()

    plan = pass_with(world, cached(world))

    assert plan.snapshot_wanted == cached(world).uid
    assert (plan.intents, plan.events, plan.spec) == ([], [], None)
    assert plan.status.to_json() | {"observedGeneration": None} == recorded | {"observedGeneration": None}


def test_once_its_text_is_known_the_same_pass_goes_on_as_with_the_whole_control_unit() -> None:
    world = running(single(retry=(True, 1, 0)))
    world.exit("job-r-0", 1)
    whole = control_unit_view(world.units["c-job-0"])
    fetched = replace(cached(world), spec_snapshot=whole.spec_snapshot, snapshot_known=True)

    plan = pass_with(world, fetched)

    assert fetched == whole
    assert plan.snapshot_wanted is None and plan.spec is not None
    assert plan.status.to_json() == pass_with(world, whole).status.to_json()


def test_a_changed_snapshot_is_refused_by_its_digest_without_its_text() -> None:
    world = running(single())
    tamper(world)

    plan = pass_with(world, cached(world))

    assert plan.snapshot_wanted is None
    assert plan.status.condition(ConditionType.CONTROL_UNIT_TAMPERED) is not None
    assert EventReason.CONTROL_UNIT_TAMPERED in [event.reason for event in plan.events]


def test_a_control_unit_without_a_recorded_digest_is_adopted_by_its_digest_without_its_text() -> None:
    """After a lost status write: the snapshot the live spec builds has that digest, so it is that text."""
    world = single()
    adopted_unseen_control_unit(world)  # T3-adopt: no digest recorded for it
    assert the_status(world).spec_digest is None

    plan = pass_with(world, cached(world))

    assert plan.snapshot_wanted is None
    assert plan.status.spec_digest == cached(world).spec_digest
    assert plan.spec is not None and plan.spec.raw == world.taskset["spec"]
    assert [type(intent).__name__ for intent in plan.intents if not isinstance(intent, CreateOwned)] == [
        "CreatePod"
    ]  # and the integrations' objects (the headless Service)


def test_an_unverifiable_control_unit_is_refused_by_its_digest_without_its_text() -> None:
    world = World(single().taskset)
    unit = build_control_unit(world.taskset, "c-job-0")
    unit["metadata"]["uid"] = new_uid()
    world.units["c-job-0"] = unit
    tamper(world)
    world.reconcile()

    plan = pass_with(world, cached(world))

    assert plan.snapshot_wanted is None and plan.status.spec_digest == UNVERIFIED


def test_a_foreign_control_unit_is_never_asked_for() -> None:
    """A ConfigMap under the name that this TaskSet does not control is a conflict, whatever it holds."""
    world = World(single().taskset)
    unit = build_control_unit(
        {**world.taskset, "metadata": {**world.taskset["metadata"], "uid": "x"}}, "c-job-0"
    )
    unit["metadata"]["uid"] = new_uid()
    world.units["c-job-0"] = unit

    plan = pass_with(world, cached(world))

    assert plan.snapshot_wanted is None
