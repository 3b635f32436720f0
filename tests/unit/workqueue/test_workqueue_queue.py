"""The base queue: dedup, processing exclusivity, ordering and shutdown."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from tests.unit.workqueue.conftest import WaitUntil
from workqueue import Queue, QueueSettings, QueueShutDown

pytestmark = pytest.mark.unit

# Real seconds a helper thread may take to finish once it is unblocked.
JOIN_TIMEOUT = 10.0


@dataclass(frozen=True)
class Op:
    """One step of a scripted single-threaded scenario.

    ``add`` and ``done`` act on ``key``; ``get`` expects ``key`` to be handed out; ``len`` expects ``n``
    items waiting.
    """

    action: str
    key: str = ""
    n: int = 0


def add(key: str) -> Op:
    return Op("add", key)


def get(key: str) -> Op:
    return Op("get", key)


def done(key: str) -> Op:
    return Op("done", key)


def length(n: int) -> Op:
    return Op("len", n=n)


def run_script(queue: Queue[str], ops: list[Op]) -> None:
    for step, op in enumerate(ops):
        if op.action == "add":
            queue.add(op.key)
        elif op.action == "done":
            queue.done(op.key)
        elif op.action == "len":
            assert queue.len() == op.n, f"step {step}: len"
        elif op.action == "get":
            # Never block in a script: an empty queue here is a failure, not a wait.
            assert queue.len() > 0, f"step {step}: expected {op.key!r} but the queue is empty"
            assert queue.get() == op.key, f"step {step}: get"
        else:
            raise AssertionError(f"unknown action {op.action}")


@pytest.mark.parametrize(
    "ops",
    [
        pytest.param(
            [add("a"), add("b"), add("a"), length(2), get("a"), get("b"), length(0)],
            id="duplicate adds while queued are coalesced",
        ),
        pytest.param(
            [add("c"), add("a"), add("b"), add("c"), get("c"), get("a"), get("b"), length(0)],
            id="items are handed out in first-add order",
        ),
        pytest.param(
            [add("a"), get("a"), add("a"), length(0), done("a"), length(1), get("a"), length(0)],
            id="an item re-added while processing is held back until done",
        ),
        pytest.param(
            [add("a"), get("a"), add("a"), add("a"), done("a"), length(1), get("a"), done("a"), length(0)],
            id="several re-adds while processing coalesce into one more run",
        ),
        pytest.param(
            [add("a"), get("a"), done("a"), length(0)],
            id="done without a re-add does not queue the item again",
        ),
        pytest.param(
            [add("a"), get("a"), done("a"), add("a"), length(1), get("a")],
            id="an item added after done is queued again",
        ),
        pytest.param(
            [add("a"), get("a"), add("b"), add("a"), get("b"), length(0), done("a"), get("a")],
            id="an item being processed does not hold back other items",
        ),
        pytest.param(
            [add("a"), add("b"), get("a"), add("a"), get("b"), done("b"), done("a"), get("a"), length(0)],
            id="a re-added item goes to the back of the line when done",
        ),
    ],
)
def test_single_threaded_scripts(ops: list[Op]) -> None:
    run_script(Queue[str](), ops)


@pytest.mark.parametrize(
    "ops",
    [
        pytest.param([], id="an item that was never added"),
        pytest.param([add("a")], id="an item that is queued but not handed out"),
        pytest.param([add("a"), get("a"), done("a")], id="an item that is already done"),
    ],
)
def test_done_rejects_items_not_being_processed(ops: list[Op]) -> None:
    queue = Queue[str]()
    run_script(queue, ops)

    with pytest.raises(ValueError, match="not being processed"):
        queue.done("a")

    assert queue.len() == (1 if ops == [add("a")] else 0)


@pytest.mark.timeout(30)
def test_get_blocks_until_an_item_is_added() -> None:
    queue = Queue[str]()
    got: list[str] = []
    getter = threading.Thread(target=lambda: got.append(queue.get()))
    getter.start()

    queue.add("a")
    getter.join(JOIN_TIMEOUT)

    assert not getter.is_alive()
    assert got == ["a"]


class CountingCondition(threading.Condition):
    """A condition that counts how often its waiters wake."""

    def __init__(self, lock: threading.Lock) -> None:
        super().__init__(lock)
        self.wakes = 0

    def wait(self, timeout: float | None = None) -> bool:
        woken = super().wait(timeout)
        self.wakes += 1  # the lock is held again here
        return woken


@pytest.mark.timeout(30)
def test_an_item_wakes_one_idle_worker_not_all_of_them(wait_until: WaitUntil) -> None:
    """Ten idle workers woken for every add and done were 6% of the controller's samples in a burst."""
    queue = Queue[str]()
    waking = CountingCondition(queue._lock)
    setattr(queue, "_item_ready", waking)  # noqa: B010  (a Final attribute, swapped before any wait)
    taken: list[str] = []

    def worker() -> None:
        with contextlib.suppress(QueueShutDown):
            taken.append(queue.get())

    workers = [threading.Thread(target=worker) for _ in range(4)]
    for thread in workers:
        thread.start()
    wait_until(lambda: len(waking._waiters) == 4, "four workers wait")  # type: ignore[attr-defined]

    try:
        queue.add("a")
        wait_until(lambda: taken == ["a"], "a worker took the item")
        time.sleep(0.2)  # room for any other worker to wake, as every one did with notify_all

        assert waking.wakes == 1
    finally:
        queue.shutdown()
        for thread in workers:
            thread.join(JOIN_TIMEOUT)


@pytest.mark.timeout(30)
def test_re_added_item_is_handed_to_a_second_worker_only_after_done() -> None:
    queue = Queue[str]()
    queue.add("a")
    assert queue.get() == "a"  # worker 1 is processing "a"
    queue.add("a")
    got: list[str] = []
    worker2 = threading.Thread(target=lambda: got.append(queue.get()))
    worker2.start()

    # While "a" is processing its re-add is not queued, so worker 2 has nothing it could take.
    assert queue.len() == 0
    assert got == []
    queue.done("a")
    worker2.join(JOIN_TIMEOUT)

    assert not worker2.is_alive()
    assert got == ["a"]


@pytest.mark.parametrize(
    "shut_down",
    [
        pytest.param(Queue.shutdown, id="shutdown"),
        pytest.param(Queue.shutdown_with_drain, id="shutdown with drain and nothing in flight"),
    ],
)
def test_shutdown_still_delivers_queued_items_then_signals_workers(
    shut_down: Callable[[Queue[str]], None],
) -> None:
    queue = Queue[str]()
    queue.add("a")
    queue.add("b")

    shut_down(queue)
    queue.add("c")

    assert queue.shutting_down()
    assert queue.len() == 2
    assert queue.get() == "a"
    assert queue.get() == "b"
    with pytest.raises(QueueShutDown):
        queue.get()
    queue.done("a")
    queue.done("b")
    with pytest.raises(QueueShutDown):
        queue.get()


@pytest.mark.timeout(30)
def test_shutdown_wakes_every_blocked_worker() -> None:
    queue = Queue[str]()
    outcomes: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        try:
            queue.get()
        except QueueShutDown:
            with lock:
                outcomes.append("shut down")

    workers = [threading.Thread(target=worker) for _ in range(4)]
    for thread in workers:
        thread.start()

    queue.shutdown()
    for thread in workers:
        thread.join(JOIN_TIMEOUT)

    assert [thread.is_alive() for thread in workers] == [False] * 4
    assert outcomes == ["shut down"] * 4


@pytest.mark.timeout(30)
def test_done_after_shutdown_still_requeues_a_dirty_item_for_the_remaining_worker() -> None:
    queue = Queue[str]()
    queue.add("a")
    assert queue.get() == "a"
    queue.add("a")

    queue.shutdown()
    queue.done("a")

    assert queue.get() == "a"
    queue.done("a")
    with pytest.raises(QueueShutDown):
        queue.get()


@pytest.mark.timeout(30)
def test_shutdown_with_drain_waits_for_items_in_flight() -> None:
    queue = Queue[str]()
    queue.add("a")
    queue.add("b")
    assert queue.get() == "a"
    assert queue.get() == "b"
    events: list[str] = []

    def drain() -> None:
        queue.shutdown_with_drain()
        events.append("drained")

    drainer = threading.Thread(target=drain)
    drainer.start()
    while not queue.shutting_down():
        drainer.join(0.001)

    # Give a drain that does not wait every chance to return early; the assertion is on the order.
    drainer.join(0.2)
    events.append("done a")
    queue.done("a")
    drainer.join(0.2)
    events.append("done b")
    queue.done("b")
    drainer.join(JOIN_TIMEOUT)

    assert not drainer.is_alive()
    assert events == ["done a", "done b", "drained"]


@pytest.mark.timeout(30)
def test_shutdown_cuts_a_drain_short() -> None:
    queue = Queue[str]()
    queue.add("a")
    assert queue.get() == "a"
    drainer = threading.Thread(target=queue.shutdown_with_drain)
    drainer.start()
    while not queue.shutting_down():
        drainer.join(0.001)

    queue.shutdown()
    drainer.join(JOIN_TIMEOUT)

    assert not drainer.is_alive()
    queue.done("a")  # still accepted after the drain was abandoned


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"unfinished_work_update_period": 0.0}, id="a zero metrics refresh period"),
        pytest.param({"max_delay_wait": -1.0}, id="a negative heartbeat"),
    ],
)
def test_settings_reject_non_positive_periods(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="must be positive"):
        QueueSettings(**kwargs)


def test_settings_defaults_are_client_go_values() -> None:
    assert QueueSettings() == QueueSettings(unfinished_work_update_period=0.5, max_delay_wait=10.0)
