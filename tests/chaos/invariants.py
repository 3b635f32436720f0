"""The promises a chaos run is checked against, as pure functions over a recorded history.

A history is what the API server showed: the lifetime of every Pod and ControlUnit ConfigMap (the
resourceVersion at which it was first and last seen) and every status a TaskSet went through, in watch
order. Times are etcd revisions, not clocks: one etcd orders every write of every kind, so "Pod A was
deleted before Pod B was created" is a comparison of two integers, immune to watch delays.

A recorder that lost its watch (an API server restart, a 410) relists and no longer knows exactly when
the objects that came or went in the gap did so; those bounds are marked ``exact=False`` and a check
whose verdict depends on an inexact bound reports it as unverifiable instead of guessing.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

FINAL_STATES = frozenset({"Succeeded", "Failed"})


@dataclass
class Lifetime:
    """One object (by UID) from its first to its last sighting."""

    kind: str  # "Pod" or "ConfigMap"
    name: str
    uid: str
    taskset_uid: str  # the TSUID annotation of a Pod; the owning TaskSet's UID for a ControlUnit
    role: str = ""
    index: int = -1
    taskset_attempt: str = ""
    replica_attempt: str = ""
    born: int = 0
    died: int | None = None  # None: still there when the recording ended
    born_exact: bool = True
    died_exact: bool = True

    def ended_before(self, other: Lifetime) -> bool | None:
        """True if this object was gone before ``other`` appeared; None if an inexact bound decides it."""
        if self.died is None:
            return False if other.born_exact else None
        verdict = self.died <= other.born
        if verdict or (self.died_exact and other.born_exact):
            return verdict
        return None


@dataclass(frozen=True)
class Outcome:
    """How a TaskSet ended: what a fault must not change."""

    state: str
    taskset_retries: int
    replica_retries: tuple[tuple[str, int, int], ...]  # (role, index, totalRetriedCount), sorted

    @staticmethod
    def of(status: Mapping[str, Any]) -> Outcome:
        replicas = sorted(
            (str(role.get("name", "")), int(r.get("index", -1)), int(r.get("totalRetriedCount", 0)))
            for role in status.get("roleStatus") or []
            for r in role.get("replicaStatus") or []
        )
        return Outcome(str(status.get("state", "")), int(status.get("totalRetriedCount", 0)), tuple(replicas))


@dataclass
class Verdict:
    violations: list[str] = field(default_factory=list)
    unverifiable: list[str] = field(default_factory=list)

    def extend(self, other: Verdict) -> Verdict:
        self.violations.extend(other.violations)
        self.unverifiable.extend(other.unverifiable)
        return self


def _ordered(lifetimes: Iterable[Lifetime]) -> list[Lifetime]:
    return sorted(lifetimes, key=lambda life: (life.born, life.uid))


def _disjoint(lifetimes: Sequence[Lifetime], what: str) -> Verdict:
    """Each object of ``lifetimes`` is gone before the next one (in creation order) appears."""
    verdict = Verdict()
    for earlier, later in itertools.pairwise(_ordered(lifetimes)):
        ended = earlier.ended_before(later)
        pair = f"{what}: {earlier.name} ({earlier.uid[:8]}, rv {earlier.born}..{earlier.died})"
        pair += f" and {later.name} ({later.uid[:8]}, rv {later.born}..{later.died})"
        if ended is None:
            verdict.unverifiable.append(pair)
        elif not ended:
            verdict.violations.append(f"alive at once: {pair}")
    return verdict


def _grouped(lifetimes: Iterable[Lifetime], key: Any) -> dict[Any, list[Lifetime]]:
    groups: dict[Any, list[Lifetime]] = {}
    for life in lifetimes:
        groups.setdefault(key(life), []).append(life)
    return groups


def one_pod_per_replica(pods: Iterable[Lifetime]) -> Verdict:
    """Never two live Pods for the same replica of the same TaskSet object."""
    verdict = Verdict()
    for (ts_uid, role, index), group in sorted(
        _grouped(pods, lambda p: (p.taskset_uid, p.role, p.index)).items()
    ):
        verdict.extend(_disjoint(group, f"replica {role}-{index} of TaskSet {ts_uid[:8]}"))
    return verdict


def attempt_span(pods: Sequence[Lifetime]) -> Lifetime:
    """The Pods of one attempt as one lifetime: from the first creation to the last deletion."""
    first = min(pods, key=lambda p: p.born)
    alive = [p for p in pods if p.died is None]
    last = max(pods, key=lambda p: p.died or 0)
    return Lifetime(
        kind="Attempt",
        name=f"attempt {first.taskset_attempt}",
        uid=first.uid,
        taskset_uid=first.taskset_uid,
        born=first.born,
        died=None if alive else last.died,
        born_exact=first.born_exact,
        died_exact=alive[0].died_exact if alive else last.died_exact,
    )


def one_attempt_at_a_time(pods: Iterable[Lifetime], control_units: Iterable[Lifetime]) -> Verdict:
    """Never Pods of two TaskSet attempts alive at once, and never two ControlUnits of one TaskSet."""
    verdict = Verdict()
    for ts_uid, group in sorted(_grouped(pods, lambda p: p.taskset_uid).items()):
        spans = [attempt_span(attempt) for attempt in _grouped(group, lambda p: p.taskset_attempt).values()]
        verdict.extend(_disjoint(spans, f"attempts of TaskSet {ts_uid[:8]}"))
    for ts_uid, group in sorted(_grouped(control_units, lambda cu: cu.taskset_uid).items()):
        verdict.extend(_disjoint(group, f"ControlUnits of TaskSet {ts_uid[:8]}"))
    return verdict


def _replica_retries(status: Mapping[str, Any]) -> dict[tuple[str, int], int]:
    return {
        (str(role.get("name", "")), int(r.get("index", -1))): int(r.get("totalRetriedCount", 0))
        for role in status.get("roleStatus") or []
        for r in role.get("replicaStatus") or []
    }


def monotone_status(name: str, statuses: Sequence[Mapping[str, Any]]) -> Verdict:
    """Status fields that only move one way: retry counts grow (a replica's within one TaskSet attempt),
    ``finishAt`` is set once, and a final state is final."""
    verdict = Verdict()
    for before, after in itertools.pairwise(statuses):
        retries = (int(before.get("totalRetriedCount", 0)), int(after.get("totalRetriedCount", 0)))
        if retries[1] < retries[0]:
            verdict.violations.append(f"{name}: totalRetriedCount went {retries[0]} -> {retries[1]}")
        if before.get("finishAt") and after.get("finishAt") != before.get("finishAt"):
            verdict.violations.append(f"{name}: finishAt {before.get('finishAt')} -> {after.get('finishAt')}")
        if before.get("state") in FINAL_STATES and after.get("state") != before.get("state"):
            verdict.violations.append(f"{name}: final state {before.get('state')} -> {after.get('state')}")
        if retries[0] != retries[1]:
            continue
        old, new = _replica_retries(before), _replica_retries(after)
        for key in sorted(old.keys() & new.keys()):
            if new[key] < old[key]:
                verdict.violations.append(
                    f"{name}: replica {key[0]}-{key[1]} retries {old[key]} -> {new[key]}"
                )
    return verdict


def _listed(status: Mapping[str, Any]) -> tuple[list[Mapping[str, Any]], int]:
    history = status.get("attemptHistory") or {}
    listed = [a for a in history.get("attempts") or [] if isinstance(a, Mapping)]
    return listed, int(history.get("dropped") or 0)


def attempts_recorded_once(name: str, statuses: Sequence[Mapping[str, Any]]) -> Verdict:
    """Issue 25's attempt history: attempts are listed in order, an entry once written never changes and
    is never written again (it only leaves past the bound, counted in ``dropped``), and a finished TaskSet
    lists every attempt it ran up to its last, each once."""
    verdict = Verdict()
    for status in statuses:
        numbers = [int(a.get("attempt", -1)) for a in _listed(status)[0]]
        if numbers != sorted(set(numbers)):
            verdict.violations.append(f"{name}: attempts listed {numbers}")
    for before, after in itertools.pairwise(statuses):
        (old, old_dropped), (new, new_dropped) = _listed(before), _listed(after)
        kept = {int(a.get("attempt", -1)): a for a in new}
        gone = [a for a in old if int(a.get("attempt", -1)) not in kept]
        changed = [
            a.get("attempt")
            for a in old
            if int(a.get("attempt", -1)) in kept and kept[int(a["attempt"])] != a
        ]
        if changed:
            verdict.violations.append(f"{name}: attempt records {changed} rewritten")
        if new_dropped - old_dropped < len(gone):  # more may have come and gone between two sightings
            verdict.violations.append(
                f"{name}: {len(gone)} attempts left the history, dropped {old_dropped} -> {new_dropped}"
            )
    final = statuses[-1] if statuses else {}
    listed, dropped = _listed(final)
    if final.get("state") in FINAL_STATES and listed:
        numbers = [int(a.get("attempt", -1)) for a in listed]
        last = int(final.get("totalRetriedCount", 0))
        if numbers[-1] != last or len(numbers) + dropped != last + 1:
            verdict.violations.append(
                f"{name}: attempts {numbers} (+{dropped} dropped) for {last + 1} attempts"
            )
    return verdict


def same_outcomes(expected: Mapping[str, Outcome], actual: Mapping[str, Outcome]) -> list[str]:
    """Every TaskSet ended as the fault-free run says, with the same retry counts."""
    return [
        f"{name}: expected {expected[name]}, got {actual.get(name)}"
        for name in sorted(expected)
        if actual.get(name) != expected[name]
    ]
