"""The event recorder's own logic (spec 10.1), over a client that records what it is asked to send: each
TaskSet's events go out in order, one TaskSet's slow sends do not hold up the others', an identical event
is sent once per ``DEDUP_SECONDS``, and ``stop`` sends what is queued. That the events reach a real API
server is the integration scenarios' business (S46)."""

from __future__ import annotations

import itertools
import threading
from typing import Any

import structlog

from clock import FakeClock
from taskset.runtime.events import DEDUP_SECONDS, SENDERS, EventRecorder, EventTarget, sender_of


class SendingClient:
    """Sends nothing; lists what it was asked to send, and holds up the sends of ``stuck`` TaskSets."""

    def __init__(self, stuck: str = "") -> None:
        self.sent: list[tuple[str, str]] = []  # (TaskSet, message)
        self.stuck = stuck
        self.release = threading.Event()
        self._lock = threading.Lock()

    def create(self, path: str, obj: dict[str, Any], *, resource: str) -> dict[str, Any]:
        assert (path, resource) == (f"/api/v1/namespaces/{obj['metadata']['namespace']}/events", "events")
        name = obj["involvedObject"]["name"]
        if name == self.stuck:
            self.release.wait(10)
        with self._lock:
            self.sent.append((name, obj["message"]))
        return obj


def target(name: str) -> EventTarget:
    return EventTarget(name=name, namespace="ns", uid=f"uid-{name}")


def recorder(client: SendingClient, clock: FakeClock | None = None) -> EventRecorder:
    return EventRecorder(client, logger=structlog.get_logger("test"), clock=clock)


def test_the_events_of_a_taskset_go_out_in_the_order_they_were_recorded() -> None:
    client = SendingClient()
    events = recorder(client)
    messages = [f"Pre:{i},Next:{i + 1}" for i in range(50)]
    for name, message in itertools.product(("a", "b", "c"), messages):
        events.record(target(name), "TaskSet State Transition", message, warning=False)

    events.stop()

    for name in ("a", "b", "c"):
        assert [m for n, m in client.sent if n == name] == messages


def test_a_taskset_whose_sends_are_slow_does_not_hold_up_the_others() -> None:
    slow = target("slow")
    other = next(
        t
        for t in map(target, (f"t{i}" for i in range(100)))
        if sender_of(t.uid, SENDERS) != sender_of(slow.uid, SENDERS)
    )
    client = SendingClient(stuck="slow")
    events = recorder(client)
    events.record(slow, "TaskSet is running", "TaskSet:slow", warning=False)
    events.record(other, "TaskSet is running", f"TaskSet:{other.name}", warning=False)

    events.stop(timeout=2.0)  # the slow sender is still stuck: only the other's event went out
    assert client.sent == [(other.name, f"TaskSet:{other.name}")]
    client.release.set()


def test_an_identical_event_is_sent_once_within_the_dedup_window() -> None:
    clock = FakeClock()
    client = SendingClient()
    events = recorder(client, clock)
    for _ in range(3):
        events.record(target("a"), "PodCreationFailed", "a-r-0: quota", warning=True)
    events.record(target("a"), "PodCreationFailed", "a-r-1: quota", warning=True)  # another message
    events.record(target("b"), "PodCreationFailed", "a-r-0: quota", warning=True)  # another TaskSet
    clock.step(DEDUP_SECONDS + 1)
    events.record(target("a"), "PodCreationFailed", "a-r-0: quota", warning=True)  # the window passed

    events.stop()

    assert sorted(client.sent) == [
        ("a", "a-r-0: quota"),
        ("a", "a-r-0: quota"),
        ("a", "a-r-1: quota"),
        ("b", "a-r-0: quota"),
    ]
