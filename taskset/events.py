"""Kubernetes Events on the TaskSet, sent from a background thread so workers never wait for them.

Events are informative (spec 10.1): a full buffer drops the newest rather than stall a reconcile, and
an identical event (same TaskSet, reason and message) within ``DEDUP_SECONDS`` is sent once — the
cheap half of client-go's aggregation, enough to keep a retrying Warning from flooding the namespace.
"""

from __future__ import annotations

import queue
import threading
import uuid
from dataclasses import dataclass
from typing import Any, Final

import cachetools

from clock import Clock, RealClock
from taskset.constants import API_VERSION, EVENT_SOURCE_COMPONENT, EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, KIND
from taskset.kube import KubeClient, KubeError, core_path
from taskset.status import stamp

BUFFER: Final = 10_000  # events waiting to be sent; beyond this they are dropped
DEDUP_SECONDS: Final = 60.0
DEDUP_ENTRIES: Final = 4096


@dataclass(frozen=True)
class EventTarget:
    name: str
    namespace: str
    uid: str


class EventRecorder:
    def __init__(self, client: KubeClient, *, logger: Any, clock: Clock | None = None) -> None:
        self._client = client
        self._log = logger
        self._clock = clock or RealClock()
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(BUFFER)
        self._recent: cachetools.TTLCache[tuple[str, str, str], bool] = cachetools.TTLCache(
            DEDUP_ENTRIES, DEDUP_SECONDS, timer=self._clock.now
        )
        self._lock = threading.Lock()  # guards _recent
        self._thread = threading.Thread(target=self._run, name="event-recorder", daemon=True)
        self._thread.start()

    def record(self, target: EventTarget, reason: str, message: str, *, warning: bool) -> None:
        key = (target.uid, reason, message)
        with self._lock:
            if key in self._recent:
                return
            self._recent[key] = True
        now = stamp(self._clock.wall())
        event = _event(target, reason, message, EVENT_TYPE_WARNING if warning else EVENT_TYPE_NORMAL, now)
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self._log.warning("event dropped, buffer full", reason=reason, taskset=target.name)

    def stop(self, timeout: float = 5.0) -> None:
        """Send what is queued (within ``timeout``), then stop."""
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            return
        self._thread.join(timeout)

    def _run(self) -> None:
        while (event := self._queue.get()) is not None:
            namespace = event["metadata"]["namespace"]
            try:
                self._client.create(core_path(namespace, "events"), event, resource="events")
            except KubeError as err:
                self._log.warning("event not recorded", error=str(err), reason=event["reason"])


def _event(target: EventTarget, reason: str, message: str, kind: str, now: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{target.name}.{uuid.uuid4().hex[:16]}", "namespace": target.namespace},
        "involvedObject": {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "name": target.name,
            "namespace": target.namespace,
            "uid": target.uid,
        },
        "reason": reason,
        "message": message,
        "type": kind,
        "source": {"component": EVENT_SOURCE_COMPONENT},
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
        "reportingComponent": EVENT_SOURCE_COMPONENT,
    }
