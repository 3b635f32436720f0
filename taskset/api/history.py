"""The attempt history: the TaskSet's past attempts, in ``status.attemptHistory``.

A user reads here why the TaskSet retried without reading logs: each ended attempt's number, start and
end, outcome and reason, and for a failed one the replica whose failure ended it, its exit code, the
failure rule that matched, that rule's action, and whether the attempt was counted, that is whether a
TaskSet retry was charged for it against ``retryPolicy.maxRetryCount``.

Bounded, so that the status stays under its budget (``taskset.api.compact``, docs/status.md) whatever
the retry count: the last ``HISTORY_MAX_ATTEMPTS`` attempts are listed, ``dropped`` counts the older
ones, and every text of an entry is clipped to a number of **bytes** as the API server writes them
(``clip_bytes``), so one entry never takes more than ``HISTORY_ENTRY_BYTES`` in either shape of the
status. Texts are clipped when the status is serialized, as the other bounded texts are.

An attempt is recorded once: ``with_attempt`` ignores an attempt whose number is not past the last one
listed, so a pass that runs again over a status already holding its record (a status write whose
answer was lost, a restarted controller) never adds it twice.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Final

from taskset.api.compact import clip_bytes
from taskset.api.constants import FailureAction
from taskset.api.readers import as_int, as_opt_text, as_text

Json = dict[str, Any]

HISTORY_MAX_ATTEMPTS: Final = 10  # the last attempts listed; older ones are counted in ``dropped``
# Bytes on the wire of each text, quotes included: the reason is the controller's words (the attempt
# result), the replica ``<role>-<index>``, the rule a declared name (at most 63) or a place.
HISTORY_REASON_BYTES: Final = 256
HISTORY_REPLICA_BYTES: Final = 128
HISTORY_RULE_BYTES: Final = 128
# An entry's keys and widest scalars (attempt number of 7 digits, two timestamps, an exit code of
# -2147483648, the longest action and outcome) take 212 bytes, a preemptCount of 7 digits 23 more; the
# rest is its three texts.
HISTORY_ENTRY_BYTES: Final = (
    224 + len(',"preemptCount":1000000') + HISTORY_REASON_BYTES + HISTORY_REPLICA_BYTES + HISTORY_RULE_BYTES
)
# What the history adds to a status at most: the entries with their commas, the keys around them
# and ``dropped``, ``attemptStartAt``, and the ending replica the attempt result keeps (``ended_by``).
HISTORY_BYTES: Final = (
    HISTORY_MAX_ATTEMPTS * (HISTORY_ENTRY_BYTES + 1)
    + len('"attemptHistory":{"attempts":[],"dropped":1000000},"attemptStartAt":"2026-01-01T00:00:00Z",')
    + len(',"replica":{"role":,"index":10000}')
    + HISTORY_REPLICA_BYTES
)

SUCCEEDED: Final = "Succeeded"
FAILED: Final = "Failed"


@dataclass(frozen=True)
class AttemptRecord:
    """One ended attempt. ``replica``, ``exit_code``, ``rule`` and ``action`` say what ended a failed
    attempt when a replica's failure did; they are empty for a success and for an attempt ended by
    something else (a deadline, a deleted ControlUnit, a refused create)."""

    attempt: int
    start_at: str | None
    finish_at: str | None
    succeeded: bool
    reason: str
    counted: bool  # a TaskSet retry was charged for it (it failed and the next attempt followed)
    replica: str = ""
    exit_code: int | None = None
    rule: str = ""
    action: FailureAction | None = None
    # The TaskSet's preemptions so far when the attempt ended (status.preemptCount then): an attempt's
    # preemptions are the difference from the previous one's, apart from its failures.
    preempt_count: int = 0

    def to_json(self) -> Json:
        return {
            "attempt": self.attempt,
            "startAt": self.start_at,
            "finishAt": self.finish_at,
            "outcome": SUCCEEDED if self.succeeded else FAILED,
            "reason": clip_bytes(self.reason, HISTORY_REASON_BYTES),
            "replica": clip_bytes(self.replica, HISTORY_REPLICA_BYTES),
            "exitCode": self.exit_code,
            "rule": clip_bytes(self.rule, HISTORY_RULE_BYTES),
            "action": "" if self.action is None else str(self.action),
            "counted": self.counted,
            "preemptCount": self.preempt_count,
        }

    @classmethod
    def from_json(cls, raw: object) -> AttemptRecord | None:
        if not isinstance(raw, dict):
            return None
        attempt = as_int(raw.get("attempt"))
        if attempt is None or attempt < 0 or raw.get("outcome") not in (SUCCEEDED, FAILED):
            return None
        action = raw.get("action")
        return cls(
            attempt=attempt,
            start_at=as_opt_text(raw.get("startAt")),
            finish_at=as_opt_text(raw.get("finishAt")),
            succeeded=raw["outcome"] == SUCCEEDED,
            reason=as_text(raw.get("reason")),
            counted=raw.get("counted") is True,
            replica=as_text(raw.get("replica")),
            exit_code=as_int(raw.get("exitCode")),
            rule=as_text(raw.get("rule")),
            action=FailureAction(action) if action in tuple(FailureAction) else None,
            preempt_count=max(0, as_int(raw.get("preemptCount")) or 0),
        )


@dataclass(frozen=True)
class AttemptHistory:
    """The listed attempts, oldest first, and how many older ones are no longer listed."""

    attempts: tuple[AttemptRecord, ...] = ()
    dropped: int = 0

    def to_json(self) -> Json:
        return {"attempts": [record.to_json() for record in self.attempts], "dropped": self.dropped}

    @classmethod
    def from_json(cls, raw: object) -> AttemptHistory:
        """What is stored, tolerating anything: entries that are not records are skipped, entries out of
        order or over the bound (written by hand) are not kept, and count as dropped."""
        if not isinstance(raw, dict):
            return cls()
        dropped = as_int(raw.get("dropped"))
        history = cls(dropped=dropped if dropped is not None and dropped >= 0 else 0)
        items = raw.get("attempts")
        for item in items if isinstance(items, list) else []:
            record = AttemptRecord.from_json(item)
            if record is not None:
                history = with_attempt(history, record)
        return history


def with_attempt(history: AttemptHistory, record: AttemptRecord) -> AttemptHistory:
    """``history`` with ``record`` listed last, the oldest attempts past the bound dropped; unchanged
    when an attempt of that number or a later one is listed already (recorded once, by attempt id)."""
    if history.attempts and history.attempts[-1].attempt >= record.attempt:
        return history
    attempts = (*history.attempts, record)
    extra = max(0, len(attempts) - HISTORY_MAX_ATTEMPTS)
    return replace(history, attempts=attempts[extra:], dropped=history.dropped + extra)


def ended_by_json(replica: tuple[str, int]) -> Json:
    """The attempt result's ending replica on the wire: the role's name clipped as a history entry's
    replica is (a role name is a validated DNS label, so this is only a bound)."""
    return {"role": clip_bytes(replica[0], HISTORY_REPLICA_BYTES), "index": replica[1]}


def ended_by_from_json(raw: object) -> tuple[str, int] | None:
    if not isinstance(raw, dict):
        return None
    role, index = raw.get("role"), as_int(raw.get("index"))
    return (role, index) if isinstance(role, str) and role and index is not None and index >= 0 else None
