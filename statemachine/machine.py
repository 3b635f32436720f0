"""Machine and Transition: guarded transitions declared as data, evaluated first-match."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

S = TypeVar("S")  # a state, usually a StrEnum member
F = TypeVar("F")  # the facts a guard reads: a frozen snapshot of what was observed

Guard = Callable[[F], bool]


def always(_: object) -> bool:
    """The fallback guard: the row fires whenever no earlier row did."""
    return True


class MachineDefinitionError(ValueError):
    """The transition table itself is wrong (unknown state, no fallback, rows after a fallback)."""


class UndeclaredTransitionError(RuntimeError):
    """Something tried to move a machine along an edge its table does not declare."""


@dataclass(frozen=True)
class Transition(Generic[S, F]):
    """One row: from any of ``sources``, when ``guard(facts)``, go to ``target``.

    ``target`` None means "stay where you are" (a wait row); ``label`` names the row in diagrams and
    logs (e.g. the spec's ``T5``) and ``doc`` says in words when it fires. A row with
    ``on_result=True`` is never chosen by ``step``: it declares where the outcome of an action (a
    rejected create, say) may take the machine, so ``check`` accepts that edge and diagrams show it.
    """

    label: str
    sources: tuple[S, ...]
    target: S | None
    guard: Guard[F] = always
    doc: str = ""
    on_result: bool = False

    def target_from(self, state: S) -> S:
        return state if self.target is None else self.target

    @property
    def is_fallback(self) -> bool:
        return self.guard is always


@dataclass(frozen=True)
class Machine(Generic[S, F]):
    """A named, validated table of transitions over a fixed set of states."""

    name: str
    states: tuple[S, ...]
    initial: S
    terminal: frozenset[S]
    transitions: tuple[Transition[S, F], ...]
    _by_source: dict[S, tuple[Transition[S, F], ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_source: dict[S, list[Transition[S, F]]] = {state: [] for state in self.states}
        for row in self.transitions:
            for source in row.sources:
                if source not in by_source:
                    raise MachineDefinitionError(f"{self.name}: {row.label} leaves unknown state {source!r}")
                by_source[source].append(row)
            if row.target is not None and row.target not in by_source:
                raise MachineDefinitionError(f"{self.name}: {row.label} enters unknown state {row.target!r}")
        for state, rows in by_source.items():
            self._check_rows(state, [row for row in rows if not row.on_result])
        object.__setattr__(self, "_by_source", {state: tuple(rows) for state, rows in by_source.items()})

    def _check_rows(self, state: S, rows: list[Transition[S, F]]) -> None:
        if state in self.terminal:
            return
        if not rows or not rows[-1].is_fallback:
            raise MachineDefinitionError(
                f"{self.name}: state {state!r} has no fallback row, so it is not total"
            )
        if any(row.is_fallback for row in rows[:-1]):
            raise MachineDefinitionError(f"{self.name}: state {state!r} has rows after its fallback")

    def rows_from(self, state: S) -> tuple[Transition[S, F], ...]:
        try:
            return self._by_source[state]
        except KeyError:
            raise UndeclaredTransitionError(f"{self.name}: unknown state {state!r}") from None

    def step(self, state: S, facts: F) -> Transition[S, F] | None:
        """The row that fires for ``facts`` in ``state``; None only in a terminal state with no rows."""
        for row in self.rows_from(state):
            if not row.on_result and row.guard(facts):
                return row
        return None

    def check(self, source: S, target: S) -> None:
        """Raise unless some row declares the edge ``source -> target`` (staying put is always allowed)."""
        if source == target:
            return
        if not any(row.target_from(source) == target for row in self.rows_from(source)):
            raise UndeclaredTransitionError(f"{self.name}: {source!r} -> {target!r} is not declared")

    def edges(self) -> Iterable[tuple[S, S, Transition[S, F]]]:
        for row in self.transitions:
            for source in row.sources:
                yield source, row.target_from(source), row
