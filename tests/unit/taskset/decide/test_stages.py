"""The stages of a pass, in the order ``decide`` runs them: each listed once, each after the stages it
says it must follow, each with its reason. ``check_stages`` runs at import; here it is also shown to
refuse every order that breaks a stated constraint, so the constraints are not decoration."""

from __future__ import annotations

import pytest

from taskset.decide.stages import STAGES, Stage, check_stages

pytestmark = pytest.mark.unit

NAMES = [stage.name for stage in STAGES]

# Every (stage, stage it must follow) pair the tuple declares.
CONSTRAINTS = [
    pytest.param(stage.name, earlier, id=f"{stage.name}-after-{earlier}")
    for stage in STAGES
    for earlier in stage.after
]


def swapped(first: str, second: str) -> tuple[Stage, ...]:
    """The pass's stages with two of them exchanged, the rest where they are."""
    at = {stage.name: position for position, stage in enumerate(STAGES)}
    stages = list(STAGES)
    stages[at[first]], stages[at[second]] = stages[at[second]], stages[at[first]]
    return tuple(stages)


def test_the_stages_run_as_listed() -> None:
    check_stages(STAGES)


def test_no_stage_is_listed_twice() -> None:
    assert len(set(NAMES)) == len(NAMES)
    assert len({id(stage) for stage in STAGES}) == len(STAGES)


def test_every_after_names_an_earlier_stage() -> None:
    for position, stage in enumerate(STAGES):
        assert set(stage.after) <= set(NAMES[:position]), stage.name


def test_every_stage_says_why_it_runs_where_it_does() -> None:
    assert [stage.name for stage in STAGES if not stage.why.strip()] == []


def test_the_machines_move_in_one_stage_that_the_reports_follow() -> None:
    reports = [stage for stage in STAGES if stage.name.startswith("report_")]
    assert reports
    assert all("run_taskset" in stage.after for stage in reports)


def test_the_membership_is_noted_twice_under_two_names_each_with_its_reason() -> None:
    noted = next(stage.run for stage in STAGES if stage.name == "note_scaled_membership")
    membership = [stage for stage in STAGES if stage.run is noted]
    assert [stage.name for stage in membership] == ["note_scaled_membership", "note_moved_membership"]
    assert membership[0].why != membership[1].why


@pytest.mark.parametrize(("stage", "earlier"), CONSTRAINTS)
def test_swapping_a_stage_with_one_it_must_follow_is_refused(stage: str, earlier: str) -> None:
    with pytest.raises(ValueError, match=f"stage {stage} must follow {earlier}"):
        check_stages(swapped(stage, earlier))


def test_a_stage_listed_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="listed twice"):
        check_stages((*STAGES, STAGES[0]))


def test_a_stage_following_one_that_never_runs_is_refused() -> None:
    lost = Stage("lost", STAGES[0].run, after=("no_such_stage",), why="a test")
    with pytest.raises(ValueError, match="must follow no_such_stage"):
        check_stages((*STAGES, lost))
