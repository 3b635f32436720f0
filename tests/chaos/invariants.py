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

from taskset.api.constants import MAX_UNCOUNTED_RETRIES

FINAL_STATES = frozenset({"Succeeded", "Failed"})
# The failure-rule actions, as the status writes them.
NOT_COUNTED = "RetryNotCounted"
ENDING_ACTIONS = frozenset({"FailRole", "FailTaskSet", "RestartTaskSet"})


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
    # A Pod's server-written times in epoch seconds (whole seconds, see ``tests.chaos.timing``): its
    # creationTimestamp and the latest finishedAt of its containers (None: none finished), and whether a
    # container exited with a code other than 0.
    created: float | None = None
    finished: float | None = None
    failed: bool = False

    def ended_before(self, other: Lifetime) -> bool | None:
        """True if this object was gone before ``other`` appeared; None if an inexact bound decides it."""
        if self.died is None:
            return False if other.born_exact else None
        verdict = self.died <= other.born
        if verdict or (self.died_exact and other.born_exact):
            return verdict
        return None


Replicas = tuple[tuple[str, int, int, int], ...]  # (role, index, totalRetriedCount, uncountedRetries), sorted


@dataclass
class TaskSetRecord:
    """One TaskSet object (by UID) as the record saw it: its newest spec, every status in watch order, the
    revision of its first final status and of its deletion (with the wall-clock time the record learnt
    of the deletion: no server time says when an object without finalizers went)."""

    name: str
    uid: str
    spec: Mapping[str, Any] = field(default_factory=dict)
    statuses: list[dict[str, Any]] = field(default_factory=list)
    ended: int | None = None
    ended_exact: bool = True
    deleted: int | None = None
    deleted_seen: float | None = None

    @property
    def label(self) -> str:
        return f"{self.name}/{self.uid[:8]}"


@dataclass(frozen=True)
class Outcome:
    """How a TaskSet ended: what a fault must not change. An expectation may leave ``replica_retries``
    (a count that depends on timing, as the retries a deadline cuts short) or ``reason`` open (None)."""

    state: str
    taskset_retries: int
    replica_retries: Replicas | None
    reason: str | None = None  # the reason of the final Succeeded or Failed condition

    @staticmethod
    def of(status: Mapping[str, Any]) -> Outcome:
        replicas = sorted(
            (
                str(role.get("name", "")),
                int(r.get("index", -1)),
                int(r.get("totalRetriedCount", 0)),
                int(r.get("uncountedRetries", 0)),
            )
            for role in status.get("roleStatus") or []
            for r in role.get("replicaStatus") or []
        )
        state = str(status.get("state", ""))
        return Outcome(state, int(status.get("totalRetriedCount", 0)), tuple(replicas), final_reason(status))

    def admits(self, actual: Outcome | None) -> bool:
        """Whether ``actual`` is this outcome, the open fields aside."""
        if actual is None or (self.state, self.taskset_retries) != (actual.state, actual.taskset_retries):
            return False
        replicas = self.replica_retries is None or self.replica_retries == actual.replica_retries
        return replicas and self.reason in (None, actual.reason)


def final_reason(status: Mapping[str, Any]) -> str:
    """The reason of the TaskSet's true ``Succeeded`` or ``Failed`` condition ("" before the end)."""
    for condition in status.get("conditions") or []:
        if condition.get("type") in FINAL_STATES and condition.get("status") == "True":
            return str(condition.get("reason", ""))
    return ""


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


def _replicas_of(status: Mapping[str, Any]) -> dict[tuple[str, int], Mapping[str, Any]]:
    return {
        (str(role.get("name", "")), int(r.get("index", -1))): r
        for role in status.get("roleStatus") or []
        for r in role.get("replicaStatus") or []
    }


def _retry_counts(replica: Mapping[str, Any]) -> tuple[int, int]:
    """(totalRetriedCount, uncountedRetries) of a replica's status."""
    return int(replica.get("totalRetriedCount", 0)), int(replica.get("uncountedRetries", 0))


def _retry_as_matched(what: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """One replica between two statuses of one TaskSet attempt: its uncounted retries only grow and stay
    within its retries, and a retry started (the total grew by one) counted as the failure rule that
    matched the attempt before it says."""
    (total, uncounted), (total2, uncounted2) = _retry_counts(before), _retry_counts(after)
    found = []
    if uncounted2 < uncounted:
        found.append(f"{what}: uncountedRetries went {uncounted} -> {uncounted2}")
    if uncounted2 > total2:
        found.append(f"{what}: {uncounted2} uncounted retries of {total2} in all")
    action = (before.get("failure") or {}).get("action")
    if total2 != total + 1 or action is None:
        return found  # no retry started in between, or several (a gap in the record), or no rule recorded
    counted = uncounted2 == uncounted
    if action in ENDING_ACTIONS:
        found.append(f"{what}: retried after a {action} failure")
    elif action == NOT_COUNTED and counted and uncounted < MAX_UNCOUNTED_RETRIES:
        found.append(f"{what}: a {NOT_COUNTED} failure was counted (retry {total2})")
    elif action != NOT_COUNTED and not counted:
        found.append(f"{what}: a {action} failure was retried without counting (retry {total2})")
    return found


def retries_as_matched(name: str, statuses: Sequence[Mapping[str, Any]]) -> Verdict:
    """A not-counted failure never increments the counted retries (``totalRetriedCount -
    uncountedRetries``), a counted one always does, and a failure whose rule fails the role or ends the
    attempt is never retried (by the failure rules), as consecutive statuses of an attempt show."""
    verdict = Verdict()
    for before, after in itertools.pairwise(statuses):
        if int(before.get("totalRetriedCount", 0)) != int(after.get("totalRetriedCount", 0)):
            continue  # a new TaskSet attempt starts its replicas afresh
        old, new = _replicas_of(before), _replicas_of(after)
        for key in sorted(old.keys() & new.keys()):
            what = f"{name}: replica {key[0]}-{key[1]}"
            verdict.violations.extend(_retry_as_matched(what, old[key], new[key]))
    return verdict


def _retry_limit(policy: Mapping[str, Any] | None) -> int:
    """The retries a retry policy allows (spec 7: none unless ``retry`` is true)."""
    return int(policy.get("maxRetryCount", 0)) if policy and policy.get("retry") is True else 0


def within_retry_limits(record: TaskSetRecord) -> Verdict:
    """No status shows more TaskSet retries than the TaskSet's policy allows, nor more counted retries
    of a replica than its role's policy allows (not-counted retries are free)."""
    verdict = Verdict()
    spec = record.spec
    limits = {
        str(role.get("name")): _retry_limit(role.get("retryPolicy")) for role in spec.get("roles") or []
    }
    taskset_limit = _retry_limit(spec.get("retryPolicy"))
    for status in record.statuses:
        if int(status.get("totalRetriedCount", 0)) > taskset_limit:
            retries = status.get("totalRetriedCount")
            verdict.violations.append(f"{record.label}: {retries} TaskSet retries, at most {taskset_limit}")
        for (role, index), replica in sorted(_replicas_of(status).items()):
            total, uncounted = _retry_counts(replica)
            if role in limits and total - uncounted > limits[role]:
                counted = total - uncounted
                problem = f"{counted} counted retries, at most {limits[role]}"
                verdict.violations.append(f"{record.label}: replica {role}-{index}: {problem}")
    return verdict


def nothing_after_the_end(pods: Iterable[Lifetime], records: Mapping[str, TaskSetRecord]) -> Verdict:
    """No Pod of a TaskSet appears after its first final status (a deadline, a FailTaskSet rule or a
    TTL ends it for good: nothing may be created or re-created afterwards)."""
    verdict = Verdict()
    for pod in _ordered(pods):
        record = records.get(pod.taskset_uid)
        if record is None or record.ended is None or pod.born <= record.ended:
            continue
        what = f"{record.label}: Pod {pod.name} ({pod.uid[:8]}) created at rv {pod.born}, after the end at rv"
        if pod.born_exact and record.ended_exact:
            verdict.violations.append(f"{what} {record.ended}")
        else:
            verdict.unverifiable.append(f"{what} {record.ended}")
    return verdict


def _listed(status: Mapping[str, Any]) -> tuple[list[Mapping[str, Any]], int]:
    history = status.get("attemptHistory") or {}
    listed = [a for a in history.get("attempts") or [] if isinstance(a, Mapping)]
    return listed, int(history.get("dropped") or 0)


def attempts_recorded_once(name: str, statuses: Sequence[Mapping[str, Any]]) -> Verdict:
    """The attempt history: attempts are listed in order, an entry once written never changes and
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
        if not expected[name].admits(actual.get(name))
    ]


@dataclass(frozen=True)
class Published:
    """One version of a TaskSet's live membership ConfigMap as the record saw it: the generation its
    ``membership.json`` says and the digest of the rest of it (what that generation stands for)."""

    revision: int
    generation: int
    digest: str


def membership_generations(
    name: str, statuses: Sequence[Mapping[str, Any]], published: Sequence[Published]
) -> Verdict:
    """The live membership's generation never goes back, neither in the ConfigMap nor in the status; one
    generation never stands for two contents; and the status ends announcing the generation the ConfigMap
    ends showing. (A generation the status announced may be skipped by the ConfigMap, when a kill or a
    failed write came between the two and the content changed again: a reader then sees a jump, never
    a step back.)"""
    verdict = Verdict()
    for before, after in itertools.pairwise(published):
        if after.generation < before.generation:
            verdict.violations.append(
                f"{name}: the membership ConfigMap went from generation {before.generation} to "
                f"{after.generation} (rv {before.revision} -> {after.revision})"
            )
        elif after.generation == before.generation and after.digest != before.digest:
            verdict.violations.append(
                f"{name}: membership generation {after.generation} stood for two contents "
                f"(rv {before.revision} -> {after.revision})"
            )
    seen = [g for status in statuses if (g := (status.get("membership") or {}).get("generation")) is not None]
    for before_g, after_g in itertools.pairwise(seen):
        if after_g < before_g:
            verdict.violations.append(f"{name}: status.membership.generation went {before_g} -> {after_g}")
    if published and seen and published[-1].generation != seen[-1]:
        verdict.violations.append(
            f"{name}: the status ends announcing membership generation {seen[-1]}, the ConfigMap ends "
            f"showing {published[-1].generation}"
        )
    return verdict
