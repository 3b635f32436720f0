"""Leader election with real controller processes on the embedded control plane: exactly one replica
reconciles; a SIGKILLed leader is replaced within the lease duration and the TaskSet in flight finishes
with no duplicate Pod; a SIGTERMed leader releases the lease and the standby takes over at once; a leader
that loses its lease exits 3 at once.

Short timings (lease 4 s, renew deadline 3 s, retry 1 s) keep the tests fast; the SIGTERM test uses a
15 s lease so that a takeover by release (about one retry period) cannot be mistaken for an expiry.
"""

from __future__ import annotations

import collections
import re
import signal
import time
import urllib.error
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from devcluster import Cluster, sim
from taskset.daemon.leader import JITTER_FACTOR
from tests.builders import TaskSetBuilder, pod_template
from tests.integration.daemon import Daemon
from tests.integration.harness import TaskSets, eventually, never_overlapping, recording

pytestmark = pytest.mark.integration

LEASE = "taskset-controller"
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 4.0, 3.0, 1.0
SLACK = 2.5  # seconds for process scheduling on 2 busy cores and the test's own polling


def timing_args(namespace: str, lease: float = LEASE_DURATION, renew: float = RENEW_DEADLINE) -> list[str]:
    return [
        "--leader-elect",
        f"--leader-elect-lease-duration={lease:g}",
        f"--leader-elect-renew-deadline={renew:g}",
        f"--leader-elect-retry-period={RETRY_PERIOD:g}",
        f"--leader-elect-namespace={namespace}",
        f"--leader-elect-id={LEASE}",
        "--shutdown-grace-period=5",
    ]


def lease(cluster: Cluster, namespace: str) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = cluster.request(
            "GET", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{LEASE}"
        )
    except urllib.error.HTTPError as err:
        if err.code == 404:
            return None
        raise
    return found


def holder(cluster: Cluster, namespace: str) -> str:
    found = lease(cluster, namespace)
    return str(((found or {}).get("spec") or {}).get("holderIdentity") or "")


def identity(daemon: Daemon) -> str:
    """The identity the process logged when it started competing."""
    record = eventually(
        lambda: next((r for r in daemon.records() if r.get("msg") == "leader election enabled"), None),
        30,
        "leader election enabled record",
    )
    return str(record["identity"])


def master_status(daemon: Daemon) -> float | None:
    status, text = daemon.get(daemon.metrics_port, "/metrics")
    if status != 200:
        return None
    match = re.search(rf'^leader_election_master_status{{name="{LEASE}"}} (\S+)$', text, re.MULTILINE)
    return float(match.group(1)) if match else None


def reconciled_times(daemon: Daemon) -> list[float]:
    return [float(r["ts"]) for r in daemon.records() if r.get("msg") == "reconciled"]


def became_leader_time(daemon: Daemon) -> float | None:
    times = [float(r["ts"]) for r in daemon.records() if r.get("msg") == "became leader, starting workers"]
    return times[0] if times else None


@pytest.fixture
def daemons(cluster: Cluster, namespace: str, crd_installed: None, tmp_path: Path) -> Iterator[list[Daemon]]:
    started: list[Daemon] = []
    yield started
    for daemon in started:
        if daemon.running():
            daemon.kill()


def start_pair(
    cluster: Cluster, namespace: str, tmp_path: Path, daemons: list[Daemon], *args: str
) -> tuple[Daemon, Daemon]:
    """Start two replicas; return (leader, standby) once one of them holds the lease."""
    for name in ("a", "b"):
        log_dir = tmp_path / name
        log_dir.mkdir()
        daemons.append(Daemon(cluster, namespace, log_dir, *args).start(wait_ready=False))
    for daemon in daemons:
        daemon.wait_ready()  # the standby is ready too: readiness is caches synced, not leadership
    ids = {identity(daemon): daemon for daemon in daemons}
    leader_id = eventually(lambda: holder(cluster, namespace) in ids and holder(cluster, namespace), 30)
    leader = ids[leader_id]
    standby = next(d for d in daemons if d is not leader)
    return leader, standby


def test_one_leader_reconciles_and_a_killed_leader_is_replaced_without_duplicate_pods(
    cluster: Cluster, namespace: str, tmp_path: Path, daemons: list[Daemon]
) -> None:
    leader, standby = start_pair(cluster, namespace, tmp_path, daemons, *timing_args(namespace))
    eventually(lambda: master_status(leader) == 1.0, 10, "leader reports master status 1")
    assert master_status(standby) == 0.0
    api = TaskSets(cluster, namespace)
    template = pod_template(annotations=sim.outcome(duration=6))
    with recording(cluster, namespace) as recorder:
        api.create(TaskSetBuilder("inflight").role("worker", 3, template=template).obj())
        eventually(
            lambda: (
                len(api.pods("inflight")) == 3
                and all(p["status"]["phase"] == "Running" for p in api.pods("inflight"))
            ),
            30,
            "three running pods",
        )
        assert reconciled_times(leader), "the leader reconciles"
        assert reconciled_times(standby) == [], (
            "the standby must not reconcile while the leader holds the lease"
        )

        leader.kill()
        killed = time.monotonic()
        new_leader = identity(standby)
        eventually(lambda: holder(cluster, namespace) == new_leader, 30, "the standby takes the lease")
        took_over = time.monotonic() - killed
        # Expiry is counted from the last renewal the standby saw (at most one retry period before the
        # kill), then the standby's next attempt comes within retry * (1 + jitter).
        assert took_over <= LEASE_DURATION + RETRY_PERIOD * (1 + JITTER_FACTOR) + SLACK, took_over

        status = api.final("inflight", timeout=60)
        assert status["state"] == "Succeeded"
        names = collections.Counter(entry.name for entry in recorder.pod_log())
        assert names == {f"inflight-worker-{i}": 1 for i in range(3)}, "no Pod was created twice"
        for index in range(3):
            assert never_overlapping(recorder.pod_log(f"inflight-worker-{index}"))
    eventually(lambda: master_status(standby) == 1.0, 10, "the new leader reports master status 1")
    first = became_leader_time(standby)
    assert first is not None
    assert all(ts >= first for ts in reconciled_times(standby)), "no reconcile before the lease was held"
    found = lease(cluster, namespace)
    assert found is not None and found["spec"]["leaseTransitions"] >= 1


def test_a_terminated_leader_releases_the_lease_and_the_standby_takes_over_at_once(
    cluster: Cluster, namespace: str, tmp_path: Path, daemons: list[Daemon]
) -> None:
    # A 15 s lease: a takeover within a few seconds can only come from the release.
    args = timing_args(namespace, lease=15, renew=10)
    leader, standby = start_pair(cluster, namespace, tmp_path, daemons, *args)
    new_leader = identity(standby)
    assert leader.stop(timeout=20) == 0
    stopped = time.monotonic()
    eventually(lambda: holder(cluster, namespace) == new_leader, 15, "the standby takes the lease")
    took_over = time.monotonic() - stopped
    assert took_over <= RETRY_PERIOD * (1 + JITTER_FACTOR) + SLACK, took_over
    messages = [r.get("msg") for r in leader.records()]
    assert "released lease" in messages
    assert messages.index("shutting down") < messages.index("released lease")
    eventually(lambda: became_leader_time(standby) is not None, 10, "the standby starts its workers")
    found = lease(cluster, namespace)
    assert found is not None and found["spec"]["leaseDurationSeconds"] == 15


def test_a_leader_that_loses_its_lease_exits_3_at_once(
    cluster: Cluster, namespace: str, tmp_path: Path, daemons: list[Daemon]
) -> None:
    daemon = Daemon(cluster, namespace, tmp_path, *timing_args(namespace)).start()
    daemons.append(daemon)
    me = identity(daemon)
    eventually(lambda: holder(cluster, namespace) == me, 30, "the only replica leads")
    eventually(lambda: became_leader_time(daemon) is not None, 10)
    found = lease(cluster, namespace)
    assert found is not None
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    found["spec"].update(holderIdentity="intruder", renewTime=now, acquireTime=now)
    cluster.request(
        "PUT", f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{LEASE}", found
    )  # another holder, as after a partition long enough for the lease to expire
    taken = time.monotonic()
    assert daemon.process is not None
    assert daemon.process.wait(RENEW_DEADLINE + RETRY_PERIOD + SLACK + 2) == 3
    assert time.monotonic() - taken <= RETRY_PERIOD + SLACK + 2
    messages = [r.get("msg") for r in daemon.records()]
    assert "leader election lost, exiting at once" in messages
    assert "shutting down" not in messages  # no drain: another replica may already be working
    assert holder(cluster, namespace) == "intruder"  # nothing was released or overwritten


def test_signal_while_standing_by_exits_0_without_touching_the_lease(
    cluster: Cluster, namespace: str, tmp_path: Path, daemons: list[Daemon]
) -> None:
    leader, standby = start_pair(cluster, namespace, tmp_path, daemons, *timing_args(namespace))
    before = lease(cluster, namespace)
    assert before is not None
    assert standby.process is not None
    standby.process.send_signal(signal.SIGTERM)
    assert standby.process.wait(15) == 0
    assert holder(cluster, namespace) == identity(leader)
    assert "released lease" not in [r.get("msg") for r in standby.records()]
