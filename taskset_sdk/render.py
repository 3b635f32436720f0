"""What ``kubectl taskset`` prints, as pure functions of the SDK's views and the current time: the tree
of a TaskSet (roles -> replicas -> attempts), its JSON form, ``describe``, and the ages. Colours only
when asked (the plugin asks on a terminal); every column is padded before it is coloured, so a
coloured table lines up like a plain one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from taskset_sdk.views import AttemptView, EventView, PodView, ReplicaView, TaskSetView

__all__ = ["age", "describe", "render_tree", "tree"]

_COLOURS: Final = {"Succeeded": "32", "Failed": "31", "Running": "36", "Waiting": "33"}
_HEADER: Final = ("NAME", "STATE", "PHASE", "POD", "NODE", "EXIT", "RETRIES", "AGE")
NONE: Final = "-"


def age(timestamp: str, now: datetime) -> str:
    """kubectl's short age: ``45s``, ``3m12s``, ``2h5m``, ``4d``; ``-`` without a time."""
    if not timestamp:
        return NONE
    then = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
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
    """A replica's attempts, oldest first. Only the current one has a Pod (the name is reused, the
    earlier Pod deleted before the next is created), so earlier ones say only that they were retried."""
    current = pod.replica_attempt if pod and pod.replica_attempt is not None else replica.retries
    earlier = [
        {"attempt": n, "current": False, "phase": "Retried", "pod": None, "node": None, "exit": None}
        for n in range(current)
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
                        "attempts": _attempts(replica, pods.get(replica.pod_name)),
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
    """Columns padded to their widest cell, two spaces apart; trailing blanks trimmed."""
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
            out += _replica_lines(replica, pods.get(replica.pod_name))
    out.append("Events:")
    rows = [(e.type, e.reason, age(e.last, now), str(e.count), e.message) for e in events]
    out += _indented(table(("TYPE", "REASON", "AGE", "COUNT", "MESSAGE"), rows)) if rows else ["  none"]
    return "\n".join(line.rstrip() for line in out) + "\n"


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
