"""The user manual's table of Events is the code's: every reason the controller can send is in it with
its type, and nothing else; and the figures it gives for folding repeats are the correlator's."""

from __future__ import annotations

import re
from pathlib import Path

from taskset.api.constants import EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, WARNING_EVENT_REASONS, EventReason
from taskset.runtime import event_correlator as ec
from taskset.runtime import events

ROOT = Path(__file__).resolve().parents[2]
MANUAL = ROOT / "docs" / "user-manual.md"
MARK = "<!-- events-table: reason | type | when | message -->"


def table() -> dict[str, str]:
    """Reason -> type, from the rows that follow the mark."""
    text = MANUAL.read_text()
    assert MARK in text, "the events table's mark is gone"
    rows = {}
    for line in text.split(MARK, 1)[1].lstrip("\n").splitlines()[2:]:
        if not line.startswith("|"):
            break
        reason, kind = (cell.strip() for cell in line.strip("|").split("|")[:2])
        assert reason.startswith("`") and reason.endswith("`"), line
        assert reason.strip("`") not in rows, f"{reason} twice"
        rows[reason.strip("`")] = kind
    return rows


def emitted() -> set[str]:
    """The reasons the code names where it makes an Event (every ``EventReason.X`` outside the enum)."""
    members = {member.name: member.value for member in EventReason}
    found = set()
    for path in (ROOT / "taskset").rglob("*.py"):
        if path.name == "constants.py" and path.parent.name == "api":
            continue
        for name in re.findall(r"EventReason\.([A-Z_]+)", path.read_text()):
            assert name in members, f"{path}: EventReason.{name} is not a reason"
            found.add(members[name])
    return found


def test_every_reason_the_code_sends_is_in_the_table_and_nothing_else() -> None:
    documented = set(table())
    assert emitted() == {reason.value for reason in EventReason}, "a reason no code sends: drop it"
    assert documented == emitted(), (
        f"missing from the table: {sorted(emitted() - documented)}; "
        f"in the table but never sent: {sorted(documented - emitted())}"
    )


def test_the_table_gives_each_reason_its_type() -> None:
    for reason, kind in table().items():
        expected = EVENT_TYPE_WARNING if EventReason(reason) in WARNING_EVENT_REASONS else EVENT_TYPE_NORMAL
        assert kind == expected, reason


def test_the_folding_figures_are_the_correlators() -> None:
    text = " ".join(MANUAL.read_text().split(MARK, 1)[1].split())  # one line: the sentences wrap
    for said in (
        f"Once {ec.AGGREGATE_AFTER} different messages",
        f"within {ec.AGGREGATE_WINDOW:.0f} s of the previous one",
        f"silent for {ec.AGGREGATE_WINDOW:.0f} s",
        f"`{ec.COMBINED_PREFIX}<the latest message>`",
        f"At most {ec.SPAM_BURST} Event writes",
        f"per {ec.SPAM_REFILL_SECONDS:.0f} s",
        f"up to {events.BUFFER:,} waiting",
    ):
        assert said in text, said
