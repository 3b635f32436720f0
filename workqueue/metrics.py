"""Metrics port of the work queues, its no-op default and a Prometheus adapter.

The queues never import Prometheus. They ask a ``MetricsProvider`` for one metric object per kind and
queue name (as client-go's ``MetricsProvider`` does) and feed it from inside their own lock. The default
provider is a no-op, and a queue without a name emits nothing, matching client-go.

``PrometheusMetricsProvider`` registers the seven workqueue series under controller-runtime's names and
labels, so dashboards written for Go controllers work unchanged:

* every series carries ``name`` and ``controller``, both set to the queue name;
* ``workqueue_depth`` also carries ``priority``, which is ``""`` for these non-priority queues
  (controller-runtime's priority queue is the only writer of other values);
* both histograms use controller-runtime's buckets, 1e-8 s to 1e3 s in decades.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import TYPE_CHECKING, Final, Generic, Protocol, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from clock import Clock

__all__ = [
    "CounterMetric",
    "GaugeMetric",
    "HistogramMetric",
    "MetricsProvider",
    "NoopMetricsProvider",
    "PrometheusMetricsProvider",
    "SettableGaugeMetric",
]

T = TypeVar("T", bound=Hashable)


class GaugeMetric(Protocol):
    def inc(self) -> None: ...

    def dec(self) -> None: ...


class SettableGaugeMetric(Protocol):
    def set(self, value: float) -> None: ...


class CounterMetric(Protocol):
    def inc(self) -> None: ...


class HistogramMetric(Protocol):
    def observe(self, amount: float) -> None: ...


class MetricsProvider(Protocol):
    """Builds the metrics of one named queue; called once per queue, at construction."""

    def new_depth_metric(self, name: str) -> GaugeMetric:
        """Items waiting in the queue."""

    def new_adds_metric(self, name: str) -> CounterMetric:
        """Adds that were not coalesced into an item already waiting."""

    def new_latency_metric(self, name: str) -> HistogramMetric:
        """Seconds from the first add to the ``get`` that hands the item out."""

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        """Seconds from ``get`` to ``done``."""

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        """Sum of the ages of the items being processed now."""

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        """Age of the oldest item being processed now."""

    def new_retries_metric(self, name: str) -> CounterMetric:
        """Calls to ``add_after`` (every delayed or rate-limited requeue)."""


class _NoopMetric:
    def inc(self) -> None:
        pass

    def dec(self) -> None:
        pass

    def set(self, value: float) -> None:
        pass

    def observe(self, amount: float) -> None:
        pass


_NOOP_METRIC: Final = _NoopMetric()


class NoopMetricsProvider:
    """The default provider: queues built with it keep no metric state and start no metrics thread."""

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return _NOOP_METRIC

    def new_adds_metric(self, name: str) -> CounterMetric:
        return _NOOP_METRIC

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return _NOOP_METRIC

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return _NOOP_METRIC

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return _NOOP_METRIC

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return _NOOP_METRIC

    def new_retries_metric(self, name: str) -> CounterMetric:
        return _NOOP_METRIC


def _exponential_buckets(start: float, factor: float, count: int) -> tuple[float, ...]:
    # Multiplied step by step as Go's prometheus.ExponentialBuckets does, so the float values, and
    # therefore the exported `le` labels (e.g. 9.999999999999999e-06), are identical to a Go controller's.
    buckets = []
    for _ in range(count):
        buckets.append(start)
        start *= factor
    return tuple(buckets)


# controller-runtime pkg/internal/metrics/workqueue.go: ExponentialBuckets(10e-9, 10, 12), i.e. 10 ns
# to 1000 s. Queue waits and reconciles span that whole range, and identical buckets keep Go dashboards valid.
DURATION_BUCKETS: Final = _exponential_buckets(10e-9, 10, 12)

# controller-runtime puts the queue name in both labels; keeping both lets its queries run unchanged.
_LABELS: Final = ("name", "controller")
# Only the depth gauge has `priority`; "" marks a queue without priorities (controller-runtime).
_DEPTH_LABELS: Final = ("name", "controller", "priority")
_NO_PRIORITY: Final = ""


class PrometheusMetricsProvider:
    """Registers the workqueue series in ``registry``; one provider serves every queue of that registry.

    Registering twice in the same registry raises (prometheus-client refuses duplicate names), so build
    one provider per registry and share it between queues.
    """

    def __init__(self, *, registry: CollectorRegistry) -> None:
        self._depth = Gauge("workqueue_depth", "Current depth of workqueue", _DEPTH_LABELS, registry=registry)
        self._adds = Counter(
            "workqueue_adds_total", "Total number of adds handled by workqueue", _LABELS, registry=registry
        )
        self._latency = Histogram(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            _LABELS,
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self._work_duration = Histogram(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes.",
            _LABELS,
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self._unfinished = Gauge(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by "
            "work_duration. Large values indicate stuck threads. One can deduce the number of stuck "
            "threads by observing the rate at which this increases.",
            _LABELS,
            registry=registry,
        )
        self._longest = Gauge(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running.",
            _LABELS,
            registry=registry,
        )
        self._retries = Counter(
            "workqueue_retries_total",
            "Total number of retries handled by workqueue",
            _LABELS,
            registry=registry,
        )

    def new_depth_metric(self, name: str) -> GaugeMetric:
        return self._depth.labels(name, name, _NO_PRIORITY)

    def new_adds_metric(self, name: str) -> CounterMetric:
        return self._adds.labels(name, name)

    def new_latency_metric(self, name: str) -> HistogramMetric:
        return self._latency.labels(name, name)

    def new_work_duration_metric(self, name: str) -> HistogramMetric:
        return self._work_duration.labels(name, name)

    def new_unfinished_work_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return self._unfinished.labels(name, name)

    def new_longest_running_processor_seconds_metric(self, name: str) -> SettableGaugeMetric:
        return self._longest.labels(name, name)

    def new_retries_metric(self, name: str) -> CounterMetric:
        return self._retries.labels(name, name)


class QueueMetrics(Generic[T]):
    """Per-queue bookkeeping behind the metrics; every method expects the queue's lock to be held.

    Disabled (and free) for unnamed queues and for the no-op provider, as in client-go.
    """

    def __init__(self, *, provider: MetricsProvider, name: str, clock: Clock) -> None:
        self.enabled: Final = bool(name) and not isinstance(provider, NoopMetricsProvider)
        if not self.enabled:
            provider = NoopMetricsProvider()
        self._clock = clock
        self._depth = provider.new_depth_metric(name)
        self._adds = provider.new_adds_metric(name)
        self._latency = provider.new_latency_metric(name)
        self._work_duration = provider.new_work_duration_metric(name)
        self._unfinished = provider.new_unfinished_work_seconds_metric(name)
        self._longest = provider.new_longest_running_processor_seconds_metric(name)
        # When each waiting item was first added; an item that is re-added keeps its first time, so the
        # latency covers the whole wait. Guarded by the queue's lock.
        self._added_at: dict[T, float] = {}
        # When each item in progress was handed out by get(). Guarded by the queue's lock.
        self._started_at: dict[T, float] = {}

    def add(self, item: T) -> None:
        if not self.enabled:
            return
        self._adds.inc()
        self._depth.inc()
        self._added_at.setdefault(item, self._clock.now())

    def get(self, item: T) -> None:
        if not self.enabled:
            return
        now = self._clock.now()
        self._depth.dec()
        self._started_at[item] = now
        added_at = self._added_at.pop(item, None)
        if added_at is not None:
            self._latency.observe(now - added_at)

    def done(self, item: T) -> None:
        if not self.enabled:
            return
        started_at = self._started_at.pop(item, None)
        if started_at is not None:
            self._work_duration.observe(self._clock.now() - started_at)

    def update_unfinished_work(self) -> None:
        if not self.enabled:
            return
        # A gauge pair rather than a summary: Prometheus summaries cannot be reset (client-go's reasoning).
        now = self._clock.now()
        ages = [now - started for started in self._started_at.values()]
        self._unfinished.set(sum(ages))
        self._longest.set(max(ages, default=0.0))


class RetryMetrics:
    """Counts ``add_after`` calls of one delaying queue; disabled for unnamed queues, as in client-go."""

    def __init__(self, *, provider: MetricsProvider, name: str) -> None:
        self._retries: CounterMetric = provider.new_retries_metric(name) if name else _NOOP_METRIC
        # prometheus-client children are thread-safe; the no-op needs nothing. The lock only makes the
        # contract independent of the provider.
        self._lock = threading.Lock()

    def retry(self) -> None:
        with self._lock:
            self._retries.inc()


if TYPE_CHECKING:
    # Static conformance checks, like client-go's `var _ MetricsProvider = ...` assertions.
    _NOOP_PROVIDER_CONFORMS: type[MetricsProvider] = NoopMetricsProvider
    _PROMETHEUS_PROVIDER_CONFORMS: type[MetricsProvider] = PrometheusMetricsProvider
