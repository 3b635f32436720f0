"""The history recorder of the chaos suite: every Pod, ControlUnit and TaskSet status a namespace shows.

Three watches (Pods, ConfigMaps, TaskSets) of one namespace, through the project's own raw-JSON
``KubeListerWatcher``, with their own deliberately simple loop rather than the controller's informers: the
recorder must keep working while the things under test (API server, etcd, watch expiry) fail, and must not
share a bug with the code it checks. Lifetimes are kept in etcd revisions (see ``invariants``).

    history = History(cluster, namespace).start()
    ... run the workload, inject faults ...
    history.stop()
    assert history.verdict().violations == []
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from devcluster import Cluster
from informers.kube import KubeListerWatcher
from informers.listwatch import ApiError, ListOptions, Resource, TransportError, WatchTarget
from taskset.api import constants as c
from tests.chaos.invariants import (
    Lifetime,
    Outcome,
    Verdict,
    attempts_recorded_once,
    monotone_status,
    one_attempt_at_a_time,
    one_pod_per_replica,
)

PODS: Final = Resource(group="", version="v1", plural="pods")
CONFIGMAPS: Final = Resource(group="", version="v1", plural="configmaps")
TASKSETS: Final = Resource(group=c.GROUP, version=c.VERSION, plural=c.PLURAL)
WATCH_SECONDS: Final = 60
RETRY_PAUSE: Final = 0.3
GONE: Final = 410

Handler = Callable[[str, dict[str, Any], int, bool], None]  # event type, object, revision, exact


def _revision(obj: Mapping[str, Any]) -> int:
    return int((obj.get("metadata") or {}).get("resourceVersion") or 0)


class _Watch:
    """List once, then watch from there; after a 410 or a failed resume, list again and report as
    inexact what the gap hid. Runs in its own daemon thread until ``stop``."""

    def __init__(self, cluster: Cluster, namespace: str, resource: Resource, handler: Handler) -> None:
        target = WatchTarget(resource=resource, namespace=namespace)
        self._lw = KubeListerWatcher(api_client=cluster.api_client(), target=target)
        self._handler = handler
        self._stopped = threading.Event()
        self._stream: Any = None
        self._known: set[str] = set()  # UIDs present after the last event
        self.relists = 0
        self.synced = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"history-{resource.plural}")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        if self._stream is not None:
            self._stream.close()
        self._thread.join(10)

    def _run(self) -> None:
        version = ""
        while not self._stopped.is_set():
            try:
                if not version:
                    version = self._list()
                version = self._watch(version)
            except ApiError as err:
                if err.code == GONE:
                    version = ""
                else:
                    time.sleep(RETRY_PAUSE)
            except TransportError:
                time.sleep(RETRY_PAUSE)

    def _list(self) -> str:
        result = self._lw.list(ListOptions())
        first = not self.synced.is_set()
        revision = int(result.resource_version or 0)
        present = {item["metadata"]["uid"]: item for item in result.items}
        for uid in sorted(self._known - present.keys()):  # went away during the gap
            self._handler(
                "DELETED", {"metadata": {"uid": uid, "resourceVersion": str(revision)}}, revision, False
            )
        for uid, item in present.items():
            known = uid in self._known
            self._handler("MODIFIED" if known else "ADDED", item, _revision(item), first or known)
        self._known = set(present)
        if not first:
            self.relists += 1
        self.synced.set()
        return result.resource_version

    def _watch(self, version: str) -> str:
        self._stream = self._lw.watch(
            resource_version=version, timeout_seconds=WATCH_SECONDS, allow_bookmarks=True
        )
        for event in self._stream:
            if self._stopped.is_set():
                break
            kind, obj = event["type"], event["object"]
            if kind == "ERROR":
                raise ApiError(code=int(obj.get("code") or 0), message=str(obj.get("message", "")))
            version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
            if kind == "BOOKMARK":
                continue
            uid = obj["metadata"]["uid"]
            if kind == "DELETED":
                self._known.discard(uid)
            else:
                self._known.add(uid)
            self._handler(kind, obj, _revision(obj), True)
        return version


class History:
    """Lifetimes of the namespace's Pods and ControlUnits and every status of its TaskSets."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self._lock = threading.Lock()
        self._lifetimes: dict[str, Lifetime] = {}
        self._statuses: dict[str, list[dict[str, Any]]] = {}  # by TaskSet UID, in watch order
        self._names: dict[str, str] = {}  # TaskSet UID -> name
        self._latest: dict[str, dict[str, Any]] = {}  # TaskSet name -> newest object
        self._watches = [
            _Watch(cluster, namespace, PODS, self._on_pod),
            _Watch(cluster, namespace, CONFIGMAPS, self._on_configmap),
            _Watch(cluster, namespace, TASKSETS, self._on_taskset),
        ]

    def start(self, timeout: float = 30.0) -> History:
        for watch in self._watches:
            watch.start()
        for watch in self._watches:
            if not watch.synced.wait(timeout):
                raise AssertionError("history recorder: initial list did not complete")
        return self

    def stop(self) -> None:
        for watch in self._watches:
            watch.stop()

    @property
    def relists(self) -> int:
        return sum(watch.relists for watch in self._watches)

    # ----- recording ------------------------------------------------------------------------------------
    def _track(self, kind: str, event: str, obj: dict[str, Any], revision: int, exact: bool) -> None:
        meta = obj.get("metadata") or {}
        uid = str(meta.get("uid", ""))
        with self._lock:
            life = self._lifetimes.get(uid)
            if event == "DELETED":
                if life is not None and life.died is None:
                    life.died, life.died_exact = revision, exact
                return
            if life is None:
                life = self._new_lifetime(kind, meta)
                life.born, life.born_exact = revision, exact
                self._lifetimes[uid] = life

    @staticmethod
    def _new_lifetime(kind: str, meta: Mapping[str, Any]) -> Lifetime:
        annotations = meta.get("annotations") or {}
        labels = meta.get("labels") or {}
        if kind == "Pod":
            index = str(annotations.get(c.ANNOTATION_REPLICA_INDEX, "-1"))
            return Lifetime(
                kind=kind,
                name=str(meta.get("name", "")),
                uid=str(meta.get("uid", "")),
                taskset_uid=str(annotations.get(c.ANNOTATION_TASKSET_UID, "")),
                role=str(labels.get(c.LABEL_ROLE, "")),
                index=int(index) if index.lstrip("-").isdigit() else -1,
                taskset_attempt=str(annotations.get(c.ANNOTATION_TASKSET_ATTEMPT_ID, "")),
                replica_attempt=str(annotations.get(c.ANNOTATION_REPLICA_ATTEMPT_ID, "")),
            )
        owners = [o for o in meta.get("ownerReferences") or [] if o.get("kind") == c.KIND]
        return Lifetime(
            kind=kind,
            name=str(meta.get("name", "")),
            uid=str(meta.get("uid", "")),
            taskset_uid=str(owners[0].get("uid", "")) if owners else "",
        )

    def _on_pod(self, event: str, obj: dict[str, Any], revision: int, exact: bool) -> None:
        self._track("Pod", event, obj, revision, exact)

    def _on_configmap(self, event: str, obj: dict[str, Any], revision: int, exact: bool) -> None:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        if event == "DELETED" or c.LABEL_TASKSET in labels:
            self._track("ConfigMap", event, obj, revision, exact)

    def _on_taskset(self, event: str, obj: dict[str, Any], revision: int, exact: bool) -> None:
        meta = obj.get("metadata") or {}
        uid, status = str(meta.get("uid", "")), obj.get("status")
        if event == "DELETED" or not uid:
            return
        with self._lock:
            self._names[uid] = str(meta.get("name", ""))
            self._latest[str(meta.get("name", ""))] = obj
            if status:
                history = self._statuses.setdefault(uid, [])
                if not history or history[-1] != status:
                    history.append(status)

    # ----- queries --------------------------------------------------------------------------------------
    def lifetimes(self, kind: str) -> list[Lifetime]:
        with self._lock:
            return [life for life in self._lifetimes.values() if life.kind == kind]

    def final_outcomes(self) -> dict[str, Outcome]:
        """Each TaskSet's outcome as its newest status says (an unfinished one has its current state)."""
        with self._lock:
            return {name: Outcome.of(obj.get("status") or {}) for name, obj in self._latest.items()}

    def verdict(self) -> Verdict:
        verdict = one_pod_per_replica(self.lifetimes("Pod"))
        verdict.extend(one_attempt_at_a_time(self.lifetimes("Pod"), self.lifetimes("ConfigMap")))
        with self._lock:
            statuses = {f"{self._names[uid]}/{uid[:8]}": list(h) for uid, h in self._statuses.items()}
        for name, history in sorted(statuses.items()):
            verdict.extend(monotone_status(name, history))
            verdict.extend(attempts_recorded_once(name, history))
        return verdict

    def summary(self) -> dict[str, int]:
        verdict = self.verdict()
        return {
            "pods": len(self.lifetimes("Pod")),
            "control_units": len(self.lifetimes("ConfigMap")),
            "tasksets": len(self._names),
            "relists": self.relists,
            "violations": len(verdict.violations),
            "unverifiable": len(verdict.unverifiable),
        }
