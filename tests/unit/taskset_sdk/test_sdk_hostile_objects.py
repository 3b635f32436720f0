"""What the SDK and ``kubectl taskset`` read is untrusted: anyone who may create Pods in the namespace
can plant one under a finished replica's name with any annotations, and a container writes its own
termination message. The views relate a Pod to a replica only by the UID the controller recorded, the
work per object does not grow with a number someone wrote, and nothing printed reaches the terminal as
a control sequence."""

from __future__ import annotations

import json
import resource
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taskset_sdk.render import EARLIER_LISTED, describe, printable, render_tree, tree
from taskset_sdk.views import EventView, PodView, TaskSetView, replica_pod

NOW = datetime(2026, 1, 1, 0, 1, 0, tzinfo=UTC)
UNIT_UID = "unit-uid"
POD_UID = "pod-uid"
ESCAPES = "\x1b]0;owned\x07\x1b[2J\x1b[31mred\x9b1m\u202eevil\u2066\r\n\x00"


def finished(*, retries: int = 0, message: str = "done", unit_uid: str = UNIT_UID) -> dict[str, Any]:
    """A TaskSet whose replica w-0 finished; its Pod, recorded as POD_UID, is gone."""
    replica = {
        "index": 0,
        "phase": "TaskRoleReplicaCompleted",
        "totalRetriedCount": retries,
        "podName": "job-w-0",
        "podUID": POD_UID,
        "containerName": "main",
        "transitionTime": "2026-01-01T00:00:30Z",
        "terminatedInfo": {"exitCode": 1, "reason": "Error", "exitMessage": message},
    }
    return {
        "metadata": {"name": "job", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z"},
        "status": {
            "state": "Failed",
            "phase": "TaskSetCompleted",
            "controlUnitUID": unit_uid,
            "roleStatus": [{"name": "w", "phase": "TaskRoleCompleted", "replicaStatus": [replica]}],
        },
    }


def pod(uid: str, *, owner: str = UNIT_UID, attempt: str = "0", node: str = "node-1") -> PodView:
    return PodView.parse(
        {
            "metadata": {
                "name": "job-w-0",
                "uid": uid,
                "creationTimestamp": "2026-01-01T00:00:10Z",
                "annotations": {"ReplicaAttemptID": attempt, "TaskSetAttemptID": attempt},
                "ownerReferences": [{"kind": "ControlUnit", "uid": owner, "controller": True}],
            },
            "spec": {"nodeName": node, "containers": [{"name": "main"}]},
            "status": {"phase": "Running"},
        }
    )


PLANTED = pod("stranger", attempt="1000000000", node="evil-node")


@pytest.fixture
def bounded_memory() -> Iterator[None]:
    """A cap on the address space the work may add: a loop sized by a planted number dies here with
    MemoryError instead of taking the machine."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    used = int(Path("/proc/self/statm").read_text().split()[0]) * resource.getpagesize()
    resource.setrlimit(resource.RLIMIT_AS, (used + 512 * 1024 * 1024, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@pytest.mark.parametrize(
    ("pods", "related"),
    [
        pytest.param({"job-w-0": pod(POD_UID)}, True, id="the recorded Pod is the replica's"),
        pytest.param({"job-w-0": PLANTED}, False, id="a Pod planted under its name is not"),
        pytest.param({"job-w-0": pod(POD_UID, owner="x")}, False, id="nor one owned by another unit"),
        pytest.param({}, False, id="no Pod"),
    ],
)
def test_a_pod_is_the_replicas_only_by_the_recorded_uid(pods: dict[str, PodView], related: bool) -> None:
    view = TaskSetView.parse(finished())
    (replica,) = view.roles[0].replicas
    assert (replica_pod(view, replica, pods) is not None) is related


def test_a_replica_without_a_recorded_uid_has_no_pod() -> None:
    raw = finished(unit_uid="")
    raw["status"]["roleStatus"][0]["replicaStatus"][0]["podUID"] = None
    view = TaskSetView.parse(raw)
    assert replica_pod(view, view.roles[0].replicas[0], {"job-w-0": pod("")}) is None


def test_a_planted_pod_with_a_huge_attempt_id_costs_nothing_and_shows_nowhere(
    bounded_memory: None,
) -> None:
    """The plugin's get (one TaskSet or the namespace), -o json and describe: all bounded, none of the
    planted Pod's attempt, node or phase shown."""
    view = TaskSetView.parse(finished())
    pods = {"job-w-0": PLANTED}
    data = tree(view, pods)
    (replica,) = data["roles"][0]["replicas"]
    assert replica["attempts"] == [
        {
            "attempt": 0,
            "current": True,
            "phase": "-",
            "pod": None,
            "node": None,
            "exit": "1 Error",
            "created": "",
        }
    ]
    text = render_tree(data, NOW) + json.dumps(data) + describe(view, pods, [], NOW)
    assert "1000000000" not in text and "evil-node" not in text and "stranger" not in text


@pytest.mark.parametrize("retries", [0, 1, EARLIER_LISTED, EARLIER_LISTED + 1, 1_000_000])
def test_earlier_attempts_are_listed_up_to_a_bound_then_counted(retries: int, bounded_memory: None) -> None:
    view = TaskSetView.parse(finished(retries=retries))
    data = tree(view, {"job-w-0": pod(POD_UID)})
    (replica,) = data["roles"][0]["replicas"]
    listed = [a["attempt"] for a in replica["attempts"]]
    assert listed == list(range(max(0, retries - EARLIER_LISTED), retries + 1))
    assert replica["earlierAttemptsNotListed"] == max(0, retries - EARLIER_LISTED)
    assert replica["attempts"][-1]["pod"] == "job-w-0"
    rows = render_tree(data, NOW).splitlines()
    assert len(rows) == 4 + len(listed) + (retries > EARLIER_LISTED)
    if retries > EARLIER_LISTED:
        assert f"{retries - EARLIER_LISTED} earlier attempts" in rows[4]
    assert len(describe(view, {}, [], NOW).splitlines()) < 20 + EARLIER_LISTED


def test_escapes_in_a_termination_message_reach_no_terminal() -> None:
    raw = finished(message=ESCAPES)
    raw["status"]["stateMessage"] = ESCAPES
    raw["status"]["conditions"] = [{"type": "Failed", "status": "True", "reason": "x", "message": ESCAPES}]
    raw["status"]["roleStatus"][0]["replicaStatus"][0]["phaseMessage"] = ESCAPES
    view = TaskSetView.parse(raw)
    event = EventView.parse({"type": "Warning", "reason": ESCAPES, "message": ESCAPES, "count": 1})
    text = describe(view, {}, [event], NOW) + render_tree(tree(view, {}), NOW, colour=True)
    unsafe = {char for char in text if char != "\n" and printable(char) != char}
    # Colour codes are the renderer's own (ESC [ digits m); everything else must be gone.
    assert unsafe <= {"\x1b"}, unsafe
    assert "\x1b[" not in text.replace("\x1b[0m", "").replace("\x1b[31m", "").replace("\x1b[36m", "")
    assert "termination message: \\x1b]0;owned\\x07\\x1b[2J\\x1b[31mred\\x9b1m\\u202eevil\\u2066" in text


@given(st.text())
def test_printable_leaves_no_control_character_and_keeps_the_rest(text: str) -> None:
    shown = printable(text)
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 or c in "\u202e\u2066\u2028" for c in shown)
    assert printable(shown) == shown  # escaping twice changes nothing
    kept = [c for c in text if c.isprintable() and c not in "\\\u2028\u2029"]
    assert all(c in shown for c in kept)


@pytest.mark.parametrize(
    "status",
    [
        pytest.param({"roleStatus": "junk"}, id="roles no list"),
        pytest.param({"roleStatus": [7, {"name": "w", "replicaStatus": ["x", {"index": "abc"}]}]}, id="junk"),
        pytest.param(
            {"roleStatus": [{"name": "w", "replicaStatus": [{"index": 0, "totalRetriedCount": "9" * 5000}]}]},
            id="a count of more digits than int() converts",
        ),
        pytest.param(
            {"roleStatus": [{"name": "w", "replicaStatus": [{"index": 0, "totalRetriedCount": -4}]}]},
            id="a negative count",
        ),
        pytest.param({"conditions": [None], "attemptHistory": "x", "totalRetriedCount": True}, id="types"),
        pytest.param(
            {
                "startAt": "yesterday",
                "roleStatus": [
                    {
                        "name": "w",
                        "replicaStatus": [
                            {"index": 0, "transitionTime": "not a time", "terminatedInfo": "x"}
                        ],
                    }
                ],
            },
            id="bad times",
        ),
    ],
)
def test_a_malformed_status_renders_instead_of_crashing(status: dict[str, Any], bounded_memory: None) -> None:
    view = TaskSetView.parse({"metadata": {"name": "job", "creationTimestamp": "garbage"}, "status": status})
    render_tree(tree(view, {}), NOW)
    json.dumps(tree(view, {}))
    describe(view, {}, [], NOW)
