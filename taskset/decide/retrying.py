"""A replica's failed attempt between its end and its next attempt: the failure rule it
matched, the delay before the retry (fixed or exponential, with deterministic jitter), when that retry
is due, and which retries count. The replica rows of ``taskset.decide.replicas`` call these."""

from __future__ import annotations

from datetime import timedelta

from taskset.api.constants import MAX_UNCOUNTED_RETRIES, FailureAction, ReplicaPhase
from taskset.api.spec import Role
from taskset.api.status import ReplicaStatus, parse_time, stamp
from taskset.decide.context import PassContext
from taskset.decide.failure_rules import end_of_pod, end_of_replica, note_failure
from taskset.decide.policies import retry_delay
from taskset.decide.start_deadline import replaced_late
from taskset.decide.suspension import ended_by_suspension
from taskset.observed.views import PodView

_GONE = (ReplicaPhase.ATTEMPT_DELETION_REQUESTED, ReplicaPhase.ATTEMPT_COMPLETED)


def observe_end(ctx: PassContext, role: Role, replica: ReplicaStatus, pod: PodView | None) -> None:
    """Match the failure rules as soon as the replica's own Pod (``pod``) shows its end (it exited,
    its phase became Unknown, or it is being deleted), while the Pod still says how. An attempt whose
    Pod is gone unseen (it vanished, its create was refused) is matched, before the retry decision, on
    what the status says. A stopped or succeeded replica did not fail, nor one whose Pod the suspension
    ends (its end, even an exit as its containers are stopped, counts nothing)."""
    if (
        ctx.ref.deleting
        or replica.stopped
        or replica.succeeded
        or replica.phase == ReplicaPhase.ATTEMPT_PENDING
        or ended_by_suspension(ctx, replica, pod)
    ):
        return
    if replaced_late(replica):  # P-start-deadline recorded the failure, with why the Pod waited
        return
    if pod is not None and (pod.terminal or pod.deleting):
        note_failure(ctx, role, replica, end_of_pod(pod))
    elif pod is None and replica.phase in _GONE and replica.failure is None:
        last = ctx.observed.gone.get(replica.pod_name)
        note_failure(ctx, role, replica, end_of_replica(replica, last))


def replica_delay(ctx: PassContext, role: Role, replica: ReplicaStatus) -> int:
    """Seconds between the replica's failed attempt and its next one."""
    seed = f"{ctx.ref.uid}/{role.name}/{replica.index}"
    return retry_delay(role.retry_policy, replica.total_retried_count, seed)


def next_retry_at(since: str | None, delay: int) -> str | None:
    """When a retry pending since ``since`` is due, as the status writes times."""
    moment = parse_time(since)
    return None if moment is None else stamp(moment + timedelta(seconds=delay))


def schedule_retry(ctx: PassContext, role: Role, replica: ReplicaStatus) -> None:
    """Entering the retry wait (P13-retry): write when the retry is due, for the user to read."""
    replica.next_retry_at = next_retry_at(ctx.stamp, replica_delay(ctx, role, replica))


def count_retry(replica: ReplicaStatus) -> None:
    """Starting the retry (P14): a platform failure's retry does not count against maxRetryCount."""
    failure = replica.failure
    uncounted = failure is not None and failure.action == FailureAction.RETRY_NOT_COUNTED
    if uncounted and replica.uncounted_retries < MAX_UNCOUNTED_RETRIES:
        replica.uncounted_retries += 1
