"""Mermaid diagrams drawn from a Machine's own table."""

from __future__ import annotations

from enum import Enum
from typing import Any

from statemachine.machine import Machine


def _name(state: object) -> str:
    return str(state.value) if isinstance(state, Enum) else str(state)


def render_mermaid(machine: Machine[Any, Any]) -> str:
    """A ``stateDiagram-v2`` with one arrow per declared edge (self-loops omitted), labelled by row."""
    lines = ["stateDiagram-v2", f"    [*] --> {_name(machine.initial)}"]
    seen: set[tuple[str, str, str]] = set()
    for source, target, row in machine.edges():
        if source == target:
            continue
        edge = (_name(source), _name(target), row.label)
        if edge in seen:
            continue
        seen.add(edge)
        text = f"{row.label} {row.doc}".strip().replace(":", " ")
        if row.on_result:
            text += " (on action result)"
        lines.append(f"    {edge[0]} --> {edge[1]}: {text}")
    lines += [f"    {_name(state)} --> [*]" for state in machine.states if state in machine.terminal]
    return "\n".join(lines) + "\n"
