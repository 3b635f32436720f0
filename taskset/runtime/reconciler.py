"""One reconcile of one TaskSet: observe (caches only) -> decide (pure) -> act -> one status write -> events.

Level-triggered and restartable at any line: everything needed to continue is in the TaskSet's status
or derivable from the cached Pods and ControlUnit. What the reconciler keeps in memory lives in three
collaborators, each in its own module with its invariants: the *records* of the last status written or
held (records.py), the *expectations* that hold off a pass until the caches show the last one's creates
and deletes (expectations.py), and the *created ControlUnits* the cache has not shown yet
(created_units.py). Each only spares a request or a wait; a fresh process rebuilds all from the objects.

Namespace isolation. Every index key starts with the object's own ``metadata.namespace``,
which the API server sets from the request path and nobody can forge, never with an annotation, which
whoever creates the object writes. So a Pod or ConfigMap in namespace B is filed under B only: a
TaskSet in namespace A never sees it, neither among its Pods (looked up by name, where a stranger in
another namespace would read as a name conflict or a vanished Pod) nor among the objects its UID
controls (an owner reference may name any UID, even one in another namespace; the API server does not
check it). Within the TaskSet's namespace, the ``TaskSet`` annotation only groups the candidates: a
Pod is the replica's only if its controlling owner is the attempt's ControlUnit (``classify_pod``),
and a stranger's Pod under a replica's name (``<taskset>-<role>-<index>``, deterministic) really
holds that name there: a conflict the status names. Keys are built from one dict read per object
(cheap enough for the pass of a 10,000-Pod TaskSet, which reads one index key), and the controller
routes every event with the same functions (``controller.py``), so an event wakes only a TaskSet of
the object's own namespace.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, Final, Protocol

import cachetools
import orjson

from clock import Clock, RealClock
from informers import DeletedFinalStateUnknown, Store
from taskset.api.constants import LOGGER_NAME, EventReason
from taskset.api.live_fields import managed_here, suspended
from taskset.api.names import control_unit_name, is_control_unit_name
from taskset.api.scale import scale_requesters
from taskset.api.spec import ParseResult, parse_taskset
from taskset.api.status import QUOTED_MAX, TaskSetStatus, clip
from taskset.decide import (
    ActionResult,
    ApplyOwnedStatus,
    CreateOwned,
    CreatePod,
    DeleteOwned,
    DeleteTaskSet,
    Intent,
    LogRecord,
    Plan,
    ResultKind,
    Settings,
    TaskSetRef,
    UpdateOwned,
    decide,
    next_batch,
    persists_first,
)
from taskset.objects.controlunit import SNAPSHOT_KEY, snapshot_of
from taskset.objects.owned import CONFIGMAPS
from taskset.objects.pods import build_pod
from taskset.observed.slim import snapshot_digest
from taskset.observed.views import (
    ControlUnitView,
    Observed,
    OwnedView,
    control_unit_view,
    owned_view,
    pod_view,
)
from taskset.runtime.created_units import CreatedUnits
from taskset.runtime.disruptions import Disruptions
from taskset.runtime.events import EventRecorder, EventTarget
from taskset.runtime.expectations import Expectations
from taskset.runtime.indexes import OWNER_INDEX, POD_INDEX, owner_key
from taskset.runtime.kube import KubeClient, KubeError, core_path, namespaced_path, taskset_path
from taskset.runtime.lost_nodes import LostNodes
from taskset.runtime.owned_updates import update_owned_data
from taskset.runtime.pod_views import PodViews
from taskset.runtime.read_objects import ReadObjects
from taskset.runtime.records import Record, StatusRecords
from taskset.runtime.snapshot_texts import Snapshots

# Why a sharded replica sent nothing: the TaskSet's bucket went to another replica mid-pass.
NOT_OURS: Final = "this replica no longer holds the TaskSet's shard bucket; nothing written"
PARSE_CACHE_SIZE: Final = 4096  # parsed specs by (uid, generation): parsing big specs every pass is waste


class ReconcileMetrics(Protocol):
    """What the reconciler reports; ``taskset.daemon.metrics.ControllerMetrics`` implements it."""

    def observe_status_write(self, result: str) -> None: ...

    def observe_action(self, kind: str, result: str) -> None: ...

    def observe_transition(self, machine: str, source: str, target: str) -> None: ...


class _NoMetrics:
    def observe_status_write(self, result: str) -> None: ...

    def observe_action(self, kind: str, result: str) -> None: ...

    def observe_transition(self, machine: str, source: str, target: str) -> None: ...


@dataclass(frozen=True)
class ReconcileResult:
    requeue_after: float | None = None
    error: str | None = None  # set -> requeue with per-key backoff


class Reconciler:
    """The passes of every TaskSet; the work queue hands a key to one worker at a time.

    Its memory is three thread-safe collaborators, each with its invariants and its lock in its own
    module: ``_records`` (records.py), ``_expectations`` (expectations.py) and ``_created_units``
    (created_units.py, under the expectations' lock, since an add event concerns both at once).
    """

    def __init__(
        self,
        *,
        client: KubeClient,
        tasksets: Store,
        pods: Store,
        units: Store,
        recorder: EventRecorder,
        logger: Any,
        settings: Settings = Settings(),  # noqa: B008  (frozen)
        clock: Clock | None = None,
        metrics: ReconcileMetrics | None = None,
        action_parallelism: int = 1,
        owned: Mapping[str, Store] | None = None,
        read: Mapping[str, Store] | None = None,
        fence: Callable[[str], bool] | None = None,
    ) -> None:
        """``owned``: the caches of the kinds integrations own, by ``ObjectKind.key`` (ConfigMaps are
        ``units``, whichever is given); ``read``: those of the kinds they read (``Observed.read``);
        ``fence(namespace)``: asked before every write, False once a sharded replica's tenure of the
        namespace's bucket is over (``taskset.daemon.buckets``): the write is not sent."""
        self._client = client
        self._fence = fence
        self._pool = (
            ThreadPoolExecutor(action_parallelism, thread_name_prefix="pod-action")
            if action_parallelism > 1
            else None
        )
        self._tasksets = tasksets
        self._pods = pods
        self._units = units
        self._owned: dict[str, Store] = {**(owned or {}), CONFIGMAPS.key: units}
        self._read = ReadObjects(read or {})
        # Filled by the node cache's handlers (taskset.runtime.controller); empty without one.
        self.lost_nodes = LostNodes()
        self._recorder = recorder
        self._log = logger
        self._settings = settings
        self._clock = clock or RealClock()
        self._metrics: ReconcileMetrics = metrics or _NoMetrics()
        self._records = StatusRecords(self._clock)
        others = [store for store in self._owned.values() if store is not units]
        self._expectations = Expectations((pods, units, *others), self._clock)
        self._created_units = CreatedUnits(
            self._expectations, self._clock, timeout=settings.cache_creation_timeout
        )
        self._checks = settings.framework.spec_checks()
        self._snapshots = Snapshots()
        # Both are fed by the Pod cache's forget hook, before a Pod leaves the cache (``controller.py``).
        self.pod_views = PodViews()
        self.disruptions = Disruptions(view=self.pod_views.of)
        self._parsed: cachetools.LRUCache[tuple[str, int], ParseResult] = cachetools.LRUCache(
            PARSE_CACHE_SIZE
        )

    # ----- entry ----------------------------------------------------------------------------------------
    def reconcile(self, key: str) -> ReconcileResult:
        obj = self._tasksets.get_by_key(key)
        if obj is None or not managed_here(obj):  # spec.managedBy names another controller: hands off
            self._forget(key)
            return ReconcileResult()
        meta = obj["metadata"]
        waiting = self._expectations.seconds_to_wait(key)
        if waiting is not None:
            return ReconcileResult(requeue_after=waiting)
        ref = TaskSetRef(
            name=meta["name"],
            namespace=meta["namespace"],
            uid=meta.get("uid", ""),
            generation=int(meta.get("generation") or 0),
            deleting=meta.get("deletionTimestamp") is not None,
            suspended=suspended(obj),
            labels=labels if isinstance(labels := meta.get("labels"), dict) else {},
            scale_requesters=scale_requesters(obj),
        )
        try:
            record = self._record(key, obj)
        except KubeError as err:
            return ReconcileResult(error=f"reading the TaskSet: {err}")
        if record is None:  # the cache is behind the API server about this TaskSet: wait for it
            return ReconcileResult(requeue_after=self._settings.cache_wait_requeue)
        recorded = record.recorded_status()
        now = self._clock.wall()
        observed = self._observe(ref, recorded)
        pass_ = decide(ref, self._parse(obj), recorded, observed, now, settings=self._settings)
        unit = observed.control_unit
        if pass_.plan.snapshot_wanted is not None and unit is not None:
            error = self._fetch_snapshot(obj, unit)
            if error is not None:
                return ReconcileResult(error=error)
            observed = replace(observed, control_unit=self._snapshots.known(unit))
            pass_ = decide(ref, self._parse(obj), recorded, observed, now, settings=self._settings)
            if pass_.plan.snapshot_wanted is not None:  # not reached: the fetch checked the digest
                return ReconcileResult(error=f"ControlUnit {unit.name}'s snapshot is still unknown")
        plan = pass_.plan
        persisted = False
        done = 0
        while done < len(plan.intents):  # results may add intents (a chain that goes on, decide.py)
            batch = next_batch(plan.intents, done)
            done += len(batch)
            if not persisted and any(persists_first(intent) for intent in batch):
                # Persist before destroying (spec 4.4): a finished Pod, or the ControlUnit, is the only
                # evidence of what this pass decided from it (an exit code, an attempt's end). Deleting it
                # and then failing the status write would leave a status that waits forever for an
                # object that is gone, and whose outcome can no longer be observed. And persist before
                # publishing: the live membership shows the generation this status allocated; shown
                # and then lost (a conflicting or held write, a kill), it would be allocated again by the
                # next pass, for another content or below what the replicas already read.
                error = self._write_status(key, obj, record, plan, persist=True)
                if error is not None:
                    return ReconcileResult(error=error)
                record = self._records.get(key, record)
                self._emit(ref, plan)
                plan.events.clear()
                plan.records.clear()
                plan.moves.clear()
                persisted = True
            for intent, result in zip(batch, self._act_all(key, obj, plan, batch), strict=True):
                pass_.fold(intent, result)
        pass_.conclude()
        error = self._write_status(key, obj, record, plan)
        if error is not None:
            return ReconcileResult(error=error)
        self._emit(ref, plan)
        if plan.backoff:
            return ReconcileResult(error="an API action failed; retrying with backoff")
        return ReconcileResult(requeue_after=plan.requeue_after)

    def _parse(self, obj: Mapping[str, Any]) -> ParseResult:
        meta = obj["metadata"]
        cache_key = (str(meta.get("uid", "")), int(meta.get("generation") or 0))
        parsed = self._parsed.get(cache_key)
        if parsed is None:
            parsed = parse_taskset(obj, self._checks)
            self._parsed[cache_key] = parsed
        return parsed

    # ----- observe --------------------------------------------------------------------------------------
    def _observe(self, ref: TaskSetRef, status: TaskSetStatus | None) -> Observed:
        attempt = status.total_retried_count if status else 0
        unit_name = control_unit_name(ref.name, attempt)
        unit_key = f"{ref.namespace}/{unit_name}"
        unit = self._units.get_by_key(unit_key)
        unit_view = (
            self._snapshots.known(control_unit_view(unit, SNAPSHOT_KEY))
            if unit is not None
            else self._created_units.get(unit_key)
        )
        others = tuple(
            control_unit_view(u, SNAPSHOT_KEY)
            for u in self._units.by_index(OWNER_INDEX, owner_key(ref.namespace, ref.uid))
            if u["metadata"]["name"] != unit_name and is_control_unit_name(ref.name, u["metadata"]["name"])
        )
        pods = {
            p["metadata"]["name"]: self.pod_views.of(p)
            for p in self._pods.by_index(POD_INDEX, f"{ref.namespace}/{ref.name}")
        }
        return Observed(
            control_unit=unit_view,
            pods=pods,
            other_control_units=others,
            owned=self._owned_views(ref, unit_view.uid if unit_view is not None else None),
            gone=self.disruptions.of(ref.namespace, ref.name),
            read=self._read,
            nodes=self.lost_nodes.of_pods(pods.values()),
        )

    def _fetch_snapshot(self, obj: Mapping[str, Any], unit: ControlUnitView) -> str | None:
        """Get the text of ``unit``'s snapshot, whose cached digest a pass trusts, into ``_snapshots``;
        an error to retry with backoff if it cannot (snapshot_texts.py). The TaskSet's spec as cached builds
        it unless the spec was edited since the attempt started; else the ControlUnit is read, once,
        and its text used only if it is the cached ControlUnit's (same UID, same digest)."""
        text = snapshot_of(obj.get("spec") or {})
        if snapshot_digest(text) == unit.spec_digest:
            self._snapshots.remember(unit.uid, text)
            return None
        path = core_path(obj["metadata"]["namespace"], "configmaps", unit.name)
        try:
            live = self._client.get(path, resource="configmaps")
        except KubeError as err:
            return f"reading ControlUnit {unit.name}'s spec snapshot: {err}"
        fetched = control_unit_view(live, SNAPSHOT_KEY) if live is not None else None
        if fetched is None or (fetched.uid, fetched.spec_digest) != (unit.uid, unit.spec_digest):
            return f"ControlUnit {unit.name} is not what the cache shows (yet): waiting for the cache"
        self._snapshots.remember(unit.uid, fetched.spec_snapshot or "")
        return None

    def control_unit_deleted(self, obj: Mapping[str, Any] | DeletedFinalStateUnknown) -> None:
        """The ConfigMap cache's delete handler: a deleted ControlUnit's snapshot text is not needed."""
        raw = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        uid = (raw.get("metadata") or {}).get("uid") if isinstance(raw, Mapping) else None
        if isinstance(uid, str):
            self._snapshots.forget(uid)

    def _owned_views(self, ref: TaskSetRef, unit_uid: str | None) -> dict[tuple[str, str], OwnedView]:
        """What the TaskSet and its current ControlUnit control, in every owned kind's cache, by (kind
        key, name): related by the controlling owner's UID, never by a label anyone can write."""
        owners = [uid for uid in (ref.uid, unit_uid) if uid]
        return {
            (kind, obj["metadata"]["name"]): owned_view(obj)
            for kind, store in self._owned.items()
            for owner in owners
            for obj in store.by_index(OWNER_INDEX, owner_key(ref.namespace, owner))
            if not (store is self._units and is_control_unit_name(ref.name, obj["metadata"]["name"]))
        }

    # ----- act ------------------------------------------------------------------------------------------
    def _act_all(
        self, key: str, obj: Mapping[str, Any], plan: Plan, batch: list[Intent]
    ) -> list[ActionResult]:
        """The batch's actions, concurrently when there are several (Pod creates or deletes of one pass): a
        2,000-replica role is otherwise bound by one request's round trip at a time. Results come back in
        intent order, so folding them into the plan stays sequential and deterministic."""
        if len(batch) == 1 or self._pool is None:
            return [self._act(key, obj, plan, intent) for intent in batch]
        return list(self._pool.map(lambda intent: self._act(key, obj, plan, intent), batch))

    def close(self) -> None:
        """Stop the create pool (in-flight requests finish on their own)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False)

    def _act(self, key: str, obj: Mapping[str, Any], plan: Plan, intent: Intent) -> ActionResult:
        ns = obj["metadata"]["namespace"]
        if self._fence is not None and not self._fence(ns):
            return ActionResult(ResultKind.ERROR, message=NOT_OURS)
        try:
            if isinstance(intent, CreateOwned):
                result = self._create_owned(key, ns, intent)
            elif isinstance(intent, DeleteOwned):
                kind = intent.kind
                self._client.delete(
                    namespaced_path(kind.group, kind.version, kind.plural, ns, intent.name),
                    uid=intent.uid,
                    resource=kind.plural,
                    propagation="Foreground" if intent.control_unit else None,
                )
                result = ActionResult(ResultKind.OK)
            elif isinstance(intent, ApplyOwnedStatus):  # a Workload marked Finished
                self._client.apply_status(intent.kind, ns, intent.name, intent.body)
                result = ActionResult(ResultKind.OK)
            elif isinstance(intent, UpdateOwned):  # declared fields written back (the live membership)
                result = update_owned_data(self._client, ns, intent)
            elif isinstance(intent, DeleteTaskSet):  # ttlSecondsAfterFinished passed
                name = obj["metadata"]["name"]
                self._client.delete(taskset_path(ns, name), uid=intent.uid, resource="tasksets")
                result = ActionResult(ResultKind.OK)
            elif isinstance(intent, CreatePod):
                pod = self._client.create(core_path(ns, "pods"), self._pod(plan, intent), resource="pods")
                self._expect(key, create=(f"{ns}/{intent.name}", pod["metadata"]["uid"]))
                # A view at once: a pass of a 2,000-replica role holds every result until it ends.
                result = ActionResult(ResultKind.OK, pod_view(pod))
            else:
                path = core_path(ns, "pods", intent.name)
                if intent.force:  # a lost node's Pod: no kubelet will confirm (plan.DeletePod)
                    self._client.delete(path, uid=intent.uid, resource="pods", force=True)
                else:
                    self._client.delete(path, uid=intent.uid, resource="pods")
                self._expect(key, delete=(f"{ns}/{intent.name}", intent.uid))
                result = ActionResult(ResultKind.OK)
        except KubeError as err:
            result = self._failure(ns, intent, err)
        if isinstance(intent, DeleteOwned) and result.kind in (ResultKind.OK, ResultKind.NOT_FOUND):
            self._created_units.forget(f"{ns}/{intent.name}")  # gone or going: the cache's word counts now
        self._metrics.observe_action(intent.action, result.kind.value)
        return result

    def _create_owned(self, key: str, namespace: str, intent: CreateOwned) -> ActionResult:
        """Create the ControlUnit or an integration's object, as decided, and expect its add event."""
        kind = intent.kind
        path = namespaced_path(kind.group, kind.version, kind.plural, namespace)
        created = self._client.create(path, intent.manifest, resource=kind.plural)
        store_key = f"{namespace}/{intent.name}"
        self._expect(key, create=(store_key, created["metadata"]["uid"]))
        if not intent.control_unit:
            return ActionResult(ResultKind.OK, owned_view(created, kind.declared))
        self._remember_created_unit(store_key, created)
        return ActionResult(ResultKind.OK, control_unit_view(created, SNAPSHOT_KEY))

    def _remember_created_unit(self, store_key: str, created: Mapping[str, Any]) -> None:
        """Overlay the ControlUnit the create's response shows until the cache shows it (created_units.py),
        and remember its snapshot's text, which the cache will not show (snapshot_texts.py)."""
        view = control_unit_view(created, SNAPSHOT_KEY)
        self._snapshots.remember(view.uid, view.spec_snapshot or "")
        self._created_units.remember(store_key, created["metadata"]["uid"], view)

    def _pod(self, plan: Plan, intent: CreatePod) -> dict[str, Any]:
        """The Pod ``intent`` decided, built from its role's template (shared, never changed)."""
        assert plan.spec is not None and intent.identity is not None
        return build_pod(plan.spec.roles[intent.role].template, intent.identity, intent.decorations)

    def _failure(self, namespace: str, intent: Intent, err: KubeError) -> ActionResult:
        if err.not_found:
            return ActionResult(ResultKind.NOT_FOUND, message=err.message)
        if err.already_exists and isinstance(intent, CreatePod | CreateOwned):
            return self._existing(namespace, intent, err)
        if err.conflict:
            return ActionResult(ResultKind.CONFLICT, message=err.message)
        if err.invalid and isinstance(intent, CreatePod | CreateOwned | UpdateOwned):
            # The API server's words go into the status: bounded, so the retry decision after them fits.
            return ActionResult(ResultKind.INVALID, message=clip(err.message, QUOTED_MAX))
        if err.denied_for_now and isinstance(intent, CreatePod | CreateOwned):
            return ActionResult(ResultKind.REFUSED, message=clip(err.message, QUOTED_MAX))
        return ActionResult(ResultKind.ERROR, message=clip(str(err), QUOTED_MAX))

    def _existing(self, namespace: str, intent: CreatePod | CreateOwned, err: KubeError) -> ActionResult:
        """A create found the name taken: what holds it now, read live (the cache may not show it)."""
        if isinstance(intent, CreatePod):
            path, plural = core_path(namespace, "pods", intent.name), "pods"
        else:
            kind = intent.kind
            path = namespaced_path(kind.group, kind.version, kind.plural, namespace, intent.name)
            plural = kind.plural
        try:
            live = self._client.get(path, resource=plural)
        except KubeError as read_err:
            return ActionResult(ResultKind.ERROR, message=str(read_err))
        if live is None:
            return ActionResult(ResultKind.EXISTS, message=err.message)
        if isinstance(intent, CreatePod):
            return ActionResult(ResultKind.EXISTS, pod_view(live), err.message)
        if intent.control_unit:
            return ActionResult(ResultKind.EXISTS, control_unit_view(live, SNAPSHOT_KEY), err.message)
        view = owned_view(live, intent.kind.declared)
        return ActionResult(ResultKind.EXISTS, view, err.message)

    # ----- expectations ---------------------------------------------------------------------------------
    def creation_observed(self, obj: Mapping[str, Any]) -> None:
        """The caches' add handler for Pods and ControlUnits, as client-go's ``CreationObserved``: an
        expected create counts as seen once its add event came, whatever happens to the object next."""
        meta = obj.get("metadata") or {}
        uid = meta.get("uid")
        if uid:
            store_key = f"{meta.get('namespace')}/{meta.get('name')}"
            self._created_units.creation_observed(store_key, str(uid))  # and the expectations, atomically

    def _expect(
        self, key: str, *, create: tuple[str, str] | None = None, delete: tuple[str, str] | None = None
    ) -> None:
        """Have the next pass of ``key`` wait for the caches to show an accepted ``(store key, uid)``."""
        if create:
            self._expectations.expect_create(key, *create)
        if delete:
            self._expectations.expect_delete(key, *delete)

    # ----- status ---------------------------------------------------------------------------------------
    def _record(self, key: str, obj: Mapping[str, Any]) -> Record | None:
        """The status this pass builds on: the last one we wrote, or the live object's.

        Never the cached object's alone: after a restart the cache may be a moment behind the last
        status written before it, and acting on an older status repeats actions (a retry counted twice).
        So the first pass of a TaskSet (and the first after a conflict) reads it from the API server.
        """
        record = self._records.known(key, obj)
        if record is None:
            meta = obj["metadata"]
            live = self._client.get(taskset_path(meta["namespace"], meta["name"]), resource="tasksets")
            record = self._records.read(key, meta.get("uid", ""), live)  # re-created: a fresh record (W-16)
        return record

    def _write_status(
        self, key: str, obj: Mapping[str, Any], record: Record, plan: Plan, *, persist: bool = False
    ) -> str | None:
        """Write the plan's status unless it is what the API server has, or may be held (``persist``:
        it may not, since an object this pass deletes is the evidence for it)."""
        new = record.writer.to_json(plan.status)  # plan.status.to_json(), sharing the last write's work
        base = record.status
        if new == base:
            record.held = None
            return None
        if not persist:
            held_for = self._records.hold(record, new, only_requests_in_flight=plan.only_requests_in_flight)
            if held_for is not None:
                plan.requeue(held_for)
                return None
        meta = obj["metadata"]
        version = record.resource_version
        if self._fence is not None and not self._fence(meta["namespace"]):
            return NOT_OURS
        for _ in range(2):
            try:
                written = self._client.replace_status(meta["namespace"], meta["name"], version, new)
            except KubeError as err:
                if not err.conflict:
                    self._metrics.observe_status_write("error")
                    self._report_refusal(obj, record, new, err)
                    return f"status write failed: {err}"
                self._metrics.observe_status_write("conflict")
                fresh = self._refetch_version(meta, base)
                if fresh is None:
                    self._forget(key)
                    return "status changed by someone else; starting over from the live object"
                version = fresh
                continue
            self._metrics.observe_status_write("success")
            self._records.written(key, meta.get("uid", ""), new, written["metadata"]["resourceVersion"])
            return None
        return "status write kept conflicting"

    def _report_refusal(
        self, obj: Mapping[str, Any], record: Record, status: Mapping[str, Any], err: KubeError
    ) -> None:
        """A status write refused for good (too large, invalid) would leave the TaskSet silently stuck
        at its last written status, since the status itself can no longer say so: say it in a Warning
        event with the status's size, once per distinct refusal. The pass still fails, so the
        work queue's per-key backoff spaces the retries out; a transient failure is only retried."""
        if not (err.too_large or err.invalid) or record.refused == str(err):
            return
        record.refused = str(err)
        meta = obj["metadata"]
        size = len(orjson.dumps(status))
        message = f"the API server refused the status ({size} bytes of JSON): {err}"
        target = EventTarget(meta["name"], meta["namespace"], meta.get("uid", ""))
        self._recorder.record(
            target, str(EventReason.STATUS_WRITE_REFUSED), clip(message, QUOTED_MAX), warning=True
        )

    def _refetch_version(self, meta: Mapping[str, Any], base: object) -> str | None:
        """After a 409: the live object's version if its status is still what we based the pass on."""
        try:
            live = self._client.get(taskset_path(meta["namespace"], meta["name"]), resource="tasksets")
        except KubeError:
            return None
        if live is None or live["metadata"].get("uid") != meta.get("uid") or live.get("status") != base:
            return None
        return str(live["metadata"]["resourceVersion"])

    def forget(self, key: str) -> None:
        """Drop what this process remembers of ``key`` (its shard went to another replica)."""
        self._forget(key)

    def _forget(self, key: str) -> None:
        """Start ``key`` over from the live object: it is gone, or someone else wrote its status."""
        self._records.forget(key)
        self._expectations.forget(key)

    # ----- report ---------------------------------------------------------------------------------------
    def _emit(self, ref: TaskSetRef, plan: Plan) -> None:
        target = EventTarget(ref.name, ref.namespace, ref.uid)
        for event in plan.events:
            self._recorder.record(target, str(event.reason), event.message, warning=event.warning)
        if not plan.records:
            return
        # A lazy proxy (structlog's ``get_logger``) builds a logger for every call made on it: bound once,
        # a pass's records share one (a 2,000-replica pass logs thousands). The daemon's loggers write
        # them in one go (``records``); any other logs them one by one.
        log = self._log.bind()
        batch = getattr(log, "records", None)
        if batch is not None:
            batch([(record.level, record.msg, record.fields) for record in plan.records])
        else:
            for record in plan.records:
                _log_record(log, record)
        for record in plan.records:
            fields = record.fields
            if "PrePhase" in fields and "NextPhase" in fields:
                self._metrics.observe_transition(
                    _machine_of(record), str(fields["PrePhase"]), str(fields["NextPhase"])
                )


def _machine_of(record: LogRecord) -> str:
    query = str(record.fields.get("QueryKey", ""))
    return {"TaskSetPhaseTransition": "taskset", "TaskRoleTransition": "role"}.get(query, "replica")


def _log_record(log: Any, record: LogRecord) -> None:
    method: Callable[..., None] = getattr(log, record.level, log.info)
    method(record.msg, logger=LOGGER_NAME, **record.fields)


def new_reconcile_id() -> str:
    return uuid.uuid4().hex[:12]
