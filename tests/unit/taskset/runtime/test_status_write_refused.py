"""A status write the API server refuses for good says so in a Warning event on the TaskSet,
naming the refusal and the status's size, once per distinct refusal; a transient failure is only
retried. Either way the pass fails, so the work queue's per-key backoff spaces the retries out.

(The same on the real control plane, with an admission policy refusing the writes:
``tests/integration/test_status_bounds.py``.)
"""

from __future__ import annotations

from typing import Any

import pytest

from taskset.api.constants import EventReason
from taskset.runtime.kube import KubeError
from taskset.runtime.reconciler import Reconciler
from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import RecordingClient, World, cached_taskset, reconciler_over

TOO_LARGE_BY_ETCD = KubeError(500, "InternalError", "etcdserver: request is too large")
TOO_LARGE = KubeError(413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728")
INVALID = KubeError(422, "Invalid", 'TaskSet.octopus.openi.pcl.cn "job" is invalid: status.conditions[0]')


class Events:
    """An event recorder that keeps what it is asked to send."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, bool]] = []

    def record(self, target: Any, reason: str, message: str, *, warning: bool) -> None:
        self.sent.append((reason, message, warning))

    def refusals(self) -> list[str]:
        return [message for reason, message, _ in self.sent if reason == EventReason.STATUS_WRITE_REFUSED]


def scene() -> tuple[Reconciler, RecordingClient, Events]:
    """A TaskSet whose Pod has just exited: its next pass has a status to write, and writes it before
    anything else (spec 4.4), so every pass tries the same write again."""
    world = World(TaskSetBuilder("job").role("r").obj())
    world.settle()
    world.run("job-r-0")
    world.settle()
    world.exit("job-r-0", 0)
    client = RecordingClient(cached_taskset(world))
    reconciler = reconciler_over(world, client)[0]
    events = Events()
    reconciler._recorder = events  # type: ignore[assignment]  # the recorder the pass reports to
    return reconciler, client, events


@pytest.mark.parametrize(
    "error",
    [
        pytest.param(TOO_LARGE_BY_ETCD, id="etcd's request limit, which API servers report as a 500"),
        pytest.param(TOO_LARGE, id="the API server's own size limit (413)"),
        pytest.param(INVALID, id="a status the schema refuses (422)"),
    ],
)
def test_a_refused_status_write_is_said_once_in_a_warning_event_with_the_status_size(
    error: KubeError,
) -> None:
    reconciler, client, events = scene()
    client.status_error = error

    results = [reconciler.reconcile("ns/job") for _ in range(3)]

    assert all(result.error is not None for result in results)  # each pass fails: the backoff applies
    (message,) = events.refusals()
    assert error.message in message
    assert "bytes of JSON" in message
    assert all(warning for reason, _, warning in events.sent if reason == EventReason.STATUS_WRITE_REFUSED)


def test_a_transient_status_write_failure_is_retried_without_an_event() -> None:
    reconciler, client, events = scene()
    client.status_error = KubeError(503, "ServiceUnavailable", "the server is currently unable to handle it")

    result = reconciler.reconcile("ns/job")

    assert result.error is not None
    assert events.refusals() == []


def test_each_distinct_refusal_is_said_and_a_write_that_goes_through_resets_the_memory() -> None:
    reconciler, client, events = scene()
    for error in (TOO_LARGE_BY_ETCD, INVALID, INVALID):
        client.status_error = error
        assert reconciler.reconcile("ns/job").error is not None
    first, second = events.refusals()  # INVALID twice is said once
    assert TOO_LARGE_BY_ETCD.message in first and INVALID.message in second
    assert reconciler._records["ns/job"].refused == str(INVALID)

    client.status_error = None
    assert reconciler.reconcile("ns/job").error is None

    assert reconciler._records["ns/job"].refused is None  # the next refusal is news again


def test_the_reported_size_is_the_refused_statuss() -> None:
    reconciler, client, events = scene()
    client.status_error = TOO_LARGE

    reconciler.reconcile("ns/job")

    (message,) = events.refusals()
    size = int(message.split("(", 1)[1].split(" bytes", 1)[0])
    assert 300 < size < 10_000  # one replica's status, as JSON
