"""Start order: ``roles[].dependsOn`` holds a role's Pods until the roles it depends
on have reached a point, so a launcher starts after its workers run, collectors after their learner is
ready, an evaluator after training succeeded.

Each entry is ``{role, until, minReplicas}``:

* ``role``: another role of the TaskSet (not itself; the graph of all entries has no cycle);
* ``until``: ``Running`` (the replica's Pod runs, row P4), ``Ready`` (its Pod's Ready condition is
  true) or ``Succeeded`` (the replica exited 0); default ``Running``. A replica that already succeeded
  counts as having reached all three;
* ``minReplicas``: how many of that role's replicas must have reached it, 1 up to its replicas; default
  all of them, and for ``Succeeded`` the role's ``completionPolicy.minSucceeded`` (which defaults to all),
  since the rest of a completed role is stopped and never succeeds.

The counts are of the current TaskSet attempt (the status's replicas), so a retry of the whole TaskSet
obeys the order again, and a dependent replica retried on its own waits again too. While a condition is
unmet the role's replicas stay in AttemptPending with ``Held: waiting for role learner to be Running
(0/1)``, and the role's ``TaskRoleHeld`` event says the same. JobSet's ``dependsOn`` is the anchor
(``Ready``, ``Complete``); ``minReplicas`` and ``Running`` go beyond it.

The CRD refuses unknown roles and self-references (CEL); cycles only this check can see, and it names
the field: ``spec.roles[2].dependsOn: the roles a -> b -> a depend on one another in a cycle``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from taskset.api.constants import ReplicaPhase
from taskset.api.spec import CheckFailure, Role
from taskset.api.status import ReplicaStatus, TaskSetStatus
from taskset.integrations.base import Attempt, ChecksSpec, GatesRoles
from taskset.observed.views import Observed

DEPENDS_ON_FIELD: Final = "dependsOn"
MAX_DEPENDENCIES: Final = 16  # per role: the CRD's maxItems, which keeps its CEL rules within budget


class Until(StrEnum):
    RUNNING = "Running"
    READY = "Ready"
    SUCCEEDED = "Succeeded"


@dataclass(frozen=True)
class Dependency:
    role: str
    until: Until
    min_replicas: int | None  # None: the default (see the module docstring)


class StartOrder(ChecksSpec, GatesRoles):
    name = "start-order"

    def check(self, spec: Mapping[str, Any]) -> CheckFailure | None:
        return check_depends_on(spec)

    def gate(self, attempt: Attempt, role: Role, observed: Observed, status: TaskSetStatus) -> str | None:
        for dependency in dependencies(attempt.spec.raw, role.name):
            target = attempt.spec.role(dependency.role)
            recorded = status.role(dependency.role)
            if target is None or recorded is None:
                continue
            needed = required(dependency, target)
            reached = sum(  # a scaled-down replica going away counts no more
                1
                for replica in recorded.replicas
                if not replica.stopped and has_reached(replica, dependency.until, observed)
            )
            if reached < needed:
                return f"waiting for role {target.name} to be {dependency.until} ({reached}/{needed})"
        return None


def required(dependency: Dependency, target: Role) -> int:
    """How many of ``target``'s replicas must have reached the point."""
    if dependency.min_replicas is not None:
        return min(dependency.min_replicas, target.replicas)
    if dependency.until == Until.SUCCEEDED:
        return target.completion_policy.min_succeeded
    return target.replicas


def has_reached(replica: ReplicaStatus, until: Until, observed: Observed) -> bool:
    """Whether one replica of the current attempt has reached ``until`` (a success reaches them all)."""
    if replica.succeeded:
        return True
    if until == Until.RUNNING:
        return replica.phase == ReplicaPhase.ATTEMPT_RUNNING
    if until == Until.READY:
        pod = observed.pods.get(replica.pod_name) if replica.pod_name else None
        return pod is not None and pod.uid == replica.pod_uid and pod.ready and not pod.terminal
    return False


# ----- the spec's part -----------------------------------------------------------------------------------


def _raw_roles(spec: Mapping[str, Any]) -> list[Any]:
    roles = spec.get("roles")
    return roles if isinstance(roles, list) else []


def dependencies(spec: Mapping[str, Any], role: str) -> tuple[Dependency, ...]:
    """The ``dependsOn`` of ``role`` in a spec that passed ``check_depends_on``."""
    for raw in _raw_roles(spec):
        if isinstance(raw, Mapping) and raw.get("name") == role:
            return tuple(_entries(raw.get(DEPENDS_ON_FIELD)))
    return ()


def _entries(value: object) -> Iterator[Dependency]:
    for entry in value if isinstance(value, list) else ():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("role"), str):
            continue
        until = entry.get("until", Until.RUNNING)
        minimum = entry.get("minReplicas")
        yield Dependency(
            entry["role"],
            Until(until) if until in set(Until) else Until.RUNNING,
            minimum if isinstance(minimum, int) and not isinstance(minimum, bool) else None,
        )


def check_depends_on(spec: Mapping[str, Any]) -> CheckFailure | None:
    """Every role's ``dependsOn`` is well formed, names other roles, and no cycle runs through them."""
    roles = _raw_roles(spec)
    replicas = {
        raw.get("name"): raw.get("replicas")
        for raw in roles
        if isinstance(raw, Mapping) and isinstance(raw.get("name"), str)
    }
    for index, raw in enumerate(roles):
        if isinstance(raw, Mapping):
            failure = _check_entries(raw, f"spec.roles[{index}].{DEPENDS_ON_FIELD}", replicas)
            if failure is not None:
                return failure
    return _check_cycles(roles)


def _check_entries(role: Mapping[str, Any], path: str, replicas: Mapping[Any, Any]) -> CheckFailure | None:
    value = role.get(DEPENDS_ON_FIELD)
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > MAX_DEPENDENCIES:
        return CheckFailure(path, f"{path}: must be a list of at most {MAX_DEPENDENCIES} entries")
    seen: set[str] = set()
    for i, entry in enumerate(value):
        failure = _check_entry(entry, f"{path}[{i}]", role.get("name"), replicas, seen)
        if failure is not None:
            return failure
    return None


def _check_entry(
    entry: object, path: str, own: object, replicas: Mapping[Any, Any], seen: set[str]
) -> CheckFailure | None:
    if not isinstance(entry, Mapping):
        return CheckFailure(path, f"{path}: must be an object")
    target, until, minimum = entry.get("role"), entry.get("until"), entry.get("minReplicas")
    if not isinstance(target, str) or target not in replicas:
        return CheckFailure(f"{path}.role", f"{path}.role: must name another role of the TaskSet")
    problems = (
        (target == own, "role", "a role cannot depend on itself"),
        (target in seen, "role", f"role {target} is named twice"),
        (until is not None and until not in set(Until), "until", "must be one of Running, Ready, Succeeded"),
        (
            minimum is not None and not _count_within(minimum, replicas[target]),
            "minReplicas",
            f"must be an integer between 1 and the replicas of role {target}",
        ),
    )
    seen.add(target)
    for wrong, key, problem in problems:
        if wrong:
            return CheckFailure(f"{path}.{key}", f"{path}.{key}: {problem}")
    return None


def _count_within(value: object, high: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return 1 <= value <= (high if isinstance(high, int) and not isinstance(high, bool) else value)


def _check_cycles(roles: Sequence[Any]) -> CheckFailure | None:
    """A depth-first walk over the dependency graph: the first cycle found, named from the role where
    the walk entered it."""
    edges = {
        raw["name"]: [d.role for d in _entries(raw.get(DEPENDS_ON_FIELD))]
        for raw in roles
        if isinstance(raw, Mapping) and isinstance(raw.get("name"), str)
    }
    position = {name: index for index, name in enumerate(edges)}
    done: set[str] = set()
    for start in edges:
        cycle = _cycle_from(start, edges, [], done)
        if cycle is not None:
            path = f"spec.roles[{position[cycle[0]]}].{DEPENDS_ON_FIELD}"
            return CheckFailure(
                path, f"{path}: the roles {' -> '.join(cycle)} depend on one another in a cycle"
            )
    return None


def _cycle_from(
    node: str, edges: Mapping[str, list[str]], trail: list[str], done: set[str]
) -> list[str] | None:
    if node in trail:
        return [*trail[trail.index(node) :], node]
    if node in done or node not in edges:
        return None
    trail.append(node)
    for successor in edges[node]:
        cycle = _cycle_from(successor, edges, trail, done)
        if cycle is not None:
            return cycle
    trail.pop()
    done.add(node)
    return None
