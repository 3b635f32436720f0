"""Work queues with client-go's ``util/workqueue`` guarantees. Nothing here knows about Kubernetes.

Items are hashable keys (for a controller, ``namespace/name`` strings). The queues promise:

* **Fair:** items are handed out in the order they were first added.
* **Stingy:** an item added several times before it is handed out is processed once, and an item is
  never handed to two workers at the same time.
* **Many producers and consumers:** any thread may ``add``, any number may ``get``; an item added while
  it is being processed is handed out again after its ``done``.
* **Shutdown notification:** after ``shutdown()`` adds are ignored, items already queued are still
  handed out, and then ``get`` raises ``QueueShutDown``. ``shutdown_with_drain()`` also waits until
  every handed-out item is ``done``.

Layers, each adding one capability: ``Queue`` → ``DelayingQueue`` (``add_after``, one timer thread,
earliest deadline wins) → ``RateLimitingQueue`` (``add_rate_limited``, ``forget``, ``num_requeues``).

Time comes from an injected ``clock.Clock``, so delays, backoffs and metric durations are testable with a
``FakeClock``. Metrics go through a ``MetricsProvider``: a no-op by default, or
``PrometheusMetricsProvider`` with controller-runtime's ``workqueue_*`` names on an injected registry.
"""

from .delaying import DelayingQueue
from .metrics import (
    CounterMetric,
    GaugeMetric,
    HistogramMetric,
    MetricsProvider,
    NoopMetricsProvider,
    PrometheusMetricsProvider,
    SettableGaugeMetric,
)
from .queue import Queue, QueueSettings, QueueShutDown
from .ratelimit import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    RateLimiterSettings,
    default_controller_rate_limiter,
)
from .ratelimiting import RateLimitingQueue

__all__ = [
    "BucketRateLimiter",
    "CounterMetric",
    "DelayingQueue",
    "GaugeMetric",
    "HistogramMetric",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "MaxOfRateLimiter",
    "MetricsProvider",
    "NoopMetricsProvider",
    "PrometheusMetricsProvider",
    "Queue",
    "QueueSettings",
    "QueueShutDown",
    "RateLimiter",
    "RateLimiterSettings",
    "RateLimitingQueue",
    "SettableGaugeMetric",
    "default_controller_rate_limiter",
]
