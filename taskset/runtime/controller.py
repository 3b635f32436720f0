"""The controller: shared informers (TaskSets, and the Pods and ConfigMaps labelled ``TaskSet``, plus one
per other kind of object its integrations own), event handlers that map every change to its TaskSet's
key, a rate-limited workqueue, and N workers running ``Reconciler.reconcile``. Workers start only after
every cache has synced (spec 9.2).

An event is routed to a TaskSet of the object's own ``metadata.namespace`` only (``taskset_index``,
whose module docstring says why that is safe): a stranger's Pod or ConfigMap in another namespace,
whatever its annotations claim, never wakes a TaskSet of this one.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from clock import Clock, RealClock
from informers import (
    DEFAULT_PAGE_SIZE,
    DeletedFinalStateUnknown,
    InformerSettings,
    ReflectorSettings,
    Resource,
    SharedInformer,
    SharedInformerFactory,
    meta_namespace_key,
)
from informers.kube import lister_watcher_factory
from informers.rest import as_transport
from informers.sharding import ShardView, sharded_factory
from taskset.api.constants import GROUP, LABEL_TASKSET, PLURAL, VERSION
from taskset.decide import Settings as DecideSettings
from taskset.integrations import BUILT_IN, Framework, Integration
from taskset.objects.owned import CONFIGMAPS as CONFIGMAP_KIND
from taskset.objects.owned import ObjectKind
from taskset.observed.nodes import slim_node
from taskset.observed.proof import PROCESS_PROOF_KEY
from taskset.observed.slim import (
    POD_SHAPE,
    TASKSET_SHAPE,
    slim_config_map,
    slim_owned,
    slim_pod,
    slim_taskset,
)
from taskset.runtime.batching import declared_replicas, pod_event_window
from taskset.runtime.events import EventMetrics, EventRecorder
from taskset.runtime.indexes import OWNER_INDEX, POD_INDEX, controller_uid_index, taskset_index
from taskset.runtime.kube import KubeClient, RequestObserver
from taskset.runtime.lost_nodes import NODE_INDEX, pod_node_index
from taskset.runtime.reconciler import ReconcileMetrics, Reconciler, ReconcileResult, new_reconcile_id
from workqueue import MetricsProvider, QueueShutDown, RateLimitingQueue

CONTROLLER_NAME: Final = "taskset"
# Pod creates and deletes in flight at once, over all passes (at least one per worker). A pass sends
# its Pod requests together, so a 2,000-replica role is bound by this: with one per worker (10) the
# large benchmark created Pods at 0.82-0.84x the rate of a bare client with 10 threads, with 40 at
# 1.07-1.28x. Client-go's Job and ReplicaSet controllers likewise send a sync's creates at
# once, in growing batches.
POD_ACTIONS_IN_FLIGHT: Final = 40


def pod_action_threads(workers: int) -> int:
    """Threads sending the passes' Pod creates and deletes (``POD_ACTIONS_IN_FLIGHT``)."""
    return max(POD_ACTIONS_IN_FLIGHT, workers)


TASKSETS: Final = Resource(group=GROUP, version=VERSION, plural=PLURAL)
PODS: Final = Resource(group="", version="v1", plural="pods")
CONFIGMAPS: Final = Resource(group="", version="v1", plural="configmaps")
NODES: Final = Resource(group="", version="v1", plural="nodes")
# Every list in pages, relists at a resource version too (client-go asks those unpaged, so that an older
# API server answers them from its watch cache rather than etcd). Unpaged, the relist of thousands of
# Pods is one response of megabytes that must be read within the API server's one-minute request
# timeout; on a busy machine it was cut short again and again, leaving the cache blind for minutes.
# Since Kubernetes 1.34 the watch cache serves a paged list at a resource version from its snapshots,
# so paging costs etcd nothing there; on an older server it is one controller's paged read of etcd.
#
# Every handler here only queues a TaskSet's key (most after the TaskSet's batching window,
# ``taskset.runtime.batching``, half a second), so each handler thread rests 50 ms after a batch of
# notifications and takes the next one whole: one wake-up for many events, where one for each cost the
# watch thread and the handler thread about a tenth of the Pod cache's CPU (``Listener``). A TaskSet's own
# change (a spec edit, a deletion) reaches the queue at most 50 ms later.
CACHE_SETTINGS: Final = InformerSettings(
    reflector=ReflectorSettings(page_size=DEFAULT_PAGE_SIZE), handler_batch_interval=0.05
)


@dataclass(frozen=True)
class ControllerSettings:
    workers: int = 10  # TaskSets reconciled in parallel (O: workerAmount)
    namespace: str | None = None  # None watches every namespace, as O does
    qps: float = 0.0  # client-side request rate limit; 0 = off
    burst: int = 1
    cache_creation_timeout: float = 300.0  # seconds (O: cacheCreationTimeoutSec)
    stuck_terminating_after: float = 300.0  # seconds past a Pod's deletion time before the TaskSet warns
    sync_timeout: float = 120.0  # seconds to wait for the first LIST of each cache before giving up
    proof_key: bytes = field(default=PROCESS_PROOF_KEY, repr=False)  # taskset.observed.proof
    watch_nodes: bool = True  # a slim Node cache for lost nodes (taskset.runtime.lost_nodes)


class WorkerMetrics(Protocol):
    """Reconcile metrics with controller-runtime's names (``taskset.daemon.metrics.ControllerMetrics``)."""

    def observe_reconcile(self, controller: str, result: str, seconds: float) -> None: ...

    def set_active_workers(self, controller: str, count: int) -> None: ...


# Seconds before a key of a just-gained bucket is looked at again: a relist of the caches takes about this.
SHARD_PENDING_RETRY: Final = 1.0


class Shards(Protocol):
    """This replica's share of the namespaces (``taskset.daemon.buckets.BucketElector``)."""

    @property
    def view(self) -> ShardView: ...

    def owns(self, namespace: str) -> bool: ...

    def pending(self, namespace: str) -> bool: ...

    def subscribe(self, on_change: Callable[[frozenset[int], frozenset[int]], None]) -> None: ...


class Controller:
    def __init__(
        self,
        *,
        api_client: Any,
        settings: ControllerSettings,
        logger: Any,
        clock: Clock | None = None,
        queue_metrics: MetricsProvider | None = None,
        reconcile_metrics: ReconcileMetrics | None = None,
        worker_metrics: WorkerMetrics | None = None,
        request_observer: RequestObserver | None = None,
        event_metrics: EventMetrics | None = None,
        integrations: Sequence[Integration] = BUILT_IN,
        shards: Shards | None = None,
    ) -> None:
        """``integrations``: what every TaskSet's decisions ask, in order (``taskset.integrations``), run
        by one ``Framework``; the controller also caches every kind of object they may own or read.
        ``shards``: this replica's share of the namespaces when several split them; ``None`` is all."""
        framework = Framework(integrations)
        api_client = as_transport(api_client)  # one pool for the informers and the writes
        self._settings = settings
        self._log = logger
        self._clock = clock or RealClock()
        self._worker_metrics = worker_metrics
        self._shards = shards
        # A Pod is decoded straight into what ``slim_pod`` reads of it (the Pod watch is the busiest), a
        # TaskSet without the status its own writes echo back.
        shapes = {PODS: POD_SHAPE, TASKSETS: TASKSET_SHAPE}
        lister_watchers = lister_watcher_factory(api_client, shapes=shapes)
        if shards is not None:
            # Every namespaced collection is cut by the namespace hash; the cluster-scoped ones (Nodes, the
            # integrations' reads) have no namespace to hash, and every replica needs all of them whole.
            whole = {NODES} | {
                Resource(group=k.group, version=k.version, plural=k.plural) for k in framework.read_kinds()
            }
            lister_watchers = sharded_factory(
                lister_watchers, shards.view, shard=lambda target: target.resource not in whole
            )
        self._factory = SharedInformerFactory(
            lister_watcher_for=lister_watchers, settings=CACHE_SETTINGS, logger=logger
        )
        namespace = settings.namespace or None
        self.tasksets: SharedInformer = self._factory.informer_for(
            TASKSETS, namespace=namespace, transform=slim_taskset
        )
        self.pods: SharedInformer = self._factory.informer_for(
            PODS,
            namespace=namespace,
            label_selector=LABEL_TASKSET,
            indexers={POD_INDEX: taskset_index, NODE_INDEX: pod_node_index},
            transform=slim_pod,
        )
        self.units: SharedInformer = self._factory.informer_for(
            CONFIGMAPS,
            namespace=namespace,
            label_selector=LABEL_TASKSET,
            indexers={POD_INDEX: taskset_index, OWNER_INDEX: controller_uid_index},
            transform=slim_config_map,  # no data, no foreign metadata: a stranger's costs little
        )
        # Caches of what integrations own, by kind key; ConfigMaps share the ControlUnits' cache.
        self.owned: dict[str, SharedInformer] = {CONFIGMAP_KIND.key: self.units} | {
            kind.key: self._owned_informer(kind, namespace) for kind in framework.owned_kinds()
        }
        # Cluster-scoped kinds integrations only read (Kueue's ResourceFlavors), whole but for ``kept``.
        self.read: dict[str, SharedInformer] = {
            kind.key: self._factory.informer_for(
                Resource(group=kind.group, version=kind.version, plural=kind.plural),
                transform=functools.partial(slim_owned, kept=kind.kept),
            )
            for kind in framework.read_kinds()
        }
        # Cluster-scoped, whatever the namespace watched: a node holds Pods of every namespace.
        self.nodes: SharedInformer | None = (
            self._factory.informer_for(NODES, transform=slim_node) if settings.watch_nodes else None
        )
        client_kwargs: dict[str, Any] = {"qps": settings.qps, "burst": settings.burst}
        if request_observer is not None:
            client_kwargs["observer"] = request_observer
        self._client = KubeClient(api_client, **client_kwargs)
        self.recorder = EventRecorder(
            self._client,
            logger=logger,
            clock=self._clock,
            metrics=event_metrics,
            fence=shards.owns if shards is not None else None,
        )
        self.reconciler = Reconciler(
            client=self._client,
            tasksets=self.tasksets.store,
            pods=self.pods.store,
            units=self.units.store,
            recorder=self.recorder,
            logger=logger,
            settings=DecideSettings(
                cache_creation_timeout=settings.cache_creation_timeout,
                stuck_terminating_after=settings.stuck_terminating_after,
                framework=framework,
                proof_key=settings.proof_key,
            ),
            owned={key: informer.store for key, informer in self.owned.items()},
            read={key: informer.store for key, informer in self.read.items()},
            clock=self._clock,
            metrics=reconcile_metrics,
            action_parallelism=pod_action_threads(settings.workers),
            fence=shards.owns if shards is not None else None,
        )
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(
            name=CONTROLLER_NAME, clock=self._clock, metrics_provider=queue_metrics
        )
        self._register_handlers()
        if shards is not None:
            shards.subscribe(self._buckets_changed)
        self._workers: list[threading.Thread] = []
        self._active = 0
        self._active_lock = threading.Lock()
        self._synced = threading.Event()
        self._starter: threading.Thread | None = None

    def _owned_informer(self, kind: ObjectKind, namespace: str | None) -> SharedInformer:
        return self._factory.informer_for(
            Resource(group=kind.group, version=kind.version, plural=kind.plural),
            namespace=namespace,
            label_selector=LABEL_TASKSET,
            indexers={POD_INDEX: taskset_index, OWNER_INDEX: controller_uid_index},
            # owned_view reads the metadata, which conditions hold, what the kind keeps, and the digests
            # of the fields the controller declares for it
            transform=functools.partial(slim_owned, kept=kind.kept, declared=kind.declared),
        )

    # ----- event handlers: every change -> the owning TaskSet's key --------------------------------------
    def _register_handlers(self) -> None:
        self.tasksets.add_event_handler(
            on_add=self._enqueue_taskset,
            on_update=self._taskset_updated,
            on_delete=self._enqueue_taskset,
        )
        for owned, on_delete in ((self.units, self._unit_deleted), (self.pods, self._enqueue_owner_batched)):
            owned.add_event_handler(
                on_add=self._created,
                on_update=lambda old, new: self._enqueue_owner_batched(new),
                on_delete=on_delete,
            )
        self.pods.add_forget_hook(self._pod_forgotten)
        for informer in self.read.values():
            informer.add_event_handler(
                on_add=self._read_added, on_update=lambda old, new: self._read_added(new)
            )
        if self.nodes is not None:
            self.nodes.add_event_handler(
                on_add=self._node_changed,
                on_update=lambda old, new: self._node_changed(new),
                on_delete=self._node_deleted,
            )
        for informer in self._integration_caches():
            informer.add_event_handler(
                on_add=self._created,
                on_update=lambda old, new: self._enqueue_owner_batched(new),
                on_delete=self._enqueue_owner_batched,
            )

    def _integration_caches(self) -> list[SharedInformer]:
        """The caches of owned kinds other than ConfigMaps (whose cache is the ControlUnits')."""
        return [informer for informer in self.owned.values() if informer is not self.units]

    def _enqueue_taskset(self, obj: Mapping[str, Any] | DeletedFinalStateUnknown) -> None:
        key = obj.key if isinstance(obj, DeletedFinalStateUnknown) else meta_namespace_key(dict(obj))
        self.queue.add(key)

    def _taskset_updated(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        """Skip status-only updates (ours, already applied): spec edits and deletion are what matter."""
        old_meta, new_meta = old.get("metadata", {}), new.get("metadata", {})
        if (
            old_meta.get("resourceVersion") != new_meta.get("resourceVersion")
            and old_meta.get("generation") == new_meta.get("generation")
            and old_meta.get("deletionTimestamp") == new_meta.get("deletionTimestamp")
            and old_meta.get("uid") == new_meta.get("uid")
        ):
            return
        self.queue.add(meta_namespace_key(dict(new)))

    def _buckets_changed(self, gained: frozenset[int], lost: frozenset[int]) -> None:
        """This replica gained shard buckets: their TaskSets already in the cache look again. The relist
        that follows brings the others as adds, but one the cache kept (held before, lost while its key
        was dropped, gained back before the relist removed it) comes back unchanged, and an unchanged
        object tells no handler: without this it would wait for its next change, perhaps forever. The
        keys wait as pending until the caches relisted with the bucket."""
        del lost  # a lost bucket's keys are dropped by the workers as they come (``_process``)
        if not gained or self._shards is None:
            return
        buckets = self._shards.view.buckets
        for taskset in self.tasksets.store.list():
            namespace = str((taskset.get("metadata") or {}).get("namespace") or "")
            if buckets.of_namespace(namespace) in gained:
                self.queue.add(meta_namespace_key(taskset))

    def _read_added(self, obj: Mapping[str, Any]) -> None:
        """A read object (a ResourceFlavor) appeared or changed: a TaskSet held waiting for it looks
        again. Such objects are few and seldom change (cluster admins write them), so every unfinished
        TaskSet is simply enqueued, batched like a Pod's change."""
        for taskset in self.tasksets.store.list():
            if str((taskset.get("status") or {}).get("state")) not in ("Succeeded", "Failed"):
                key = meta_namespace_key(taskset)
                self.queue.add_after(key, self._window(key))

    def _node_changed(self, node: Mapping[str, Any]) -> None:
        """A node's health changed (lost, back, tainted out of service): the TaskSets with Pods on it
        look again. A heartbeat or any other change of a Node wakes nothing."""
        if self.reconciler.lost_nodes.observe(node):
            self._enqueue_on_node(str((node.get("metadata") or {}).get("name") or ""))

    def _node_deleted(self, obj: Mapping[str, Any] | DeletedFinalStateUnknown) -> None:
        raw = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
        name = str((raw.get("metadata") or {}).get("name") or "") if isinstance(raw, Mapping) else ""
        if name and self.reconciler.lost_nodes.forget(name):
            self._enqueue_on_node(name)

    def _enqueue_on_node(self, node: str) -> None:
        for pod in self.pods.store.by_index(NODE_INDEX, node):
            for key in taskset_index(pod):
                self.queue.add_after(key, self._window(key))

    def _created(self, obj: Mapping[str, Any]) -> None:
        self.reconciler.creation_observed(obj)
        self._enqueue_owner_batched(obj)

    def _unit_deleted(self, obj: Mapping[str, Any] | DeletedFinalStateUnknown) -> None:
        """A ConfigMap is gone: its snapshot's text, if remembered, is no longer needed."""
        self.reconciler.control_unit_deleted(obj)
        self._enqueue_owner_batched(obj)

    def _pod_forgotten(self, obj: Mapping[str, Any]) -> None:
        """A Pod is about to leave the cache: its last state is kept if it was disrupted
        (runtime/disruptions). Kept here, while the cache still holds the Pod, not in the delete handler
        (which runs later, on its own thread): a pass queued earlier would find the Pod gone and its
        disruption not yet known, and count the platform's eviction as the workload's failure."""
        try:
            self.reconciler.disruptions.pod_deleted(obj)
        except Exception:  # a stranger's malformed Pod must not stop the Pod cache
            self._log.exception("a deleted Pod's last state could not be read")
        self.reconciler.pod_views.forget(obj)

    def _enqueue_owner_batched(self, obj: Mapping[str, Any] | DeletedFinalStateUnknown) -> None:
        """In the TaskSet's window (``taskset.runtime.batching``): a key already waiting keeps its earlier
        deadline, so the first change of a wave sets the time and the rest of the wave rides along."""
        for key in _owner_keys(obj):
            self.queue.add_after(key, self._window(key))

    def _window(self, key: str) -> float:
        declared = declared_replicas(self.tasksets.store.get_by_key(key))
        return pod_event_window(declared, self.pods.store.index_len(POD_INDEX, key))

    # ----- lifecycle ---------------------------------------------------------------------------------
    def start(self, *, workers: bool = True) -> None:
        """Start the informers now and the workers once every cache has synced (non-blocking).

        ``workers=False`` starts the informers only (a leader-election standby keeps warm caches and a
        queue of keys); ``start_workers`` starts the workers later, once the lease is held.
        """
        self._factory.start()
        if workers:
            self.start_workers()

    def start_workers(self) -> None:
        """Start the workers once every cache has synced (non-blocking); later calls do nothing."""
        with self._active_lock:
            if self._starter is not None:
                return
            self._starter = threading.Thread(target=self._start_workers, name="controller-start", daemon=True)
        self._starter.start()

    def _start_workers(self) -> None:
        synced = self._factory.wait_for_cache_sync(timeout=self._settings.sync_timeout)
        if not all(synced.values()):
            self._log.error("caches did not sync", caches={str(k): v for k, v in synced.items()})
            return
        self._log.info("caches synced, starting workers", workers=self._settings.workers)
        for index in range(self._settings.workers):
            worker = threading.Thread(target=self._work, name=f"worker-{index}", daemon=True)
            worker.start()
            self._workers.append(worker)
        self._synced.set()

    def tasksets_by_state(self) -> dict[str, int]:
        """TaskSets in the cache per ``status.state`` (no status yet counts as Waiting), for the gauge."""
        counts: dict[str, int] = {}
        for obj in self.tasksets.store.list():
            state = str((obj.get("status") or {}).get("state") or "Waiting")
            counts[state] = counts.get(state, 0) + 1
        return counts

    def has_synced(self) -> bool:
        """Whether every cache has synced (the daemon's readiness); workers may not have started yet."""
        return self._synced.is_set() or all(
            informer.has_synced()
            for informer in (
                self.tasksets,
                self.pods,
                self.units,
                *self._integration_caches(),
                *self.read.values(),
                *((self.nodes,) if self.nodes is not None else ()),
            )
        )

    def wait_for_sync(self, timeout: float) -> bool:
        return self._synced.wait(timeout)

    def stop(self, timeout: float = 30.0) -> None:
        """Stop taking keys, let in-flight reconciles finish (within ``timeout``), then stop the caches."""
        deadline = time.monotonic() + timeout
        drained = threading.Thread(target=self.queue.shutdown_with_drain, daemon=True)
        drained.start()
        drained.join(max(0.0, deadline - time.monotonic()))
        self.queue.shutdown()
        for worker in self._workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        self.reconciler.close()
        self.recorder.stop(max(0.1, deadline - time.monotonic()))
        self._factory.stop()

    # ----- workers ----------------------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            try:
                key = self.queue.get()
            except QueueShutDown:
                return
            try:
                self._process(key)
            finally:
                self.queue.done(key)

    def _process(self, key: str) -> None:
        reconcile_id = new_reconcile_id()
        namespace, _, name = key.partition("/")
        if self._shards is not None and not self._shards.owns(namespace):
            self.queue.forget(key)
            if self._shards.pending(namespace):  # held: act once the caches relisted or it is renewed
                self.queue.add_after(key, SHARD_PENDING_RETRY)
            else:  # another replica's: its events come back if the bucket ever is ours again
                self.reconciler.forget(key)
            return
        log = self._log.bind(
            controller=CONTROLLER_NAME, namespace=namespace, name=name, reconcile_id=reconcile_id
        )
        self._set_active(+1)
        started = time.monotonic()
        try:
            result = self.reconciler.reconcile(key)
        except Exception as err:
            log.exception("Failed to syncTaskSet", key=key, error=str(err))
            result = ReconcileResult(error=f"panic: {err}")
            outcome = "panic"
        else:
            outcome = (
                "error"
                if result.error
                else ("requeue_after" if result.requeue_after is not None else "success")
            )
        finally:
            self._set_active(-1)
        seconds = time.monotonic() - started
        if self._worker_metrics is not None:
            self._worker_metrics.observe_reconcile(CONTROLLER_NAME, outcome, seconds)
        if result.error:
            if outcome != "panic":
                log.error("Failed to syncTaskSet", key=key, error=result.error, duration=round(seconds, 4))
            self.queue.add_rate_limited(key)
            return
        log.info("reconciled", result=outcome, duration=round(seconds, 4), requeue_after=result.requeue_after)
        self.queue.forget(key)
        if result.requeue_after is not None:
            self.queue.add_after(key, result.requeue_after)

    def _set_active(self, delta: int) -> None:
        with self._active_lock:
            self._active += delta
            active = self._active
        if self._worker_metrics is not None:
            self._worker_metrics.set_active_workers(CONTROLLER_NAME, active)


def _owner_keys(obj: Mapping[str, Any] | DeletedFinalStateUnknown) -> list[str]:
    raw = obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
    return taskset_index(raw) if isinstance(raw, Mapping) else []
