"""The row tables of decide: one per machine level, keyed by exactly the labels its machine declares.

A table entry says what a row does once chosen (effect, wait, message). A key that is not a declared
label would never fire (a typo hiding a row's behaviour); a declared label without an entry would leave
a row doing nothing. Both fail here, and at import (``check_rows``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from statemachine import Machine
from taskset.decide import ROWS, FromResult, Row
from taskset.decide import replicas as replica_level
from taskset.decide.context import check_rows
from taskset.decide.machines import MACHINES
from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import World

pytestmark = pytest.mark.unit

BY_MACHINE = [pytest.param(machine, id=machine.name) for machine in MACHINES]


def declared(machine: Machine[Any, Any]) -> set[str]:
    return {transition.label for transition in machine.transitions}


def test_every_machine_has_a_row_table() -> None:
    assert set(ROWS) == {machine.name for machine in MACHINES}


@pytest.mark.parametrize("machine", BY_MACHINE)
def test_every_key_of_a_row_table_is_a_label_its_machine_declares(machine: Machine[Any, Any]) -> None:
    assert set(ROWS[machine.name]) - declared(machine) == set()


@pytest.mark.parametrize("machine", BY_MACHINE)
def test_every_declared_label_has_a_row(machine: Machine[Any, Any]) -> None:
    assert declared(machine) - set(ROWS[machine.name]) == set()


@pytest.mark.parametrize("machine", BY_MACHINE)
def test_rows_taken_only_on_a_result_write_the_results_words(machine: Machine[Any, Any]) -> None:
    rows = ROWS[machine.name]
    on_result = {t.label for t in machine.transitions if t.on_result}
    from_result = {label for label, row in rows.items() if isinstance(row.message, FromResult)}
    assert on_result == from_result
    assert all(rows[label].effect is None and rows[label].wait is None for label in on_result)


def test_the_rows_taken_only_on_a_result_are_in_the_tables() -> None:
    assert {"T3-rejected", "P1-rejected"} <= set(ROWS["taskset"]) | set(ROWS["replica"])


@pytest.mark.parametrize("machine", BY_MACHINE)
def test_a_row_that_keeps_the_phase_only_waits_and_a_row_that_moves_never_does(
    machine: Machine[Any, Any],
) -> None:
    rows = ROWS[machine.name]
    for transition in machine.transitions:
        row = rows[transition.label]
        if transition.target is None:
            assert (row.effect, row.message) == (None, None), transition.label
        else:
            assert row.wait is None, transition.label


@pytest.mark.parametrize("machine", BY_MACHINE)
def test_every_row_function_says_what_it_does(machine: Machine[Any, Any]) -> None:
    """``docs/state-machines.md`` renders each function's docstring as the row's effect or message."""
    functions: list[Callable[..., Any]] = []
    for row in ROWS[machine.name].values():
        functions += [f for f in (row.effect, row.wait) if f is not None]
        if callable(row.message):
            functions.append(row.message)
    assert functions
    assert [f.__qualname__ for f in functions if not (f.__doc__ or "").strip()] == []


@pytest.mark.parametrize("machine", BY_MACHINE)
def test_a_table_with_a_mistyped_label_fails_its_check(machine: Machine[Any, Any]) -> None:
    rows = dict(ROWS[machine.name])
    label = machine.transitions[0].label
    rows[label + "x"] = rows.pop(label)
    with pytest.raises(ValueError, match="missing") as raised:
        check_rows(machine, rows)
    assert label in str(raised.value) and label + "x" in str(raised.value)


@pytest.mark.parametrize("machine", BY_MACHINE)
def test_a_table_whose_wait_row_moves_fails_its_check(machine: Machine[Any, Any]) -> None:
    waits = [t.label for t in machine.transitions if t.target is None]
    rows: dict[str, Row[Any]] = {**ROWS[machine.name], waits[0]: Row(message="moved")}
    with pytest.raises(ValueError, match="keeps the phase"):
        check_rows(machine, rows)


def test_a_step_with_no_row_for_its_label_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lookup is strict: a row missing from a table is an error, never a row silently doing nothing."""
    table = dict(replica_level.REPLICA_ROWS)
    del table["P1"]
    monkeypatch.setattr(replica_level, "REPLICA_ROWS", table)
    world = World(TaskSetBuilder("job").role("r").obj())
    with pytest.raises(KeyError, match="P1"):
        world.reconcile()
