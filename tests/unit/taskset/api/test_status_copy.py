"""``TaskSetStatus.copy``: a pass's private copy shares no mutable part with the recorded status it was
made from, whatever fields the records have (a field added later and forgotten in ``copy`` fails here),
and equals it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import FrozenInstanceError, fields, is_dataclass, replace

import pytest

from taskset.api import copies
from taskset.api import status as st
from taskset.api.constants import ConditionStatus, ConditionType, FailureAction
from taskset.api.elastic_status import MembershipStatus, ScaleRecord, ScaleStatus

pytestmark = pytest.mark.unit

NOW = "2026-11-26T00:00:00Z"


def rich_status() -> st.TaskSetStatus:
    """A status with every optional part filled."""
    replica = st.ReplicaStatus(
        index=0,
        name="worker",
        pod_name="t-worker-0",
        terminated_info=st.TerminatedInfo(exit_code=1, exit_message="boom", reason="Error"),
        failure=st.FailureRecord("rule-0", FailureAction.RETRY_NOT_COUNTED, "evicted"),
        next_retry_at=NOW,
    )
    role = st.RoleStatus(
        name="worker",
        replicas=[replica, st.ReplicaStatus(index=1, name="worker")],
        last_scale=ScaleRecord(1, 2, NOW, by="kubectl", generation=2),
    )
    condition = st.Condition(ConditionType.RUNNING, ConditionStatus.TRUE, "Started", "running", NOW, 1)
    return st.TaskSetStatus(
        roles=[role],
        conditions=[condition],
        attempt_result=st.AttemptResult(False, "failed", final=True),
        scale=ScaleStatus(2, "TaskSet=t"),
        membership=MembershipStatus("t-membership", 2, "sha256:0"),
    )


def mutable_parts(node: object) -> Iterator[object]:
    """Every list, dict and record reachable from ``node``, itself included; a frozen record is not
    mutable itself (a copy may share it), its lists and dicts are."""
    if isinstance(node, list):
        yield node
        for item in node:
            yield from mutable_parts(item)
    elif isinstance(node, dict):
        yield node
        for value in node.values():
            yield from mutable_parts(value)
    elif is_dataclass(node) and not isinstance(node, type):
        if not type(node).__dataclass_params__.frozen:  # type: ignore[attr-defined]
            yield node
        for field in fields(node):
            yield from mutable_parts(getattr(node, field.name))


def test_the_records_a_copy_shares_cannot_change() -> None:
    info = st.TerminatedInfo(exit_code=1)
    with pytest.raises(FrozenInstanceError):
        info.exit_code = 0  # type: ignore[misc]
    failure = st.FailureRecord("rule-0", FailureAction.RETRY_NOT_COUNTED, "evicted")
    with pytest.raises(FrozenInstanceError):
        failure.message = ""  # type: ignore[misc]


def test_a_copy_equals_the_original() -> None:
    original = rich_status()
    assert original.copy() == original
    assert original.copy().full_json() == original.full_json()


@pytest.mark.parametrize(
    "status", [rich_status(), st.TaskSetStatus(), st.TaskSetStatus(roles=[st.RoleStatus.fresh("w", 3, NOW)])]
)
def test_a_copy_shares_no_mutable_part(status: st.TaskSetStatus) -> None:
    shared = {id(part) for part in mutable_parts(status)} & {
        id(part) for part in mutable_parts(status.copy())
    }
    assert not shared


def test_changing_a_copy_leaves_the_original_as_it_was() -> None:
    original = rich_status()
    before = original.full_json()
    changed = original.copy()
    changed.roles[0].replicas[0].phase_message = "changed"
    info = changed.roles[0].replicas[0].terminated_info
    assert info is not None
    changed.roles[0].replicas[0].terminated_info = replace(info, exit_code=9)
    changed.roles[0].replicas.append(st.ReplicaStatus(index=2, name="worker"))
    changed.conditions[0].message = "changed"
    assert original.full_json() == before


def test_a_pass_copies_each_replica_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pass copies every replica of its TaskSet: a second copy of each, thrown away, was a twentieth of a
    large TaskSet's pass."""
    status = rich_status()
    status.roles[0].replicas = [replace(status.roles[0].replicas[0], index=i) for i in range(50)]
    copied: list[object] = []
    shallow = copies.shallow

    def counting(node: object) -> object:
        copied.append(node)
        return shallow(node)

    monkeypatch.setattr(copies, "shallow", counting)
    fresh = status.copy()
    assert fresh == status
    replicas = [node for node in copied if isinstance(node, st.ReplicaStatus)]
    assert len(replicas) == 50
    assert {id(node) for node in replicas} == {id(r) for r in status.roles[0].replicas}
