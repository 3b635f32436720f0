"""A TaskSet's status written again: what its last write computed of each replica, kept by the replica's
place and fields, so that the next write encodes, measures and compacts only the replicas that changed.

A pass changes a few replicas of a large TaskSet, yet every write built each replica's record, measured
the whole JSON against the status budget and compacted it again: 12.8 ms per write at 2,000 replicas,
the largest part of the bench's ``large`` after the informers. ``StatusWriter.to_json(status)`` returns
exactly what ``status.to_json()`` returns (``tests/unit/taskset/api/test_status_writes.py`` holds it to
that over random statuses and edits); only the work is shared with the write before.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from operator import attrgetter
from typing import Any, Final

import orjson

from taskset.api import compact
from taskset.api.compact import BUCKETS, FULL_RECORD_MIN_BYTES, STATUS_BUDGET, Pieces
from taskset.api.readers import as_items, as_text
from taskset.api.status import Json, ReplicaStatus, TaskSetStatus

# Every field of a replica, in one fixed order: what a write keeps of it to compare the next one with.
_NAMES: Final = tuple(f.name for f in fields(ReplicaStatus))
_VALUES: Final = attrgetter(*_NAMES)
# The fields that hold records of their own (immutable); every other field holds an immutable value.
_RECORDS: Final = tuple(_NAMES.index(name) for name in ("terminated_info", "failure"))


@dataclass(slots=True)
class _Replica:
    """What a write computed of one replica's record."""

    record: Json | None  # the record itself, while its role is written in the full shape
    size: int  # its bytes on the wire (``compact.json_bytes``)
    bucket: str  # which of the role's counts it adds to
    pieces: Pieces | None  # what the compact shape takes from it, once a write was compact


class StatusWriter:
    """The replicas of one TaskSet's last status write, by place. Only the pass of that TaskSet uses it
    (the work queue never hands one key to two workers), so it needs no lock; it keeps only the replicas
    of the last write, so it is as large as one status at most."""

    def __init__(self) -> None:
        # Each role's replicas as the last write saw them, with what it computed of them. A replica is
        # kept as its values (a pass that persists first goes on changing its replicas after that
        # write), until ``adopt`` finds the same values in the parse of the status written: then as
        # that parsed replica, which the record keeps anyway and nobody changes.
        self._last: dict[str, tuple[list[_Seen], list[_Replica]]] = {}

    def to_json(self, status: TaskSetStatus) -> Json:
        """``status.to_json()``, computed again only for the replicas not in the last write."""
        last, self._last = self._last, {}
        roles: list[Json] = []
        facts: list[list[tuple[ReplicaStatus, _Replica]]] = []
        for role in status.roles:
            entries = self._role_facts(role.name, role.replicas, last.get(role.name))
            counts = dict.fromkeys(BUCKETS, 0)
            for _, entry in entries:
                counts[entry.bucket] += 1
            roles.append(role.to_json([], counts))
            facts.append(entries)
        skeleton = status.full_json(roles)
        replicas = sum(len(entries) for entries in facts)
        fits = replicas * FULL_RECORD_MIN_BYTES <= STATUS_BUDGET  # else not even measured, as ``shape``
        if fits and _full_bytes(skeleton, facts) <= STATUS_BUDGET:
            for role_json, entries in zip(roles, facts, strict=True):
                role_json["replicaStatus"] = [_record(replica, entry) for replica, entry in entries]
            return skeleton
        # Written compact: the pieces are made once per replica, and its record is dropped (rebuilt only
        # for the replicas whose full records the compact shape keeps too).
        given = [
            ([_pieces(replica, entry) for replica, entry in entries], _records_of(entries))
            for entries in facts
        ]
        return compact.compact(skeleton, given)

    def adopt(self, written: Json, parsed: TaskSetStatus) -> None:
        """``parsed``: the parse of ``written``, a status as written or read. Each replica kept as its
        values (or as another parse's replica) that the parse holds alike, records and all, is kept as
        this parse's replica from now on: the values of every replica are then held once, where the
        record holds them anyway. Only the roles written in the full shape are compared: a compact
        role's rows leave out what a running replica holds (its Pod's IP, its container), so its parse
        would hardly ever hold the same values, and comparing would cost every write of the largest
        TaskSets for nothing."""
        roles = {
            as_text(role.get("name"))
            for role in as_items(written.get("roleStatus"))
            if isinstance(role, dict) and compact.ROWS not in role
        }
        for role in parsed.roles:
            last = self._last.get(role.name)
            if role.name not in roles or last is None or len(last[0]) != len(role.replicas):
                continue
            seen = last[0]
            for place, replica in enumerate(role.replicas):
                then = seen[place]
                if then is not replica and _same(_VALUES(replica), _as_values(then)):
                    seen[place] = replica

    def _role_facts(
        self, role: str, replicas: list[ReplicaStatus], before: tuple[list[_Seen], list[_Replica]] | None
    ) -> list[tuple[ReplicaStatus, _Replica]]:
        """Each replica with what a write computes of it. A replica whose values equal, one by one, those
        of the replica at its place in the last write has that write's record: a pass copies its
        replicas from the recorded status, so an unchanged one holds the very same values. Its records
        must be the very same objects too: an equal record may differ in a value's type (an exit code
        ``true`` equals 1, and is written ``true``). Any other replica's record is made anew from what
        it holds now."""
        then_seen, then_entries = before if before is not None else ([], [])
        entries: list[tuple[ReplicaStatus, _Replica]] = []
        seen: list[_Seen] = []
        for place, replica in enumerate(replicas):
            if place < len(then_seen) and _unchanged(replica, then_seen[place]):
                entry = then_entries[place]
                seen.append(then_seen[place])
            else:
                record = replica.to_json()
                entry = _Replica(record, compact.json_bytes(record), compact.bucket(record), None)
                seen.append(_VALUES(replica))
            entries.append((replica, entry))
        self._last[role] = (seen, [entry for _, entry in entries])
        return entries


# How a write keeps a replica it wrote: its values, or the parsed replica that holds them (``adopt``).
_Seen = tuple[Any, ...] | ReplicaStatus


def _unchanged(replica: ReplicaStatus, then: _Seen) -> bool:
    """Whether ``replica`` holds what ``then`` held, its records the very same objects."""
    if isinstance(then, ReplicaStatus):
        return (
            replica.__dict__ == then.__dict__
            and replica.terminated_info is then.terminated_info
            and replica.failure is then.failure
        )
    now = _VALUES(replica)
    first, second = _RECORDS
    return now == then and now[first] is then[first] and now[second] is then[second]


def _as_values(seen: _Seen) -> tuple[Any, ...]:
    return _VALUES(seen) if isinstance(seen, ReplicaStatus) else seen


def _same(parsed: tuple[Any, ...], then: tuple[Any, ...]) -> bool:
    """A parsed replica's values against those written: equal, and each record written alike to the byte
    (the parse makes records anew; one equal but of another type, ``true`` for 1, is not alike)."""
    if parsed != then:
        return False
    return all(
        parsed[i] is then[i] or orjson.dumps(parsed[i].to_json()) == orjson.dumps(then[i].to_json())
        for i in _RECORDS
    )


def _full_bytes(skeleton: Json, facts: list[list[tuple[ReplicaStatus, _Replica]]]) -> int:
    """``compact.json_bytes`` of the full status: the skeleton's (every ``replicaStatus`` empty) and each
    record's, with the commas between them. Each record is serialized on its own, as orjson writes it
    inside the list, and the wire's escapes never span two of them."""
    total = compact.json_bytes(skeleton)
    for entries in facts:
        if entries:
            total += sum(entry.size for _, entry in entries) + len(entries) - 1
    return total


def _record(replica: ReplicaStatus, entry: _Replica) -> Json:
    if entry.record is None:
        entry.record = replica.to_json()
    return entry.record


def _pieces(replica: ReplicaStatus, entry: _Replica) -> Pieces:
    if entry.pieces is None:
        entry.pieces = compact.pieces(_record(replica, entry))
    entry.record = None
    return entry.pieces


def _records_of(entries: list[tuple[ReplicaStatus, _Replica]]) -> Any:
    def record(index: int) -> Json:
        replica, _ = entries[index]
        return replica.to_json()

    return record
