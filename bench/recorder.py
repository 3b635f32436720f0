"""Watches the Pods and TaskSets of one namespace and timestamps every change on arrival
(``time.monotonic``: creationTimestamp has 1 s resolution, far too coarse for latencies).

Also checks for duplicate Pods: a Pod name that is ADDED again (new uid) while a Pod of that name is still
live (no DELETED seen for it) is a duplicate. The watch is one ordered stream, so this is exact.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from bench.kube import Api, RawObject
from taskset.api import constants as c

TASKSETS_PATH = f"/apis/{c.GROUP}/{c.VERSION}/namespaces/{{ns}}/{c.PLURAL}"
PODS_PATH = "/api/v1/namespaces/{ns}/pods"
FINAL_POD_PHASES = ("Succeeded", "Failed")


@dataclass
class PodRecord:
    name: str
    uid: str
    taskset: str
    role: str
    replica_attempt: int
    added: float
    running: float | None = None  # phase Running first seen
    exited: float | None = None
    exit_phase: str = ""
    exit_codes: tuple[int, ...] = ()  # of its containers, once it exited
    deleted: float | None = None
    events: int = 0  # watch events seen for it (ADDED, every MODIFIED, DELETED): what a Pod watch carries


@dataclass
class TaskSetRecord:
    name: str
    added: float
    final: float | None = None  # phase TaskSetCompleted first seen
    state: str = ""
    message: str = ""  # stateMessage at the end
    status_versions: int = 0  # distinct statuses seen (a lower bound of status writes)
    status_bytes_peak: int = 0  # the largest status seen, serialized as JSON (against the status budget)


@dataclass
class Recorder:
    api: Api
    namespace: str
    pods: dict[str, PodRecord] = field(default_factory=dict)  # by uid
    tasksets: dict[str, TaskSetRecord] = field(default_factory=dict)
    duplicates: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _live: dict[str, str] = field(default_factory=dict)  # pod name -> uid of its live pod
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> None:
        for target, path in (
            (self._on_pod_event, PODS_PATH.format(ns=self.namespace)),
            (self._on_taskset_event, TASKSETS_PATH.format(ns=self.namespace)),
        ):
            thread = threading.Thread(target=self._run, args=(path, target), daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stop.set()

    def _run(self, path: str, handle: Callable[[str, RawObject, float], None]) -> None:
        try:
            for kind, obj in self.api.watch(path, self._stop):
                handle(kind, obj, time.monotonic())
        except Exception as err:
            if not self._stop.is_set():
                self.errors.append(f"watch {path}: {err!r}")

    def _on_pod_event(self, kind: str, pod: RawObject, now: float) -> None:
        meta = pod["metadata"]
        uid = meta["uid"]
        with self._lock:
            record = self.pods.get(uid)
            if record is None:
                labels = meta.get("labels") or {}
                annotations = meta.get("annotations") or {}
                record = PodRecord(
                    name=meta["name"],
                    uid=uid,
                    taskset=labels.get(c.LABEL_TASKSET, ""),
                    role=labels.get(c.LABEL_ROLE, ""),
                    replica_attempt=int(annotations.get(c.ANNOTATION_REPLICA_ATTEMPT_ID, "0") or 0),
                    added=now,
                )
                self.pods[uid] = record
                live = self._live.get(record.name)
                if live is not None and live != uid:
                    self.duplicates.append(f"{record.name}: {live} still live when {uid} appeared")
                self._live[record.name] = uid
            record.events += 1
            status = pod.get("status") or {}
            phase = status.get("phase", "")
            if record.running is None and phase == "Running":
                record.running = now
            if record.exited is None and phase in FINAL_POD_PHASES:
                record.exited, record.exit_phase = now, phase
                record.exit_codes = exit_codes(status)
            if kind == "DELETED":
                record.deleted = now
                if self._live.get(record.name) == uid:
                    del self._live[record.name]

    def _on_taskset_event(self, kind: str, obj: RawObject, now: float) -> None:
        name = obj["metadata"]["name"]
        status = obj.get("status") or {}
        with self._lock:
            record = self.tasksets.get(name)
            if record is None:
                record = self.tasksets[name] = TaskSetRecord(name=name, added=now)
            if status:
                record.status_versions += 1
                record.status_bytes_peak = max(record.status_bytes_peak, len(orjson.dumps(status)))
            if record.final is None and status.get("phase") == c.TaskSetPhase.COMPLETED:
                record.final, record.state = now, str(status.get("state", ""))
                record.message = str(status.get("stateMessage", ""))

    # ----- queries ---------------------------------------------------------------------------------
    def finished(self, names: list[str]) -> bool:
        with self._lock:
            return all((r := self.tasksets.get(n)) is not None and r.final is not None for n in names)

    def count_final(self) -> int:
        with self._lock:
            return sum(1 for r in self.tasksets.values() if r.final is not None)

    def snapshot(self) -> tuple[list[PodRecord], list[TaskSetRecord]]:
        with self._lock:
            return list(self.pods.values()), list(self.tasksets.values())

    def pod_count(self) -> int:
        with self._lock:
            return len(self.pods)

    def deleted_count(self) -> int:
        with self._lock:
            return sum(1 for p in self.pods.values() if p.deleted is not None)


def exit_codes(status: RawObject) -> tuple[int, ...]:
    return tuple(
        int(terminated["exitCode"])
        for container in status.get("containerStatuses") or ()
        if (terminated := (container.get("state") or {}).get("terminated")) is not None
    )


def wait_until(predicate: Callable[[], Any], timeout: float, what: str, poll: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f}s")
        time.sleep(poll)
