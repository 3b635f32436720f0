"""Failure rules as the spec declares them: their parsed, frozen shape and the parser.

A role's ``failureRules`` and the TaskSet's default ``spec.failureRules`` are ordered lists; each rule
names an action and what it matches: exit codes (``In``/``NotIn``, single codes or ``"a-b"`` ranges,
optionally of one container), container terminated reasons, Pod reasons and Pod conditions. All the
criteria a rule gives must hold (and it must give one). The matcher is ``taskset.decide.failure_rules``.

Parsing is total like ``taskset.api.spec``'s: any input either parses or raises :class:`FieldError`
naming the field, which ``parse_taskset`` turns into the ``ValidationFailure`` the user reads.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from taskset.api.constants import (
    MAX_EXIT_CODE,
    MAX_FAILURE_RULES,
    MAX_RETRY_COUNT,
    MAX_RULE_VALUES,
    ExitCodeOperator,
    FailureAction,
)
from taskset.api.retry_effects import (
    MAX_MEMORY_FACTOR,
    MemoryGrowth,
    NextAttempt,
    container_names,
    parse_quantity,
    template_memory,
)

# A reason or condition type is one CamelCase word in Kubernetes; a rule's name is shown in the status.
REASON_TEXT_MAX: Final = 128
RULE_NAME_MAX: Final = 63
_RULE_NAME: Final = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
RULE_NAME_PATTERN: Final = "^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
_RANGE: Final = re.compile(r"([0-9]{1,10})-([0-9]{1,10})")
EXIT_CODE_RANGE_PATTERN: Final = "^[0-9]{1,10}-[0-9]{1,10}$"
_CONDITION_STATUSES: Final = ("True", "False", "Unknown")


class FieldError(Exception):
    """The first problem found in a spec: the JSON path of the field, and the message naming it."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def field_error(path: str, problem: str) -> FieldError:
    return FieldError(path, f"{path}: {problem}")


@dataclass(frozen=True)
class ExitCodes:
    """``onExitCodes``: which exit codes (as inclusive ranges) of which container (None: any)."""

    operator: ExitCodeOperator
    ranges: tuple[tuple[int, int], ...]
    container: str | None = None

    def holds(self, code: int) -> bool:
        inside = any(low <= code <= high for low, high in self.ranges)
        return inside if self.operator == ExitCodeOperator.IN else not inside


@dataclass(frozen=True)
class PodCondition:
    type: str
    status: str = "True"


@dataclass(frozen=True)
class FailureRule:
    """One rule; ``name`` is the declared one or its place (``roles[0].failureRules[1]``)."""

    name: str
    action: FailureAction
    exit_codes: ExitCodes | None = None
    terminated_reasons: frozenset[str] = frozenset()
    pod_reasons: frozenset[str] = frozenset()
    pod_conditions: tuple[PodCondition, ...] = ()
    next_attempt: NextAttempt | None = None  # what the replica's next attempt changes (retry_effects)
    # The DisruptionTarget condition's reasons: only built-in rules give it (preemption by the scheduler).
    disruption_reasons: frozenset[str] = frozenset()


def _mapping(value: object, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise field_error(path, "must be an object")
    return value


def _list(value: object, path: str, low: int = 0) -> Sequence[Any]:
    if not isinstance(value, list | tuple):
        raise field_error(path, "must be a list")
    if not low <= len(value) <= MAX_RULE_VALUES:
        raise field_error(path, f"must have between {low} and {MAX_RULE_VALUES} entries")
    return value


def _word(value: object, path: str) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= REASON_TEXT_MAX:
        raise field_error(path, f"must be a non-empty string of at most {REASON_TEXT_MAX} characters")
    return value


def _exit_range(value: object, path: str) -> tuple[int, int]:
    """An exit code (an integer) or an inclusive range ``"low-high"``, within [0, MAX_EXIT_CODE]."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_EXIT_CODE:
        return value, value
    found = _RANGE.fullmatch(value) if isinstance(value, str) else None
    if found is not None:
        low, high = int(found.group(1)), int(found.group(2))
        if low <= high <= MAX_EXIT_CODE:
            return low, high
    problem = f'must be an exit code between 0 and {MAX_EXIT_CODE}, or a range "low-high" with low <= high'
    raise field_error(path, problem)


def _exit_codes(value: object, path: str) -> ExitCodes:
    raw = _mapping(value, path)
    operator = raw.get("operator")
    if operator not in tuple(ExitCodeOperator):
        raise field_error(f"{path}.operator", "must be In or NotIn")
    container = raw.get("containerName")
    if container is not None:
        container = _word(container, f"{path}.containerName")
    values = _list(raw.get("values"), f"{path}.values", low=1)
    ranges = tuple(_exit_range(item, f"{path}.values[{i}]") for i, item in enumerate(values))
    return ExitCodes(ExitCodeOperator(operator), ranges, container)


def _words(value: object, path: str) -> frozenset[str]:
    return frozenset(_word(item, f"{path}[{i}]") for i, item in enumerate(_list(value, path, low=1)))


def _conditions(value: object, path: str) -> tuple[PodCondition, ...]:
    conditions = []
    for i, item in enumerate(_list(value, path, low=1)):
        raw = _mapping(item, f"{path}[{i}]")
        status = raw.get("status", "True")
        if status not in _CONDITION_STATUSES:
            raise field_error(f"{path}[{i}].status", "must be True, False or Unknown")
        conditions.append(PodCondition(_word(raw.get("type"), f"{path}[{i}].type"), status))
    return tuple(conditions)


def _rule(value: object, path: str, place: str) -> FailureRule:
    raw = _mapping(value, path)
    action = raw.get("action")
    if action not in tuple(FailureAction):
        raise field_error(f"{path}.action", "must be one of " + ", ".join(FailureAction))
    name = raw.get("name")
    if name is not None and (
        not isinstance(name, str) or len(name) > RULE_NAME_MAX or not _RULE_NAME.fullmatch(name)
    ):
        raise field_error(f"{path}.name", f"must match {RULE_NAME_PATTERN}, at most {RULE_NAME_MAX}")
    given = {key: raw.get(key) for key in _CRITERIA if raw.get(key) is not None}
    if not given:
        raise field_error(path, "must give at least one of " + ", ".join(_CRITERIA))
    if action == FailureAction.RESTART_IN_PLACE and set(given) != {"onExitCodes"}:
        raise field_error(
            path, "a RestartInPlace rule matches exit codes only (onExitCodes): the kubelet applies it"
        )
    rule = FailureRule(
        name=name if isinstance(name, str) else place,
        action=FailureAction(action),
        exit_codes=_exit_codes(given["onExitCodes"], f"{path}.onExitCodes")
        if "onExitCodes" in given
        else None,
        terminated_reasons=_optional_words(given, "onTerminatedReasons", path),
        pod_reasons=_optional_words(given, "onPodReasons", path),
        pod_conditions=_conditions(given["onPodConditions"], f"{path}.onPodConditions")
        if "onPodConditions" in given
        else (),
        next_attempt=_next_attempt(raw.get("nextAttempt"), f"{path}.nextAttempt"),
    )
    if rule.action == FailureAction.RESTART_IN_PLACE:
        in_place_codes(rule, path)  # refused here when the Pod API could not hold it
    return rule


def _next_attempt(value: object, path: str) -> NextAttempt | None:
    """``nextAttempt``: avoid the failed nodes, grow an OOMKilled container's memory (``factor`` > 1,
    at most ``ceiling``)."""
    if value is None:
        return None
    raw = _mapping(value, path)
    avoid = raw.get("avoidFailedNodes", False)
    if not isinstance(avoid, bool):
        raise field_error(f"{path}.avoidFailedNodes", "must be a boolean")
    memory = None
    if raw.get("memory") is not None:
        grow = _mapping(raw["memory"], f"{path}.memory")
        factor = grow.get("factor")
        if (
            isinstance(factor, bool)
            or not isinstance(factor, int | float)
            or not 1 < factor <= MAX_MEMORY_FACTOR
        ):
            raise field_error(
                f"{path}.memory.factor", f"must be a number above 1, at most {MAX_MEMORY_FACTOR}"
            )
        ceiling = parse_quantity(grow.get("ceiling"))
        if ceiling is None or ceiling <= 0:
            raise field_error(f"{path}.memory.ceiling", "must be a positive memory quantity such as 8Gi")
        memory = MemoryGrowth(Decimal(str(factor)), ceiling, str(grow["ceiling"]))
    return NextAttempt(avoid, memory)


def check_ceilings(
    defaults: Sequence[FailureRule], roles: Sequence[tuple[int, Sequence[FailureRule], Mapping[str, Any]]]
) -> None:
    """A memory ceiling below a container's memory request or limit in a template it applies to could
    only shrink it: refused, naming the rule's field. ``roles``: (index, own rules, template) each."""
    for index, rules, template in roles:
        _check_ceilings(rules, template, f"spec.roles[{index}].failureRules")
        _check_ceilings(defaults, template, "spec.failureRules")


def _check_ceilings(rules: Sequence[FailureRule], template: Mapping[str, Any], path: str) -> None:
    for i, rule in enumerate(rules):
        memory = rule.next_attempt.memory if rule.next_attempt is not None else None
        if memory is None:
            continue
        for container in container_names(template):
            above = [q for q in template_memory(template, container) if q is not None and q > memory.ceiling]
            if above:
                problem = f"{memory.ceiling_text} is below container {container}'s memory in the template"
                raise field_error(f"{path}[{i}].nextAttempt.memory.ceiling", problem)


_CRITERIA: Final = ("onExitCodes", "onTerminatedReasons", "onPodReasons", "onPodConditions")


def _optional_words(given: Mapping[str, Any], key: str, path: str) -> frozenset[str]:
    return _words(given[key], f"{path}.{key}") if key in given else frozenset()


def parse_failure_rules(value: object, path: str, place: str) -> tuple[FailureRule, ...]:
    """A ``failureRules`` list at ``path`` (absent or null: none); ``place`` names an unnamed rule."""
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise field_error(path, "must be a list")
    if len(value) > MAX_FAILURE_RULES:
        raise field_error(path, f"must have at most {MAX_FAILURE_RULES} rules")
    return tuple(_rule(item, f"{path}[{i}]", f"{place}[{i}]") for i, item in enumerate(value))


def parse_max_preemptions(value: object) -> int | None:
    """``spec.retryPolicy.maxPreemptions``, the TaskSet's only (a preemption budget is the TaskSet's):
    None when absent (any number of preemptions)."""
    raw = value.get("maxPreemptions") if isinstance(value, Mapping) else None
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw <= MAX_RETRY_COUNT:
        raise field_error(
            "spec.retryPolicy.maxPreemptions", f"must be an integer between 0 and {MAX_RETRY_COUNT}"
        )
    return raw


# The Pod API's restartPolicyRules take at most this many exit codes per rule.
MAX_RESTART_EXIT_CODES: Final = 255


def in_place_codes(rule: FailureRule, path: str = "") -> tuple[int, ...]:
    """A RestartInPlace rule's exit codes, its ranges expanded, as the Pod API's rule lists them; a
    rule naming more than ``MAX_RESTART_EXIT_CODES`` is refused (``path``: the rule's field)."""
    assert rule.exit_codes is not None
    total = sum(high - low + 1 for low, high in rule.exit_codes.ranges)
    if total > MAX_RESTART_EXIT_CODES:
        problem = f"a RestartInPlace rule names at most {MAX_RESTART_EXIT_CODES} exit codes, not {total}"
        raise field_error(f"{path}.onExitCodes.values", problem)
    return tuple(sorted({code for low, high in rule.exit_codes.ranges for code in range(low, high + 1)}))
