"""Kubernetes Events on the TaskSet, aggregated and rate-limited as client-go's recorder does, sent by one
background thread so that a worker never waits for them.

Events are informative (spec 10.1): ``record`` only puts the occurrence on a bounded queue (``BUFFER``);
when it is full the occurrence is dropped and counted (``taskset_events_total{result="dropped"}``),
never waited for. One sender thread takes what is queued in batches, correlates it
(``taskset.runtime.event_correlator``: similar events combined, repeats counted on the Event already
sent, a token bucket per TaskSet) and sends the writes in the order they were recorded, so a TaskSet's
Events keep their order. A count update is a PATCH of the Event; if the Event is gone (expired, deleted)
it is created anew with its count, as client-go does. ``stop`` sends what is queued within its bound;
what is left then is counted as dropped.

One sender, as client-go has: the correlator's caches are its alone (no lock on a worker's path), and
under load the queue grows, so each batch is larger and its repeats fold into fewer requests.

**The fence** (a sharded replica). An Event is news about a TaskSet told by the replica that acts for it;
sent after that replica's tenure of the TaskSet's bucket ended, it would tell, beside the new holder's
own Events, of a state the new holder may already have moved past. So ``fence(namespace)``, the same
question the reconciler asks before each write, is asked again as each write goes out (the tenure may
end between ``record`` and the send), and a write it refuses is not sent (``fenced``). The new holder
relists and reports what it then sees itself.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable
from enum import StrEnum
from typing import Any, Final, Protocol

from clock import Clock, RealClock
from taskset.api.constants import (
    API_VERSION,
    EVENT_SOURCE_COMPONENT,
    EVENT_TYPE_NORMAL,
    EVENT_TYPE_WARNING,
    KIND,
)
from taskset.runtime.event_correlator import Correlator, EventTarget, Occurrence, Write
from taskset.runtime.kube import KubeClient, KubeError, core_path, read_nothing

__all__ = ["BUFFER", "SENDERS", "EventRecorder", "EventResult", "EventTarget"]

BUFFER: Final = 10_000  # occurrences waiting for the sender; beyond this they are dropped
SENDERS: Final = 1  # threads sending Events (each holds one connection of the pool)
BATCH: Final = 1_000  # occurrences the sender takes off the queue at once
MERGE_PATCH: Final = "application/merge-patch+json"
DROPS_LOGGED_EVERY: Final = 1_000  # a full buffer logs its first drop, then one line per this many


class EventResult(StrEnum):
    """The ``result`` label of ``taskset_events_total``: what became of each recorded occurrence."""

    CREATED = "created"  # a new Event
    PATCHED = "patched"  # the count of an Event already sent, raised
    COALESCED = "coalesced"  # folded into another write of its batch (same Event)
    FILTERED = "filtered"  # a write held back by the per-TaskSet spam filter (its count goes with the next)
    DROPPED = "dropped"  # the buffer was full, or the process stopped before it went out
    FENCED = "fenced"  # a sharded replica's tenure of the TaskSet's bucket ended before it went out
    ERROR = "error"  # the API server refused the write, or did not answer


class EventMetrics(Protocol):
    def observe_event(self, result: str) -> None: ...


class _NoMetrics:
    def observe_event(self, result: str) -> None:
        return None


class EventRecorder:
    def __init__(
        self,
        client: KubeClient,
        *,
        logger: Any,
        clock: Clock | None = None,
        metrics: EventMetrics | None = None,
        correlator: Correlator | None = None,
        buffer: int = BUFFER,
        fence: Callable[[str], bool] | None = None,
    ) -> None:
        self._client = client
        self._fence = fence
        self._log = logger
        self._clock = clock or RealClock()
        self._metrics: EventMetrics = metrics or _NoMetrics()
        self._correlator = correlator or Correlator()
        self._queue: queue.Queue[Occurrence | None] = queue.Queue(buffer)
        self._drops = 0  # only counts for the log's sake: a lost increment costs one log line at most
        self._deadline: float | None = None  # monotonic; set by ``stop``
        self._thread = threading.Thread(target=self._run, name="event-recorder", daemon=True)
        self._thread.start()

    def record(self, target: EventTarget, reason: str, message: str, *, warning: bool) -> None:
        """Queue one occurrence; never blocks (a full buffer drops it)."""
        kind = EVENT_TYPE_WARNING if warning else EVENT_TYPE_NORMAL
        occurrence = Occurrence(target, kind, reason, message, self._clock.now(), self._clock.wall())
        try:
            self._queue.put_nowait(occurrence)
        except queue.Full:
            self._metrics.observe_event(EventResult.DROPPED)
            self._drops += 1
            if self._drops % DROPS_LOGGED_EVERY == 1:
                self._log.warning("event dropped, buffer full", reason=reason, taskset=target.name)

    def stop(self, timeout: float = 5.0) -> None:
        """Send what is queued within ``timeout``, then stop; what is left then is dropped."""
        self._deadline = time.monotonic() + timeout
        with contextlib.suppress(queue.Full):  # the sender is stuck on a request: it gives up at the deadline
            self._queue.put(None, timeout=timeout)
        self._thread.join(max(0.0, self._deadline - time.monotonic()))

    def _run(self) -> None:
        stopping = False
        while not stopping:
            batch: list[Occurrence] = []
            item = self._queue.get()
            while item is not None:
                batch.append(item)
                if len(batch) >= BATCH:
                    break
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
            stopping = self._send_batch(batch) or item is None

    def _send_batch(self, occurrences: list[Occurrence]) -> bool:
        """Send one batch; True if the stop's deadline passed meanwhile (the rest is dropped)."""
        if not occurrences:
            return False
        batch = self._correlator.correlate_batch(occurrences, self._clock.now())
        for _ in range(batch.coalesced):
            self._metrics.observe_event(EventResult.COALESCED)
        for _ in range(batch.filtered):
            self._metrics.observe_event(EventResult.FILTERED)
        for index, write in enumerate(batch.writes):
            if self._deadline is not None and time.monotonic() >= self._deadline:
                left = len(batch.writes) - index + self._drain()
                for _ in range(left):
                    self._metrics.observe_event(EventResult.DROPPED)
                self._log.warning("events not sent before the stop's deadline", count=left)
                return True
            self._metrics.observe_event(self._send(write))
        return False

    def _drain(self) -> int:
        """Empty the queue after the deadline; how many occurrences it held."""
        count = 0
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return count
            count += item is not None

    def _send(self, write: Write) -> EventResult:
        if self._fence is not None and not self._fence(write.target.namespace):
            return EventResult.FENCED
        path = core_path(write.target.namespace, "events")
        try:
            if not write.create:
                try:
                    body = {"count": write.count, "lastTimestamp": write.last, "message": write.message}
                    self._client.request(
                        "PATCH",
                        f"{path}/{write.name}",
                        resource="events",
                        body=body,
                        content_type=MERGE_PATCH,
                        read=read_nothing,
                    )
                    return EventResult.PATCHED
                except KubeError as err:
                    if not err.not_found:
                        raise
            self._client.create(path, _event(write), resource="events", read=read_nothing)
            return EventResult.CREATED
        except KubeError as err:
            if not err.already_exists:
                self._log.warning("event not recorded", error=str(err), reason=write.reason)
            return EventResult.ERROR


def _event(write: Write) -> dict[str, Any]:
    target = write.target
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": write.name, "namespace": target.namespace},
        "involvedObject": {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "name": target.name,
            "namespace": target.namespace,
            "uid": target.uid,
        },
        "reason": write.reason,
        "message": write.message,
        "type": write.type,
        "source": {"component": EVENT_SOURCE_COMPONENT},
        "firstTimestamp": write.first,
        "lastTimestamp": write.last,
        "count": write.count,
        "reportingComponent": EVENT_SOURCE_COMPONENT,
    }
