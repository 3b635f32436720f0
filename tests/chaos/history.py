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

import dataclasses
import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, Final

from devcluster import Cluster
from informers.kube import KubeListerWatcher
from informers.listwatch import ApiError, ListOptions, Resource, TransportError, WatchTarget
from taskset.api import constants as c
from taskset.api.names import is_control_unit_name
from taskset.integrations.membership import MEMBERSHIP_FILE, membership_name
from tests.chaos.invariants import (
    FINAL_STATES,
    Lifetime,
    Outcome,
    Published,
    TaskSetRecord,
    Verdict,
    attempts_recorded_once,
    membership_generations,
    monotone_status,
    nothing_after_the_end,
    one_attempt_at_a_time,
    one_pod_per_replica,
    retries_as_matched,
    within_retry_limits,
)
from tests.chaos.timing import (
    RetryWait,
    deadline_of,
    deadline_respected,
    delays_respected,
    retry_waits,
    seconds,
    ttl_respected,
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


def _note_times(life: Lifetime, pod: Mapping[str, Any]) -> None:
    """Keep a Pod's creationTimestamp and the latest exit of its containers, as the servers wrote them."""
    life.created = life.created or seconds((pod.get("metadata") or {}).get("creationTimestamp"))
    for container in (pod.get("status") or {}).get("containerStatuses") or []:
        ended = (container.get("state") or {}).get("terminated") or {}
        finished = seconds(ended.get("finishedAt"))
        if finished is not None:
            life.finished = max(life.finished or finished, finished)
            life.failed = life.failed or int(ended.get("exitCode") or 0) != 0


class History:
    """Lifetimes of the namespace's Pods and ControlUnits and every status of its TaskSets."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self._lock = threading.Lock()
        self._lifetimes: dict[str, Lifetime] = {}
        self._tasksets: dict[str, TaskSetRecord] = {}  # by UID
        self._latest: dict[str, dict[str, Any]] = {}  # TaskSet name -> newest object
        self._published: dict[str, list[Published]] = {}  # TaskSet UID -> its membership's versions
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
            elif life is None:
                life = self._new_lifetime(kind, meta)
                life.born, life.born_exact = revision, exact
                self._lifetimes[uid] = life
            if life is not None and kind == "Pod":
                _note_times(life, obj)

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
        """ControlUnits as lifetimes; a TaskSet's live membership (which lives as long as the TaskSet,
        no attempt) as the generations it carried."""
        meta = obj.get("metadata") or {}
        labels = meta.get("labels") or {}
        taskset = str(labels.get(c.LABEL_TASKSET, ""))
        owners = [o for o in meta.get("ownerReferences") or [] if o.get("kind") == c.KIND]
        if event != "DELETED" and owners and str(meta.get("name", "")) == membership_name(taskset):
            self._publish(str(owners[0].get("uid", "")), obj, revision)
        if event == "DELETED" or is_control_unit_name(taskset, str(meta.get("name", ""))):
            self._track("ConfigMap", event, obj, revision, exact)

    def _publish(self, taskset_uid: str, obj: Mapping[str, Any], revision: int) -> None:
        text = (obj.get("data") or {}).get(MEMBERSHIP_FILE)
        try:
            document = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            document = None
        if not isinstance(document, dict) or not isinstance(document.get("generation"), int):
            return  # not the controller's writing (a stranger's edit it writes over)
        generation = document.pop("generation")
        digest = hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()
        with self._lock:
            versions = self._published.setdefault(taskset_uid, [])
            if not versions or (versions[-1].generation, versions[-1].digest) != (generation, digest):
                versions.append(Published(revision, generation, digest))

    def _on_taskset(self, event: str, obj: dict[str, Any], revision: int, exact: bool) -> None:
        meta = obj.get("metadata") or {}
        uid, status = str(meta.get("uid", "")), obj.get("status")
        if not uid:
            return
        with self._lock:
            record = self._tasksets.get(uid)
            if event == "DELETED":
                if record is not None and record.deleted is None:
                    record.deleted, record.deleted_seen = revision, time.time()
                return
            if record is None:
                record = self._tasksets[uid] = TaskSetRecord(str(meta.get("name", "")), uid)
            record.spec = obj.get("spec") or {}
            self._latest[record.name] = obj
            if status and (not record.statuses or record.statuses[-1] != status):
                record.statuses.append(status)
                if record.ended is None and status.get("state") in FINAL_STATES:
                    record.ended, record.ended_exact = revision, exact

    # ----- queries --------------------------------------------------------------------------------------
    def lifetimes(self, kind: str) -> list[Lifetime]:
        with self._lock:
            return [life for life in self._lifetimes.values() if life.kind == kind]

    def published(self) -> dict[str, list[Published]]:
        """Every version of each TaskSet's live membership, in watch order, by TaskSet UID."""
        with self._lock:
            return {name: list(versions) for name, versions in self._published.items()}

    def statuses(self) -> dict[str, list[dict[str, Any]]]:
        """Every status each TaskSet went through, in watch order, by name."""
        with self._lock:
            return {record.name: list(record.statuses) for record in self._tasksets.values()}

    def final_outcomes(self) -> dict[str, Outcome]:
        """Each TaskSet's outcome as its newest status says (an unfinished one has its current state)."""
        with self._lock:
            return {name: Outcome.of(obj.get("status") or {}) for name, obj in self._latest.items()}

    def tasksets(self) -> dict[str, TaskSetRecord]:
        """Every TaskSet object seen, by UID (copies: the record goes on while a test reads them)."""
        with self._lock:
            return {
                uid: dataclasses.replace(record, statuses=list(record.statuses))
                for uid, record in self._tasksets.items()
            }

    def deleted(self, name: str) -> bool:
        """Whether the record saw the deletion of the newest TaskSet of this name."""
        with self._lock:
            uid = str((self._latest.get(name) or {}).get("metadata", {}).get("uid", ""))
            record = self._tasksets.get(uid)
            return record is not None and record.deleted is not None

    def deadlines(self) -> dict[str, float]:
        """When each TaskSet's activeDeadlineSeconds passes (epoch seconds), by record label."""
        return {r.label: due for r in self.tasksets().values() if (due := deadline_of(r)) is not None}

    def retry_waits(self) -> list[RetryWait]:
        return retry_waits(self.lifetimes("Pod"), self.tasksets())

    def verdict(self) -> Verdict:
        pods, records, published = self.lifetimes("Pod"), self.tasksets(), self.published()
        verdict = one_pod_per_replica(pods)
        verdict.extend(one_attempt_at_a_time(pods, self.lifetimes("ConfigMap")))
        for record in sorted(records.values(), key=lambda r: r.label):
            verdict.extend(monotone_status(record.label, record.statuses))
            verdict.extend(retries_as_matched(record.label, record.statuses))
            verdict.extend(within_retry_limits(record))
            verdict.extend(attempts_recorded_once(record.label, record.statuses))
            verdict.extend(
                membership_generations(record.label, record.statuses, published.get(record.uid, []))
            )
        verdict.extend(nothing_after_the_end(pods, records))
        verdict.extend(delays_respected(retry_waits(pods, records)))
        verdict.extend(deadline_respected(pods, records))
        verdict.extend(ttl_respected(pods, records))
        return verdict

    def summary(self) -> dict[str, int]:
        verdict = self.verdict()
        return {
            "pods": len(self.lifetimes("Pod")),
            "control_units": len(self.lifetimes("ConfigMap")),
            "tasksets": len(self._tasksets),
            "retry_waits": len(self.retry_waits()),
            "relists": self.relists,
            "violations": len(verdict.violations),
            "unverifiable": len(verdict.unverifiable),
        }
