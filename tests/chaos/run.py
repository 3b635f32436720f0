"""What every chaos test of a workload does: record the namespace, run the real controller process, wait
for the end and hold the record to the invariants and to the workload's fault-free outcomes.

The fixtures are meant to be bound by name in a test module (``history = run.history``): importing them
with ``from ... import`` would make every test parameter of that name a redefinition of an unused import.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

import pytest

from devcluster import Cluster
from tests.chaos.history import History
from tests.chaos.invariants import FINAL_STATES, Outcome, same_outcomes
from tests.chaos.workload import Planned
from tests.integration.daemon import Daemon
from tests.integration.harness import TaskSets

FINAL_TIMEOUT = 120.0  # seconds for the whole workload to end once the faults are over
CATCH_UP = 1.0  # seconds for the record's watches to see the last writes
# Seconds the record may take to show every final status the API server already serves: after a fault
# its watches can lag behind the live reads by more than CATCH_UP.
RECORD_LAG_TIMEOUT = 30.0


@pytest.fixture
def history(cluster: Cluster, namespace: str, crd_installed: None) -> Iterator[History]:
    recorded = History(cluster, namespace).start()
    yield recorded
    recorded.stop()


@pytest.fixture
def daemon(cluster: Cluster, namespace: str, tmp_path: Path) -> Iterator[Daemon]:
    process = Daemon(cluster, namespace, tmp_path, "--workers=4")
    yield process
    if process.running():
        process.stop()


class Kubelet:
    """Restarts the control-plane components that exit on their own while a test injects faults, as a
    node's kubelet restarts crashed static Pods (``Cluster.restart_exited``); ``restarts`` lists them.

    kube-scheduler exits by design (code 1, "Scheduler cache is corrupted") when the events it sees after
    kube-apiserver comes back contradict its cache; without a restart, no new Pod would ever be scheduled
    and the controller under test would be blamed for TaskSets stuck in Preparing."""

    def __init__(self, cluster: Cluster, period: float = 0.5) -> None:
        self._cluster = cluster
        self._period = period
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="kubelet")
        self.restarts: list[tuple[str, int]] = []  # (component, exit code)

    def __enter__(self) -> Kubelet:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stopped.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stopped.wait(self._period):
            self.restarts.extend(self._cluster.restart_exited().items())


def unfinished(api: TaskSets, planned: list[Planned]) -> list[str]:
    """The TaskSets not final yet (or, for one its TTL deletes, not gone yet), each with its phase and
    its replicas' phases (the failure message)."""
    found = []
    for plan in planned:
        obj = api.get(plan.name)
        status = (obj or {}).get("status") or {}
        done = obj is None if plan.deleted else status.get("state") in FINAL_STATES
        if not done:
            replicas = [
                f"{role.get('name')}-{r.get('index')}:{r.get('phase')}/{r.get('podUID')}"
                for role in status.get("roleStatus") or []
                for r in role.get("replicaStatus") or []
            ]
            found.append(f"{plan.name} {status.get('phase')} {status.get('controlUnitUID')} {replicas}")
    return found


def finish(
    api: TaskSets, history: History, planned: list[Planned], timeout: float = FINAL_TIMEOUT
) -> dict[str, int]:
    """Wait for the end, then hold the final statuses to the fault-free outcomes and the record to the
    invariants."""
    deadline = time.monotonic() + timeout
    while (left := unfinished(api, planned)) and time.monotonic() < deadline:
        time.sleep(1.0)
    assert not left, f"not final after {timeout}s: {left}"
    settle(api, history, planned)
    verdict = history.verdict()
    assert verdict.violations == [], verdict.violations
    summary = history.summary()
    assert summary["unverifiable"] <= summary["pods"] // 10, verdict.unverifiable
    return summary


def settle(api: TaskSets, history: History, planned: list[Planned]) -> None:
    """Once every TaskSet is final: its outcome, read live, must be the fault-free one; then the record
    must show the same final statuses before it is stopped. A TaskSet its TTL deleted is read from the
    record alone, which must have seen it go.

    Reading the outcomes live tells a record lagging behind the API server (after a fault its watches
    can be seconds behind) apart from a TaskSet that ended wrongly. Assertions carry their own messages:
    pytest does not rewrite a helper module's asserts."""
    kept = [p for p in planned if not p.deleted]
    live = {p.name: Outcome.of((api.get(p.name) or {}).get("status") or {}) for p in kept}
    differences = same_outcomes({p.name: p.expected for p in kept}, live)
    assert differences == [], differences
    gone = {p.name: p.expected for p in planned if p.deleted}
    deadline = time.monotonic() + RECORD_LAG_TIMEOUT
    while (lag := _lag(history, live, gone)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert lag == [], f"the record did not show the final statuses within {RECORD_LAG_TIMEOUT}s: {lag}"
    differences = same_outcomes(gone, history.final_outcomes())  # their last statuses, before the delete
    assert differences == [], differences
    time.sleep(CATCH_UP)  # the Pod and ConfigMap watches are not waited for otherwise
    history.stop()


def _lag(history: History, live: dict[str, Outcome], gone: dict[str, Outcome]) -> list[str]:
    """What the record does not show yet: the live final statuses, and the deletions (a watch shows an
    object's every status before its deletion)."""
    missing = [f"{name}: deletion not seen" for name in sorted(gone) if not history.deleted(name)]
    return same_outcomes(live, history.final_outcomes()) + missing
