"""Which of a TaskSet's Events reach the API server, and as what: client-go's event correlator
(``tools/record``: aggregation, counting, spam filter), written for the controller's one kind of object.

Every Event the controller records is about a TaskSet and comes from one source, ``TaskSetController``,
so what client-go keys by source and involved object is keyed here by the TaskSet (namespace, name, UID).
Three steps run on each recorded occurrence, in client-go's order, each over a bounded LRU
(``CACHE_ENTRIES``):

1. **Aggregate.** Occurrences of one TaskSet with the same type and reason but other messages are
   *similar*. They go out as they are until ``AGGREGATE_AFTER`` distinct messages were seen, each within
   ``AGGREGATE_WINDOW`` seconds of the previous similar one; from then on one Event, its message
   ``(combined from similar events): <latest message>``, stands for them all, until the reason falls
   silent for a window. A replica failing again and again says so in one Event, not in hundreds.
2. **Count.** An occurrence identical to an Event already sent (same TaskSet, type, reason and message;
   or the same combined Event) does not create another Event: it raises that Event's ``count`` and moves
   its ``lastTimestamp`` (a PATCH), as ``kubectl describe`` shows ``x5 over 3m``.
3. **Spam filter.** A token bucket per TaskSet bounds the API writes about it: ``SPAM_BURST`` at once,
   then one per ``SPAM_REFILL_SECONDS``. A write beyond that is skipped; its occurrence stays counted, so
   the next write that goes out carries the whole count. The TaskSet's end (``TaskSet Succeeded``,
   ``TaskSet Failed``) is never held back: it is said once per TaskSet, so it cannot flood, and it is the
   one Event a user looks for after a run that retried a lot.

The sender takes what is queued in batches (``correlate_batch``): writes of one batch that touch the same
Event become one write (the latest message, the count of all), so a burst of repeats costs one request.
Not thread-safe on purpose: only the recorder's sender thread calls it.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Final

import cachetools

from taskset.api.constants import EventReason
from taskset.api.status import stamp

CACHE_ENTRIES: Final = 4096  # client-go's maxLruCacheEntries, for each of the three caches
AGGREGATE_AFTER: Final = 10  # client-go's defaultAggregateMaxEvents
AGGREGATE_WINDOW: Final = 600.0  # seconds; client-go's defaultAggregateIntervalInSeconds
SPAM_BURST: Final = 25  # client-go's defaultSpamBurst
SPAM_REFILL_SECONDS: Final = 300.0  # client-go's defaultSpamQPS, 1/300
COMBINED_PREFIX: Final = "(combined from similar events): "
# Said once per TaskSet: the spam filter lets them through (they still take a token when one is left).
NEVER_HELD: Final = frozenset({str(EventReason.TASKSET_SUCCEEDED), str(EventReason.TASKSET_FAILED)})


@dataclass(frozen=True)
class EventTarget:
    name: str
    namespace: str
    uid: str


@dataclass(frozen=True)
class Occurrence:
    """One event as a worker recorded it: the TaskSet, what happened, and when (monotonic seconds for the
    windows, the wall clock for the Event's timestamps)."""

    target: EventTarget
    type: str
    reason: str
    message: str
    at: float
    wall: datetime


EventKey = tuple[str, str, str, str, str, str | None]  # namespace, name, uid, type, reason, message or None


@dataclass
class Write:
    """One request: create the Event ``name`` (``create``), or patch its count, lastTimestamp and message."""

    key: EventKey
    name: str
    target: EventTarget
    type: str
    reason: str
    message: str
    count: int
    first: str  # firstTimestamp
    last: str  # lastTimestamp
    create: bool


@dataclass
class _Similar:
    messages: set[str] = field(default_factory=set)
    last: float = 0.0
    combined: bool = False


@dataclass
class _Logged:
    name: str
    count: int
    first: str


@dataclass
class _Bucket:
    tokens: float
    last: float


@dataclass(frozen=True)
class Batch:
    """What one batch of occurrences comes to: the writes to send, in order, and how many occurrences
    were folded into another write of the batch (``coalesced``) or held back by the spam filter
    (``filtered``, writes)."""

    writes: list[Write]
    coalesced: int
    filtered: int


class Correlator:
    def __init__(
        self,
        *,
        entries: int = CACHE_ENTRIES,
        aggregate_after: int = AGGREGATE_AFTER,
        aggregate_window: float = AGGREGATE_WINDOW,
        burst: int = SPAM_BURST,
        refill_seconds: float = SPAM_REFILL_SECONDS,
    ) -> None:
        if aggregate_after < 1 or burst < 1 or refill_seconds <= 0:
            raise ValueError("aggregate_after and burst must be at least 1, refill_seconds positive")
        self._aggregate_after = aggregate_after
        self._window = aggregate_window
        self._burst = burst
        self._refill = refill_seconds
        self._similar: cachetools.LRUCache[tuple[str, ...], _Similar] = cachetools.LRUCache(entries)
        self._logged: cachetools.LRUCache[EventKey, _Logged] = cachetools.LRUCache(entries)
        self._buckets: cachetools.LRUCache[tuple[str, str, str], _Bucket] = cachetools.LRUCache(entries)

    def correlate(self, occurrence: Occurrence) -> Write:
        """Aggregate and count one occurrence: the write that would say it (before the spam filter)."""
        target, message = occurrence.target, self._aggregate(occurrence)
        key: EventKey = (
            target.namespace,
            target.name,
            target.uid,
            occurrence.type,
            occurrence.reason,
            None if message.startswith(COMBINED_PREFIX) else message,
        )
        now = stamp(occurrence.wall)
        logged = self._logged.get(key)
        if logged is None:
            logged = _Logged(f"{target.name}.{uuid.uuid4().hex[:16]}", 0, now)
            create = True
        else:
            create = False
        logged.count += 1
        self._logged[key] = logged  # also marks it recently used
        return Write(
            key, logged.name, target, occurrence.type, occurrence.reason, message, logged.count,
            logged.first, now, create,
        )  # fmt: skip

    def admit(self, target: EventTarget, at: float) -> bool:
        """The spam filter: may one more write about ``target`` go out at ``at``? Takes a token if so."""
        spam_key = (target.namespace, target.name, target.uid)
        bucket = self._buckets.get(spam_key)
        if bucket is None:
            bucket = _Bucket(float(self._burst), at)
        else:
            elapsed = max(0.0, at - bucket.last)  # a clock read late never takes tokens back
            bucket.tokens = min(float(self._burst), bucket.tokens + elapsed / self._refill)
            bucket.last = max(bucket.last, at)
        self._buckets[spam_key] = bucket
        if bucket.tokens < 1.0:
            return False
        bucket.tokens -= 1.0
        return True

    def correlate_batch(self, occurrences: Sequence[Occurrence], now: float) -> Batch:
        """Correlate a batch in order; one write per Event touched, each through the spam filter once
        at ``now`` (monotonic seconds: when the batch goes out)."""
        pending: dict[EventKey, Write] = {}
        coalesced = 0
        for occurrence in occurrences:
            write = self.correlate(occurrence)
            earlier = pending.get(write.key)
            if earlier is None:
                pending[write.key] = write
                continue
            coalesced += 1
            # The Event the batch touches first keeps its request (a create stays a create); the later
            # occurrence brings its count, message and time.
            earlier.count, earlier.message, earlier.last = write.count, write.message, write.last
        writes, filtered = [], 0
        for write in pending.values():
            if self.admit(write.target, now) or write.reason in NEVER_HELD:
                writes.append(write)
            else:
                filtered += 1
        return Batch(writes, coalesced, filtered)

    def _aggregate(self, occurrence: Occurrence) -> str:
        target = occurrence.target
        group = (target.namespace, target.name, target.uid, occurrence.type, occurrence.reason)
        similar = self._similar.get(group)
        if similar is None or occurrence.at - similar.last > self._window:
            similar = _Similar()
        similar.last = max(similar.last, occurrence.at)
        self._similar[group] = similar
        if similar.combined:
            return COMBINED_PREFIX + occurrence.message
        similar.messages.add(occurrence.message)
        if len(similar.messages) < self._aggregate_after:
            return occurrence.message
        similar.combined, similar.messages = True, set()  # the set is not needed any more: bounded memory
        return COMBINED_PREFIX + occurrence.message
