"""Informer throughput and cache memory on realistic pods. Not a test: run it and read the table.

    python -m bench.informers_bench [--pods 5000] [--rounds 3]

Throughput: a fake watch stream replays JSON lines exactly as the API server sends them (one event per
chunk) through the real path: line splitting + orjson decode (``informers.kube.parse_watch_lines``) ->
reflector -> transform -> store + indexes -> one handler thread. Events/s is measured from the first
event read to the handler's return from the last one.

Cached pods are long-lived containers: the cyclic GC re-scans them as the cache grows, so a run with the
collector off is shown too (a daemon may ``gc.freeze()`` after its caches sync to get most of that back).

Memory: tracemalloc counts the bytes allocated to keep N decoded pods alive, as plain dicts, after
``strip_managed_fields``, and inside a ``Store`` (keys, namespace index, slimmed objects).

The pod is ``bench/data/pod.json``, recorded from the embedded control plane (a scheduled, running pod
with the managedFields of the client, scheduler and kwok); each event gets its own name, uid and RV.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

if not __package__:  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import orjson

from informers import (
    NAMESPACE_INDEX,
    ListOptions,
    ListResult,
    SharedInformer,
    Store,
    WatchEvent,
    namespace_index,
    strip_managed_fields,
)
from informers.kube import parse_watch_lines
from informers.listwatch import RawObject
from informers.transform import Transform

POD_FILE = Path(__file__).resolve().parent / "data" / "pod.json"
SYNC_TIMEOUT = 600.0  # seconds; generous for slow CI machines


def load_pod() -> RawObject:
    pod: RawObject = orjson.loads(POD_FILE.read_bytes())
    return pod


def variant(pod: RawObject, i: int, rv: int) -> RawObject:
    """``pod`` as the i-th distinct pod at resource version ``rv``."""
    meta = dict(pod["metadata"])
    meta["name"] = f"bench-{i:06}"
    meta["uid"] = f"00000000-0000-4000-8000-{i:012}"
    meta["resourceVersion"] = str(rv)
    return {**pod, "metadata": meta}


def event_lines(pod: RawObject, pods: int) -> list[bytes]:
    """ADDED for every pod, then MODIFIED for every pod: ``2 * pods`` lines, as the server sends them."""
    lines = []
    rv = 1000
    for event_type in ("ADDED", "MODIFIED"):
        for i in range(pods):
            rv += 1
            lines.append(orjson.dumps({"type": event_type, "object": variant(pod, i, rv)}) + b"\n")
    return lines


class ReplayListerWatcher:
    """An empty LIST, then one watch that replays pre-encoded lines and then stays open until closed."""

    def __init__(self, lines: list[bytes]) -> None:
        self._lines = lines
        self._closed = threading.Event()
        self.first_read: float | None = None

    def list(self, options: ListOptions) -> ListResult:
        return ListResult(items=[], resource_version="1000")

    def watch(self, *, resource_version: str, timeout_seconds: int, allow_bookmarks: bool) -> _ReplayStream:
        return _ReplayStream(self)

    def chunks(self) -> Iterator[bytes]:
        self.first_read = time.perf_counter()
        yield from self._lines
        self._closed.wait()

    def close(self) -> None:
        self._closed.set()


class _ReplayStream:
    def __init__(self, source: ReplayListerWatcher) -> None:
        self._source = source

    def __iter__(self) -> Iterator[WatchEvent]:
        return parse_watch_lines(self._source.chunks())

    def close(self) -> None:
        self._source.close()


def events_per_second(lines: list[bytes], transform: Transform | None) -> float:
    total = len(lines)
    done = threading.Event()
    seen = 0

    def count(*_: Any) -> None:
        nonlocal seen
        seen += 1
        if seen == total:
            done.set()

    source = ReplayListerWatcher(lines)
    informer = SharedInformer(name="bench", lister_watcher=source, transform=transform, logger=_QuietLogger())
    informer.add_event_handler(on_add=count, on_update=count)
    informer.start()
    try:
        if not done.wait(SYNC_TIMEOUT):
            raise RuntimeError(f"only {seen} of {total} events handled")
        finished = time.perf_counter()
    finally:
        informer.stop()
    assert source.first_read is not None
    return total / (finished - source.first_read)


def decode_only_per_second(lines: list[bytes]) -> float:
    started = time.perf_counter()
    for _ in parse_watch_lines(lines):
        pass
    return len(lines) / (time.perf_counter() - started)


def retained_bytes_per_pod(build: Callable[[], object], pods: int) -> float:
    """Bytes still allocated after ``build()`` returns, per pod, with the result kept alive."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = build()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del kept
    return (after - before) / pods


class _QuietLogger:
    def bind(self, **kw: Any) -> _QuietLogger:
        return self

    def debug(self, event: str, **kw: Any) -> None:
        pass

    info = warning = error = exception = debug


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=5000, help="distinct pods (events = 2 x pods)")
    parser.add_argument("--rounds", type=int, default=3, help="throughput runs; the median is shown")
    args = parser.parse_args(argv)

    pod = load_pod()
    lines = event_lines(pod, args.pods)
    encoded = [orjson.dumps(variant(pod, i, 1000 + i)) for i in range(args.pods)]
    slim_size = len(orjson.dumps(strip_managed_fields(pod)))

    def median(measure: Callable[[], float]) -> float:
        return statistics.median(measure() for _ in range(args.rounds))

    decode = median(lambda: decode_only_per_second(lines))
    with_transform = median(lambda: events_per_second(lines, strip_managed_fields))
    without_transform = median(lambda: events_per_second(lines, None))
    gc.disable()
    try:
        without_gc = median(lambda: events_per_second(lines, strip_managed_fields))
    finally:
        gc.enable()

    def store_of(transform: Transform | None) -> Callable[[], Store]:
        def build() -> Store:
            store = Store(indexers={NAMESPACE_INDEX: namespace_index}, transform=transform)
            for data in encoded:
                store.add(orjson.loads(data))
            return store

        return build

    as_dicts = retained_bytes_per_pod(lambda: [orjson.loads(d) for d in encoded], args.pods)
    stripped = retained_bytes_per_pod(
        lambda: [strip_managed_fields(orjson.loads(d)) for d in encoded], args.pods
    )
    in_store_raw = retained_bytes_per_pod(store_of(None), args.pods)
    in_store = retained_bytes_per_pod(store_of(strip_managed_fields), args.pods)

    print(
        f"pod JSON: {len(orjson.dumps(pod))} bytes ({slim_size} without managedFields); {len(lines)} events"
    )
    print(f"python {sys.version.split()[0]}, median of {args.rounds} runs")
    print()
    print(f"{'throughput':<52}{'events/s':>12}")
    print(f"{'  decode only (line split + orjson)':<52}{decode:>12,.0f}")
    print(f"{'  watch -> reflector -> store -> handler, stripped':<52}{with_transform:>12,.0f}")
    print(f"{'  watch -> reflector -> store -> handler, no transform':<52}{without_transform:>12,.0f}")
    print(f"{'  same, stripped, cyclic GC off (its share of the cost)':<52}{without_gc:>12,.0f}")
    print()
    print(f"{'memory per cached pod':<52}{'bytes':>12}")
    print(f"{'  decoded dict':<52}{as_dicts:>12,.0f}")
    print(f"{'  decoded dict, managedFields stripped':<52}{stripped:>12,.0f}")
    print(f"{'  in a Store, no transform':<52}{in_store_raw:>12,.0f}")
    print(f"{'  in a Store, strip_managed_fields (default)':<52}{in_store:>12,.0f}")


if __name__ == "__main__":
    main()
