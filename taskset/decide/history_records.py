"""Recording the attempt history as the TaskSet machine moves.

An attempt begins when the TaskSet enters ``AttemptPending`` (T2, T14): its start is kept in
``status.attemptStartAt``. It ends when the machine leaves its ending phases (T13-succeeded, T13-retry,
T13) or when the deadline passes before it started (T3-deadline): its record is then added to
``status.attemptHistory`` by the move itself, so it is part of the same single status write as the
transition and survives whatever happens after that write. A pass that runs again over a status that
holds it already adds nothing (``with_attempt`` records an attempt once).

The record reads only the status: the attempt result (kept at T6, with the replica that ended the
attempt, since the spec that decided it goes away with the ControlUnit) and that replica's own record,
still in ``roleStatus`` until the next attempt starts afresh.
"""

from __future__ import annotations

from typing import Final

from taskset.api.constants import TaskSetPhase
from taskset.api.history import AttemptRecord, with_attempt
from taskset.api.status import ReplicaStatus, TaskSetStatus
from taskset.decide.gang_avoidance import learn_gang

# The rows that end an attempt, and the one of them after which a TaskSet retry follows.
ENDING_ROWS: Final = frozenset({"T13-succeeded", "T13-retry", "T13", "T3-deadline"})
RETRY_ROW: Final = "T13-retry"


def note_move(status: TaskSetStatus, target: TaskSetPhase, label: str, now: str) -> None:
    """Keep an attempt's start when it begins and its record when it ends, and what the next attempts
    learn from a failed one (``taskset.decide.gang_avoidance``, while its replicas are still listed);
    called by every move of the TaskSet machine before the move rewrites the phase and its message."""
    if label in ENDING_ROWS:
        record = attempt_record(status, label, now)
        status.attempt_history = with_attempt(status.attempt_history, record)
    if label == RETRY_ROW:
        learn_gang(status)
    if target == TaskSetPhase.ATTEMPT_PENDING:
        status.attempt_start_at = now


def attempt_record(status: TaskSetStatus, label: str, now: str) -> AttemptRecord:
    """The record of the attempt ``status`` holds, ended by the row ``label`` at ``now``."""
    result = status.attempt_result
    succeeded = label == "T13-succeeded"
    # Without a kept result (a ControlUnit name conflict, a refused create) the message of the move that
    # ended the attempt says why.
    reason = result.reason if result is not None else status.phase_message
    replica = _ending_replica(status)
    failure = None if replica is None else replica.failure
    info = None if replica is None else replica.terminated_info
    return AttemptRecord(
        attempt=status.attempt_id,
        start_at=status.attempt_start_at,
        finish_at=now,
        succeeded=succeeded,
        reason=reason,
        counted=label == RETRY_ROW,
        replica="" if replica is None else f"{replica.name}-{replica.index}",
        exit_code=None if info is None else info.exit_code,
        rule="" if failure is None else failure.rule,
        action=None if failure is None else failure.action,
        preempt_count=status.preempt_count,
    )


def _ending_replica(status: TaskSetStatus) -> ReplicaStatus | None:
    """The replica the attempt result names, while the status still lists it."""
    result = status.attempt_result
    if result is None or result.succeeded or result.replica is None:
        return None
    name, index = result.replica
    role = status.role(name)
    return None if role is None else next((r for r in role.replicas if r.index == index), None)
