"""What others write into the status is clipped to documented lengths, so that content alone
can never make the status too large for etcd (a 4 KiB termination message per replica once did)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from taskset.api.constants import ConditionStatus, ConditionType, ReplicaPhase
from taskset.api.status import (
    CLIPPED,
    EXIT_MESSAGE_MAX,
    IDENTIFIER_MAX,
    MESSAGE_MAX,
    QUOTED_MAX,
    REASON_MAX,
    AttemptResult,
    ReplicaStatus,
    RoleStatus,
    TaskSetStatus,
    TerminatedInfo,
    clip,
)
from taskset.decide import WAIT_MESSAGE_MAX, WAITING_SUMMARY_MAX
from taskset.observed.views import pod_view
from tests.unit.taskset.api.test_status_size import ETCD_REQUEST_LIMIT, big_status

HUGE = "x" * 100_000


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        pytest.param("", 8, "", id="an empty text stays empty"),
        pytest.param("short", 8, "short", id="a short text is kept whole"),
        pytest.param("12345678", 8, "12345678", id="a text exactly at the limit is kept whole"),
        pytest.param("123456789", 8, "12345...", id="one character over is clipped, visibly, to the limit"),
        pytest.param("x" * 4096, 256, "x" * 253 + "...", id="a 4 KiB termination message keeps its start"),
        pytest.param("ü" * 9, 8, "üüüüü...", id="characters count, not UTF-8 bytes"),
        pytest.param("ü" * 8, 8, "ü" * 8, id="eight two-byte characters are exactly at a limit of eight"),
        pytest.param("🙂" * 10, 8, "🙂" * 5 + "...", id="a character outside the BMP is never split"),
        pytest.param('a\nb\tc\x00d"e\\f', 8, "a\nb\tc...", id="control characters are characters too"),
    ],
)
def test_clip_cuts_a_text_to_its_limit_and_says_so(text: str, limit: int, expected: str) -> None:
    clipped = clip(text, limit)
    assert clipped == expected
    assert len(clipped) <= limit
    assert clip(clipped, limit) == clipped  # clipping twice changes nothing: the status settles
    assert clipped.encode("utf-8").decode("utf-8") == clipped  # always valid text


def replica_with(text: str) -> ReplicaStatus:
    """A replica whose every field that outside texts reach carries ``text``."""
    return ReplicaStatus(
        index=0,
        name="w",
        phase=ReplicaPhase.COMPLETED,
        phase_message=text,
        pod_name="job-w-0",
        pod_reason=text,
        container_id=text,
        terminated_info=TerminatedInfo(0, text, 0, text),
    )


def status_with(text: str) -> TaskSetStatus:
    status = TaskSetStatus(phase_message=text, state_message=text, attempt_result=AttemptResult(False, text))
    role = RoleStatus("w", [replica_with(text)], phase_message=text, state_message=text)
    status.roles = [role]
    status.set_condition(ConditionType.RUNNING, ConditionStatus.TRUE, "Running", text, "2026-01-01T00:00:00Z")
    return status


REPLICA = "roleStatus.replicaStatus."
BOUNDS = {  # every field outside texts reach, by its path in the status
    "phaseMessage": MESSAGE_MAX,
    "stateMessage": MESSAGE_MAX,
    "attemptResult.reason": MESSAGE_MAX,
    "conditions.message": MESSAGE_MAX,
    "roleStatus.phaseMessage": MESSAGE_MAX,
    "roleStatus.stateMessage": MESSAGE_MAX,
    REPLICA + "phaseMessage": MESSAGE_MAX,
    REPLICA + "podReason": REASON_MAX,
    REPLICA + "containerID": IDENTIFIER_MAX,
    REPLICA + "terminatedInfo.exitMessage": EXIT_MESSAGE_MAX,
    REPLICA + "terminatedInfo.reason": REASON_MAX,
}


def strings(obj: Any, path: str = "") -> list[tuple[str, str]]:
    """Every (path, string) pair in a JSON value; a path names its keys, not the list indices."""
    if isinstance(obj, str):
        return [(path, obj)]
    if isinstance(obj, dict):
        return [pair for k, v in obj.items() for pair in strings(v, f"{path}.{k}" if path else k)]
    if isinstance(obj, list):
        return [pair for item in obj for pair in strings(item, path)]
    return []


def test_every_outside_text_in_the_status_is_clipped_to_its_field_bound() -> None:
    written = status_with(HUGE).to_json()
    found = {path for path, value in strings(written) if value.endswith(CLIPPED)}
    assert found == set(BOUNDS)  # every field that outside texts reach is bounded, no other field changed
    for path, value in strings(written):
        assert len(value) == BOUNDS.get(path, len(value)), path
    replica = written["roleStatus"][0]["replicaStatus"][0]
    assert len(replica["terminatedInfo"]["exitMessage"]) == EXIT_MESSAGE_MAX
    assert len(written["attemptResult"]["reason"]) == MESSAGE_MAX
    assert len(written["conditions"][0]["message"]) == MESSAGE_MAX


def test_a_clipped_status_round_trips_unchanged() -> None:
    written = status_with(HUGE).to_json()
    again = TaskSetStatus.from_json(written)
    assert again is not None and again.to_json() == written


def test_texts_within_their_bounds_are_written_as_they_are() -> None:
    written = status_with("x" * REASON_MAX).to_json()
    assert all(value == "x" * REASON_MAX for path, value in strings(written) if path in BOUNDS)


def test_the_controllers_own_bounds_fit_in_the_status_bound_so_nothing_is_clipped_twice() -> None:
    assert WAIT_MESSAGE_MAX <= MESSAGE_MAX
    assert WAITING_SUMMARY_MAX <= MESSAGE_MAX
    # P5's text for a Pod lost to phase Unknown, with the retry decision after it, still fits.
    exit_text = f"PodPhase:{'P' * REASON_MAX} ,PodMessage:{'m' * QUOTED_MAX} ,PodReason: {'r' * REASON_MAX}"
    decision = "; Policy.Retry is true,and current retry time is smaller than MaxRetryCount"
    assert len(exit_text + decision) <= MESSAGE_MAX


def terminated_pod(message: str, reason: str, pod_message: str, pod_reason: str) -> dict[str, Any]:
    terminated = {"exitCode": 1, "message": message, "reason": reason, "finishedAt": "2026-01-01T00:00:09Z"}
    return {
        "metadata": {"name": "job-w-0", "uid": "u"},
        "spec": {"containers": [{"name": "c0"}]},
        "status": {
            "phase": "Failed",
            "message": pod_message,
            "reason": pod_reason,
            "containerStatuses": [{"name": "c0", "state": {"terminated": terminated}}],
        },
    }


def test_a_pod_view_bounds_the_texts_a_replica_quotes_or_keeps() -> None:
    view = pod_view(terminated_pod("t" * 4096, "R" * 1000, "m" * 10_000, "P" * 1000))
    assert view.terminated is not None
    assert view.terminated.message == clip("t" * 4096, EXIT_MESSAGE_MAX)
    assert view.terminated.reason == clip("R" * 1000, REASON_MAX)
    assert view.message == clip("m" * 10_000, QUOTED_MAX)
    assert view.reason == clip("P" * 1000, REASON_MAX)


def test_a_pod_view_keeps_ordinary_texts_whole() -> None:
    view = pod_view(terminated_pod("boom", "Error", "The node was low on resource: memory.", "Evicted"))
    assert view.terminated is not None
    assert (view.terminated.message, view.terminated.reason) == ("boom", "Error")
    assert (view.message, view.reason) == ("The node was low on resource: memory.", "Evicted")


def worst_replica_bytes() -> int:
    """Bytes of one replica's entry with every outside text at its bound, in 4-byte characters."""
    status = big_status(1)
    replica = status.roles[0].replicas[0]
    wide = "🙂" * 10_000
    replica.phase_message = wide
    replica.pod_reason = wide
    replica.container_id = wide
    replica.terminated_info = TerminatedInfo(1, wide, 9, wide)
    return len(orjson.dumps(status.to_json()["roleStatus"][0]["replicaStatus"][0]))


def test_400_replicas_with_maximal_termination_messages_are_well_under_the_etcd_limit() -> None:
    status = big_status(400)
    for replica in status.roles[0].replicas:
        assert replica.terminated_info is not None
        replica.terminated_info = replace(
            replica.terminated_info, exit_message="x" * 4096
        )  # the kubelet's maximum
    size = len(orjson.dumps(status.to_json()))
    worst = worst_replica_bytes()
    print(f"400 replicas x 4 KiB termination messages: {size} bytes; worst replica entry: {worst} bytes")
    print(f"10,000 replicas at the worst: {10_000 * worst} bytes, which needs the compact status")
    assert size < ETCD_REQUEST_LIMIT // 3
    # Every field at its bound, in 4-byte characters: 1,792 characters of outside text and our own fields.
    assert worst < 8 * 1024


MANUAL = Path(__file__).resolve().parents[4] / "docs" / "user-manual.md"


@pytest.mark.parametrize(
    ("field", "bound"),
    [
        pytest.param("`terminatedInfo.exitMessage`", EXIT_MESSAGE_MAX, id="the exit message"),
        pytest.param("`terminatedInfo.reason`, `podReason`", REASON_MAX, id="the reasons"),
        pytest.param("`containerID`", IDENTIFIER_MAX, id="the container ID"),
        pytest.param("a Pod's message or an API server's refusal", QUOTED_MAX, id="a quoted text"),
        pytest.param("every `phaseMessage`, `stateMessage`", MESSAGE_MAX, id="the messages"),
    ],
)
def test_the_user_manual_states_the_bounds_the_code_has(field: str, bound: int) -> None:
    rows = [  # the bounds table has three columns: field, bound, why
        line
        for line in MANUAL.read_text().splitlines()
        if line.startswith(f"| {field}") and line.count("|") == 4
    ]
    assert len(rows) == 1, field
    assert rows[0].split("|")[2].strip() == str(bound)
