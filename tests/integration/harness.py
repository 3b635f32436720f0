"""Scenario harness (spec 14.0): TaskSet helpers, a recorder of every Pod and status the namespace ever
shows, and a driver that plays the workload's part (when each Pod ends, with which exit code).

The driver stands in for the container commands of the scenarios: kwok runs no containers, so for each
new Pod the driver decides an outcome from the Pod (its role, index and attempt ids) and patches the
simulation annotations (``devcluster.sim``) onto it. Templates can also carry the annotations directly.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

from kubernetes import client, watch

from devcluster import Cluster, sim
from taskset.api import constants as c

FINAL_TIMEOUT = 180.0  # spec 14.0: final(ts) waits 180 s
POLL = 0.2


def eventually(
    predicate: Callable[[], Any], timeout: float = 60.0, what: str = "condition", *, poll: float = POLL
) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(poll)
    raise AssertionError(f"{what} not met within {timeout}s (last value: {last!r})")


@dataclass(frozen=True)
class Outcome:
    """What a Pod's workload does: run ``seconds`` then exit ``code``; ``seconds`` None runs until deleted."""

    seconds: float | None
    code: int = 0
    message: str = ""
    pod_reason: str = ""
    container_codes: dict[str, int] = field(default_factory=dict)
    reason: str = ""  # the containers' terminated reason (e.g. OOMKilled) instead of Completed/Error

    def annotations(self) -> dict[str, str]:
        if self.seconds is None:
            return {}
        result = {sim.DURATION: f"{int(self.seconds * 1000)}ms", sim.EXIT_CODE: str(self.code)}
        if self.message:
            result[sim.MESSAGE] = self.message
        if self.pod_reason:
            result[sim.POD_REASON] = self.pod_reason
        if self.reason:
            result[sim.REASON] = self.reason
        for container, code in self.container_codes.items():
            result[sim.container_exit_code(container)] = str(code)
        return result


def run_forever() -> Outcome:
    return Outcome(None)


def exits(code: int, after: float = 0.0, **extra: Any) -> Outcome:
    return Outcome(after, code, **extra)


@dataclass(frozen=True)
class PodFacts:
    """What the driver knows about a Pod when deciding its outcome (what a command could read)."""

    name: str
    role: str
    index: int
    taskset_attempt: int
    replica_attempt: int
    env: dict[str, str]


Script = Callable[[PodFacts], Outcome | None]  # None: leave the Pod as its template says


@dataclass
class PodEntry:
    name: str
    uid: str
    taskset_attempt: str
    replica_attempt: str
    created: float
    gone: float | None = None
    deletion_seen: float | None = None
    # The API server's own times, in whole seconds since the epoch: when it created the Pod, and when a
    # deletion was asked of it (deletionTimestamp less the grace). Unlike the times above, which are when
    # this watch saw it (late on a busy machine), they measure what the controller did.
    created_at: float | None = None
    deletion_asked_at: float | None = None


class Recorder:
    """Watches Pods and TaskSets of a namespace and keeps their whole history (the scenarios' pod log)."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self._cluster = cluster
        self._namespace = namespace
        self._lock = threading.Lock()
        self.pods: list[PodEntry] = []
        self.statuses: dict[str, list[dict[str, Any]]] = {}
        self._watches: list[watch.Watch] = []
        self._threads: list[threading.Thread] = []
        self._stopped = threading.Event()
        self.script: Script | None = None
        self._driven: set[str] = set()

    # ----- lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        for target in (self._watch_pods, self._watch_tasksets):
            thread = threading.Thread(target=target, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        self._stopped.set()
        for w in self._watches:
            w.stop()

    def _stream(self, list_func: Callable[..., Any], **kwargs: Any) -> Iterator[dict[str, Any]]:
        while not self._stopped.is_set():
            w = watch.Watch()
            self._watches.append(w)
            try:
                for event in w.stream(list_func, timeout_seconds=30, _request_timeout=40, **kwargs):
                    if self._stopped.is_set():
                        return
                    yield event
            except Exception:
                time.sleep(0.2)

    def _watch_pods(self) -> None:
        core = client.CoreV1Api(self._cluster.api_client())
        for event in self._stream(core.list_namespaced_pod, namespace=self._namespace):
            pod = event["raw_object"]
            self._on_pod(event["type"], pod)

    def _watch_tasksets(self) -> None:
        custom = client.CustomObjectsApi(self._cluster.api_client())
        for event in self._stream(
            custom.list_namespaced_custom_object,
            group=c.GROUP,
            version=c.VERSION,
            namespace=self._namespace,
            plural=c.PLURAL,
        ):
            obj = event["raw_object"] if "raw_object" in event else event["object"]
            status = obj.get("status")
            if status:
                with self._lock:
                    history = self.statuses.setdefault(obj["metadata"]["name"], [])
                    if not history or history[-1] != status:
                        history.append(status)

    def _on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        annotations = meta.get("annotations") or {}
        now = time.monotonic()
        with self._lock:
            entry = next((e for e in self.pods if e.uid == meta["uid"]), None)
            if entry is None:
                entry = PodEntry(
                    meta["name"],
                    meta["uid"],
                    annotations.get(c.ANNOTATION_TASKSET_ATTEMPT_ID, ""),
                    annotations.get(c.ANNOTATION_REPLICA_ATTEMPT_ID, ""),
                    now,
                )
                self.pods.append(entry)
            if entry.created_at is None and meta.get("creationTimestamp"):
                entry.created_at = timestamp(meta["creationTimestamp"])
            if meta.get("deletionTimestamp") and entry.deletion_seen is None:
                entry.deletion_seen = now
                grace = meta.get("deletionGracePeriodSeconds") or 0
                entry.deletion_asked_at = timestamp(meta["deletionTimestamp"]) - float(grace)
            if kind == "DELETED":
                entry.gone = now
        if kind != "DELETED" and self.script is not None and meta["uid"] not in self._driven:
            self._drive(pod)

    def _drive(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        annotations = meta.get("annotations") or {}
        if c.ANNOTATION_REPLICA_INDEX not in annotations:
            return
        self._driven.add(meta["uid"])
        containers = pod["spec"].get("containers") or [{}]
        env = {e["name"]: e.get("value", "") for e in containers[0].get("env") or [] if "name" in e}
        facts = PodFacts(
            name=meta["name"],
            role=(meta.get("labels") or {}).get(c.LABEL_ROLE, ""),
            index=int(annotations[c.ANNOTATION_REPLICA_INDEX]),
            taskset_attempt=int(annotations.get(c.ANNOTATION_TASKSET_ATTEMPT_ID, "0")),
            replica_attempt=int(annotations.get(c.ANNOTATION_REPLICA_ATTEMPT_ID, "0")),
            env=env,
        )
        assert self.script is not None
        outcome = self.script(facts)
        if outcome is None or outcome.seconds is None:
            return
        core = client.CoreV1Api(self._cluster.api_client())
        with contextlib.suppress(client.ApiException):  # already gone: nothing to drive
            core.patch_namespaced_pod(
                meta["name"], self._namespace, {"metadata": {"annotations": outcome.annotations()}}
            )

    # ----- queries --------------------------------------------------------------------------------
    def pod_log(self, prefix: str = "") -> list[PodEntry]:
        with self._lock:
            return [e for e in self.pods if e.name.startswith(prefix)]

    def phases(self, name: str) -> list[str]:
        with self._lock:
            seen = [s.get("phase", "") for s in self.statuses.get(name, [])]
        return [p for i, p in enumerate(seen) if i == 0 or p != seen[i - 1]]

    def states(self, name: str) -> list[str]:
        with self._lock:
            seen = [s.get("state", "") for s in self.statuses.get(name, [])]
        return [p for i, p in enumerate(seen) if i == 0 or p != seen[i - 1]]

    def history(self, name: str) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.statuses.get(name, []))


class TaskSets:
    """The API calls a scenario makes, in one namespace."""

    def __init__(self, cluster: Cluster, namespace: str) -> None:
        self.cluster = cluster
        self.namespace = namespace
        api = cluster.api_client()
        self.custom = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        created = self.custom.create_namespaced_custom_object(
            c.GROUP, c.VERSION, self.namespace, c.PLURAL, obj
        )
        return cast("dict[str, Any]", created)

    def get(self, name: str) -> dict[str, Any] | None:
        try:
            found = cast(
                "dict[str, Any]",
                self.custom.get_namespaced_custom_object(c.GROUP, c.VERSION, self.namespace, c.PLURAL, name),
            )
        except client.ApiException as err:
            if err.status == 404:
                return None
            raise
        return found

    def status(self, name: str) -> dict[str, Any]:
        obj = self.get(name)
        return (obj or {}).get("status") or {}

    def final(self, name: str, timeout: float = FINAL_TIMEOUT) -> dict[str, Any]:
        """spec 14.0 final(ts): eventually phase == TaskSetCompleted; returns the status."""
        status: dict[str, Any] = eventually(
            lambda: (s := self.status(name)).get("phase") == c.TaskSetPhase.COMPLETED and s,
            timeout,
            f"TaskSet {name} completed",
        )
        return status

    def delete(self, name: str, propagation: str | None = None) -> None:
        body = {"propagationPolicy": propagation} if propagation else {}
        self.custom.delete_namespaced_custom_object(
            c.GROUP, c.VERSION, self.namespace, c.PLURAL, name, body=body
        )

    def set_replicas(self, name: str, replicas: int, role: int = 0) -> None:
        """Scale a role as ``kubectl edit`` does (``edit``)."""

        def change(obj: dict[str, Any]) -> None:
            obj["spec"]["roles"][role]["replicas"] = replicas

        self.edit(name, change)

    def edit(self, name: str, change: Callable[[dict[str, Any]], None]) -> None:
        """Edit the TaskSet as ``kubectl edit`` does: read, ``change``, replace (the read's resourceVersion
        held), again on a conflict with the controller's status writes (each bumps the resourceVersion,
        and the API server answers a stale one with 409 before it validates the edit)."""
        for _ in range(10):
            obj = self.get(name)
            assert obj is not None, name
            change(obj)
            try:
                self.custom.replace_namespaced_custom_object(
                    c.GROUP, c.VERSION, self.namespace, c.PLURAL, name, obj
                )
                return
            except client.ApiException as err:
                if err.status != 409:
                    raise
        raise AssertionError(f"{name}: the edit could not be written for conflicts")

    def live_pods(self, taskset: str) -> list[dict[str, Any]]:
        """The TaskSet's Pods that are not going away."""
        return [p for p in self.pods(taskset) if not p["metadata"].get("deletionTimestamp")]

    def pods(self, taskset: str) -> list[dict[str, Any]]:
        """spec 14.0 pods(ts): Pods labelled TaskSet=<ts> in the namespace."""
        items = self.core.list_namespaced_pod(
            self.namespace, label_selector=f"{c.LABEL_TASKSET}={taskset}"
        ).items
        return [self.core.api_client.sanitize_for_serialization(p) for p in items]

    def _read(self, read: Callable[[str, str], Any], name: str) -> dict[str, Any] | None:
        """A core object of this namespace as JSON, or None when there is none of that name."""
        try:
            obj = read(name, self.namespace)
        except client.ApiException as err:
            if err.status == 404:
                return None
            raise
        found: dict[str, Any] = self.core.api_client.sanitize_for_serialization(obj)
        return found

    def pod(self, name: str) -> dict[str, Any] | None:
        return self._read(self.core.read_namespaced_pod, name)

    def configmap(self, name: str) -> dict[str, Any] | None:
        return self._read(self.core.read_namespaced_config_map, name)

    def service(self, name: str) -> dict[str, Any] | None:
        return self._read(self.core.read_namespaced_service, name)

    def events(self, taskset: str) -> list[tuple[str, str]]:
        items = self.core.list_namespaced_event(
            self.namespace, field_selector=f"involvedObject.name={taskset},involvedObject.kind={c.KIND}"
        ).items
        return [(e.reason or "", e.message or "") for e in items]

    def reasons(self, taskset: str) -> set[str]:
        return {reason for reason, _ in self.events(taskset)}

    def end_pod(self, name: str, code: int = 0, **extra: str) -> None:
        """Make a running Pod's workload exit now (patches the simulation annotations)."""
        annotations = {sim.DURATION: "0s", sim.EXIT_CODE: str(code), **extra}
        self.core.patch_namespaced_pod(name, self.namespace, {"metadata": {"annotations": annotations}})

    def release(self, name: str) -> None:
        """Let a Pod held Pending by ``sim.HOLD`` (a stand-in for a slow init container) start running."""
        self.core.patch_namespaced_pod(name, self.namespace, {"metadata": {"annotations": {sim.HOLD: None}}})

    def delete_pod(self, name: str, **options: Any) -> None:
        self.core.delete_namespaced_pod(name, self.namespace, body=options or None)


def replica(status: dict[str, Any], role: str, index: int) -> dict[str, Any]:
    for role_status in status.get("roleStatus") or []:
        if role_status["name"] == role:
            found: dict[str, Any] = role_status["replicaStatus"][index]
            return found
    raise KeyError(role)


def role_status(status: dict[str, Any], role: str) -> dict[str, Any]:
    for entry in status.get("roleStatus") or []:
        if entry["name"] == role:
            found: dict[str, Any] = entry
            return found
    raise KeyError(role)


def never_overlapping(entries: list[PodEntry]) -> bool:
    """Each entry was created after the previous one was gone (spec 14.0)."""
    ordered = sorted(entries, key=lambda e: e.created)
    return all(
        prev.gone is not None and prev.gone <= nxt.created for prev, nxt in itertools.pairwise(ordered)
    )


@contextmanager
def recording(cluster: Cluster, namespace: str, script: Script | None = None) -> Iterator[Recorder]:
    recorder = Recorder(cluster, namespace)
    recorder.script = script
    recorder.start()
    try:
        yield recorder
    finally:
        recorder.stop()


# ----- additions: slow Pod termination (a container that ignores SIGTERM), status times ------------------


SLOW_TERMINATION_FINALIZER = "sim.octopus.openi.pcl.cn/slow-termination"


class SlowTermination:
    """Plays a container that ignores SIGTERM (``trap '' TERM``, spec 14.0): a Pod passed to ``hold()``
    gets a finalizer, so it stays (terminating) after its deletion is requested, and a background thread
    removes the finalizer ``grace`` seconds after the recorder first saw the deletion, as a kubelet
    would kill the container when the grace period has passed. ``stop()`` releases every Pod still held."""

    def __init__(self, ts: TaskSets, recorder: Recorder, grace: float) -> None:
        self._ts = ts
        self._recorder = recorder
        self.grace = grace
        self._held: set[str] = set()  # UIDs
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> SlowTermination:
        self._thread.start()
        return self

    def hold(self, pod: PodFacts) -> None:
        """Call from a driver script: this Pod terminates slowly."""
        found = self._ts.pod(pod.name)
        if found is None:
            return
        with self._lock:
            self._held.add(found["metadata"]["uid"])
        self._ts.core.patch_namespaced_pod(
            pod.name, self._ts.namespace, {"metadata": {"finalizers": [SLOW_TERMINATION_FINALIZER]}}
        )

    def _release(self, name: str) -> None:
        try:
            self._ts.core.patch_namespaced_pod(name, self._ts.namespace, {"metadata": {"finalizers": None}})
        except client.ApiException as err:
            if err.status != 404:
                raise

    def _run(self) -> None:
        while not self._stopped.wait(0.1):
            now = time.monotonic()
            for entry in self._recorder.pod_log():
                with self._lock:
                    due = (
                        entry.uid in self._held
                        and entry.gone is None
                        and entry.deletion_seen is not None
                        and now - entry.deletion_seen >= self.grace
                    )
                    if due:
                        self._held.discard(entry.uid)
                if due:
                    self._release(entry.name)

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(5)
        with self._lock:
            held, self._held = set(self._held), set()
        for entry in self._recorder.pod_log():
            if entry.uid in held and entry.gone is None:
                self._release(entry.name)


# ----- appended helpers: whole-object logs of Pods or ConfigMaps, and a reconcile-outcome counter --------


@dataclass
class ObjectVersion:
    """One observation: when it arrived (monotonic), its type (ADDED, MODIFIED, DELETED; LISTED for the
    initial list) and the object as the API server sent it."""

    time: float
    kind: str
    obj: dict[str, Any]

    @property
    def name(self) -> str:
        name: str = self.obj["metadata"]["name"]
        return name

    @property
    def uid(self) -> str:
        uid: str = self.obj["metadata"]["uid"]
        return uid


class ObjectLog:
    """Every version of the Pods or ConfigMaps (``plural``) a namespace ever shows, in watch order.

    The Recorder's pod log keeps identities only; this keeps whole objects, so a scenario can ask when a
    Pod turned terminal, who controlled it, or whether an object was ever modified. ``start()`` lists
    synchronously, so everything created after it returns is seen; the watch resumes from the last
    resourceVersion and relists on 410 Gone (a relist records each object again as LISTED).
    """

    def __init__(self, cluster: Cluster, namespace: str, plural: str) -> None:
        core = client.CoreV1Api(cluster.api_client())
        lists = {"pods": core.list_namespaced_pod, "configmaps": core.list_namespaced_config_map}
        self._list = lists[plural]
        self._serialize = core.api_client.sanitize_for_serialization
        self._namespace = namespace
        self._lock = threading.Lock()
        self._versions: list[ObjectVersion] = []
        self._stopped = threading.Event()
        self._watch: watch.Watch | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> ObjectLog:
        version = self._relist()
        self._thread = threading.Thread(target=self._run, args=(version,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        if self._watch is not None:
            self._watch.stop()

    def _relist(self) -> str:
        listed: Any = self._list(self._namespace)
        now = time.monotonic()
        with self._lock:
            for item in listed.items:
                self._versions.append(ObjectVersion(now, "LISTED", self._serialize(item)))
        version: str = listed.metadata.resource_version
        return version

    def _run(self, version: str) -> None:
        while not self._stopped.is_set():
            self._watch = watch.Watch()
            try:
                for event in self._watch.stream(
                    self._list,
                    namespace=self._namespace,
                    resource_version=version,
                    timeout_seconds=30,
                    _request_timeout=40,
                ):
                    if self._stopped.is_set():
                        return
                    obj = event["raw_object"]
                    version = obj["metadata"]["resourceVersion"]
                    with self._lock:
                        self._versions.append(ObjectVersion(time.monotonic(), event["type"], obj))
            except client.ApiException as err:
                if err.status == 410 and not self._stopped.is_set():
                    version = self._relist()
                else:
                    time.sleep(0.2)
            except Exception:  # a test watch: reconnect and carry on
                time.sleep(0.2)

    def versions(self, name: str | None = None) -> list[ObjectVersion]:
        with self._lock:
            return [v for v in self._versions if name is None or v.name == name]

    def names(self) -> list[str]:
        """The names of every object ever seen, in the order they first appeared."""
        return list(dict.fromkeys(v.name for v in self.versions()))


@contextmanager
def watching(cluster: Cluster, namespace: str, plural: str) -> Iterator[ObjectLog]:
    log = ObjectLog(cluster, namespace, plural).start()
    try:
        yield log
    finally:
        log.stop()


class ReconcileOutcomes:
    """A ``WorkerMetrics`` for a test's own Controller: counts reconcile outcomes (success, error, ...)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.counts: dict[str, int] = {}

    def observe_reconcile(self, controller: str, result: str, seconds: float) -> None:
        with self._lock:
            self.counts[result] = self.counts.get(result, 0) + 1

    def set_active_workers(self, controller: str, count: int) -> None:
        pass

    def count(self, result: str) -> int:
        with self._lock:
            return self.counts.get(result, 0)


def timestamp(value: str) -> float:
    """Seconds since the epoch of an RFC 3339 status time such as ``2024-01-02T03:04:05Z``."""
    from datetime import datetime  # noqa: PLC0415  (additions stay at the end of this shared module)

    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
