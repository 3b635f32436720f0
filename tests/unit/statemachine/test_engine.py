"""The state-machine engine: first-match steps, totality checked at build time, declared edges only,
and diagrams drawn from the table itself."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import pytest

from statemachine import (
    Machine,
    MachineDefinitionError,
    Transition,
    UndeclaredTransitionError,
    always,
    render_mermaid,
)

pytestmark = pytest.mark.unit


@dataclass(frozen=True)
class Facts:
    a: bool = False
    b: bool = False


Row = Transition[str, Facts]


def door(*extra: Row) -> Machine[str, Facts]:
    """closed -> open -> gone; ``broken`` is terminal; rows are first-match."""
    return Machine(
        name="door",
        states=("closed", "open", "gone", "broken"),
        initial="closed",
        terminal=frozenset({"gone", "broken"}),
        transitions=(
            Transition("D1", ("closed",), "broken", lambda f: f.a and f.b, "both"),
            Transition("D2", ("closed",), "open", lambda f: f.a, "a only"),
            Transition("D3", ("closed",), "gone", lambda f: f.b, "b only"),
            Transition("D-kick", ("closed",), "broken", on_result=True, doc="the kick landed"),
            Transition("D-wait", ("closed",), None, doc="nothing yet"),
            Transition("O1", ("open",), "gone", lambda f: f.a, "leave"),
            Transition("O2", ("open",), "closed", doc="swing back"),
            *extra,
        ),
    )


# ----- step: first match ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("state", "facts", "label", "target"),
    [
        pytest.param(
            "closed", Facts(a=True, b=True), "D1", "broken", id="the first matching row wins over later ones"
        ),
        pytest.param("closed", Facts(a=True), "D2", "open", id="a row is skipped when its guard is false"),
        pytest.param("closed", Facts(b=True), "D3", "gone", id="the third row fires when only it holds"),
        pytest.param("closed", Facts(), "D-wait", "closed", id="the fallback fires when no guard holds"),
        pytest.param("open", Facts(a=True), "O1", "gone", id="rows of another state are never consulted"),
        pytest.param("open", Facts(), "O2", "closed", id="an unguarded fallback can leave the state"),
    ],
)
def test_step_picks_the_first_row_whose_guard_holds(
    state: str, facts: Facts, label: str, target: str
) -> None:
    row = door().step(state, facts)
    assert row is not None
    assert (row.label, row.target_from(state)) == (label, target)


def test_step_never_picks_an_on_result_row_even_before_the_fallback() -> None:
    # D-kick (on_result, unguarded) sits before the fallback D-wait: step must skip it.
    machine = door()
    labels = {
        row.label
        for a in (False, True)
        for b in (False, True)
        if (row := machine.step("closed", Facts(a=a, b=b))) is not None
    }
    assert labels == {"D1", "D2", "D3", "D-wait"}


def test_step_in_a_terminal_state_without_rows_returns_none() -> None:
    assert door().step("gone", Facts(a=True, b=True)) is None
    assert door().step("broken", Facts()) is None


def test_step_from_an_unknown_state_raises() -> None:
    with pytest.raises(UndeclaredTransitionError, match="unknown state 'ajar'"):
        door().step("ajar", Facts())


def test_a_wait_row_keeps_the_state() -> None:
    row = Transition[str, Facts]("W", ("closed",), None)
    assert row.target_from("closed") == "closed"
    assert row.target_from("open") == "open"
    assert row.is_fallback


def test_a_guarded_row_is_not_a_fallback_and_always_is() -> None:
    assert not Transition[str, Facts]("G", ("closed",), "open", lambda f: True).is_fallback
    assert Transition[str, Facts]("F", ("closed",), "open", always).is_fallback
    assert always(object()) is True


# ----- definition errors ------------------------------------------------------------------------------


def build(
    *rows: Row, states: tuple[str, ...] = ("x", "y", "end"), terminal: frozenset[str] = frozenset({"end"})
) -> Machine[str, Facts]:
    return Machine(name="toy", states=states, initial="x", terminal=terminal, transitions=rows)


def fallback(state: str, label: str = "F") -> Row:
    return Transition(label, (state,), None)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        pytest.param(
            (fallback("x"),),
            "toy: state 'y' has no fallback row, so it is not total",
            id="a non-terminal state without any row is rejected",
        ),
        pytest.param(
            (fallback("x"), Transition("Y1", ("y",), "end", lambda f: f.a)),
            "toy: state 'y' has no fallback row, so it is not total",
            id="a non-terminal state whose last row is guarded is rejected",
        ),
        pytest.param(
            (fallback("x"), Transition("Y1", ("y",), "end", on_result=True)),
            "toy: state 'y' has no fallback row, so it is not total",
            id="an on_result row does not count as a fallback",
        ),
        pytest.param(
            (
                fallback("x"),
                fallback("y", "Y0"),
                Transition("Y1", ("y",), "end", lambda f: f.a),
                fallback("y", "Y2"),
            ),
            "toy: state 'y' has rows after its fallback",
            id="a guarded row after a fallback is rejected",
        ),
        pytest.param(
            (fallback("x"), fallback("y", "Y0"), fallback("y", "Y1")),
            "toy: state 'y' has rows after its fallback",
            id="two fallbacks for one state are rejected",
        ),
        pytest.param(
            (fallback("x"), fallback("y"), Transition("Z", ("z",), "x")),
            "toy: Z leaves unknown state 'z'",
            id="a row leaving an undeclared state is rejected",
        ),
        pytest.param(
            (fallback("x"), fallback("y"), Transition("Q", ("x",), "q", lambda f: f.a)),
            "toy: Q enters unknown state 'q'",
            id="a row entering an undeclared state is rejected",
        ),
    ],
)
def test_an_ill_formed_table_is_rejected_when_built(rows: tuple[Row, ...], message: str) -> None:
    with pytest.raises(MachineDefinitionError) as error:
        build(*rows)
    assert str(error.value) == message


def test_terminal_states_need_no_fallback_and_may_have_guarded_rows() -> None:
    machine = build(fallback("x"), fallback("y"), Transition("E1", ("end",), "x", lambda f: f.a))
    assert machine.step("end", Facts()) is None
    row = machine.step("end", Facts(a=True))
    assert row is not None and row.label == "E1"


def test_an_on_result_row_may_follow_the_fallback() -> None:
    machine = build(fallback("x"), Transition("X1", ("x",), "end", on_result=True), fallback("y"))
    row = machine.step("x", Facts(a=True, b=True))
    assert row is not None and row.label == "F"


def test_machine_definition_error_is_a_value_error() -> None:
    assert issubclass(MachineDefinitionError, ValueError)
    assert issubclass(UndeclaredTransitionError, RuntimeError)


# ----- check: declared edges only -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "target"),
    [
        pytest.param("closed", "broken", id="a guarded row's edge is declared"),
        pytest.param("closed", "open", id="a second guarded row's edge is declared"),
        pytest.param("closed", "gone", id="a third guarded row's edge is declared"),
        pytest.param("open", "closed", id="a fallback's edge is declared"),
        pytest.param("closed", "closed", id="staying put is always allowed"),
        pytest.param("gone", "gone", id="staying put in a terminal state is allowed"),
    ],
)
def test_check_accepts_declared_edges(source: str, target: str) -> None:
    door().check(source, target)


def test_check_accepts_an_edge_declared_only_by_an_on_result_row() -> None:
    machine = build(
        Transition("X1", ("x",), "y", lambda f: f.a),
        Transition("X-rejected", ("x",), "end", on_result=True),
        fallback("x"),
        fallback("y"),
    )
    machine.check("x", "end")
    with pytest.raises(UndeclaredTransitionError):
        machine.check("y", "end")


@pytest.mark.parametrize(
    ("source", "target", "message"),
    [
        pytest.param(
            "open", "broken", "door: 'open' -> 'broken' is not declared", id="an edge no row declares"
        ),
        pytest.param(
            "gone", "closed", "door: 'gone' -> 'closed' is not declared", id="leaving a terminal state"
        ),
        pytest.param(
            "broken", "open", "door: 'broken' -> 'open' is not declared", id="leaving another terminal state"
        ),
        pytest.param("ajar", "open", "door: unknown state 'ajar'", id="from an unknown state"),
    ],
)
def test_check_rejects_undeclared_edges(source: str, target: str, message: str) -> None:
    with pytest.raises(UndeclaredTransitionError) as error:
        door().check(source, target)
    assert str(error.value) == message


def test_check_does_not_mistake_a_wait_row_for_an_edge_elsewhere() -> None:
    # D-wait (target None) declares closed -> closed only, never closed -> anything else.
    machine = build(Transition("X-wait", ("x", "y"), None))
    with pytest.raises(UndeclaredTransitionError):
        machine.check("x", "y")


def test_rows_from_keeps_the_table_order_per_state() -> None:
    assert [row.label for row in door().rows_from("closed")] == ["D1", "D2", "D3", "D-kick", "D-wait"]
    assert [row.label for row in door().rows_from("gone")] == []


def test_edges_lists_every_source_of_every_row() -> None:
    machine = build(Transition("XY", ("x", "y"), "end", lambda f: f.a), Transition("W", ("x", "y"), None))
    assert [(s, t, row.label) for s, t, row in machine.edges()] == [
        ("x", "end", "XY"),
        ("y", "end", "XY"),
        ("x", "x", "W"),
        ("y", "y", "W"),
    ]


# ----- render -------------------------------------------------------------------------------------------


class Light(Enum):
    OFF = "LightOff"
    ON = "LightOn"
    DEAD = "LightDead"


def test_render_draws_every_declared_edge_and_nothing_else() -> None:
    assert render_mermaid(door()) == (
        "stateDiagram-v2\n"
        "    [*] --> closed\n"
        "    closed --> broken: D1 both\n"
        "    closed --> open: D2 a only\n"
        "    closed --> gone: D3 b only\n"
        "    closed --> broken: D-kick the kick landed (on action result)\n"
        "    open --> gone: O1 leave\n"
        "    open --> closed: O2 swing back\n"
        "    gone --> [*]\n"
        "    broken --> [*]\n"
    )


def test_render_uses_enum_values_merges_duplicate_edges_and_escapes_colons() -> None:
    machine: Machine[Light, Facts] = Machine(
        name="light",
        states=tuple(Light),
        initial=Light.OFF,
        terminal=frozenset({Light.DEAD}),
        transitions=(
            Transition("L1", (Light.OFF, Light.ON), Light.DEAD, lambda f: f.a, "fuse: blown"),
            Transition("L2", (Light.OFF,), Light.ON, doc="switch"),
            Transition("L3", (Light.ON,), Light.ON, doc="still on"),
        ),
    )
    assert render_mermaid(machine) == (
        "stateDiagram-v2\n"
        "    [*] --> LightOff\n"
        "    LightOff --> LightDead: L1 fuse  blown\n"
        "    LightOn --> LightDead: L1 fuse  blown\n"
        "    LightOff --> LightOn: L2 switch\n"
        "    LightDead --> [*]\n"
    )


def test_render_lists_each_edge_once_per_label() -> None:
    machine = build(
        Transition("A", ("x",), "y", lambda f: f.a),
        Transition("A", ("x",), "y", lambda f: f.b),
        Transition("B", ("x",), "y"),
        fallback("y"),
    )
    lines = render_mermaid(machine).splitlines()
    assert lines.count("    x --> y: A") == 1
    assert lines.count("    x --> y: B") == 1
