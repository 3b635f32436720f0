"""API errors and latency between the controller and the API server.

The real controller process reaches kube-apiserver only through ``tests.chaos.proxy.FaultProxy``, a
loopback proxy that answers 429 (with Retry-After) and 500, drops connections without a reply, delays
requests, answers 409 Conflict to TaskSet status writes and cuts watch streams mid-way. The workload is the
chaos suite's seeded one (``tests.chaos.workload``: replica retries, TaskSet retries, both levels at once,
an exhausted retry), created while the faults are on. After ``FAULTY_PHASE`` seconds the faults are
switched off, and every TaskSet must end exactly as the workload declares a fault-free run ends
(``Planned.expected``, derived from the workload's definition and checked against a real fault-free run by
``test_controller_kills.test_the_workload_without_faults_ends_as_declared``), with the same retry counts.
The history recorder, which talks to the API server directly, holds the run to the invariants: never two
live Pods of one replica, never Pods of two TaskSet attempts at once, retry counts that never go back.

The test cannot pass vacuously: every kind of fault must have been injected, and the controller's own
metrics must show that it met them (429s, 500s, requests without an answer, status write conflicts,
failed reconciles), while it never crashed or restarted.

The proxy writes one line per request to ``proxy-trace.log`` next to the controller's log in the test's
``tmp_path``: on a failure, that and ``controller-1.log`` tell what the controller asked and got.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from devcluster import Cluster
from taskset.daemon.metrics import NO_RESPONSE_CODE
from tests.chaos import run
from tests.chaos.history import History
from tests.chaos.invariants import FINAL_STATES
from tests.chaos.proxy import Fault, FaultProxy, FaultRates
from tests.chaos.workload import Planned, workload
from tests.integration.daemon import Daemon
from tests.integration.harness import TaskSets

SEED = int(os.environ.get("CHAOS_SEED", "5"))
TASKSETS = 25
BATCHES = 5  # TaskSets arrive in batches while the faults are on
BATCH_PAUSE = 3.0  # seconds between batches
RATES = FaultRates(
    too_many_requests=0.10,
    server_error=0.05,
    drop=0.03,
    delay=0.10,
    delay_seconds=(0.2, 1.0),
    status_conflict=0.30,
    watch_cut=1.0,  # few watches are opened (three informers): every one is cut, after 2-10 s
    watch_cut_after=(2.0, 10.0),
)
# Seconds from the controller's start until the faults are switched off: long enough for most TaskSets to
# meet them in every phase, short enough that some are still running when the clean phase begins.
FAULTY_PHASE = 40.0
CLEAN_TIMEOUT = 90.0  # seconds for every TaskSet to end once the faults are off


@pytest.fixture
def proxy(cluster: Cluster, tmp_path: Path) -> Iterator[FaultProxy]:
    with FaultProxy.for_cluster(cluster, RATES, seed=SEED, trace=tmp_path / "proxy-trace.log") as running:
        yield running


history = run.history  # the shared fixture, bound by name


@pytest.fixture
def daemon(cluster: Cluster, namespace: str, tmp_path: Path, proxy: FaultProxy) -> Iterator[Daemon]:
    """The controller process, its only way to the API server the proxy: an http:// kubeconfig without
    credentials (this later --kubeconfig overrides the Daemon helper's admin one)."""
    kubeconfig = proxy.write_kubeconfig(tmp_path / "through-proxy.kubeconfig")
    process = Daemon(cluster, namespace, tmp_path, "--workers=4", f"--kubeconfig={kubeconfig}")
    yield process
    if process.running():
        process.stop()


def unfinished(api: TaskSets, planned: list[Planned]) -> dict[str, str]:
    """TaskSet name -> ``phase/state`` of every TaskSet not yet Succeeded or Failed."""
    statuses = {p.name: (api.get(p.name) or {}).get("status") or {} for p in planned}
    return {
        name: f"{status.get('phase')}/{status.get('state')}"
        for name, status in statuses.items()
        if status.get("state") not in FINAL_STATES
    }


def wait_final(api: TaskSets, planned: list[Planned], daemon: Daemon, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while (left := unfinished(api, planned)) and time.monotonic() < deadline:
        assert daemon.running(), f"controller exited:\n{daemon.output()[-3000:]}"
        time.sleep(0.5)
    assert not left, f"not final {timeout:.0f} s after the faults stopped: {left} (logs in {daemon.log_dir})"


def metric_samples(text: str) -> dict[str, float]:
    """``name{labels}`` -> value, for every sample of a Prometheus text exposition."""
    samples: dict[str, float] = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, _, value = line.rpartition(" ")
            samples[series] = float(value)
    return samples


def total(samples: dict[str, float], name: str, *labels: str) -> float:
    """Sum of the samples of ``name`` whose labels include every ``key="value"`` of ``labels``."""
    return sum(
        value
        for series, value in samples.items()
        if series.partition("{")[0] == name and all(label in series for label in labels)
    )


def test_api_errors_and_latency_change_no_outcome(
    cluster: Cluster, namespace: str, history: History, proxy: FaultProxy, daemon: Daemon
) -> None:
    started = time.monotonic()
    api = TaskSets(cluster, namespace)  # the test's own client goes to the API server directly
    planned = workload(TASKSETS, SEED, prefix="api")

    proxy.enable()  # from the controller's first request on: its initial lists meet the faults too
    daemon.start()
    for batch in range(BATCHES):
        for plan in planned[batch::BATCHES]:
            api.create(plan.obj)
        time.sleep(BATCH_PAUSE)
    while time.monotonic() < started + FAULTY_PHASE and unfinished(api, planned):
        assert daemon.running(), f"controller exited under faults:\n{daemon.output()[-3000:]}"
        time.sleep(1.0)
    proxy.disable()
    injected = proxy.counts()
    running_at_switch = len(unfinished(api, planned))

    wait_final(api, planned, daemon, CLEAN_TIMEOUT)
    run.settle(api, history, planned)  # the same ends and retry counts as without faults
    assert daemon.running() and daemon.starts == 1, f"controller exited:\n{daemon.output()[-3000:]}"
    metrics = metric_samples(daemon.get(daemon.metrics_port, "/metrics")[1])

    # Nothing overlapped, nothing went back.
    verdict = history.verdict()
    assert verdict.violations == []
    summary = history.summary()
    assert summary["unverifiable"] <= summary["pods"] // 10, verdict.unverifiable

    # Every kind of fault happened, none after the switch, and the controller met them itself (urllib3
    # silently retries drops and 429s of GET/PUT/DELETE; POSTs, 500s and conflicts reach the controller).
    assert all(injected[str(kind)] > 0 for kind in Fault), injected
    assert injected["upstream-error"] == 0, injected
    after = proxy.counts()
    assert all(after[str(kind)] == injected[str(kind)] for kind in Fault), (injected, after)
    seen = {
        code: total(metrics, "rest_client_requests_total", f'code="{code}"')
        for code in ("429", "500", NO_RESPONSE_CODE)
    }
    assert all(count > 0 for count in seen.values()), seen
    conflicts = total(metrics, "taskset_status_writes_total", 'result="conflict"')
    assert conflicts > 0
    failed_reconciles = total(metrics, "controller_runtime_reconcile_total", 'result="error"')
    assert failed_reconciles > 0
    assert total(metrics, "controller_runtime_reconcile_panics_total") == 0

    assert daemon.stop() == 0
    print(
        f"\napi faults: {len(planned)} TaskSets, {running_at_switch} still running when the faults "
        f"stopped after {FAULTY_PHASE:.0f} s; injected {injected}; the controller saw {seen}, "
        f"{conflicts:.0f} status write conflicts, {failed_reconciles:.0f} failed reconciles; "
        f"history {summary}; {time.monotonic() - started:.0f} s"
    )
