"""A row owns its result: every intent carries the row it was issued for (``RowRef``), and that row's
``on_result`` is the one place its answer is folded (``Pass.fold`` looks it up, nothing dispatches on
the intent's type). A machine row that makes intents declares its ``on_result`` (``check_rows``), and
what a pass asks beside its machines' moves is an upkeep row with its own (``check_upkeep``)."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.decide import ROWS, UPKEEP_ROWS, ActionResult, CreateOwned, CreatePod, ResultKind, Row, RowRef
from taskset.decide.context import check_rows, retry_if_failed
from taskset.decide.machines import MACHINES, REPLICA_MACHINE, TASKSET_MACHINE
from taskset.decide.upkeep import OWNED_OBJECT, UPKEEP, UPKEEP_LABELS, check_upkeep
from tests.builders import TaskSetBuilder
from tests.unit.taskset.decide.scenes import single
from tests.unit.taskset.world import World, control_unit, control_unit_ready, pass_once, view_of

pytestmark = pytest.mark.unit

# The machine rows that ask the API server for something, by machine.
ISSUING = {
    TASKSET_MACHINE.name: (
        RowRef(TASKSET_MACHINE.name, "T3"),
        RowRef(TASKSET_MACHINE.name, "T4"),
        RowRef(TASKSET_MACHINE.name, "T10"),
    ),
    REPLICA_MACHINE.name: (RowRef(REPLICA_MACHINE.name, "P1"), RowRef(REPLICA_MACHINE.name, "P9")),
}


def taking_results(machine: str) -> set[str]:
    return {label for label, row in ROWS[machine].items() if row.on_result is not None}


def test_exactly_the_rows_that_ask_the_api_server_take_its_answers() -> None:
    assert {machine: taking_results(machine) for machine in ROWS} == {
        TASKSET_MACHINE.name: {"T3", "T4", "T10"},
        "role": set(),
        REPLICA_MACHINE.name: {"P1", "P9"},
    }
    for machine in MACHINES:
        check_rows(machine, ROWS[machine.name], ISSUING.get(machine.name, ()))


@pytest.mark.parametrize("machine", [TASKSET_MACHINE, REPLICA_MACHINE], ids=lambda machine: machine.name)
def test_a_row_that_makes_intents_without_taking_their_answer_fails_its_check(machine: Any) -> None:
    issuing = ISSUING[machine.name]
    label = issuing[0].label
    rows = {**ROWS[machine.name], label: Row(effect=ROWS[machine.name][label].effect, message="asked")}
    with pytest.raises(ValueError, match=f"row {label} makes intents but takes no result"):
        check_rows(machine, rows, issuing)


@pytest.mark.parametrize("machine", [TASKSET_MACHINE, REPLICA_MACHINE], ids=lambda machine: machine.name)
def test_a_row_that_takes_answers_to_intents_it_never_makes_fails_its_check(machine: Any) -> None:
    with pytest.raises(ValueError, match="takes a result but makes no intent"):
        check_rows(machine, ROWS[machine.name])


def test_an_intent_naming_a_row_its_machine_does_not_declare_fails_the_check() -> None:
    issuing = (*ISSUING[TASKSET_MACHINE.name], RowRef(TASKSET_MACHINE.name, "not-a-row"))
    with pytest.raises(ValueError, match="names row not-a-row"):
        check_rows(TASKSET_MACHINE, ROWS[TASKSET_MACHINE.name], issuing)


def test_an_intent_naming_a_row_without_an_effect_fails_the_check() -> None:
    issuing = (*ISSUING[REPLICA_MACHINE.name], RowRef(REPLICA_MACHINE.name, "P4"))  # P4 only writes
    with pytest.raises(ValueError, match="names row P4"):
        check_rows(REPLICA_MACHINE, ROWS[REPLICA_MACHINE.name], issuing)


def test_every_upkeep_row_takes_its_answer_and_does_nothing_else() -> None:
    assert set(UPKEEP_ROWS) == UPKEEP_LABELS
    assert all(row == Row(on_result=row.on_result) and row.on_result for row in UPKEEP_ROWS.values())


def test_an_upkeep_table_missing_a_row_or_with_an_undeclared_one_fails_its_check() -> None:
    rows = dict(UPKEEP_ROWS)
    rows["stray-pods"] = rows.pop("stray-pod")
    with pytest.raises(ValueError, match=r"missing \['stray-pod'\], not declared \['stray-pods'\]"):
        check_upkeep(rows)


def test_an_upkeep_row_that_moves_or_ignores_its_answer_fails_its_check() -> None:
    with pytest.raises(ValueError, match="upkeep row stray-pod must fold its result"):
        check_upkeep({**UPKEEP_ROWS, "stray-pod": Row(message="moved", on_result=retry_if_failed)})
    with pytest.raises(ValueError, match="upkeep row stray-pod must fold its result"):
        check_upkeep({**UPKEEP_ROWS, "stray-pod": Row()})


def test_the_intents_of_a_pass_carry_the_rows_they_were_issued_for() -> None:
    world = World(TaskSetBuilder("job").role("a", replicas=2).obj())
    step = pass_once(world)
    plan = step.plan
    assert [intent.row for intent in plan.intents] == [RowRef(TASKSET_MACHINE.name, "T3")]
    unit = control_unit("c-job-0", "cu-1", world.ref.uid)
    step.fold(plan.intents[0], ActionResult(ResultKind.OK, view_of(plan.intents[0], unit)))
    assert [(type(intent), intent.row) for intent in plan.intents[1:]] == [
        (CreateOwned, OWNED_OBJECT),  # the headless Service, which no machine row asks for
        (CreatePod, RowRef(REPLICA_MACHINE.name, "P1")),
        (CreatePod, RowRef(REPLICA_MACHINE.name, "P1")),
    ]
    assert OWNED_OBJECT.machine == UPKEEP


def test_folding_the_result_of_an_intent_no_row_issued_fails_loudly() -> None:
    step = pass_once(control_unit_ready(single()))
    stranger = CreatePod(0, 0, "job-r-0", 0, 0)  # made outside the pass: it names no row
    with pytest.raises(LookupError, match="no row takes the result of CreatePod"):
        step.fold(stranger, ActionResult(ResultKind.OK))
