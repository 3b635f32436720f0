"""The run bounds of a TaskSet's spec, parsed: ``activeDeadlineSeconds``,
``ttlSecondsAfterFinished``, the default ``startDeadlineSeconds`` and ``cleanPodPolicy`` of ``spec``, and
a role's own ``startDeadlineSeconds``. Their own module keeps ``taskset.api.spec`` small; the parsers raise
:class:`FieldError` naming the field, which ``parse_taskset`` turns into the ``ValidationFailure``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from taskset.api.constants import MAX_RETRY_DELAY_SECONDS, CleanPodPolicy
from taskset.api.failures import field_error


@dataclass(frozen=True)
class RunBounds:
    """The spec-wide bounds; None: no bound."""

    active_deadline_seconds: int | None = None
    ttl_seconds_after_finished: int | None = None
    start_deadline_seconds: int | None = None  # the default of every role that does not set its own
    clean_pod_policy: CleanPodPolicy = CleanPodPolicy.ALL


def seconds(value: object, path: str, low: int = 1) -> int | None:
    """A bound in seconds: absent (or null) means none, else an integer from ``low`` to a year."""
    if value is None:
        return None
    top = MAX_RETRY_DELAY_SECONDS
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= top:
        raise field_error(path, f"must be an integer between {low} and {top}")
    return value


def parse_run_bounds(spec: Mapping[str, Any]) -> RunBounds:
    return RunBounds(
        active_deadline_seconds=seconds(spec.get("activeDeadlineSeconds"), "spec.activeDeadlineSeconds"),
        # 0 deletes at once, as the Job's.
        ttl_seconds_after_finished=seconds(
            spec.get("ttlSecondsAfterFinished"), "spec.ttlSecondsAfterFinished", low=0
        ),
        start_deadline_seconds=seconds(spec.get("startDeadlineSeconds"), "spec.startDeadlineSeconds"),
        clean_pod_policy=clean_pod_policy(spec.get("cleanPodPolicy")),
    )


def clean_pod_policy(value: object) -> CleanPodPolicy:
    """``spec.cleanPodPolicy``: absent (or null) is ``All``, what the spec does."""
    if value is None:
        return CleanPodPolicy.ALL
    if not isinstance(value, str) or value not in tuple(CleanPodPolicy):
        raise field_error("spec.cleanPodPolicy", "must be one of " + ", ".join(CleanPodPolicy))
    return CleanPodPolicy(value)


def role_start_deadline(role: Mapping[str, Any], path: str, default: int | None) -> int | None:
    """A role's ``startDeadlineSeconds``, or else the TaskSet's default."""
    own = seconds(role.get("startDeadlineSeconds"), f"{path}.startDeadlineSeconds")
    return default if own is None else own
