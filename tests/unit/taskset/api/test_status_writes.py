"""A status written again with the write before lent (``StatusWriter``) is exactly the status written
from scratch (``TaskSetStatus.to_json``), whatever a pass changed: any field of any replica (records
changed in place or replaced, texts the API server escapes, Pod names in and out of the role's prefix),
replicas added or dropped, the role's own fields; in the full shape, the compact one, and across the
status budget's edge, measured to the byte."""

from __future__ import annotations

import random
import tracemalloc
from collections.abc import Callable
from dataclasses import fields, replace
from typing import Any

import orjson
import pytest

from taskset.api import compact
from taskset.api.constants import FailureAction
from taskset.api.constants import ReplicaPhase as P
from taskset.api.retry_effects import RetryEffect
from taskset.api.status import FailureRecord, ReplicaStatus, RoleStatus, TaskSetStatus, TerminatedInfo
from taskset.api.status_writes import StatusWriter

pytestmark = pytest.mark.unit

MESSAGES = ["", "Pod is running", "Pod is unschedulable: 0/4 nodes <taint>", "a & b", "line\u2028sep", "bye"]


def replica(rng: random.Random, index: int, role: str) -> ReplicaStatus:
    r = ReplicaStatus(index=index, name=role, transition_time="2026-01-01T00:00:00Z")
    for _ in range(rng.randrange(4)):
        edit(rng, r, role)
    return r


def edit(rng: random.Random, r: ReplicaStatus, role: str) -> None:
    """One change a pass (or a hand edit read back) makes to a replica."""
    change = rng.randrange(12)
    if change == 0:
        r.phase = rng.choice(list(P))
    elif change == 1:
        r.phase_message = rng.choice(MESSAGES)
    elif change == 2:
        r.stopped = not r.stopped
    elif change == 3:
        r.suspended = not r.suspended
    elif change == 4:
        r.pod_name = rng.choice(["", f"job-{role}-{r.index}", f"other-{r.index}", f"job-{role}-x"])
        r.pod_uid = rng.choice([None, f"00000000-0000-4000-8000-{r.index:012d}", "not a uid"])
    elif change == 5:
        r.total_retried_count = rng.choice([0, 1, 7])
        r.uncounted_retries = rng.choice([0, 1, 99, 100])
    elif change == 6:
        ended = [TerminatedInfo(0, "", 0, "Completed"), TerminatedInfo(3, "<x>")]
        r.terminated_info = rng.choice([None, *ended])
    elif change == 7 and r.terminated_info is not None:  # a record is replaced, never changed in place
        r.terminated_info = replace(
            r.terminated_info, exit_code=rng.choice([0, 1, True, False]), signal=rng.choice([0, 9, True])
        )
    elif change == 8:
        action = rng.choice(list(FailureAction))
        r.failure = rng.choice([None, FailureRecord("oom", action, "OOMKilled & gone")])
    elif change == 9:
        r.transition_time = rng.choice([None, "2026-01-01T00:00:07Z", "garbage"])
    elif change == 10:
        r.pod_host_ip, r.pod_ip = rng.choice([("", ""), ("10.1.0.1", "10.0.0.3")])
        r.container_name, r.container_id = rng.choice([("", ""), ("main", "containerd://abc")])
    else:
        r.pod_reason = rng.choice(["", "Evicted", "AlreadyExists"])


def status(rng: random.Random, roles: dict[str, int]) -> TaskSetStatus:
    return TaskSetStatus(
        roles=[RoleStatus(name, [replica(rng, i, name) for i in range(n)]) for name, n in roles.items()],
        transition_time="2026-01-01T00:00:00Z",
    )


def step(rng: random.Random, st: TaskSetStatus) -> TaskSetStatus:
    """The next pass: a private copy with a few changes."""
    st = st.copy()
    role = rng.choice(st.roles)
    for _ in range(rng.randrange(5)):
        if role.replicas and rng.random() < 0.85:
            edit(rng, rng.choice(role.replicas), role.name)
        elif rng.random() < 0.5 and role.replicas:
            role.replicas.pop()
        else:
            role.replicas.append(replica(rng, len(role.replicas), role.name))
    if rng.random() < 0.1:
        role.phase_message = rng.choice(MESSAGES) * rng.choice([1, 200])
    return st


@pytest.mark.parametrize(
    ("seed", "roles"),
    [(seed, {"ps": 2, "worker": 30}) for seed in range(12)]
    + [(seed, {"ps": 1, "worker": 2500}) for seed in range(2)]  # measured, then compact
    + [(0, {"worker": 4000})],  # compact without measuring
)
def test_a_write_with_the_one_before_lent_equals_one_from_scratch(seed: int, roles: dict[str, int]) -> None:
    rng = random.Random(seed)
    writer = StatusWriter()
    st = status(rng, roles)
    for _ in range(8 if sum(roles.values()) > 100 else 40):
        assert orjson.dumps(writer.to_json(st)) == orjson.dumps(st.to_json())  # to the byte: 1 is not true
        st = step(rng, st)


@pytest.mark.parametrize("over", [-1, 0, 1])
def test_the_budget_edge_is_measured_to_the_byte(over: int) -> None:
    """A status one byte under, at, or one byte over the budget, its texts escaped on the wire: the
    shape chosen from the lent sizes is the one chosen from the whole JSON."""
    rng = random.Random(5)
    st = status(rng, {"worker": 1800})
    last = st.roles[0].replicas[-1]
    last.phase_message = ""
    missing = compact.STATUS_BUDGET - compact.json_bytes(st.full_json())
    assert 0 < missing < 600_000
    fill = [r for r in st.roles[0].replicas[:-1] if not r.phase_message]
    for r in fill[: max(0, missing - 400) // 300 + 1]:  # escaped text: 300 bytes on the wire for 50
        r.phase_message = "<" * 50
    missing = compact.STATUS_BUDGET - compact.json_bytes(st.full_json())
    assert 0 < missing < 1_000
    last.phase_message = "x" * (missing + over)
    assert compact.json_bytes(st.full_json()) == compact.STATUS_BUDGET + over
    writer = StatusWriter()
    assert orjson.dumps(writer.to_json(st.copy())) == orjson.dumps(st.to_json())
    assert (compact.ROWS in st.to_json()["roleStatus"][0]) == (over > 0)
    assert orjson.dumps(writer.to_json(st.copy())) == orjson.dumps(st.to_json())  # all lent


@pytest.mark.parametrize("name", [f.name for f in fields(ReplicaStatus)])
def test_a_change_of_any_field_of_a_replica_is_written(name: str) -> None:
    """A field added to ``ReplicaStatus`` is compared too, or the writer would reuse a stale record: each
    field changed alone, at the replica's place, in a pass's copy as in the replica itself."""
    base = ReplicaStatus(index=0, name="w", terminated_info=TerminatedInfo(0), failure=None)
    others = {
        "index": 1,
        "name": "x",
        "phase": P.COMPLETED,
        "terminated_info": TerminatedInfo(1),
        "failure": FailureRecord("r", FailureAction.FAIL_ROLE, ""),
        "next_attempt": RetryEffect(after_attempt=0, avoid_nodes=("node-a",), reason="lost node"),
    }
    st = TaskSetStatus(roles=[RoleStatus("w", [base, ReplicaStatus(1, "w")])])
    writer = StatusWriter()
    writer.to_json(st)
    for changed in (st.copy(), st):
        replica = changed.roles[0].replicas[0]
        value = getattr(replica, name)
        setattr(replica, name, others.get(name, not value if isinstance(value, bool) else "other"))
        assert getattr(replica, name) != value
        assert orjson.dumps(writer.to_json(changed)) == orjson.dumps(changed.to_json()), name


def test_a_boolean_exit_code_read_from_a_hand_edit_is_written_as_it_reads() -> None:
    """``exitCode: true`` parses (a bool is an int), equals 1 as a key, and is written ``true``."""
    st = TaskSetStatus(roles=[RoleStatus("w", [ReplicaStatus(0, "w", terminated_info=TerminatedInfo(1))])])
    writer = StatusWriter()
    writer.to_json(st)
    edited = st.copy()
    edited.roles[0].replicas[0].terminated_info = TerminatedInfo(True)
    assert orjson.dumps(writer.to_json(edited)) == orjson.dumps(edited.to_json())


def test_a_replica_changed_after_a_write_of_the_same_status_is_written_as_it_is_now() -> None:
    """A pass that persists first writes its status, then goes on changing the same replicas and writes
    again: the second write must not take the first's record for a replica that is now different."""
    st = TaskSetStatus(roles=[RoleStatus("w", [ReplicaStatus(i, "w") for i in range(3)])])
    writer = StatusWriter()
    writer.to_json(st)
    st.roles[0].replicas[1].phase_message = "changed after the first write"
    st.roles[0].replicas[2].terminated_info = TerminatedInfo(0, reason="Completed")
    assert orjson.dumps(writer.to_json(st)) == orjson.dumps(st.to_json())


def test_an_equal_record_that_is_not_the_same_object_is_compared_by_content() -> None:
    """Equal fields, but the exit code's record replaced by an equal one of another type: the record is
    written as it reads now."""
    st = TaskSetStatus(roles=[RoleStatus("w", [ReplicaStatus(0, "w", terminated_info=TerminatedInfo(0))])])
    writer = StatusWriter()
    writer.to_json(st)
    again = st.copy()
    again.roles[0].replicas[0].terminated_info = TerminatedInfo(False)
    written = orjson.dumps(writer.to_json(again))
    assert b'"exitCode":false' in written
    assert written == orjson.dumps(again.to_json())


@pytest.mark.parametrize(
    ("seed", "roles"),
    [(seed, {"ps": 2, "worker": 30}) for seed in range(12)]
    + [(seed, {"ps": 1, "worker": 2500}) for seed in range(2)],  # measured, then compact
)
def test_a_writer_that_adopts_the_parse_of_each_write_still_writes_as_from_scratch(
    seed: int, roles: dict[str, int]
) -> None:
    """As a TaskSet's record runs it: each pass copies the parse of the status written before (read back
    live now and then, so that nothing is shared), and the writer adopts that parse's replicas in place
    of the values it kept (``StatusWriter.adopt``): it holds no replica the parse does not."""
    rng = random.Random(seed)
    writer, st = StatusWriter(), status(rng, roles)
    previous: tuple[object, TaskSetStatus | None] | None = None
    adopted = 0
    for _ in range(8 if sum(roles.values()) > 100 else 40):
        wire = writer.to_json(st)
        assert orjson.dumps(wire) == orjson.dumps(st.to_json())
        if rng.random() < 0.1:
            wire = orjson.loads(orjson.dumps(wire))
        parsed = TaskSetStatus.from_json(wire, previous)
        assert parsed is not None
        writer.adopt(wire, parsed)
        kept = {name: seen for name, (seen, _) in writer._last.items()}  # what the writer holds, by role
        for role in parsed.roles:
            as_parsed = [seen for seen in kept[role.name] if isinstance(seen, ReplicaStatus)]
            assert all(any(seen is r for r in role.replicas) for seen in as_parsed)  # held once
            adopted += len(as_parsed)
        previous = (wire, parsed)
        st = step(rng, parsed)
    assert adopted > 0


def test_a_replica_is_adopted_only_when_its_parse_holds_the_same_values() -> None:
    """The written record parses to other values (a role name the replica did not have): kept as values,
    and a pass that copies the parse writes what the parse holds."""
    st = TaskSetStatus(roles=[RoleStatus("w", [ReplicaStatus(0, "w"), ReplicaStatus(1, "other-name")])])
    writer = StatusWriter()
    wire = writer.to_json(st)
    parsed = TaskSetStatus.from_json(wire)
    assert parsed is not None
    writer.adopt(wire, parsed)
    seen, _ = writer._last["w"]
    assert seen[0] is parsed.roles[0].replicas[0]
    assert isinstance(seen[1], tuple)
    again = parsed.copy()
    assert orjson.dumps(writer.to_json(again)) == orjson.dumps(again.to_json())
    assert orjson.dumps(writer.to_json(again)) != orjson.dumps(wire)


def test_a_written_replica_holds_its_keys_once() -> None:
    """The records a written status holds, a dict of twenty keys a replica kept until the next write,
    point at one table of keys: over 100 bytes less a replica than the same dicts each with a table of
    its own, though they hold the nested records too, and equal to those, in their order."""
    replicas = status(random.Random(7), {"worker": 500}).roles[0].replicas

    def held(build: Callable[[], list[dict[str, Any]]]) -> tuple[int, list[dict[str, Any]]]:
        tracemalloc.start()
        try:
            records = build()
            return tracemalloc.get_traced_memory()[0], records
        finally:
            tracemalloc.stop()

    shared, written = held(lambda: [r.to_json() for r in replicas])
    own_tables, plain = held(lambda: [dict(record.items()) for record in written])
    assert own_tables - shared > 100 * len(replicas)
    assert written == plain and all(list(w) == list(p) for w, p in zip(written, plain, strict=True))
