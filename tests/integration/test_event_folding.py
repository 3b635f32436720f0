"""Events fold on a real API server: a TaskSet that fails attempt after attempt says so in a bounded
number of Event objects whose counts grow (PATCHes of the Events already sent), and the spam filter caps
the writes about it; what ``kubectl describe ts`` shows is what the correlator decided."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest
import structlog

from devcluster import Cluster
from taskset.api import constants as c
from taskset.runtime.controller import Controller, ControllerSettings
from taskset.runtime.event_correlator import AGGREGATE_AFTER, SPAM_BURST, SPAM_REFILL_SECONDS
from taskset.runtime.events import EventResult
from tests.builders import TaskSetBuilder, pod_template
from tests.integration.conftest import SYNC_TIMEOUT
from tests.integration.harness import TaskSets, exits

pytestmark = [pytest.mark.integration, pytest.mark.timeout(420)]

RETRIES = 12  # TaskSet attempts after the first: each ends Failed and says so again
FINAL = 300.0  # seconds until the last attempt has failed


class Counted:
    def __init__(self) -> None:
        self.results: Counter[str] = Counter()
        self._lock = threading.Lock()

    def observe_event(self, result: str) -> None:
        with self._lock:
            self.results[result] += 1


@pytest.fixture
def counted(cluster: Cluster, namespace: str, crd_installed: None) -> Iterator[tuple[Controller, Counted]]:
    metrics = Counted()
    controller = Controller(
        api_client=cluster.api_client(),
        settings=ControllerSettings(namespace=namespace, workers=2),
        logger=structlog.get_logger("taskset-test").bind(test_namespace=namespace),
        event_metrics=metrics,
    )
    controller.start()
    assert controller.wait_for_sync(SYNC_TIMEOUT), "controller caches did not sync"
    yield controller, metrics
    controller.stop(5)


def test_a_taskset_that_keeps_failing_folds_its_events(
    cluster: Cluster, namespace: str, counted: tuple[Controller, Counted]
) -> None:
    controller, metrics = counted
    ts = TaskSets(cluster, namespace)
    started = time.monotonic()
    template = pod_template(annotations=exits(1, 0.1).annotations())
    ts.create(TaskSetBuilder("flaky").retry(True, RETRIES, 0).role("w", 1, template=template).obj())
    status = ts.final("flaky", timeout=FINAL)
    assert (status["state"], status["totalRetriedCount"]) == ("Failed", RETRIES)
    controller.recorder.stop(30)  # what is queued goes out (the fixture's stop then finds nothing left)
    elapsed = time.monotonic() - started

    items = ts.core.list_namespaced_event(
        namespace, field_selector=f"involvedObject.name=flaky,involvedObject.kind={c.KIND}"
    ).items
    budget = SPAM_BURST + elapsed / SPAM_REFILL_SECONDS + 1  # + the end, never held back (said once)
    writes = metrics.results[EventResult.CREATED] + metrics.results[EventResult.PATCHED]
    said = [(e.reason, e.message, e.count) for e in items]
    assert metrics.results[EventResult.ERROR] == 0, metrics.results
    assert metrics.results[EventResult.DROPPED] == 0, metrics.results
    assert writes <= budget, f"{writes} writes about one TaskSet in {elapsed:.0f}s: {metrics.results}"
    assert len(items) == metrics.results[EventResult.CREATED] <= budget, said
    assert metrics.results[EventResult.PATCHED] > 0, metrics.results
    repeated = [(reason, message, count) for reason, message, count in said if (count or 0) > 1]
    assert repeated, f"no Event counts a repeat: {said}"
    assert c.EventReason.TASKSET_FAILED in {reason for reason, _, _ in said}, "the end is always said"
    # Each attempt said the same transitions again: they are counted on one Event each.
    transitions = [m for r, m, _ in said if r == c.EventReason.TASKSET_STATE_TRANSITION]
    assert len(transitions) == len(set(transitions)), said
    retries = [m for r, m, _ in said if r == c.EventReason.TASKSET_RETRY]
    assert len(retries) <= AGGREGATE_AFTER, f"similar retries are combined: {retries}"
    print(f"{len(items)} Events, {writes} writes for {RETRIES + 1} attempts: {dict(metrics.results)}")
