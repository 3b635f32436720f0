"""Typed views over a raw TaskSet: parse, default and validate it, with no I/O.

The API server hands the controller JSON decoded into dicts. Under our CRD (``manifests/crd``) almost no
garbage gets that far, but an object stored under an older CRD, or written straight into etcd, can hold
anything, and a controller that raised on it would crash-loop. So :func:`parse_taskset` is total: for
any input whatsoever it returns either a :class:`ParsedTaskSet` (legal, with every default applied) or a
:class:`ValidationFailure` (illegal, with the message to show the user), and it never raises.

Checks run in this order, and the first failure wins:

1. **Shape**, mirroring the CRD: JSON types, name formats, bounds. These messages start with the field
   path, e.g. ``spec.roles[2].replicas: must be an integer between 1 and 10000``. Values the spec's
   checks own (``minSucceeded``/``maxFailed`` below 1 or above ``replicas``, ``replicas`` below 1, unknown
   event or action strings) pass this stage, so that step 2 reports them in its own words.
2. **The controller checks of spec section 2.4**, in the spec's order, with its exact messages
   (``TaskRole naming conflicts,name:<r>`` and so on; see ``constants.MSG_*``).

Defaults are applied in memory only and never written back (D4, W-15): an absent ``minSucceeded`` means
``replicas``, an absent ``maxFailed`` means 1, an absent or empty ``eventPolicy`` means
``[RoleFailed -> TaskSetFailed, RoleSucceeded -> NoAction]``, an absent ``retryPolicy`` means no retry.
A JSON ``null`` counts as absent everywhere, as the API server's pruning of non-nullable fields does.

The views hold the caller's template dict, not a copy: never mutate it (it usually lives in the informer
cache); deep-copy it before building a Pod.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from taskset.api import node_loss
from taskset.api.constants import (
    DNS1123_LABEL_MAX_LENGTH,
    MAX_REPLICAS,
    MAX_RETRY_COUNT,
    MAX_RETRY_DELAY_SECONDS,
    MAX_ROLES,
    MAX_TOTAL_REPLICAS,
    MIN_REPLICAS,
    MSG_MAX_FAILED_ABOVE_REPLICAS,
    MSG_MAX_FAILED_BELOW_ONE,
    MSG_MIN_SUCCEEDED_ABOVE_REPLICAS,
    MSG_MIN_SUCCEEDED_BELOW_ONE,
    MSG_POD_NAME_TOO_LONG,
    MSG_ROLE_NAME_CONFLICT,
    MSG_UNKNOWN_ACTION,
    MSG_UNKNOWN_EVENT,
    POD_NAME_MAX_LENGTH,
    QUEUE_PATTERN,
    CleanPodPolicy,
    RoleEvent,
    TaskSetAction,
)
from taskset.api.failures import (
    FailureRule,
    FieldError,
    check_ceilings,
    parse_failure_rules,
    parse_max_preemptions,
)
from taskset.api.names import is_dns1123_label, longest_pod_name_length, pod_name
from taskset.api.run_bounds import parse_run_bounds, role_start_deadline
from taskset.api.scale import scaled_roles
from taskset.api.thresholds import at_count, parse_threshold, percentage

# ======================================================================================================
# Parsed views: frozen, defaulted, and only ever built by parse_taskset.
# ======================================================================================================


@dataclass(frozen=True)
class Backoff:
    """Exponential retry delays: ``initial * factor**n`` seconds before retry n + 1, at most
    ``max_seconds``, then lengthened by up to ``jitter_percent`` percent (never shortened)."""

    initial_seconds: int
    factor: int = 2
    max_seconds: int = MAX_RETRY_DELAY_SECONDS
    jitter_percent: int = 0


MAX_BACKOFF_FACTOR: Final = 10


@dataclass(frozen=True)
class RetryPolicy:
    """Retry policy of a TaskSet (per attempt) or of a role (per replica), spec 7."""

    retry: bool = False
    max_retry_count: int = 0
    delay_seconds: int = 0
    backoff: Backoff | None = None  # exponential delays instead of the fixed ``delay``

    def allows_retry(self, retried_count: int) -> bool:
        """Whether another attempt may follow ``retried_count`` retries already started."""
        return self.retry and retried_count < self.max_retry_count


NO_RETRY: Final = RetryPolicy()


@dataclass(frozen=True)
class CompletionPolicy:
    """Thresholds on a role's completed replicas, both in ``[1, replicas]`` once validated (D4)."""

    min_succeeded: int
    max_failed: int


@dataclass(frozen=True)
class EventPolicy:
    event: RoleEvent
    action: TaskSetAction


DEFAULT_EVENT_POLICIES: Final = (
    EventPolicy(RoleEvent.ROLE_FAILED, TaskSetAction.TASKSET_FAILED),
    EventPolicy(RoleEvent.ROLE_SUCCEEDED, TaskSetAction.NO_ACTION),
)
# Appended to a declared list that says nothing about failure (spec 6.2, the manual's fallback).
IMPLICIT_FAILURE_POLICY: Final = EventPolicy(RoleEvent.ROLE_FAILED, TaskSetAction.TASKSET_FAILED)
DEFAULT_MAX_FAILED: Final = 1  # one final failure fails the role (D4)


def thresholds(min_succeeded: int | None, max_failed: int | None, replicas: int) -> CompletionPolicy:
    """The completion policy at ``replicas`` (D4): an absent ``minSucceeded`` follows the count,
    an absent ``maxFailed`` is 1, and an explicit one above the count is clamped to it (a role scaled
    below its declared threshold needs every replica it has). Below 1 they stay, for check 2.4."""
    min_ok = replicas if min_succeeded is None else min(min_succeeded, max(replicas, 1))
    max_ok = DEFAULT_MAX_FAILED if max_failed is None else min(max_failed, max(replicas, 1))
    return CompletionPolicy(min_succeeded=min_ok, max_failed=max_ok)


@dataclass(frozen=True)
class Role:
    name: str
    replicas: int
    completion_policy: CompletionPolicy
    retry_policy: RetryPolicy
    # As declared, or DEFAULT_EVENT_POLICIES when the list is absent or empty.
    event_policies: tuple[EventPolicy, ...]
    # The core/v1 PodTemplateSpec as given ({} when absent). Shared with the caller: do not mutate.
    template: Mapping[str, Any] = field(default_factory=dict, hash=False)
    failure_rules: tuple[FailureRule, ...] = ()  # matched before the TaskSet's defaults
    # The bounds a running attempt's replicas may be scaled within, and the thresholds as
    # declared (None: defaulted), from which ``scaled`` re-reads the completion policy.
    min_replicas: int = MIN_REPLICAS
    max_replicas: int = MAX_REPLICAS
    declared: tuple[int | None, int | None] = (None, None)  # (minSucceeded, maxFailed)
    start_deadline_seconds: int | None = None  # its own, else the TaskSet's default
    percentages: tuple[int | None, int | None] = (None, None)  # p of those given as "<p>%"

    def scaled(self, replicas: int) -> Role:
        """The role at ``replicas`` (clamped to its bounds), its thresholds re-read: a
        percentage of the new count, rounded up; a count clamped to it."""
        count = min(max(replicas, self.min_replicas), self.max_replicas)
        low, high = (at_count(d, p, count) for d, p in zip(self.declared, self.percentages, strict=True))
        policy = thresholds(low, high, count)
        return replace(self, replicas=count, completion_policy=policy)

    @property
    def effective_event_policies(self) -> tuple[EventPolicy, ...]:
        """The list the event-policy scan walks (spec 6.2): a declared list that has neither a
        ``RoleFailed`` nor a ``RoleCompleted`` entry gets ``RoleFailed -> TaskSetFailed`` appended."""
        events = {policy.event for policy in self.event_policies}
        if RoleEvent.ROLE_FAILED in events or RoleEvent.ROLE_COMPLETED in events:
            return self.event_policies
        return (*self.event_policies, IMPLICIT_FAILURE_POLICY)

    def pod_name(self, taskset: str, index: int) -> str:
        return pod_name(taskset, self.name, index)


@dataclass(frozen=True)
class TaskSetSpec:
    retry_policy: RetryPolicy
    roles: tuple[Role, ...]  # spec order: status order and event-policy scan order
    queue: str | None = None  # reserved, ignored (spec 2.2)
    priority: int | None = None  # reserved, ignored (spec 2.2)
    failure_rules: tuple[FailureRule, ...] = ()  # every role's, after the role's own
    active_deadline_seconds: int | None = None  # the whole TaskSet's wall-clock bound
    ttl_seconds_after_finished: int | None = None  # delete the TaskSet this long after it ends
    clean_pod_policy: CleanPodPolicy = CleanPodPolicy.ALL  # what the finished TaskSet keeps
    max_preemptions: int | None = None  # spec.retryPolicy.maxPreemptions (taskset.decide.preemption)
    # The spec as given, for integrations that read their own part of it (taskset.integrations.base).
    # Shared with the caller: do not mutate.
    raw: Mapping[str, Any] = field(default_factory=dict, hash=False, compare=False, repr=False)

    def role(self, name: str) -> Role | None:
        return next((role for role in self.roles if role.name == name), None)


@dataclass(frozen=True)
class ParsedTaskSet:
    """A legal TaskSet with every default applied. Identity fields are "" / 0 when the input lacks them."""

    name: str
    namespace: str
    uid: str
    generation: int
    spec: TaskSetSpec


@dataclass(frozen=True)
class RoleOutline:
    """What the initial status of an illegal TaskSet still needs from each role (spec 2.4: role statuses
    stay in their initial form). Best effort: "" and 0 stand in for unusable values."""

    name: str
    replicas: int


@dataclass(frozen=True)
class ValidationFailure:
    """Why a TaskSet is illegal. Not an exception: parse_taskset returns it."""

    message: str  # the text for status.phaseMessage / stateMessage (exact for spec 2.4 checks)
    field: str  # JSON path of the offending field, e.g. "spec.roles[1].completionPolicy.maxFailed"
    roles: tuple[RoleOutline, ...] = ()  # one per spec.roles entry, in spec order


ParseResult = ParsedTaskSet | ValidationFailure


# ======================================================================================================
# Names
# ======================================================================================================

_QUEUE: Final = re.compile(QUEUE_PATTERN.removeprefix("^").removesuffix("$"))
_DNS1123_LABEL_PROBLEM: Final = (
    f"must be a DNS-1123 label (at most {DNS1123_LABEL_MAX_LENGTH} lower-case alphanumerics or '-', "
    "starting and ending alphanumeric)"
)


# ======================================================================================================
# Parsing
# ======================================================================================================


class _InvalidError(FieldError):
    """Internal: the first problem found; parse_taskset turns it into a ValidationFailure."""


def _shape_error(path: str, problem: str) -> _InvalidError:
    return _InvalidError(path, f"{path}: {problem}")


def _int_or_none(value: object) -> int | None:
    # JSON has no int/bool overlap; Python does (True == 1), so exclude bools explicitly.
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _optional_object(value: object, path: str) -> Mapping[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise _shape_error(path, "must be an object")
    return value


def _optional_list(value: object, path: str) -> Sequence[Any]:
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise _shape_error(path, "must be a list")
    return value


def _optional_int(value: object, path: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise _shape_error(path, "must be an integer")
    return value


def _bounded_int(value: object, path: str, low: int, high: int, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _shape_error(path, f"must be an integer between {low} and {high}")
    return value


def _dns_label(value: object, path: str) -> str:
    if value is None:
        raise _shape_error(path, "required")
    if not isinstance(value, str) or not is_dns1123_label(value):
        raise _shape_error(path, _DNS1123_LABEL_PROBLEM)
    return value


def _parse_retry_policy(value: object, path: str) -> RetryPolicy:
    raw = _optional_object(value, path)
    if not raw:
        return NO_RETRY
    retry = raw.get("retry")
    if retry is not None and not isinstance(retry, bool):
        raise _shape_error(f"{path}.retry", "must be a boolean")
    return RetryPolicy(
        retry=bool(retry),
        max_retry_count=_bounded_int(
            raw.get("maxRetryCount"), f"{path}.maxRetryCount", 0, MAX_RETRY_COUNT, default=0
        ),
        delay_seconds=_bounded_int(raw.get("delay"), f"{path}.delay", 0, MAX_RETRY_DELAY_SECONDS, default=0),
        backoff=_parse_backoff(raw.get("backoff"), f"{path}.backoff"),
    )


def _parse_backoff(value: object, path: str) -> Backoff | None:
    """``retryPolicy.backoff``; ``initialDelay`` is required, the rest defaulted."""
    if value is None:
        return None
    raw = _optional_object(value, path)
    if raw.get("initialDelay") is None:
        raise _shape_error(f"{path}.initialDelay", "required")
    top = MAX_RETRY_DELAY_SECONDS
    initial = _bounded_int(raw.get("initialDelay"), f"{path}.initialDelay", 1, top, default=1)
    return Backoff(
        initial_seconds=initial,
        factor=_bounded_int(raw.get("factor"), f"{path}.factor", 1, MAX_BACKOFF_FACTOR, default=2),
        max_seconds=_bounded_int(raw.get("maxDelay"), f"{path}.maxDelay", initial, top, default=top),
        jitter_percent=_bounded_int(raw.get("jitterPercent"), f"{path}.jitterPercent", 0, 100, default=0),
    )


@dataclass(frozen=True)
class _RawEventPolicy:
    """An event-policy entry whose strings are not yet known to be in the allowed sets (check 3)."""

    event: str
    action: str


@dataclass(frozen=True)
class _ShapedRole:
    """A role that passed the shape checks; the spec 2.4 checks run on these."""

    index: int
    name: str
    replicas: int
    min_succeeded: int | None
    max_failed: int | None
    retry_policy: RetryPolicy
    event_policies: tuple[_RawEventPolicy, ...]
    template: Mapping[str, Any]
    failure_rules: tuple[FailureRule, ...] = ()
    bounds: tuple[int | None, int | None] = (None, None)  # (minReplicas, maxReplicas) of an elastic role
    start_deadline: int | None = None  # startDeadlineSeconds
    percentages: tuple[int | None, int | None] = (None, None)  # see Role


def _shape_role(value: object, index: int, start_deadline: int | None = None) -> _ShapedRole:
    path = f"spec.roles[{index}]"
    if not isinstance(value, Mapping):
        raise _shape_error(path, "must be an object")
    raw = value
    name = _dns_label(raw.get("name"), f"{path}.name")
    # Absent replicas reads as 0, as in O: check 2.2 or 2.3 then rejects the role (spec 2.4, last bullet).
    # Values below 1 are left to those checks too; values above the CRD's maximum stop here, because the
    # controller would otherwise size status lists by them.
    replicas = raw.get("replicas")
    if replicas is None:
        replicas = 0
    elif isinstance(replicas, bool) or not isinstance(replicas, int) or replicas > MAX_REPLICAS:
        problem = f"must be an integer between {MIN_REPLICAS} and {MAX_REPLICAS}"
        raise _shape_error(f"{path}.replicas", problem)
    completion = _optional_object(raw.get("completionPolicy"), f"{path}.completionPolicy")
    threshold_path = f"{path}.completionPolicy"
    min_succeeded = parse_threshold(
        completion.get("minSucceeded"), f"{threshold_path}.minSucceeded", replicas
    )
    max_failed = parse_threshold(completion.get("maxFailed"), f"{threshold_path}.maxFailed", replicas)
    retry_policy = _parse_retry_policy(raw.get("retryPolicy"), f"{path}.retryPolicy")
    event_policies = []
    for i, entry in enumerate(_optional_list(raw.get("eventPolicy"), f"{path}.eventPolicy")):
        entry_path = f"{path}.eventPolicy[{i}]"
        if not isinstance(entry, Mapping):
            raise _shape_error(entry_path, "must be an object")
        strings = []
        for key in ("event", "action"):
            text = entry.get(key)
            if text is None:
                raise _shape_error(f"{entry_path}.{key}", "required")
            if not isinstance(text, str):
                raise _shape_error(f"{entry_path}.{key}", "must be a string")
            strings.append(text)
        event_policies.append(_RawEventPolicy(*strings))
    template = _optional_object(raw.get("template"), f"{path}.template")
    rules = parse_failure_rules(
        raw.get("failureRules"), f"{path}.failureRules", f"roles[{index}].failureRules"
    )
    bounds = tuple(
        None if raw.get(key) is None else _bounded_int(raw.get(key), f"{path}.{key}", 1, MAX_REPLICAS, 1)
        for key in ("minReplicas", "maxReplicas")
    )
    return _ShapedRole(
        index=index,
        name=name,
        replicas=replicas,
        min_succeeded=min_succeeded,
        max_failed=max_failed,
        retry_policy=retry_policy,
        event_policies=tuple(event_policies),
        template=template,
        failure_rules=rules,
        bounds=(bounds[0], bounds[1]),
        start_deadline=role_start_deadline(raw, path, start_deadline),
        percentages=(percentage(completion.get("minSucceeded")), percentage(completion.get("maxFailed"))),
    )


def _check_bounds(role: _ShapedRole) -> None:
    """An elastic role's bounds: ``minReplicas <= replicas <= maxReplicas``, each bound optional."""
    low, high = role.bounds
    path = f"spec.roles[{role.index}]"
    if low is not None and role.replicas < low:
        raise _shape_error(f"{path}.replicas", f"must be at least minReplicas ({low})")
    if high is not None and role.replicas > high:
        raise _shape_error(f"{path}.replicas", f"must be at most maxReplicas ({high})")


def _check_role(taskset_name: str, role: _ShapedRole) -> CompletionPolicy:
    """Checks 2.1 to 2.5 of spec 2.4 for one role, on the D4-defaulted completion policy. With
    ``maxReplicas`` an explicit threshold may reach it (clamped to the current count), and the longest Pod
    name is that of the highest index the role may scale to."""
    min_succeeded = role.replicas if role.min_succeeded is None else role.min_succeeded
    max_failed = DEFAULT_MAX_FAILED if role.max_failed is None else role.max_failed
    ceiling = role.replicas if role.bounds[1] is None else role.bounds[1]
    path = f"spec.roles[{role.index}]"
    checks = (
        (max_failed < 1, f"{path}.completionPolicy.maxFailed", MSG_MAX_FAILED_BELOW_ONE),
        (min_succeeded < 1, f"{path}.completionPolicy.minSucceeded", MSG_MIN_SUCCEEDED_BELOW_ONE),
        (max_failed > ceiling, f"{path}.completionPolicy.maxFailed", MSG_MAX_FAILED_ABOVE_REPLICAS),
        (min_succeeded > ceiling, f"{path}.completionPolicy.minSucceeded", MSG_MIN_SUCCEEDED_ABOVE_REPLICAS),
        (
            longest_pod_name_length(taskset_name, role.name, max(role.replicas, ceiling))
            > POD_NAME_MAX_LENGTH,
            f"{path}.name",
            MSG_POD_NAME_TOO_LONG,
        ),
    )
    for failed, field_path, message in checks:
        if failed:
            raise _InvalidError(field_path, message.format(role=role.name))
    return thresholds(role.min_succeeded, role.max_failed, role.replicas)


_EVENTS: Final = frozenset(RoleEvent)
_ACTIONS: Final = frozenset(TaskSetAction)


def _check_event_policies(role: _ShapedRole) -> tuple[EventPolicy, ...]:
    """Check 3 of spec 2.4 (W-19), then the default for an absent or empty list (spec 2.3)."""
    policies = []
    for i, entry in enumerate(role.event_policies):
        path = f"spec.roles[{role.index}].eventPolicy[{i}]"
        if entry.event not in _EVENTS:
            message = MSG_UNKNOWN_EVENT.format(event=entry.event, role=role.name)
            raise _InvalidError(f"{path}.event", message)
        if entry.action not in _ACTIONS:
            message = MSG_UNKNOWN_ACTION.format(action=entry.action, role=role.name)
            raise _InvalidError(f"{path}.action", message)
        policies.append(EventPolicy(RoleEvent(entry.event), TaskSetAction(entry.action)))
    return tuple(policies) or DEFAULT_EVENT_POLICIES


def _parse(obj: object) -> ParsedTaskSet:
    if not isinstance(obj, Mapping):
        raise _InvalidError("", "TaskSet: must be an object")
    metadata = _optional_object(obj.get("metadata"), "metadata")
    name = _dns_label(metadata.get("name"), "metadata.name")
    spec = _optional_object(obj.get("spec"), "spec")
    queue = spec.get("queue")
    if queue is not None and (not isinstance(queue, str) or _QUEUE.fullmatch(queue) is None):
        raise _shape_error("spec.queue", f"must match {QUEUE_PATTERN}")
    priority = _optional_int(spec.get("priority"), "spec.priority")
    suspend = spec.get("suspend")  # read live, apart from parsing (taskset.api.live_fields)
    if suspend is not None and not isinstance(suspend, bool):
        raise _shape_error("spec.suspend", "must be a boolean")
    retry_policy = _parse_retry_policy(spec.get("retryPolicy"), "spec.retryPolicy")
    max_preemptions = parse_max_preemptions(spec.get("retryPolicy"))
    failure_rules = parse_failure_rules(spec.get("failureRules"), "spec.failureRules", "failureRules")
    run_bounds = parse_run_bounds(spec)  # deadlines, TTL, cleanPodPolicy
    node_loss.parse_node_loss_policy(spec.get(node_loss.FIELD))  # read live (taskset.decide.node_recovery)
    raw_roles = _optional_list(scaled_roles(spec), "spec.roles")  # spec.scale's count first
    if len(raw_roles) > MAX_ROLES:
        raise _shape_error("spec.roles", f"must have at most {MAX_ROLES} roles")
    shaped = [_shape_role(raw, i, run_bounds.start_deadline_seconds) for i, raw in enumerate(raw_roles)]
    check_ceilings(failure_rules, [(role.index, role.failure_rules, role.template) for role in shaped])
    total = sum(role.replicas for role in shaped)
    if total > MAX_TOTAL_REPLICAS:  # the status budget is proved up to here (taskset.api.compact)
        problem = f"the replicas of all roles must total at most {MAX_TOTAL_REPLICAS}, not {total}"
        raise _shape_error("spec.roles", problem)

    # Spec 2.4, in order. Check 1: the second occurrence of a name is the one reported.
    seen: set[str] = set()
    for role in shaped:
        if role.name in seen:
            message = MSG_ROLE_NAME_CONFLICT.format(role=role.name)
            raise _InvalidError(f"spec.roles[{role.index}].name", message)
        seen.add(role.name)
    for role in shaped:
        _check_bounds(role)
    completion_policies = [_check_role(name, role) for role in shaped]  # check 2, role by role
    event_policies = [_check_event_policies(role) for role in shaped]  # check 3

    roles = tuple(
        Role(
            name=role.name,
            replicas=role.replicas,
            completion_policy=completion,
            retry_policy=role.retry_policy,
            event_policies=events,
            template=role.template,
            failure_rules=role.failure_rules,
            min_replicas=MIN_REPLICAS if role.bounds[0] is None else role.bounds[0],
            max_replicas=MAX_REPLICAS if role.bounds[1] is None else role.bounds[1],
            declared=(role.min_succeeded, role.max_failed),
            start_deadline_seconds=role.start_deadline,
            percentages=role.percentages,
        )
        for role, completion, events in zip(shaped, completion_policies, event_policies, strict=True)
    )
    uid = metadata.get("uid")
    namespace = metadata.get("namespace")
    generation = metadata.get("generation")
    return ParsedTaskSet(
        name=name,
        namespace=namespace if isinstance(namespace, str) else "",
        uid=uid if isinstance(uid, str) else "",
        generation=_int_or_none(generation) or 0,
        spec=TaskSetSpec(
            retry_policy=retry_policy,
            max_preemptions=max_preemptions,
            roles=roles,
            queue=queue,
            priority=priority,
            failure_rules=failure_rules,
            active_deadline_seconds=run_bounds.active_deadline_seconds,
            ttl_seconds_after_finished=run_bounds.ttl_seconds_after_finished,
            clean_pod_policy=run_bounds.clean_pod_policy,
            raw=spec,
        ),
    )


def _outline(obj: object) -> tuple[RoleOutline, ...]:
    """Best-effort role names and replica counts of any input, for an illegal TaskSet's initial status."""
    spec = obj.get("spec") if isinstance(obj, Mapping) else None
    roles = spec.get("roles") if isinstance(spec, Mapping) else None
    if not isinstance(roles, list | tuple):
        return ()
    outlines = []
    for raw in roles[:MAX_ROLES]:
        raw_map = raw if isinstance(raw, Mapping) else {}
        name = raw_map.get("name")
        replicas = _int_or_none(raw_map.get("replicas")) or 0
        usable = 0 <= replicas <= MAX_REPLICAS
        outlines.append(RoleOutline(name if isinstance(name, str) else "", replicas if usable else 0))
    return tuple(outlines)


@dataclass(frozen=True)
class CheckFailure:
    """Why an integration finds its part of a spec invalid: the JSON path and the message."""

    field: str
    message: str


def spec_object(spec: Mapping[str, Any], name: str) -> Mapping[str, Any] | CheckFailure | None:
    """An integration's optional object field ``spec.<name>``: the object, None when absent, or the
    failure naming it when it is something else."""
    raw = spec.get(name)
    if raw is None or isinstance(raw, Mapping):
        return raw
    return CheckFailure(f"spec.{name}", f"spec.{name}: must be an object")


# An integration's check of its own part of a spec (``Integration.check``): None when it is valid.
SpecCheck = Callable[[Mapping[str, Any]], CheckFailure | None]


def parse_taskset(obj: object, checks: Sequence[SpecCheck] = ()) -> ParseResult:
    """Parse, default and validate a raw TaskSet, then run ``checks`` (the integrations') over its spec
    in order. Total: never raises, whatever ``obj`` is."""
    try:
        parsed = _parse(obj)
    except FieldError as invalid:
        return ValidationFailure(message=invalid.message, field=invalid.path, roles=_outline(obj))
    for check in checks:
        failure = check(parsed.spec.raw)
        if failure is not None:
            return ValidationFailure(message=failure.message, field=failure.field, roles=_outline(obj))
    return parsed
