"""Many producers and workers on random keys: one worker per key at a time, and no add is ever lost."""

from __future__ import annotations

import itertools
import random
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from workqueue import Queue, QueueShutDown

pytestmark = pytest.mark.unit

JOIN_TIMEOUT = 60.0
# Python switches threads every 5 ms by default, long enough for one producer to run alone for hundreds
# of adds. Switching every 10 µs interleaves producers and workers far more often.
FAST_SWITCH_INTERVAL = 1e-5


@pytest.fixture
def fast_thread_switching() -> Iterator[None]:
    previous = sys.getswitchinterval()
    sys.setswitchinterval(FAST_SWITCH_INTERVAL)
    yield
    sys.setswitchinterval(previous)


@dataclass
class Ledger:
    """What producers and workers did, on one logical clock (``tick``) so "after" is well defined."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    ticks: itertools.count[int] = field(default_factory=itertools.count)
    # Tick recorded just before the last add() of each key.
    last_add: dict[str, int] = field(default_factory=dict)
    # Tick recorded just after the latest get() that handed out each key.
    last_start: dict[str, int] = field(default_factory=dict)
    in_progress: set[str] = field(default_factory=set)
    overlaps: list[str] = field(default_factory=list)
    runs: int = 0


@dataclass(frozen=True)
class Load:
    workers: int
    producers: int
    keys: int
    adds_per_producer: int
    seed: int


def produce(queue: Queue[str], ledger: Ledger, load: Load, rng: random.Random) -> None:
    for _ in range(load.adds_per_producer):
        key = f"key-{rng.randrange(load.keys)}"
        # Recorded before add(): the get() that serves this add returns after add() takes effect, so a
        # correct queue always shows a later start tick for the key.
        with ledger.lock:
            ledger.last_add[key] = next(ledger.ticks)
        queue.add(key)
        if rng.random() < 0.1:
            time.sleep(0)  # yield, so adds interleave with processing


def work(queue: Queue[str], ledger: Ledger, rng: random.Random) -> None:
    while True:
        try:
            key = queue.get()
        except QueueShutDown:
            return
        with ledger.lock:
            ledger.last_start[key] = next(ledger.ticks)
            if key in ledger.in_progress:
                ledger.overlaps.append(key)
            ledger.in_progress.add(key)
            ledger.runs += 1
        if rng.random() < 0.3:
            time.sleep(rng.random() / 10_000)  # simulated work; widens the window for overlaps
        with ledger.lock:
            ledger.in_progress.discard(key)
        queue.done(key)


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "load",
    [
        pytest.param(
            Load(workers=8, producers=20, keys=50, adds_per_producer=500, seed=1),
            id="8 workers and 20 producers over 50 keys",
        ),
        pytest.param(
            Load(workers=8, producers=20, keys=3, adds_per_producer=500, seed=2),
            id="8 workers and 20 producers fighting over 3 hot keys",
        ),
    ],
)
@pytest.mark.usefixtures("fast_thread_switching")
def test_random_load_never_overlaps_a_key_and_processes_every_last_add(load: Load) -> None:
    queue = Queue[str]()
    ledger = Ledger()
    seeds = random.Random(load.seed)
    workers = [
        threading.Thread(target=work, args=(queue, ledger, random.Random(seeds.random())))
        for _ in range(load.workers)
    ]
    producers = [
        threading.Thread(target=produce, args=(queue, ledger, load, random.Random(seeds.random())))
        for _ in range(load.producers)
    ]
    for thread in workers + producers:
        thread.start()

    for thread in producers:
        thread.join(JOIN_TIMEOUT)
    # Every add has returned; shutdown still hands out whatever is queued or re-queued by done().
    queue.shutdown()
    for thread in workers:
        thread.join(JOIN_TIMEOUT)

    assert [t.is_alive() for t in workers + producers] == [False] * (load.workers + load.producers)
    assert ledger.overlaps == []
    assert ledger.in_progress == set()
    unserved = {
        key: (added, ledger.last_start.get(key))
        for key, added in ledger.last_add.items()
        if ledger.last_start.get(key, -1) < added
    }
    assert unserved == {}
    assert len(ledger.last_add) == load.keys
    assert 0 < ledger.runs <= load.producers * load.adds_per_producer
    assert queue.len() == 0
