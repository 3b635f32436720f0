"""Workqueue metrics read back from a real CollectorRegistry, with durations measured on a fake clock."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import pytest
from prometheus_client import CollectorRegistry

from clock import FakeClock
from tests.unit.workqueue.conftest import WaitUntil
from workqueue import (
    DelayingQueue,
    ItemExponentialFailureRateLimiter,
    NoopMetricsProvider,
    PrometheusMetricsProvider,
    Queue,
    RateLimitingQueue,
)

pytestmark = [pytest.mark.unit, pytest.mark.timeout(30)]

NAME = "tasksets"
LABELS = {"name": NAME, "controller": NAME}
DEPTH_LABELS = {**LABELS, "priority": ""}

Q = TypeVar("Q", bound=Queue[Any])


class Closing(Protocol):
    """The ``closing`` fixture: registers a queue for shutdown at teardown and returns it."""

    def __call__(self, queue: Q, /) -> Q: ...


def value(registry: CollectorRegistry, sample: str, labels: dict[str, str] = LABELS) -> float | None:
    return registry.get_sample_value(sample, labels)


def histogram(registry: CollectorRegistry, metric: str) -> tuple[float | None, float | None]:
    """(count, sum) of a workqueue histogram."""
    return value(registry, f"{metric}_count"), value(registry, f"{metric}_sum")


def test_depth_adds_and_durations(
    registry: CollectorRegistry, fake_clock: FakeClock, closing: Closing
) -> None:
    provider = PrometheusMetricsProvider(registry=registry)
    queue = closing(Queue[str](name=NAME, clock=fake_clock, metrics_provider=provider))

    queue.add("a")
    queue.add("b")
    queue.add("a")  # coalesced: neither an add nor depth
    assert value(registry, "workqueue_adds_total") == 2.0
    assert value(registry, "workqueue_depth", DEPTH_LABELS) == 2.0

    fake_clock.step(2.0)
    assert queue.get() == "a"
    assert value(registry, "workqueue_depth", DEPTH_LABELS) == 1.0
    assert histogram(registry, "workqueue_queue_duration_seconds") == (1.0, 2.0)
    assert histogram(registry, "workqueue_work_duration_seconds") == (0.0, 0.0)

    fake_clock.step(3.0)
    queue.done("a")
    assert histogram(registry, "workqueue_work_duration_seconds") == (1.0, 3.0)

    assert queue.get() == "b"  # waited 5 s since its add
    assert histogram(registry, "workqueue_queue_duration_seconds") == (2.0, 7.0)
    assert value(registry, "workqueue_depth", DEPTH_LABELS) == 0.0
    assert value(registry, "workqueue_adds_total") == 2.0


def test_re_add_while_processing_counts_as_an_add_and_its_wait_starts_at_the_re_add(
    registry: CollectorRegistry, fake_clock: FakeClock, closing: Closing
) -> None:
    provider = PrometheusMetricsProvider(registry=registry)
    queue = closing(Queue[str](name=NAME, clock=fake_clock, metrics_provider=provider))
    queue.add("a")
    assert queue.get() == "a"

    fake_clock.step(1.0)
    queue.add("a")
    fake_clock.step(4.0)
    queue.done("a")
    assert value(registry, "workqueue_adds_total") == 2.0
    assert value(registry, "workqueue_depth", DEPTH_LABELS) == 1.0

    fake_clock.step(2.0)
    assert queue.get() == "a"

    assert histogram(registry, "workqueue_queue_duration_seconds") == (2.0, 6.0)
    assert histogram(registry, "workqueue_work_duration_seconds") == (1.0, 5.0)


def test_retries_count_every_delayed_add_until_shutdown(
    registry: CollectorRegistry, fake_clock: FakeClock, closing: Closing
) -> None:
    provider = PrometheusMetricsProvider(registry=registry)
    limiter = ItemExponentialFailureRateLimiter[str](base_delay=1.0, max_delay=10.0)
    queue = closing(
        RateLimitingQueue[str](name=NAME, clock=fake_clock, metrics_provider=provider, rate_limiter=limiter)
    )

    queue.add_after("a", 5.0)
    queue.add_after("a", 1.0)
    queue.add_after("b", 0.0)
    queue.add_after("c", -1.0)
    queue.add_rate_limited("d")
    queue.add("e")  # a plain add is not a retry
    assert value(registry, "workqueue_retries_total") == 5.0
    assert value(registry, "workqueue_adds_total") == 3.0  # b, c and e; the others still wait

    queue.shutdown()
    queue.add_after("f", 1.0)
    queue.add_rate_limited("g")

    assert value(registry, "workqueue_retries_total") == 5.0


def test_unfinished_work_gauges_track_items_in_progress(
    registry: CollectorRegistry, fake_clock: FakeClock, closing: Closing, wait_until: WaitUntil
) -> None:
    provider = PrometheusMetricsProvider(registry=registry)
    queue = closing(Queue[str](name=NAME, clock=fake_clock, metrics_provider=provider))

    def gauges() -> tuple[float | None, float | None]:
        return (
            value(registry, "workqueue_unfinished_work_seconds"),
            value(registry, "workqueue_longest_running_processor_seconds"),
        )

    queue.add("a")
    queue.add("b")
    assert queue.get() == "a"
    fake_clock.step(1.0)
    assert queue.get() == "b"
    fake_clock.step(1.5)
    # a has run 2.5 s and b 1.5 s: 4 s of unfinished work, the oldest 2.5 s.
    wait_until(lambda: gauges() == (4.0, 2.5), "the gauges are refreshed after the step")

    queue.done("a")
    queue.done("b")
    fake_clock.step(0.5)
    wait_until(lambda: gauges() == (0.0, 0.0), "the gauges drop once nothing is in progress")


@pytest.mark.parametrize(
    ("make", "thread_name"),
    [
        pytest.param(Queue, f"workqueue-metrics-{NAME}", id="the metrics thread of a queue"),
        pytest.param(DelayingQueue, f"workqueue-metrics-{NAME}", id="the metrics thread of a delaying queue"),
        pytest.param(DelayingQueue, f"workqueue-delay-{NAME}", id="the timer thread of a delaying queue"),
        pytest.param(
            RateLimitingQueue, f"workqueue-delay-{NAME}", id="the timer thread of a rate-limiting queue"
        ),
    ],
)
def test_shutdown_stops_background_threads(
    make: Callable[..., Queue[str]], thread_name: str, registry: CollectorRegistry, fake_clock: FakeClock
) -> None:
    queue = make(name=NAME, clock=fake_clock, metrics_provider=PrometheusMetricsProvider(registry=registry))
    threads = [t for t in threading.enumerate() if t.name == thread_name]
    assert [t.is_alive() for t in threads] == [True]

    queue.shutdown()

    assert not threads[0].is_alive()


@pytest.mark.parametrize(
    ("name", "use_prometheus"),
    [
        pytest.param("", True, id="an unnamed queue"),
        pytest.param(NAME, False, id="a named queue on the no-op provider"),
    ],
)
def test_queues_without_metrics_export_nothing_and_start_no_metrics_thread(
    name: str, use_prometheus: bool, registry: CollectorRegistry, fake_clock: FakeClock, closing: Closing
) -> None:
    provider = PrometheusMetricsProvider(registry=registry) if use_prometheus else NoopMetricsProvider()
    before = {t.name for t in threading.enumerate()}
    queue = closing(DelayingQueue[str](name=name, clock=fake_clock, metrics_provider=provider))

    queue.add("a")
    queue.add_after("b", 1.0)
    assert queue.get() == "a"
    queue.done("a")

    started = {t.name for t in threading.enumerate()} - before
    assert started == {f"workqueue-delay-{name}"}
    exported = [sample for metric in registry.collect() for sample in metric.samples]
    assert exported == []


def test_histograms_use_controller_runtime_buckets(
    registry: CollectorRegistry, fake_clock: FakeClock
) -> None:
    provider = PrometheusMetricsProvider(registry=registry)
    provider.new_latency_metric(NAME).observe(0.5)
    provider.new_work_duration_metric(NAME).observe(20.0)

    def bucket_bounds(metric: str) -> list[str]:
        return [
            sample.labels["le"]
            for collected in registry.collect()
            for sample in collected.samples
            if sample.name == f"{metric}_bucket"
        ]

    # Go's ExponentialBuckets(10e-9, 10, 12), including its float artefacts, which end up in `le`.
    expected = [
        "1e-08",
        "1e-07",
        "1e-06",
        "9.999999999999999e-06",
        "9.999999999999999e-05",
        "0.001",
        "0.01",
        "0.1",
        "1.0",
        "10.0",
        "100.0",
        "1000.0",
        "+Inf",
    ]
    assert bucket_bounds("workqueue_queue_duration_seconds") == expected
    assert bucket_bounds("workqueue_work_duration_seconds") == expected
    assert value(registry, "workqueue_queue_duration_seconds_bucket", {**LABELS, "le": "0.1"}) == 0.0
    assert value(registry, "workqueue_queue_duration_seconds_bucket", {**LABELS, "le": "1.0"}) == 1.0
    assert value(registry, "workqueue_work_duration_seconds_bucket", {**LABELS, "le": "10.0"}) == 0.0
    assert value(registry, "workqueue_work_duration_seconds_bucket", {**LABELS, "le": "100.0"}) == 1.0


def test_one_provider_serves_several_queues_under_their_own_labels(
    registry: CollectorRegistry, fake_clock: FakeClock, closing: Closing
) -> None:
    provider = PrometheusMetricsProvider(registry=registry)
    first = closing(Queue[str](name="first", clock=fake_clock, metrics_provider=provider))
    second = closing(Queue[str](name="second", clock=fake_clock, metrics_provider=provider))

    first.add("a")
    second.add("a")
    second.add("b")

    assert value(registry, "workqueue_adds_total", {"name": "first", "controller": "first"}) == 1.0
    assert value(registry, "workqueue_adds_total", {"name": "second", "controller": "second"}) == 2.0
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        PrometheusMetricsProvider(registry=registry)
