"""The chaos suite's checks that need clocks: retry delays and backoff, ``activeDeadlineSeconds``
and ``ttlSecondsAfterFinished``, as pure functions over the record.

Revisions order writes but say nothing of seconds, so these read the times the servers wrote: a Pod's
``creationTimestamp`` (kube-apiserver) and its containers' ``finishedAt`` (the simulated kubelet), both
whole seconds rounded down, and the TaskSet's ``createdAt`` and ``finishAt`` (the controller, rounded
up). Every process runs on this machine's clock. A retry's Pod is created at least ``delay`` seconds
after the controller saw the attempt end, which is after its containers finished; two times rounded down
to whole seconds keep that gap (``floor(a) - floor(b) > a - b - 1``, an integer), so the checks need no
slack, but one: a pass that began just before a deadline may still create the Pod it decided on.

The delays are computed here from the spec's words, not with the controller's code (a shared bug would
agree with itself): the fixed ``delay``, or ``initialDelay * factor**n`` capped at ``maxDelay``; jitter
only lengthens a delay, so that is the shortest wait allowed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from taskset.api.constants import DEADLINE_EXCEEDED, MAX_RETRY_DELAY_SECONDS
from tests.chaos.invariants import FINAL_STATES, Lifetime, TaskSetRecord, Verdict, final_reason

# Seconds a Pod may appear after the deadline: a pass that read the clock just before it creates the
# Pods it decided on (a pass of these small TaskSets takes well under that, even on a loaded machine).
DEADLINE_PASS_SLACK: Final = 3.0


def seconds(value: object) -> float | None:
    """An RFC 3339 time such as ``2024-01-02T03:04:05Z`` in epoch seconds (None if absent or unreadable)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def shortest_delay(policy: Mapping[str, Any] | None, retries: int) -> int:
    """The shortest wait a retry policy allows before the retry that follows ``retries`` retries."""
    policy = policy or {}
    backoff = policy.get("backoff")
    if not backoff:
        return int(policy.get("delay") or 0)
    delay, factor = int(backoff["initialDelay"]), int(backoff.get("factor") or 2)
    cap = int(backoff.get("maxDelay") or MAX_RETRY_DELAY_SECONDS)
    for _ in range(retries):
        if delay >= cap:
            break
        delay *= factor
    return min(delay, cap)


@dataclass(frozen=True)
class RetryWait:
    """The wait between a failed attempt and the next, as the Pods show it: from the last container exit
    of the attempt to the creation of the next attempt's first Pod."""

    what: str
    start: float
    end: float
    shortest: int

    @property
    def violation(self) -> str | None:
        waited = self.end - self.start
        if waited >= self.shortest:
            return None
        return f"{self.what}: came {waited:.0f}s after the failure, the delay is {self.shortest}s"


def _attempt(value: str) -> int | None:
    return int(value) if value.isdigit() else None


def _replica_waits(label: str, pods: Sequence[Lifetime], roles: Mapping[str, Any]) -> list[RetryWait]:
    """Between consecutive replica attempts of one replica in one TaskSet attempt."""
    waits = []
    chains: dict[tuple[str, int, str], dict[int, Lifetime]] = {}
    for pod in pods:
        attempt = _attempt(pod.replica_attempt)
        if attempt is not None:
            chains.setdefault((pod.role, pod.index, pod.taskset_attempt), {})[attempt] = pod
    for (role, index, taskset_attempt), chain in sorted(chains.items()):
        policy = (roles.get(role) or {}).get("retryPolicy")
        for attempt, pod in sorted(chain.items()):
            following = chain.get(attempt + 1)
            if following is None or not pod.failed or pod.finished is None or following.created is None:
                continue
            what = (
                f"{label}: replica {role}-{index} (TaskSet attempt {taskset_attempt}) after attempt {attempt}"
            )
            waits.append(RetryWait(what, pod.finished, following.created, shortest_delay(policy, attempt)))
    return waits


def _taskset_waits(label: str, pods: Sequence[Lifetime], policy: Mapping[str, Any] | None) -> list[RetryWait]:
    """Between consecutive TaskSet attempts: from the first failed exit of an attempt (its end came no
    sooner) to the first Pod of the next. The attempt's other Pods may exit later, while they are deleted,
    or after it ended some other way (its ControlUnit deleted), so they bound nothing."""
    attempts: dict[int, list[Lifetime]] = {}
    for pod in pods:
        attempt = _attempt(pod.taskset_attempt)
        if attempt is not None:
            attempts.setdefault(attempt, []).append(pod)
    waits = []
    for attempt, group in sorted(attempts.items()):
        following = attempts.get(attempt + 1)
        failures = [p.finished for p in group if p.failed and p.finished is not None]
        starts = [p.created for p in following or () if p.created is not None]
        if failures and starts:
            what = f"{label}: TaskSet attempt {attempt + 1}"
            waits.append(RetryWait(what, min(failures), min(starts), shortest_delay(policy, attempt)))
    return waits


def _by_taskset(pods: Iterable[Lifetime]) -> dict[str, list[Lifetime]]:
    groups: dict[str, list[Lifetime]] = {}
    for pod in pods:
        groups.setdefault(pod.taskset_uid, []).append(pod)
    return groups


def retry_waits(pods: Iterable[Lifetime], records: Mapping[str, TaskSetRecord]) -> list[RetryWait]:
    """Every wait between attempts the record shows, at both retry levels, with the delay it needs."""
    waits = []
    for uid, group in sorted(_by_taskset(pods).items()):
        record = records.get(uid)
        if record is None:
            continue
        roles = {str(role.get("name")): role for role in record.spec.get("roles") or []}
        waits.extend(_replica_waits(record.label, group, roles))
        waits.extend(_taskset_waits(record.label, group, record.spec.get("retryPolicy")))
    return waits


def delays_respected(waits: Iterable[RetryWait]) -> Verdict:
    """No attempt comes sooner after a failure than its retry policy's delay (fixed or backoff), across
    controller restarts: the controller's only memory of the wait is the status."""
    return Verdict(violations=[v for wait in waits if (v := wait.violation) is not None])


def timed_waits(waits: Iterable[RetryWait]) -> list[RetryWait]:
    """The waits a policy gives a positive delay: the ones a controller restart could cut short."""
    return [wait for wait in waits if wait.shortest > 0]


def deadline_of(record: TaskSetRecord) -> float | None:
    """When the TaskSet's ``activeDeadlineSeconds`` passes: counted from ``status.createdAt``."""
    limit = record.spec.get("activeDeadlineSeconds")
    created = next((seconds(s.get("createdAt")) for s in record.statuses if s.get("createdAt")), None)
    return None if limit is None or created is None else created + int(limit)


def deadline_respected(pods: Iterable[Lifetime], records: Mapping[str, TaskSetRecord]) -> Verdict:
    """No Pod of a TaskSet is created after its deadline passed; a TaskSet failed by its deadline failed
    no sooner than it passed, and none of its Pods is left."""
    verdict = Verdict()
    groups = _by_taskset(pods)
    for uid, record in sorted(records.items()):
        due = deadline_of(record)
        if due is None:
            continue
        for pod in groups.get(uid, []):
            if pod.created is not None and pod.created > due + DEADLINE_PASS_SLACK:
                late = pod.created - due
                verdict.violations.append(
                    f"{record.label}: Pod {pod.name} created {late:.0f}s after the deadline"
                )
        last = record.statuses[-1] if record.statuses else {}
        if final_reason(last) != DEADLINE_EXCEEDED:
            continue
        finish = seconds(last.get("finishAt"))
        if finish is None or finish < due:
            verdict.violations.append(f"{record.label}: failed by its deadline at {finish}, before {due}")
        left = [pod.name for pod in groups.get(uid, []) if pod.died is None]
        if left:
            verdict.violations.append(f"{record.label}: Pods {left} left after the deadline failed it")
    return verdict


def ttl_respected(pods: Iterable[Lifetime], records: Mapping[str, TaskSetRecord]) -> Verdict:
    """A TaskSet with ``ttlSecondsAfterFinished`` is deleted only once finished and the TTL passed since
    ``finishAt``; once deleted, none of its Pods is left."""
    verdict = Verdict()
    groups = _by_taskset(pods)
    for uid, record in sorted(records.items()):
        ttl = record.spec.get("ttlSecondsAfterFinished")
        if ttl is None or record.deleted is None:
            continue
        last = record.statuses[-1] if record.statuses else {}
        finish = seconds(last.get("finishAt"))
        if last.get("state") not in FINAL_STATES or finish is None:
            verdict.violations.append(f"{record.label}: deleted while {last.get('state')}, with a TTL")
        elif record.deleted_seen is not None and record.deleted_seen < finish + int(ttl):
            early = finish + int(ttl) - record.deleted_seen
            verdict.violations.append(f"{record.label}: deleted {early:.1f}s before its TTL of {ttl}s passed")
        left = [pod.name for pod in groups.get(uid, []) if pod.died is None]
        if left:
            verdict.violations.append(f"{record.label}: Pods {left} left after the TTL deleted it")
    return verdict
