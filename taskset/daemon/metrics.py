"""Prometheus metrics of the controller, under controller-runtime's names where one exists.

Dashboards and alerts written for Go controllers (controller-runtime, client-go) work unchanged on the
``controller_runtime_*``, ``rest_client_*`` and ``workqueue_*`` series; the ``taskset_*`` series are ours.
Every metric lives in an injected ``CollectorRegistry``; nothing is registered at import time.

| Name | Type | Labels | Meaning |
|---|---|---|---|
| `controller_runtime_reconcile_total` | counter | controller, result | reconciles by result (1) |
| `controller_runtime_reconcile_errors_total` | counter | controller | failed reconciles, panics included |
| `controller_runtime_terminal_reconcile_errors_total` | counter | controller | failures not retried |
| `controller_runtime_reconcile_panics_total` | counter | controller | reconciles that raised an exception |
| `controller_runtime_reconcile_time_seconds` | histogram | controller | seconds per reconcile |
| `controller_runtime_max_concurrent_reconciles` | gauge | controller | worker threads configured |
| `controller_runtime_active_workers` | gauge | controller | workers reconciling right now |
| `rest_client_requests_total` | counter | code, method, host | API requests (2) |
| `rest_client_request_duration_seconds` | histogram | verb, host | seconds to the response headers (3) |
| `taskset_api_requests_total` | counter | verb, resource, code | API requests by Kubernetes verb (4) |
| `taskset_tasksets` | gauge | state | TaskSets by `state` (Waiting, Running, ...) |
| `taskset_phase_transitions_total` | counter | machine, from, to | phase changes (5) |
| `taskset_retries_total` | counter | level | retries started (6) |
| `taskset_pod_creates_total` | counter | result | Pod creates by result |
| `taskset_pod_deletes_total` | counter | result | Pod deletes by result |
| `taskset_control_unit_creates_total` | counter | result | ControlUnit creates by result |
| `taskset_control_unit_deletes_total` | counter | result | ControlUnit deletes by result |
| `taskset_status_writes_total` | counter | result | status writes by result (7) |
| `taskset_events_total` | counter | result | recorded Kubernetes Events by what became of them (9) |
| `leader_election_master_status` | gauge | name | 1 while this process holds the lease `name`, else 0 (8) |
| `leader_election_slowpath_total` | counter | name | lease renewals that had to re-read the Lease (8) |
| `workqueue_*` (7 series) | | name, controller | the work queue, see `workqueue.metrics` |
| `process_*`, `python_*` | | | the process, as in the default registry |

1. ``result`` is ``success``, ``error``, ``requeue`` or ``requeue_after``.
2. ``code`` is the HTTP status, ``<error>`` when no answer came; ``method`` the HTTP method.
3. ``verb`` is the HTTP method (client-go's naming); a watch is timed to its headers, not its life.
4. Our own series, for the API cost per verb and resource: ``verb`` is get, list, watch, create,
   update, patch, delete or deletecollection; ``resource`` e.g. ``pods``, ``tasksets/status``.
5. ``machine`` is ``taskset``, ``role`` or ``replica``; ``from`` and ``to`` are phase names.
6. ``level`` is ``taskset`` or ``replica``. A retry is counted when its machine leaves the
   RetryPending phase for the next attempt (spec T14 / P14), so ``observe_transition`` feeds it.
7. ``success``, ``conflict`` or ``error``. The action counters use the reconciler's ``ResultKind``
   values: ``ok``, ``already-exists``, ``invalid``, ``not-found``, ``conflict``, ``error``.
8. client-go / controller-runtime names; ``name`` is the Lease's name (``--leader-elect-id``). Both exist
   only with ``--leader-elect``; the gauge is 0 from the start on every replica, 1 on the leader (sum it
   by ``name``: exactly one replica should report 1).
9. ``created``, ``patched`` (a repeat raised an Event's count), ``coalesced`` (folded into another write
   of its batch), ``filtered`` (held back by the per-TaskSet spam filter), ``dropped`` (buffer full, or
   left at shutdown), ``fenced`` (a sharded replica's tenure of the TaskSet's bucket ended before it went
   out) or ``error`` (``taskset.runtime.events.EventResult``).

The reconcile duration is ``controller_runtime_reconcile_time_seconds``; there is no ``taskset_``
duplicate. As in controller-runtime, a controller's reconcile series exist from the start with value 0
(so rate queries have data), and ``*_created`` series are off (``new_registry``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from enum import StrEnum
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
)
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector

from taskset.api.constants import ReplicaPhase, State, TaskSetPhase
from workqueue import PrometheusMetricsProvider

__all__ = [
    "DEFAULT_CONTROLLER",
    "RECONCILE_BUCKETS",
    "REQUEST_BUCKETS",
    "ControllerMetrics",
    "ReconcileOutcome",
    "new_registry",
    "request_verb_and_resource",
    "workqueue_metrics_provider",
]

DEFAULT_CONTROLLER: Final = "taskset"  # controller-runtime names a controller after its kind, lower case

# controller-runtime pkg/internal/controller/metrics: dense below 1 s where most reconciles land, up to 60 s.
RECONCILE_BUCKETS: Final = (
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
    1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0,
    15.0, 20.0, 25.0, 30.0, 40.0, 50.0, 60.0,
)  # fmt: skip
# k8s.io/component-base/metrics/prometheus/restclient: rest_client_request_duration_seconds.
REQUEST_BUCKETS: Final = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)

# client-go's code label when the request got no HTTP answer at all.
NO_RESPONSE_CODE: Final = "<error>"
RETRY_LEVELS: Final = ("taskset", "replica")
# Transitions that start a retry (spec T14, P14): out of RetryPending into the next attempt.
_RETRY_STARTS: Final = {
    "taskset": (TaskSetPhase.ATTEMPT_RETRY_PENDING, TaskSetPhase.ATTEMPT_PENDING),
    "replica": (ReplicaPhase.ATTEMPT_RETRY_PENDING, ReplicaPhase.ATTEMPT_PENDING),
}
# The Kubernetes verb of a request whose URL is not known (KubeClient's writes and reads by name).
_VERB_BY_METHOD: Final = {
    "GET": "get",
    "POST": "create",
    "PUT": "update",
    "PATCH": "patch",
    "DELETE": "delete",
}
# Intent action names (``action`` of the intents of taskset.decide) -> the counter of that action.
_ACTION_COUNTERS: Final = {
    "CreatePod": "pod_creates",
    "DeletePod": "pod_deletes",
    "CreateControlUnit": "control_unit_creates",
    "DeleteControlUnit": "control_unit_deletes",
}


class ReconcileOutcome(StrEnum):
    """What one reconcile ended with. The first four are controller-runtime's ``result`` label values."""

    SUCCESS = "success"
    ERROR = "error"
    REQUEUE = "requeue"
    REQUEUE_AFTER = "requeue_after"
    PANIC = "panic"  # counted as a panic and as an error, as controller-runtime does
    TERMINAL_ERROR = "terminal_error"  # counted as terminal and as an error, not retried


_RESULT_LABELS: Final = (
    ReconcileOutcome.SUCCESS,
    ReconcileOutcome.ERROR,
    ReconcileOutcome.REQUEUE,
    ReconcileOutcome.REQUEUE_AFTER,
)


def new_registry() -> CollectorRegistry:
    """A registry with the process, platform and GC collectors (Go controllers export their analogues).

    Also turns off prometheus-client's ``*_created`` series process-wide: controller-runtime has none,
    and they double the number of series for no query anyone writes.
    """
    disable_created_metrics()  # type: ignore[no-untyped-call]
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


def workqueue_metrics_provider(registry: CollectorRegistry) -> PrometheusMetricsProvider:
    """The ``workqueue_*`` series on ``registry``; build one per registry and share it between queues."""
    return PrometheusMetricsProvider(registry=registry)


class _TaskSetsByState(Collector):
    """The ``taskset_tasksets`` gauge: the last counts set, or a callable asked at every scrape."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = dict.fromkeys(State, 0)  # guarded by _lock
        self._source: Callable[[], Mapping[str, int]] | None = None  # guarded by _lock

    def set(self, counts: Mapping[str, int]) -> None:
        with self._lock:
            self._counts = {**dict.fromkeys(State, 0), **counts}

    def set_source(self, source: Callable[[], Mapping[str, int]]) -> None:
        with self._lock:
            self._source = source

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            source, counts = self._source, self._counts
        if source is not None:
            counts = {**dict.fromkeys(State, 0), **source()}
        family = GaugeMetricFamily("taskset_tasksets", "Number of TaskSets by state.", labels=["state"])
        for state, count in sorted(counts.items()):
            family.add_metric([str(state)], count)
        yield family


class ControllerMetrics:
    """The reconcile, REST client and domain metrics of one controller process, on one registry.

    Implements the reconciler's and the controller's metrics ports (``observe_reconcile``,
    ``set_active_workers``, ``observe_action``, ``observe_status_write``, ``observe_transition``) and the
    ``KubeClient`` request observer (``observe_request``). Thread-safe: prometheus-client metrics are.
    Registering two instances on one registry raises (duplicate names), so build one per registry.
    """

    def __init__(
        self, *, registry: CollectorRegistry, controller: str = DEFAULT_CONTROLLER, workers: int = 0
    ) -> None:
        cr = "controller_runtime_"
        self._reconcile_total = Counter(
            f"{cr}reconcile_total",
            "Total number of reconciliations per controller",
            ["controller", "result"],
            registry=registry,
        )
        self._reconcile_errors = Counter(
            f"{cr}reconcile_errors_total",
            "Total number of reconciliation errors per controller",
            ["controller"],
            registry=registry,
        )
        self._terminal_errors = Counter(
            f"{cr}terminal_reconcile_errors_total",
            "Total number of terminal reconciliation errors per controller",
            ["controller"],
            registry=registry,
        )
        self._panics = Counter(
            f"{cr}reconcile_panics_total",
            "Total number of reconciliation panics per controller",
            ["controller"],
            registry=registry,
        )
        self._reconcile_time = Histogram(
            f"{cr}reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            ["controller"],
            buckets=RECONCILE_BUCKETS,
            registry=registry,
        )
        self._max_concurrent = Gauge(
            f"{cr}max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            ["controller"],
            registry=registry,
        )
        self._active_workers = Gauge(
            f"{cr}active_workers",
            "Number of currently used workers per controller",
            ["controller"],
            registry=registry,
        )
        self._requests = Counter(
            "rest_client_requests_total",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "method", "host"],
            registry=registry,
        )
        self._request_duration = Histogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            ["verb", "host"],
            buckets=REQUEST_BUCKETS,
            registry=registry,
        )
        self._api_requests = Counter(
            "taskset_api_requests_total",
            "API requests of the TaskSet controller by verb, resource and code.",
            ["verb", "resource", "code"],
            registry=registry,
        )
        self._tasksets = _TaskSetsByState()
        registry.register(self._tasksets)
        self._transitions = Counter(
            "taskset_phase_transitions_total",
            "Phase changes of the TaskSet, role and replica machines.",
            ["machine", "from", "to"],
            registry=registry,
        )
        self._retries = Counter(
            "taskset_retries_total",
            "Retries started, by level (taskset or replica).",
            ["level"],
            registry=registry,
        )
        self._actions = {
            name: Counter(
                f"taskset_{name}_total",
                f"{name.replace('_', ' ').capitalize()} by result.",
                ["result"],
                registry=registry,
            )
            for name in _ACTION_COUNTERS.values()
        }
        self._status_writes = Counter(
            "taskset_status_writes_total", "TaskSet status writes by result.", ["result"], registry=registry
        )
        self._events = Counter(
            "taskset_events_total",
            "Kubernetes Events recorded, by what became of them.",
            ["result"],
            registry=registry,
        )
        self._leader = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
            "1 indicates master. 'name' is the string used to identify the lease. Please make sure to "
            "group by name.",
            ["name"],
            registry=registry,
        )
        self._leader_slow_path = Counter(
            "leader_election_slowpath_total",
            "Total number of slow path exercised in renewing leader leases. 'name' is the string used to "
            "identify the lease. Please make sure to group by name.",
            ["name"],
            registry=registry,
        )
        # host:port of the API server for observations that carry no URL; set by instrument_api_client.
        self._host = ""
        for level in RETRY_LEVELS:
            self._retries.labels(level).inc(0)
        self.init_controller(controller, workers=workers)

    # ----- reconcile (controller-runtime) --------------------------------------------------------------
    def init_controller(self, controller: str, *, workers: int) -> None:
        """Create a controller's series at 0 (controller-runtime ``initMetrics``) and record its workers."""
        for result in _RESULT_LABELS:
            self._reconcile_total.labels(controller, result).inc(0)
        self._reconcile_errors.labels(controller).inc(0)
        self._terminal_errors.labels(controller).inc(0)
        self._panics.labels(controller).inc(0)
        self._max_concurrent.labels(controller).set(workers)
        self._active_workers.labels(controller).set(0)

    def set_max_concurrent_reconciles(self, controller: str, workers: int) -> None:
        self._max_concurrent.labels(controller).set(workers)

    def set_active_workers(self, controller: str, count: int) -> None:
        self._active_workers.labels(controller).set(count)

    def observe_reconcile(self, controller: str, result: str, seconds: float) -> None:
        """One reconcile finished after ``seconds`` with ``result``, a ``ReconcileOutcome`` value."""
        outcome = ReconcileOutcome(result)  # ValueError on a typo: the label set is closed
        self._reconcile_time.labels(controller).observe(seconds)
        if outcome in (ReconcileOutcome.PANIC, ReconcileOutcome.TERMINAL_ERROR, ReconcileOutcome.ERROR):
            if outcome is ReconcileOutcome.PANIC:
                self._panics.labels(controller).inc()
            elif outcome is ReconcileOutcome.TERMINAL_ERROR:
                self._terminal_errors.labels(controller).inc()
            self._reconcile_errors.labels(controller).inc()
            self._reconcile_total.labels(controller, ReconcileOutcome.ERROR).inc()
            return
        self._reconcile_total.labels(controller, outcome).inc()

    # ----- API requests (client-go / controller-runtime, plus taskset_api_requests_total) --------------
    def observe_request(
        self,
        method: str,
        resource: str,
        code: int,
        seconds: float,
        *,
        verb: str | None = None,
        host: str | None = None,
    ) -> None:
        """One API request: HTTP ``method``, resource (``pods``, ``tasksets/status``), HTTP status code
        (0 = no answer), seconds to the response headers.

        Without ``verb`` the Kubernetes verb is inferred from the method (GET → get, POST → create, ...),
        which is right for requests on one named object; list and watch callers pass it. Without ``host``
        the host of the client given to ``instrument_api_client`` is used.
        """
        method = method.upper()
        code_label = str(code) if code else NO_RESPONSE_CODE
        host_label = self._host if host is None else host
        self._requests.labels(code_label, method, host_label).inc()
        self._request_duration.labels(method, host_label).observe(seconds)
        k8s_verb = verb or _VERB_BY_METHOD.get(method, method.lower())
        self._api_requests.labels(k8s_verb, resource, code_label).inc()

    def instrument_api_client(self, api_client: Any) -> None:
        """Report every request ``api_client`` (an ``informers.rest.Transport``) streams: the informers'
        lists and watches. ``taskset.runtime.kube.KubeClient`` reports its own requests (the writes, the
        CRD registration, the Lease) to ``observe_request``, so nothing is counted twice. A watch is timed
        to its response headers, as client-go does, not over the life of the stream. Call once per
        transport, before it is shared.
        """
        self._host = self._host or urlsplit(str(api_client.host)).netloc

        def request(method: str, url: str, code: int, seconds: float) -> None:
            verb, resource = request_verb_and_resource(method, url)
            self.observe_request(method, resource, code, seconds, verb=verb, host=urlsplit(url).netloc)

        api_client.observe_streams(request)

    # ----- leader election (client-go / controller-runtime) ---------------------------------------------
    def set_leader(self, name: str, leading: bool) -> None:
        """Whether this process holds the lease ``name`` now; also creates both series of that lease."""
        self._leader.labels(name).set(1 if leading else 0)
        self._leader_slow_path.labels(name).inc(0)

    def observe_leader_slow_path(self, name: str) -> None:
        """A renewal of the lease ``name`` whose optimistic update failed and had to re-read the Lease."""
        self._leader_slow_path.labels(name).inc()

    # ----- domain -------------------------------------------------------------------------------------
    def set_tasksets_by_state(self, counts: Mapping[str, int]) -> None:
        """TaskSets per state now; states not given are 0."""
        self._tasksets.set(counts)

    def count_tasksets_with(self, source: Callable[[], Mapping[str, int]]) -> None:
        """Ask ``source`` for the counts at every scrape instead (e.g. a count over the informer cache)."""
        self._tasksets.set_source(source)

    def observe_transition(self, machine: str, source: str, target: str) -> None:
        """A phase change of the ``taskset``, ``role`` or ``replica`` machine."""
        self._transitions.labels(machine, source, target).inc()
        if _RETRY_STARTS.get(machine) == (source, target):
            self._retries.labels(machine).inc()

    def observe_action(self, kind: str, result: str) -> None:
        """An intent carried out; ``kind`` is its action name (``CreatePod``, ...), others are not counted."""
        counter = _ACTION_COUNTERS.get(kind)
        if counter is not None:
            self._actions[counter].labels(result).inc()

    def observe_status_write(self, result: str) -> None:
        self._status_writes.labels(result).inc()

    def observe_event(self, result: str) -> None:
        """A recorded Event's fate (``taskset.runtime.events.EventResult``)."""
        self._events.labels(result).inc()


def request_verb_and_resource(method: str, url: str) -> tuple[str, str]:
    """The Kubernetes verb and resource of a request, as the API server's RequestInfo would name them.

    ``GET /api/v1/namespaces/ns/pods?watch=true`` → ``("watch", "pods")``;
    ``PUT /apis/g/v/namespaces/ns/tasksets/x/status`` → ``("update", "tasksets/status")``. A path outside
    ``/api`` and ``/apis`` (``/version``, ``/openapi/v3``) has resource ``""`` and the lower-case method.
    """
    parts = urlsplit(url)
    segments = [s for s in parts.path.split("/") if s]
    method = method.upper()
    if segments[:1] == ["api"] and len(segments) >= 2:
        rest = segments[2:]
    elif segments[:1] == ["apis"] and len(segments) >= 3:
        rest = segments[3:]
    else:
        return method.lower(), ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        rest = rest[2:]  # /namespaces/<ns>/<resource>...; /namespaces/<name> itself is the namespace object
    if not rest:
        return method.lower(), ""
    resource = rest[0] if len(rest) < 3 else f"{rest[0]}/{rest[2]}"
    named = len(rest) >= 2
    if method == "GET":
        watching = parse_qs(parts.query).get("watch", [""])[0] in ("true", "1")
        verb = "watch" if watching else ("get" if named else "list")
    elif method == "DELETE":
        verb = "delete" if named else "deletecollection"
    else:
        verb = _VERB_BY_METHOD.get(method, method.lower())
    return verb, resource
