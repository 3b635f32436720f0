"""The status each TaskSet's passes build on: the last one written, or held unwritten, by this process.

"Status is the memory" (DESIGN 3): a record only shields a pass from a cache that has not caught up with
our own write yet, and a fresh process rebuilds it from the live object (spec 4.2/W-16). It may also
*hold* a pass's status unwritten when its only news is requests in flight: the next pass, which their
watch events bring, builds on it and writes it; lost with the process, it is redone from the persisted
status by adoption or a repeated delete.

Reading the live object is the caller's: this module does no I/O, so it is given what the read returned.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from clock import Clock
from taskset.api.status import TaskSetStatus
from taskset.api.status_writes import StatusWriter

HOLD_LIMIT: Final = 10.0  # seconds a held status may wait for news before it is written anyway


@dataclass
class Record:
    uid: str
    status: dict[str, Any] | None  # the last status written or read live; None: nothing written yet
    resource_version: str
    # A status decided but not written, because it only adds requests in flight (Plan.only_requests_in_
    # flight); the next pass builds on it. ``held_since``: clock time it was first held.
    held: dict[str, Any] | None = None
    held_since: float = 0.0
    # The API server's last refusal of a status write for good (too large, invalid), once reported in a
    # Warning event: each distinct one is said once. A write it accepts makes a new record.
    refused: str | None = None
    # ``latest`` and its parse; held by reference, so ``is`` tells whether ``latest`` is still that one.
    _parsed: tuple[dict[str, Any] | None, TaskSetStatus | None] | None = field(
        default=None, repr=False, compare=False
    )
    # The last parse of the record this one replaced (the version before our write), lent to the first
    # parse here: replicas whose compact rows did not change are not parsed again.
    _lent: tuple[dict[str, Any] | None, TaskSetStatus | None] | None = field(
        default=None, repr=False, compare=False
    )

    # What the last status write computed of each replica, so that the next one encodes only the replicas
    # that changed; handed on to the record of the next version (``written``).
    writer: StatusWriter = field(default_factory=StatusWriter, repr=False, compare=False)

    @property
    def latest(self) -> dict[str, Any] | None:
        return self.held if self.held is not None else self.status

    def recorded_status(self) -> TaskSetStatus | None:
        """``latest`` parsed, once per version of it: a pass never changes what this returns (it
        changes its own copy), and parsing the status of thousands of replicas on every event was a
        tenth of a large TaskSet's pass (the bench's ``large``)."""
        latest = self.latest
        if self._parsed is None or self._parsed[0] is not latest:
            previous = self._parsed or self._lent
            self._parsed, self._lent = (latest, TaskSetStatus.from_json(latest, previous)), None
            if latest is not None and self._parsed[1] is not None:
                self.writer.adopt(latest, self._parsed[1])  # its replicas' values, held once
        return self._parsed[1]


class StatusRecords(Mapping[str, Record]):
    """Records by TaskSet key, read as a mapping.

    ``_records`` is guarded by ``_lock``, which only keeps the map whole across the workers; it is a lock
    of its own because nothing reads a record together with the expectations or the created ControlUnits.
    A record's fields change without it: the work queue never gives one key to two workers at once, so
    only the pass of that TaskSet touches its record. Invariant: a record is of the TaskSet with its UID;
    one re-created under the same name gets a new record from a live read, never the old one's (W-16).
    """

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._records: dict[str, Record] = {}  # guarded by _lock

    def __getitem__(self, key: str) -> Record:
        with self._lock:
            return self._records[key]

    def __iter__(self) -> Iterator[str]:
        with self._lock:
            return iter(list(self._records))

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    def known(self, key: str, obj: Mapping[str, Any]) -> Record | None:
        """The record of the cached TaskSet ``obj`` (same UID), or None: then only a live read will do.

        The cache keeps no status (``slim_taskset``), so the record is the only copy of a large one. A
        newer version of the object (a spec edit) is not taken from the cache: the next status write
        meets a conflict, and the reconciler reads the live object once, as after any other writer's.
        """
        record = self.get(key)
        if record is None or record.uid != obj["metadata"].get("uid", ""):
            return None
        return record

    def read(self, key: str, uid: str, live: Mapping[str, Any] | None) -> Record | None:
        """A fresh record of TaskSet ``uid`` from ``live``, its object as just read from the API server;
        None when that is gone or another object under the same name (the cache is behind)."""
        if live is None or live["metadata"].get("uid") != uid:
            return None
        record = Record(uid, live.get("status"), live["metadata"]["resourceVersion"])
        with self._lock:
            self._records[key] = record
        return record

    def written(self, key: str, uid: str, status: dict[str, Any], resource_version: str) -> None:
        """The API server accepted ``status`` as ``resource_version``; nothing is held any more."""
        with self._lock:
            before = self._records.get(key)
            same = before is not None and before.uid == uid
            lent = before._parsed if before is not None and same else None
            writer = before.writer if before is not None and same else StatusWriter()
            self._records[key] = Record(uid, status, resource_version, _lent=lent, writer=writer)

    def hold(self, record: Record, new: dict[str, Any], *, only_requests_in_flight: bool) -> float | None:
        """Seconds to leave ``new`` unwritten for, or None to write it now. A status whose only news is
        requests in flight waits for the pass their watch events bring, and so on while each pass adds
        only such news, for at most ``HOLD_LIMIT`` seconds from the first."""
        now = self._clock.now()
        if record.held is not None:
            waited = now - record.held_since
            if waited >= HOLD_LIMIT or (new != record.held and not only_requests_in_flight):
                return None
            record.held = new
            return HOLD_LIMIT - waited
        if not only_requests_in_flight:
            return None
        record.held, record.held_since = new, now
        return HOLD_LIMIT

    def forget(self, key: str) -> None:
        """Drop ``key``'s record: the TaskSet is gone, or its next pass must start from the live object."""
        with self._lock:
            self._records.pop(key, None)
