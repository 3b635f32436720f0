"""The event recorder (spec 10.1), over a client that records what it is asked to send: each TaskSet's
events go out in order, a repeat patches the count of the Event already sent (and recreates it if it is
gone), a worker never waits for the API server (a full buffer drops and counts), and ``stop`` sends what is
queued within its bound. The correlation itself is ``test_event_correlator``; that the Events reach a real
API server is ``tests/integration/test_event_folding.py``."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from typing import Any

import structlog

from clock import FakeClock
from taskset.runtime.events import EventRecorder, EventResult, EventTarget
from taskset.runtime.kube import KubeError, read_nothing

NAMESPACE_EVENTS = "/api/v1/namespaces/ns/events"


class SendingClient:
    """Sends nothing; lists what it was asked to send (verb, TaskSet, message, count); blocks every send
    while ``blocked`` is set, and answers a patch of a name in ``gone`` with 404."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, str, int]] = []
        self.blocked = threading.Event()
        self.entered = threading.Event()  # a send is under way
        self.gone: set[str] = set()
        self._lock = threading.Lock()
        self._names: dict[str, tuple[str, str]] = {}  # Event name -> (TaskSet, message)

    def _wait(self) -> None:
        self.entered.set()
        while self.blocked.is_set():
            time.sleep(0.01)

    def create(self, path: str, obj: dict[str, Any], *, resource: str, read: Any = None) -> dict[str, Any]:
        assert (path, resource, read) == (NAMESPACE_EVENTS, "events", read_nothing)
        self._wait()
        name = obj["involvedObject"]["name"]
        with self._lock:
            self._names[obj["metadata"]["name"]] = (name, obj["message"])
            self.sent.append(("create", name, obj["message"], obj["count"]))
        return obj

    def request(
        self,
        method: str,
        path: str,
        *,
        resource: str,
        body: Any = None,
        content_type: str = "",
        read: Any = None,
    ) -> Any:
        assert (method, resource, content_type) == ("PATCH", "events", "application/merge-patch+json")
        assert read is read_nothing
        self._wait()
        event = path.rsplit("/", 1)[1]
        assert path == f"{NAMESPACE_EVENTS}/{event}"
        if event in self.gone:
            raise KubeError(404, "NotFound", f'events "{event}" not found')
        with self._lock:
            taskset, _ = self._names[event]
            self.sent.append(("patch", taskset, body["message"], body["count"]))
        return None


class CountingMetrics:
    def __init__(self) -> None:
        self.results: Counter[str] = Counter()
        self._lock = threading.Lock()

    def observe_event(self, result: str) -> None:
        with self._lock:
            self.results[result] += 1


def target(name: str) -> EventTarget:
    return EventTarget(name=name, namespace="ns", uid=f"uid-{name}")


def recorder(
    client: SendingClient, metrics: CountingMetrics | None = None, *, buffer: int = 10_000
) -> EventRecorder:
    return EventRecorder(
        client,
        logger=structlog.get_logger("test"),
        clock=FakeClock(),
        metrics=metrics,
        buffer=buffer,
    )


def test_the_events_of_a_taskset_go_out_in_the_order_they_were_recorded() -> None:
    client = SendingClient()
    events = recorder(client)
    messages = [f"Pre:{i},Next:{i + 1}" for i in range(8)]  # fewer than are combined
    for name, message in itertools.product(("a", "b", "c"), messages):
        events.record(target(name), "TaskSet State Transition", message, warning=False)

    events.stop()

    for name in ("a", "b", "c"):
        assert [m for _, n, m, _ in client.sent if n == name] == messages


def test_a_repeat_patches_the_count_and_a_batch_of_repeats_is_one_request() -> None:
    client = SendingClient()
    metrics = CountingMetrics()
    events = recorder(client, metrics)
    client.blocked.set()
    events.record(target("a"), "PodCreationFailed", "a-r-0: quota", warning=True)
    client.entered.wait(10)  # the first went out alone; the next two wait together in the queue
    events.record(target("a"), "PodCreationFailed", "a-r-0: quota", warning=True)
    events.record(target("a"), "PodCreationFailed", "a-r-0: quota", warning=True)
    client.blocked.clear()
    events.stop()
    assert client.sent == [
        ("create", "a", "a-r-0: quota", 1),
        ("patch", "a", "a-r-0: quota", 3),  # the two repeats of one batch: one request
    ]
    assert metrics.results == {EventResult.CREATED: 1, EventResult.PATCHED: 1, EventResult.COALESCED: 1}


def test_a_patch_of_an_expired_event_creates_it_with_its_count() -> None:
    client = SendingClient()
    events = recorder(client)
    client.blocked.set()
    events.record(target("a"), "PodCreationFailed", "a-r-0: quota", warning=True)
    client.entered.wait(10)
    client.blocked.clear()
    deadline = time.monotonic() + 10
    while not client.sent and time.monotonic() < deadline:
        time.sleep(0.01)
    client.gone = set(client._names)  # the Event expired (the API server's TTL)
    events.record(target("a"), "PodCreationFailed", "a-r-0: quota", warning=True)
    events.stop()
    assert client.sent == [("create", "a", "a-r-0: quota", 1), ("create", "a", "a-r-0: quota", 2)]


def test_a_worker_never_waits_for_the_api_server() -> None:
    """The sender is stuck in a request: ``record`` still returns at once; what the buffer cannot hold is
    dropped and counted."""
    client = SendingClient()
    metrics = CountingMetrics()
    events = recorder(client, metrics, buffer=50)
    client.blocked.set()
    events.record(target("a"), "TaskSet is running", "TaskSet:a", warning=False)
    assert client.entered.wait(10), "the sender took the first occurrence and is stuck sending it"

    done = threading.Event()

    def worker() -> None:
        for i in range(500):
            events.record(target(f"t{i}"), "TaskSet is running", f"TaskSet:t{i}", warning=False)
        done.set()

    threading.Thread(target=worker, daemon=True).start()
    assert done.wait(30), "record() waited for the stuck sender"
    assert client.blocked.is_set() and client.sent == [], "and it is still stuck"
    assert metrics.results[EventResult.DROPPED] == 500 - 50

    client.blocked.clear()
    events.stop()
    assert len(client.sent) == 1 + 50


def test_stop_gives_up_at_its_deadline() -> None:
    client = SendingClient()
    metrics = CountingMetrics()
    events = recorder(client, metrics)
    client.blocked.set()
    for i in range(20):
        events.record(target(f"t{i}"), "TaskSet is running", f"TaskSet:t{i}", warning=False)
    client.entered.wait(10)
    started = time.monotonic()
    events.stop(timeout=0.5)
    assert time.monotonic() - started < 10, "stop returned although the sender is stuck"
    client.blocked.clear()  # the stuck request ends: the rest is dropped, not sent
    deadline = time.monotonic() + 10
    while metrics.results[EventResult.DROPPED] < 19 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert metrics.results[EventResult.DROPPED] == 19
    assert len(client.sent) == 1


def test_a_refused_event_is_counted_as_an_error() -> None:
    class Refusing(SendingClient):
        def create(
            self, path: str, obj: dict[str, Any], *, resource: str, read: Any = None
        ) -> dict[str, Any]:
            raise KubeError(403, "Forbidden", "namespace ns is being terminated")

    metrics = CountingMetrics()
    events = recorder(Refusing(), metrics)
    events.record(target("a"), "TaskSet is running", "TaskSet:a", warning=False)
    events.stop()
    assert metrics.results == {EventResult.ERROR: 1}


class Tenure:
    """A sharded replica's tenure of the namespace ``ns``: held until ``end`` is called."""

    def __init__(self) -> None:
        self.held = True
        self.asked: list[str] = []

    def __call__(self, namespace: str) -> bool:
        self.asked.append(namespace)
        return self.held

    def end(self) -> None:
        self.held = False


def test_an_event_recorded_in_the_tenure_is_not_sent_after_it_ended() -> None:
    """The tenure ends between ``record`` and the send (the bucket went to another replica): the Event
    queued behind a slow request is not sent, and is counted ``fenced``; the one already sent stays."""
    client = SendingClient()
    metrics = CountingMetrics()
    tenure = Tenure()
    events = EventRecorder(
        client, logger=structlog.get_logger("test"), clock=FakeClock(), metrics=metrics, fence=tenure
    )
    client.blocked.set()
    events.record(target("a"), "TaskSet State Transition", "Pre:1,Next:2", warning=False)
    client.entered.wait(10)  # the first is on its way; the second waits in the queue
    events.record(target("a"), "TaskSet State Transition", "Pre:2,Next:3", warning=False)
    tenure.end()
    client.blocked.clear()
    events.stop()
    assert client.sent == [("create", "a", "Pre:1,Next:2", 1)]
    assert metrics.results == {EventResult.CREATED: 1, EventResult.FENCED: 1}
    assert set(tenure.asked) == {"ns"}


def test_without_a_fence_every_event_goes_out() -> None:
    client = SendingClient()
    events = recorder(client)
    events.record(target("a"), "TaskSet State Transition", "Pre:1,Next:2", warning=False)
    events.stop()
    assert client.sent == [("create", "a", "Pre:1,Next:2", 1)]
