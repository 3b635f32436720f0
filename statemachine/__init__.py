"""A small declarative state-machine engine: pure data and pure functions, no I/O, no clock.

A ``Machine`` is a table of ``Transition`` rows. ``step(state, facts)`` returns the first row leaving
``state`` whose guard holds for ``facts`` — the same first-match order as the spec's tables. Machines are
**total by construction**: every non-terminal state must end its rows with an unguarded fallback (often a
self-loop meaning "wait"), which is checked when the machine is built, so ``step`` always has an answer
for a declared state. ``render_mermaid`` draws the diagram from the same table, so docs cannot drift.
"""

from statemachine.machine import (
    Machine,
    MachineDefinitionError,
    Transition,
    UndeclaredTransitionError,
    always,
)
from statemachine.render import render_mermaid

__all__ = [
    "Machine",
    "MachineDefinitionError",
    "Transition",
    "UndeclaredTransitionError",
    "always",
    "render_mermaid",
]
