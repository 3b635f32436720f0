"""Parsing a status with the version before lent (``TaskSetStatus.from_json(raw, previous)``) gives
exactly what a parse from scratch gives, whatever changed between the two versions. In the compact shape
(``compact.unchanged_rows``): the rows, the texts and their order, the full records, the Pod name
prefix, the roles, the replica counts, or garbage written by hand. In the full shape (the very records
the status writer handed on): any field of any replica, records read back, moved or junk. Random walks
over such changes, each step checked, and the lent parse of every step is itself a lent one, as in the
controller's records."""

from __future__ import annotations

import copy
import random
from typing import Any

import orjson
import pytest

from clock import FakeClock
from taskset.api import compact
from taskset.api.constants import ReplicaPhase as P
from taskset.api.status import ReplicaStatus, RoleStatus, TaskSetStatus, TerminatedInfo
from taskset.api.status_writes import StatusWriter
from taskset.runtime.records import StatusRecords
from tests.unit.taskset.api import test_status_writes as writes

pytestmark = pytest.mark.unit

T0 = "2026-01-01T00:00:00Z"
PHASES = [P.ATTEMPT_PENDING, P.ATTEMPT_CREATION_REQUESTED, P.ATTEMPT_RUNNING, P.COMPLETED]
MESSAGES = ["", "Pod is running", "Pod is unschedulable: 0/4 nodes", "Held: by Kueue", "bye"]


def replica(rng: random.Random, index: int, role: str, prefix: str) -> ReplicaStatus:
    phase = rng.choice(PHASES)
    started = phase != P.ATTEMPT_PENDING
    ended = phase == P.COMPLETED
    return ReplicaStatus(
        index=index,
        name=role,
        phase=phase,
        phase_message=rng.choice(MESSAGES),
        transition_time=f"2026-01-01T00:00:{rng.randrange(60):02d}Z",
        total_retried_count=rng.choice([0, 0, 0, 1, 2]),
        pod_name=f"{prefix}{index}" if started else "",
        pod_uid=f"00000000-0000-0000-0000-{rng.randrange(4):012d}" if started else None,
        pod_host_ip=rng.choice(["10.1.0.1", "10.1.0.2"]) if started else "",
        container_name="main" if started else "",
        terminated_info=TerminatedInfo(rng.choice([0, 0, 0, 3]), "", 0, "Completed") if ended else None,
    )


def status(rng: random.Random, roles: dict[str, int]) -> TaskSetStatus:
    return TaskSetStatus(
        roles=[
            RoleStatus(name=name, replicas=[replica(rng, i, name, f"job-{name}-") for i in range(n)])
            for name, n in roles.items()
        ],
        transition_time=T0,
    )


def mutate(rng: random.Random, wire: dict[str, Any]) -> dict[str, Any]:
    """The next version: one of the changes a status write or a hand edit makes."""
    new = copy.deepcopy(wire)
    roles = [r for r in new["roleStatus"] if isinstance(r, dict) and compact.ROWS in r]
    role = rng.choice(roles)
    packed = role[compact.ROWS]
    change = rng.randrange(9)
    if change == 0 and packed["rows"]:  # one replica's row moves on
        i = rng.randrange(len(packed["rows"]))
        fields = packed["rows"][i].split(" ")
        fields[0] = rng.choice(["A", "C", "R", "D"]) + fields[0][1:]
        packed["rows"][i] = " ".join(fields)
    elif change == 1 and packed["texts"]:  # a new text first: every reference moves
        packed["texts"].insert(0, {"phaseMessage": f"new {rng.randrange(100)}"})
        packed["rows"] = [_shift(row) for row in packed["rows"]]
    elif change == 2 and packed["texts"]:  # a text changes under the same references
        packed["texts"][rng.randrange(len(packed["texts"]))] = {"phaseMessage": "edited"}
    elif change == 3 and packed["rows"]:  # a full record added or dropped
        i = rng.randrange(len(packed["rows"]))
        details = role["replicaStatus"]
        if any(isinstance(d, dict) and d.get("index") == i for d in details):
            role["replicaStatus"] = [d for d in details if not (isinstance(d, dict) and d.get("index") == i)]
        else:
            details.append({"index": i, "phase": "Completed", "phaseMessage": "failed", "podName": "x"})
    elif change == 4:  # another Pod name prefix
        packed["podNamePrefix"] += "x"
    elif change == 5:  # scaled: a row more or less
        if packed["rows"] and rng.random() < 0.5:
            packed["rows"].pop()
        else:
            packed["rows"].append("A 0 - - 0")
    elif change == 6:  # a role renamed, or twice under one name
        if rng.random() < 0.5:
            role["name"] += "2"
        else:
            new["roleStatus"].append(copy.deepcopy(role))
    elif change == 7:  # garbage by hand
        role["replicaStatus"].append(rng.choice([None, "junk", {"index": "1"}, {"index": [1]}]))
    # change 8: nothing changes (a write of the same rows)
    return new


def _shift(row: str) -> str:
    fields = row.split(" ")
    if len(fields) > 4 and fields[4].isdigit():
        fields[4] = str(int(fields[4]) + 1)
    return " ".join(fields)


@pytest.mark.parametrize("seed", range(40))
def test_a_lent_parse_equals_a_parse_from_scratch(seed: int) -> None:
    rng = random.Random(seed)
    wire = compact.compact(
        status(rng, {"ps": rng.randrange(1, 4), "worker": rng.randrange(5, 60)}).full_json()
    )
    previous: tuple[object, TaskSetStatus | None] = (wire, TaskSetStatus.from_json(wire))
    for _ in range(30):
        wire = mutate(rng, wire)
        lent = TaskSetStatus.from_json(wire, previous)
        assert lent == TaskSetStatus.from_json(wire)
        previous = (wire, lent)


def test_unchanged_rows_are_shared_and_changed_ones_parsed_again() -> None:
    rng = random.Random(7)
    wire = compact.compact(status(rng, {"worker": 50}).full_json())
    before = TaskSetStatus.from_json(wire)
    assert before is not None
    new = copy.deepcopy(wire)
    packed = new["roleStatus"][0][compact.ROWS]
    detailed = {d["index"] for d in wire["roleStatus"][0]["replicaStatus"]}
    fine = [i for i in range(50) if i not in detailed]
    changed = fine[0]
    packed["rows"][changed] = "A 9 - - 0"
    after = TaskSetStatus.from_json(new, (wire, before))
    assert after is not None
    shared = {i for i in range(50) if after.roles[0].replicas[i] is before.roles[0].replicas[i]}
    assert shared == set(fine) - {changed}
    assert after.roles[0].replicas[changed].total_retried_count == 9


def test_a_record_lends_the_parse_of_the_version_its_write_replaced() -> None:
    rng = random.Random(3)
    first = compact.compact(status(rng, {"worker": 30}).full_json())
    records = StatusRecords(FakeClock())
    records.written("ns/job", "uid-1", first, "1")
    parsed = records["ns/job"].recorded_status()
    assert parsed is not None
    records.written("ns/job", "uid-1", copy.deepcopy(first), "2")
    again = records["ns/job"].recorded_status()
    assert again == parsed
    assert any(a is b for a, b in zip(again.roles[0].replicas, parsed.roles[0].replicas, strict=True))
    records.written("ns/job", "uid-2", copy.deepcopy(first), "3")  # re-created: nothing is lent
    fresh = records["ns/job"].recorded_status()
    assert fresh == parsed
    assert not any(a is b for a, b in zip(fresh.roles[0].replicas, parsed.roles[0].replicas, strict=True))


# The full shape: the status writer hands an unchanged replica's record to the next write as it is, and a
# parse with the version before lent takes that record's replica from the parse before.


def _writes(seed: int, roles: dict[str, int], steps: int) -> list[dict[str, Any]]:
    """The statuses one writer writes over ``steps`` passes of random changes (``test_status_writes``),
    with a hand edit or a write read back from the API server (no record shared) now and then."""
    rng = random.Random(seed)
    writer, st = StatusWriter(), writes.status(rng, roles)
    wires = []
    for _ in range(steps):
        wire = writer.to_json(st)
        if rng.random() < 0.1:  # read back live: the same content, no object shared
            wire = orjson.loads(orjson.dumps(wire))
        elif rng.random() < 0.1:  # edited by hand: records dropped, moved, or junk added
            wire = dict(wire, roleStatus=[dict(r) for r in wire["roleStatus"]])
            role = rng.choice(wire["roleStatus"])
            records = list(role["replicaStatus"])
            if records and rng.random() < 0.5:
                records.pop(0)  # every record after it moves one place up
            else:
                records.insert(rng.randrange(len(records) + 1), rng.choice([None, "junk", {"phase": 3}]))
            role["replicaStatus"] = records
        wires.append(wire)
        st = writes.step(rng, st)
    return wires


@pytest.mark.parametrize("seed", range(30))
def test_a_lent_parse_of_full_writes_equals_a_parse_from_scratch(seed: int) -> None:
    previous: tuple[object, TaskSetStatus | None] | None = None
    for wire in _writes(seed, {"ps": 2, "worker": 40}, 30):
        lent = TaskSetStatus.from_json(wire, previous)
        assert lent == TaskSetStatus.from_json(wire)
        previous = (wire, lent)


def test_a_record_written_again_as_it_was_is_not_parsed_again() -> None:
    rng = random.Random(11)
    writer, st = StatusWriter(), writes.status(rng, {"worker": 50})
    first = writer.to_json(st)
    before = TaskSetStatus.from_json(first)
    assert before is not None
    st = st.copy()
    st.roles[0].replicas[7].phase_message = "changed"
    second = writer.to_json(st)
    after = TaskSetStatus.from_json(second, (first, before))
    assert after is not None and after == TaskSetStatus.from_json(second)
    shared = {i for i in range(50) if after.roles[0].replicas[i] is before.roles[0].replicas[i]}
    assert shared == set(range(50)) - {7}
    assert after.roles[0].replicas[7].phase_message == "changed"


def test_a_record_at_another_place_is_parsed_again() -> None:
    """The replica's index is its place: the same record one place up is another replica."""
    rng = random.Random(12)
    wire = StatusWriter().to_json(writes.status(rng, {"worker": 5}))
    before = TaskSetStatus.from_json(wire)
    assert before is not None
    moved = dict(wire, roleStatus=[dict(wire["roleStatus"][0])])
    moved["roleStatus"][0]["replicaStatus"] = wire["roleStatus"][0]["replicaStatus"][1:]
    after = TaskSetStatus.from_json(moved, (wire, before))
    assert after is not None
    assert [r.index for r in after.roles[0].replicas] == [0, 1, 2, 3]
    assert not any(a is b for a in after.roles[0].replicas for b in before.roles[0].replicas)
