"""The fence of a sharded replica: once its tenure of the TaskSet's bucket is over, a pass sends no
write at all (no create, no delete, no status), even one decided while the tenure held."""

from __future__ import annotations

import pytest

from taskset.runtime.reconciler import NOT_OURS
from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import RecordingClient, World, cached_taskset, reconciler_over

pytestmark = pytest.mark.unit

KEY = "ns/job"


class Tenure:
    """Ours for the first ``asks`` questions, then over (the Lease went to another replica)."""

    def __init__(self, asks: int) -> None:
        self.asks = asks
        self.namespaces: list[str] = []

    def __call__(self, namespace: str) -> bool:
        self.namespaces.append(namespace)
        return len(self.namespaces) <= self.asks


def first_pass(tenure: Tenure | None) -> tuple[RecordingClient, str | None]:
    world = World(TaskSetBuilder("job").role("worker", 3).obj())
    client = RecordingClient(cached_taskset(world))
    reconciler, _ = reconciler_over(world, client, fence=tenure)
    return client, reconciler.reconcile(KEY).error


def test_a_pass_with_the_tenure_writes_as_before() -> None:
    held, _ = first_pass(Tenure(asks=1_000))
    unfenced, _ = first_pass(None)
    assert held.calls == unfenced.calls
    assert held.calls, "the first pass creates the ControlUnit and writes the status"


def test_no_write_once_the_tenure_is_over() -> None:
    tenure = Tenure(asks=0)
    client, error = first_pass(tenure)
    assert client.calls == []
    assert error == NOT_OURS
    assert set(tenure.namespaces) == {"ns"}


@pytest.mark.parametrize("asks", [1, 2, 3])
def test_a_tenure_ending_mid_pass_stops_the_writes_from_then_on(asks: int) -> None:
    unfenced, _ = first_pass(None)
    client, error = first_pass(Tenure(asks=asks))
    assert client.calls == unfenced.calls[: len(client.calls)]
    assert len(client.calls) < len(unfenced.calls)
    assert error is not None
