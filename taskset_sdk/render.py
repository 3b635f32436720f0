"""What ``kubectl taskset`` prints, as pure functions of the SDK's views and the current time: the tree
of a TaskSet (roles -> replicas -> attempts), its JSON form, ``describe``, and the ages. Colours only
when asked (the plugin asks on a terminal); every column is padded before it is coloured, so a
coloured table lines up like a plain one.

Every string printed comes from objects other people can write (a termination message is whatever the
container wrote; a Pod can be planted under a replica's name), so it is made ``printable`` first: a
control character, an escape sequence or a bidi override is shown as its escape (``\x1b``,
``\u202e``) and never reaches the viewer's terminal. The work per object is bounded: a replica's
earlier attempts are listed up to ``EARLIER_LISTED``, then counted."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from taskset_sdk.views import AttemptView, EventView, PodView, ReplicaView, TaskSetView, replica_pod

__all__ = ["EARLIER_LISTED", "age", "describe", "printable", "render_tree", "tree"]

_COLOURS: Final = {"Succeeded": "32", "Failed": "31", "Running": "36", "Waiting": "33"}
_HEADER: Final = ("NAME", "STATE", "PHASE", "POD", "NODE", "EXIT", "RETRIES", "AGE")
NONE: Final = "-"
# A replica retried a million times (maxRetryCount allows it) is listed with its last few attempts.
EARLIER_LISTED: Final = 5

# What a terminal acts on instead of showing: C0 and C1 controls and DEL (ESC starts every escape
# sequence, so escaping it leaves the rest of a sequence as plain text), the line and paragraph
# separators, and the bidi controls that reorder what follows them (Trojan Source).
_UNPRINTABLE: Final = (
    *range(0x20),
    *range(0x7F, 0xA0),
    0x2028,
    0x2029,
    *(0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)),
)
_ESCAPES: Final = {
    **{code: f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" for code in _UNPRINTABLE},
    **{ord(char): escape for char, escape in (("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t"))},
}


def printable(text: str) -> str:
    """``text`` with every control character, escape and bidi control shown as its escape."""
    return text.translate(_ESCAPES)


def age(timestamp: str, now: datetime) -> str:
    """kubectl's short age: ``45s``, ``3m12s``, ``2h5m``, ``4d``; ``-`` without a time, ``?`` for a
    time that is no time."""
    if not timestamp:
        return NONE
    try:
        then = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
        if then.tzinfo is None:
            then = then.replace(tzinfo=UTC)
    except ValueError:
        return "?"
    seconds = max(0, int((now - then).total_seconds()))
    if seconds < 120:
        return f"{seconds}s"
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if hours < 1:
        return f"{minutes}m{seconds % 60}s" if minutes < 10 else f"{minutes}m"
    if days < 1:
        return f"{hours}h{minutes % 60}m" if hours < 10 else f"{hours}h"
    return f"{days}d"


def _exit(replica: ReplicaView) -> str:
    if replica.exit_code is None:
        return replica.pod_reason or NONE
    return f"{replica.exit_code} {replica.reason}".strip()


def _attempts(replica: ReplicaView, pod: PodView | None) -> list[dict[str, Any]]:
    """A replica's attempts, oldest first: the last ``EARLIER_LISTED`` earlier ones and the current one
    (the status's ``totalRetriedCount``, which the controller writes; a Pod's annotation may be anyone's).
    Only the current one has a Pod (the name is reused, the earlier Pod deleted before the next is
    created), so earlier ones say only that they were retried."""
    current = replica.retries
    earlier = [
        {"attempt": n, "current": False, "phase": "Retried", "pod": None, "node": None, "exit": None}
        for n in range(max(0, current - EARLIER_LISTED), current)
    ]
    now = {
        "attempt": current,
        "current": True,
        "phase": pod.phase if pod else NONE,
        "pod": pod.name if pod else None,
        "node": pod.node or None if pod else None,
        "exit": _exit(replica) if replica.exit_code is not None or replica.pod_reason else None,
        "created": pod.created if pod else "",
    }
    return [*earlier, now]


def tree(view: TaskSetView, pods: Mapping[str, PodView]) -> dict[str, Any]:
    """The TaskSet as a tree of plain data (``-o json`` prints it as it is)."""
    return {
        "namespace": view.namespace,
        "name": view.name,
        "state": view.state or NONE,
        "phase": view.phase or NONE,
        "retries": view.retries,
        "created": view.created,
        "roles": [
            {
                "name": role.name,
                "state": role.state or NONE,
                "phase": role.phase or NONE,
                "replicas": [
                    {
                        "index": replica.index,
                        "phase": replica.phase or NONE,
                        "pod": replica.pod_name or None,
                        "retries": replica.retries,
                        "stopped": replica.stopped,
                        "exit": _exit(replica),
                        "since": replica.transition_time,
                        "earlierAttemptsNotListed": max(0, replica.retries - EARLIER_LISTED),
                        "attempts": _attempts(replica, replica_pod(view, replica, pods)),
                    }
                    for replica in role.replicas
                ],
            }
            for role in view.roles
        ],
        "attemptHistory": {
            "attempts": [_attempt_entry(attempt) for attempt in view.attempts],
            "dropped": view.attempts_dropped,
        },
    }


def _attempt_entry(attempt: AttemptView) -> dict[str, Any]:
    """One ended attempt as ``-o json`` prints it: the status's own field names."""
    return {
        "attempt": attempt.attempt,
        "startAt": attempt.start_at or None,
        "finishAt": attempt.finish_at or None,
        "outcome": attempt.outcome or None,
        "reason": attempt.reason or None,
        "replica": attempt.replica or None,
        "exitCode": attempt.exit_code,
        "rule": attempt.rule or None,
        "action": attempt.action or None,
        "counted": attempt.counted,
    }


def _rows(data: Mapping[str, Any], now: datetime) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [
        (
            f"taskset/{data['name']}",
            data["state"],
            data["phase"],
            "",
            "",
            "",
            str(data["retries"]),
            age(data["created"], now),
        ),
    ]
    roles = data["roles"]
    for r, role in enumerate(roles):
        last_role = r == len(roles) - 1
        rows.append(
            (
                ("└── " if last_role else "├── ") + role["name"],
                role["state"],
                role["phase"],
                "",
                "",
                "",
                "",
                "",
            )
        )
        indent = "    " if last_role else "│   "
        for k, replica in enumerate(role["replicas"]):
            last_replica = k == len(role["replicas"]) - 1
            exit_text = "stopped" if replica["stopped"] else replica["exit"]
            rows.append(
                (
                    indent + ("└── " if last_replica else "├── ") + f"{role['name']}-{replica['index']}",
                    "",
                    replica["phase"],
                    replica["pod"] or NONE,
                    "",
                    exit_text,
                    str(replica["retries"]),
                    age(replica["since"], now),
                )
            )
            inner = indent + ("    " if last_replica else "│   ")
            if replica.get("earlierAttemptsNotListed"):
                hidden = f"{replica['earlierAttemptsNotListed']} earlier attempts"
                rows.append((inner + "├── " + hidden, "", "Retried", NONE, NONE, NONE, "", NONE))
            for a, attempt in enumerate(replica["attempts"]):
                branch = "└── " if a == len(replica["attempts"]) - 1 else "├── "
                rows.append(
                    (
                        inner + branch + f"attempt {attempt['attempt']}",
                        "",
                        attempt["phase"],
                        attempt["pod"] or NONE,
                        attempt["node"] or NONE,
                        attempt["exit"] or NONE,
                        "",
                        age(attempt.get("created", ""), now) if attempt["current"] else NONE,
                    )
                )
    return rows


def _colour(text: str, padded: str, colour: bool) -> str:
    code = _COLOURS.get(text.strip())
    return f"\x1b[{code}m{padded}\x1b[0m" if colour and code else padded


def table(header: Sequence[str], rows: Sequence[Sequence[str]], colour: bool = False) -> str:
    """Columns padded to their widest cell, two spaces apart; trailing blanks trimmed. Every cell is
    made ``printable`` before it is measured."""
    rows = [tuple(map(printable, row)) for row in rows]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = []
    for row in [header, *rows]:
        cells = [_colour(cell, cell.ljust(widths[i]), colour) for i, cell in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines) + "\n"


def render_tree(data: Mapping[str, Any], now: datetime, colour: bool = False) -> str:
    return table(_HEADER, _rows(data, now), colour)


def describe(
    view: TaskSetView, pods: Mapping[str, PodView], events: Sequence[EventView], now: datetime
) -> str:
    """``kubectl taskset describe``: the TaskSet, each replica's attempts and last words, the events."""
    out = [
        f"Name:          {view.name}",
        f"Namespace:     {view.namespace}",
        f"State:         {view.state or NONE}",
        f"Phase:         {view.phase or NONE}",
        f"Message:       {view.state_message or view.phase_message or NONE}",
        f"Attempts:      {view.retries + 1} (TaskSet retried {view.retries} times)",
        f"Created:       {view.created} ({age(view.created, now)} ago)",
        "Conditions:",
    ]
    conditions = [(c.type, c.status, c.reason, c.message) for c in view.conditions]
    out += _indented(table(("TYPE", "STATUS", "REASON", "MESSAGE"), conditions)) if conditions else ["  none"]
    out += attempt_history(view, now)
    out.append("Roles:")
    for role in view.roles:
        out.append(
            f"  {role.name}: {role.state or NONE} ({role.phase or NONE}) {role.state_message}".rstrip()
        )
        for replica in role.replicas:
            out += _replica_lines(replica, replica_pod(view, replica, pods))
    out.append("Events:")
    rows = [(e.type, e.reason, age(e.last, now), str(e.count), e.message) for e in events]
    out += _indented(table(("TYPE", "REASON", "AGE", "COUNT", "MESSAGE"), rows)) if rows else ["  none"]
    return "\n".join(printable(line).rstrip() for line in out) + "\n"


_HISTORY_HEADER: Final = (
    "ATTEMPT",
    "OUTCOME",
    "REPLICA",
    "EXIT",
    "RULE",
    "ACTION",
    "COUNTED",
    "REASON",
    "ENDED",
)


def attempt_history(view: TaskSetView, now: datetime) -> list[str]:
    """The ended attempts: why each ended and, for a failed one, the replica, exit code and
    failure rule that ended it, and whether a TaskSet retry was charged for it; the age it ended last."""
    lines = ["Attempt history:"]
    if not view.attempts:
        return [*lines, "  none"]
    rows = [_history_row(attempt, now) for attempt in view.attempts]
    lines += _indented(table(_HISTORY_HEADER, rows))
    if view.attempts_dropped:
        lines.append(f"  ({view.attempts_dropped} earlier attempts not listed)")
    return lines


def _history_row(attempt: AttemptView, now: datetime) -> tuple[str, ...]:
    return (
        str(attempt.attempt),
        attempt.outcome or NONE,
        attempt.replica or NONE,
        NONE if attempt.exit_code is None else str(attempt.exit_code),
        attempt.rule or NONE,
        attempt.action or NONE,
        "yes" if attempt.counted else "no",
        attempt.reason or NONE,
        age(attempt.finish_at, now),
    )


def _replica_lines(replica: ReplicaView, pod: PodView | None) -> list[str]:
    lines = [f"    {replica.key}: {replica.phase or NONE}, retried {replica.retries} times"]
    if replica.retries > EARLIER_LISTED:
        lines.append(f"      attempts 0-{replica.retries - EARLIER_LISTED - 1}: ended, retried (not listed)")
    for attempt in _attempts(replica, pod):
        if not attempt["current"]:
            lines.append(f"      attempt {attempt['attempt']}: ended, retried (its Pod was replaced)")
            continue
        where = f"Pod {attempt['pod']} on {attempt['node'] or NONE}" if attempt["pod"] else "no Pod now"
        lines.append(f"      attempt {attempt['attempt']}: {where}, exit {attempt['exit'] or NONE}")
    if replica.phase_message:
        lines.append(f"      message: {replica.phase_message}")
    if replica.exit_message:
        lines.append(f"      termination message: {replica.exit_message}")
    return lines


def _indented(text: str) -> list[str]:
    return ["  " + line for line in text.splitlines()]


def utc_now() -> datetime:
    return datetime.now(UTC)
