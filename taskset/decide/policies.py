"""The policies as pure functions: role completion (6.1), event policy (6.2), attempt outcome (6.3)
and the retry decisions (7). They read statuses and the parsed spec; they change nothing."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from taskset.api.constants import (
    MAX_RETRY_DELAY_SECONDS,
    FailureAction,
    ReplicaPhase,
    RoleEvent,
    RolePhase,
    State,
    TaskSetAction,
)
from taskset.api.spec import RetryPolicy, Role
from taskset.api.status import ReplicaStatus, RoleStatus
from taskset.decide.failure_rules import ends_attempt, fails_role, failure_action, failure_text


@dataclass(frozen=True)
class Outcome:
    """A decided result: success or failure, and the reason the user reads."""

    succeeded: bool
    reason: str
    final: bool = False  # a FailTaskSet rule ended the attempt; no TaskSet retry follows
    replica: tuple[str, int] | None = None  # (role, index) of the replica that failed it


def role_completion(role: Role, replicas: Sequence[ReplicaStatus]) -> Outcome | None:
    """Spec 6.1: count only completed replicas; success is checked before failure; R adds rule 3 (W-7)."""
    completed = [r for r in replicas if r.phase == ReplicaPhase.COMPLETED]
    ruled = next((r for r in completed if fails_role(r)), None)
    if ruled is not None:  # a failure rule's order comes before the thresholds
        return Outcome(False, f"Failure {failure_text(ruled)} on replica {ruled.index}")
    succeeded = sum(1 for r in completed if r.succeeded)
    failed = len(completed) - succeeded
    policy = role.completion_policy
    if succeeded >= policy.min_succeeded:
        return Outcome(True, f"Completion policy MinSucceeded satisfied,succeeded count:{succeeded}")
    if failed >= policy.max_failed:
        return Outcome(False, f"Completion policy MaxFailed  satisfied,faild count:{failed}")
    if replicas and len(completed) == len(replicas):
        return Outcome(
            False,
            "All replicas completed but neither MinSucceeded nor MaxFailed was reached, "
            f"succeeded count:{succeeded}, failed count:{failed}",
        )
    return None


def _event_matches(event: RoleEvent, state: State) -> bool:
    if event == RoleEvent.ROLE_COMPLETED:
        return state in (State.SUCCEEDED, State.FAILED)
    return (event, state) in (
        (RoleEvent.ROLE_FAILED, State.FAILED),
        (RoleEvent.ROLE_SUCCEEDED, State.SUCCEEDED),
    )


def role_verdict(role: Role, status: RoleStatus) -> bool | None:
    """Spec 6.2 for one completed role: True/False when it decides the attempt, None when it does not.

    The first matching entry whose action is not NoAction wins; ``TaskSetCompleted`` carries the
    triggering role's own outcome (W-8, D5).
    """
    for policy in role.effective_event_policies:
        if policy.action == TaskSetAction.NO_ACTION or not _event_matches(policy.event, status.state):
            continue
        if policy.action == TaskSetAction.TASKSET_SUCCEEDED:
            return True
        if policy.action == TaskSetAction.TASKSET_FAILED:
            return False
        return status.state == State.SUCCEEDED
    return None


def attempt_outcome(roles: Sequence[Role], statuses: Sequence[RoleStatus]) -> Outcome | None:
    """Spec 6.3: the first completed role (spec order) whose event policy triggers decides; else, once
    every role is completed, all-succeeded means success. None while the attempt goes on. A
    completed role whose replica matched a FailTaskSet or RestartTaskSet rule ends it first."""
    for role, status in zip(roles, statuses, strict=True):
        if status.phase != RolePhase.COMPLETED:
            continue
        ruled = _ending_replica(status)
        if ruled is not None:
            final = ends_attempt(ruled) == FailureAction.FAIL_TASKSET
            reason = f"TaskSet attempt ended by failure {failure_text(ruled)} on {role.name}/{ruled.index}"
            return Outcome(False, reason, final=final, replica=(role.name, ruled.index))
        verdict = role_verdict(role, status)
        if verdict is True:
            return Outcome(True, f"TaskSet completed beacause taskrole({role.name}) is succeeded ")
        if verdict is False:
            reason = f"TaskSet completed beacause taskrole({role.name}) is failed"
            return Outcome(False, reason, replica=failed_replica(status))
    if all(status.phase == RolePhase.COMPLETED for status in statuses):
        if all(status.state == State.SUCCEEDED for status in statuses):
            return Outcome(True, "TaskSet succeeded beacause all taskrole are succeeded")
        failed = next((failed_replica(s) for s in statuses if s.state == State.FAILED), None)
        reason = "TaskSet failed beacause all taskrole are completed,but some TaskRole are failed"
        return Outcome(False, reason, replica=failed)
    return None


def failed_replica(status: RoleStatus) -> tuple[str, int] | None:
    """The replica whose failure failed a failed role, for the attempt history: one whose
    failure rule failed the role, else the last one to fail (it reached ``maxFailed``), the lowest index
    among those that failed in the same second. None for a role that did not fail by a replica."""
    if status.state != State.FAILED:
        return None
    failed = [
        r for r in status.replicas if r.phase == ReplicaPhase.COMPLETED and not r.stopped and not r.succeeded
    ]
    ruled = next((r for r in failed if fails_role(r)), None)
    last = ruled or max(failed, key=lambda r: (r.transition_time or "", -r.index), default=None)
    return None if last is None else (status.name, last.index)


def _ending_replica(status: RoleStatus) -> ReplicaStatus | None:
    return next((r for r in status.replicas if r.phase == ReplicaPhase.COMPLETED and ends_attempt(r)), None)


def taskset_retry_decision(policy: RetryPolicy, retried: int) -> tuple[bool, str]:
    """Spec 7.1: whether a failed attempt is followed by another, with O's decision message."""
    if not policy.retry:
        return False, "Retry is forbidden"
    if retried < policy.max_retry_count:
        return True, "Policy.Retry is true,and current retry time is smaller than MaxRetryCount"
    return False, "Can't retry anymore"


def retry_due(delay_seconds: int, waited: float) -> bool:
    """Spec T14 and P14: whether a retry delay is over; a delay of 0 means at once. ``waited`` counts from
    a transitionTime stored rounded up to the second, so just after the transition it can be up to a
    second short (a positive delay is never cut short); a zero delay must not wait for that second."""
    return delay_seconds <= 0 or waited >= delay_seconds


def replica_may_retry(policy: RetryPolicy, replica: ReplicaStatus, *, taskset_deleting: bool) -> bool:
    """Spec 7.2: never a stopped or succeeded replica, never while the TaskSet is being deleted (W-10).
    The failure rule that matched decides first; only counted retries use up maxRetryCount."""
    if replica.stopped or replica.succeeded or taskset_deleting:
        return False
    action = failure_action(replica)
    if action == FailureAction.RETRY_NOT_COUNTED:
        return True
    return action == FailureAction.RETRY_COUNTED and policy.allows_retry(replica.counted_retries)


def replica_retry_decision(policy: RetryPolicy, replica: ReplicaStatus) -> str:
    """Why the replica is or is not retried: the failure rule that matched, then the retry policy's
    decision on the counted retries (spec 7.2)."""
    action = failure_action(replica)
    if action == FailureAction.RETRY_NOT_COUNTED:
        decision = f"retry not counted ({replica.uncounted_retries + 1} so far)"
    elif action == FailureAction.RETRY_COUNTED:
        decision = taskset_retry_decision(policy, replica.counted_retries)[1]
    else:
        decision = "no retry"
    failure = replica.failure
    if failure is None or failure.rule == "default":
        return decision
    return f"Failure {failure_text(replica)}; {decision}"


def retry_delay(policy: RetryPolicy, retries: int, seed: str) -> int:
    """Seconds before the retry that follows ``retries`` retries: the fixed ``delay``, or with a backoff
    ``initial * factor**retries`` capped at ``maxDelay``, plus a jitter of up to
    ``jitterPercent`` percent drawn from ``seed`` and ``retries``, so a restarted controller computes the
    same time again (the status is its only memory)."""
    backoff = policy.backoff
    if backoff is None:
        return policy.delay_seconds
    delay = backoff.initial_seconds
    for _ in range(retries):  # stops at the cap: never builds a huge integer
        if delay >= backoff.max_seconds or backoff.factor == 1:
            break
        delay *= backoff.factor
    delay = min(delay, backoff.max_seconds)
    if backoff.jitter_percent:
        digest = hashlib.sha256(f"{seed}/{retries}".encode()).digest()
        fraction = int.from_bytes(digest[:8], "big") / 2**64
        delay += int(delay * backoff.jitter_percent / 100 * fraction)
    return min(delay, MAX_RETRY_DELAY_SECONDS)
