"""The control plane fails under the controller while a workload runs.

* kube-apiserver is restarted twice, at different moments, against the same etcd;
* etcd is stopped for a few seconds and started again (the API server stays up; requests that need etcd
  fail or hang until it is back);
* the controller's watches expire: on a control plane of its own with the API server's watch cache off
  (so watches are served by etcd and compaction reaches them) and a 2 s compaction interval, the
  controller is cut off from the API server for longer than two compaction rounds while TaskSets are
  created and Pods end; its watches then resume at compacted resource versions, get 410 Gone and relist.

Each test runs the suite's seeded workload (``tests.chaos.workload``) under the real controller process,
and every TaskSet must end as the workload declares a fault-free run ends, with the same retry counts,
while the history recorder (which talks to the API server directly) finds no invariant violated. None of
these faults is a reason for the controller to exit: it must ride them out as one process.

None can pass vacuously: each test checks that the fault reached the controller, in its own log and
metrics: its reflectors backing off while the API server was away, its requests failing or hanging while
etcd was, and every informer's watch ending with 410 Gone ("watch expired; relisting") and relisting after
each cut-off.

kube-scheduler may exit on an API server restart (by design, when what it sees after reconnecting
contradicts its cache); ``run.Kubelet`` restarts it as a node would, and each test prints what it
restarted. The controller itself is never restarted: each test asserts one process throughout.

The module runs on control planes of its own, never the session's: a clean-clone CI run showed every
later chaos test failing on a shared control plane these faults had left behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
import urllib.error
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from devcluster import Cluster, Settings
from informers import BackoffSettings
from taskset.api import constants as c
from tests.chaos import run
from tests.chaos.history import History
from tests.chaos.workload import Planned, workload
from tests.integration.conftest import (
    CRD_FILE,
    TEST_ADMISSION_PLUGINS,
    TEST_COMPACTION_INTERVAL,
    install_crd,
)
from tests.integration.daemon import Daemon
from tests.integration.harness import TaskSets, eventually

SEED = int(os.environ.get("CHAOS_SEED", "23"))
TASKSETS = 25
APISERVER_DOWNTIMES = (1.0, 3.0)  # seconds kube-apiserver stays down, restart by restart
ETCD_DOWNTIME = 5.0
PARTITIONS = 2  # times the controller is cut off from the API server in the watch expiry test
PARTITION = 8.0  # seconds: more than two 2 s compaction rounds, so its resource versions are compacted
COMPACTION_INTERVAL = "2s"
# Seconds for every informer to meet its 410 after a cut-off and relist. Each reflector's backoff grew
# during the cut-offs to its cap (0.8 s doubling to 30 s; the second cut-off comes within the two quiet
# minutes that would reset it), and jitter makes one wait up to cap x (1 + jitter) = 60 s. After the heal
# a reflector may finish a wait that began just before it, meet its 410, and wait once more before its
# relist (client-go's reflector does the same): two of the longest waits, plus 30 s for the requests and
# the list on a loaded machine. At 120 s a clean-clone run failed with two informers still waiting.
EXPIRY_TIMEOUT = 2 * BackoffSettings().cap * (1 + BackoffSettings().jitter) + 30.0
# The collections a namespaced controller watches, by the start of their reflectors' names: its own
# three, the Services it owns for networking, and the cluster's Nodes (lost nodes).
INFORMERS = ("tasksets.", "pods.", "configmaps.", "services.", "nodes.")
STARTED: Final = "reflector started"  # debug level
RECOVERY_TIMEOUT = 60.0  # seconds for the controller to show it met a fault once the fault is over

BACKOFF: Final = "backing off before rewatching"  # a reflector could not reach the API server
EXPIRED: Final = "watch expired; relisting"  # a reflector's watch ended with 410 Gone
LISTED: Final = "listed"  # a reflector listed (debug level), then watches from the list's version

history = run.history  # the shared fixtures, bound by name
daemon = run.daemon


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    """This module's own control plane (overriding the session's): restarting its API server or stopping
    its etcd must not reach the one the other chaos tests share, which nothing repairs afterwards."""
    settings = Settings(
        nodes=2,
        etcd_compaction_interval=TEST_COMPACTION_INTERVAL,
        extra_apiserver_args=TEST_ADMISSION_PLUGINS,
    )
    with Cluster(settings) as running:
        yield running


@pytest.fixture(scope="module")
def crd_installed(cluster: Cluster) -> None:
    install_crd(cluster, CRD_FILE.read_text(), c.CRD_NAME, c.PLURAL)


@pytest.fixture
def kubelet(cluster: Cluster) -> Iterator[run.Kubelet]:
    with run.Kubelet(cluster) as running:
        yield running


def create(api: TaskSets, planned: list[Planned]) -> None:
    for plan in planned:
        api.create(plan.obj)


def count(daemon: Daemon, msg: str) -> int:
    return sum(1 for record in daemon.records() if record.get("msg") == msg)


def logged_more(daemon: Daemon, msg: str, before: int) -> int:
    """Wait until the controller has logged ``msg`` more than ``before`` times; how many more."""
    more: int = eventually(lambda: count(daemon, msg) - before, RECOVERY_TIMEOUT, f"log record {msg!r}")
    return more


def relisted_after_410(daemon: Daemon, mark: int) -> set[str]:
    """The reflectors whose watch ended with 410 Gone in the log records after the first ``mark``, and
    which listed again afterwards (so they watch again: the list is followed at once by a watch)."""
    expired: set[str] = set()
    relisted: set[str] = set()
    for record in daemon.records()[mark:]:
        name = str(record.get("reflector"))
        if record.get("msg") == EXPIRED:
            expired.add(name)
        elif record.get("msg") == LISTED and name in expired:
            relisted.add(name)
    return relisted


def every_informer_relisted_after_410(daemon: Daemon, mark: int) -> set[str]:
    """Wait until every reflector the controller started has met its 410 and listed again since ``mark``.
    Each is named: counting them would take any three for the three it means, or never meet the count
    once more of them relisted between two reads of the log."""
    started = {str(r.get("reflector")) for r in daemon.records() if r.get("msg") == STARTED}
    named = all(any(name.startswith(prefix) for name in started) for prefix in INFORMERS)
    assert named and len(started) == len(INFORMERS), f"the controller started {sorted(started)}"
    left = started

    def all_relisted() -> bool:
        nonlocal left
        left = started - relisted_after_410(daemon, mark)
        return not left

    try:
        eventually(all_relisted, EXPIRY_TIMEOUT, "every informer relisted after 410 Gone", poll=1.0)
    except AssertionError as err:
        raise AssertionError(f"{err}; still to relist: {sorted(left)}") from None
    return started


def troubled_requests(daemon: Daemon) -> int:
    """How many of the controller's API requests so far got no answer or a 5xx, or took longer than 2 s
    (its ``rest_client_*`` metrics; a watch is timed to its response headers)."""
    samples: dict[str, float] = {}
    for line in daemon.get(daemon.metrics_port, "/metrics")[1].splitlines():
        if line and not line.startswith("#"):
            series, _, value = line.rpartition(" ")
            samples[series] = float(value)

    def total(name: str, label: str = "") -> float:
        return sum(v for k, v in samples.items() if k.partition("{")[0] == name and label in k)

    requests = "rest_client_requests_total"
    answered = sum(total(requests, f'code="{digit}') for digit in "1234")  # 1xx to 4xx
    durations = "rest_client_request_duration_seconds"
    slow = total(f"{durations}_count") - total(f"{durations}_bucket", 'le="2.0"')
    return int(total(requests) - answered + slow)


def api_answers(cluster: Cluster, namespace: str) -> bool:
    """Whether the API server serves a read from etcd right now (a GET of the namespace)."""
    try:
        cluster.request("GET", f"/api/v1/namespaces/{namespace}")
    except (OSError, urllib.error.URLError):
        return False
    return True


# ----- fault 2: kube-apiserver restarts, etcd outage ----------------------------------------------------


def test_kube_apiserver_restarted_twice_mid_run_loses_nothing(
    cluster: Cluster, namespace: str, history: History, daemon: Daemon, kubelet: run.Kubelet
) -> None:
    api = TaskSets(cluster, namespace)
    planned = workload(TASKSETS, SEED, prefix="a")
    batches = [planned[i :: len(APISERVER_DOWNTIMES) + 1] for i in range(len(APISERVER_DOWNTIMES) + 1)]
    daemon.start()
    started = time.monotonic()
    backoffs, outages = [], []
    create(api, batches[0])
    for pause, downtime, batch in zip((3.0, 6.0), APISERVER_DOWNTIMES, batches[1:], strict=True):
        time.sleep(pause)  # TaskSets are mid-way: Pods running, some failing, retries pending
        before = count(daemon, BACKOFF)
        stopped = time.monotonic()
        cluster.restart_apiserver(downtime=downtime)  # returns once the new one is ready
        outages.append(round(time.monotonic() - stopped, 1))
        create(api, batch)
        backoffs.append(logged_more(daemon, BACKOFF, before))
    summary = run.finish(api, history, planned)
    assert daemon.running()
    assert daemon.starts == 1
    print(
        f"{len(APISERVER_DOWNTIMES)} apiserver restarts (away {outages}s), reflector backoffs {backoffs}, "
        f"{count(daemon, EXPIRED)} watches expired, components restarted {kubelet.restarts}, "
        f"{time.monotonic() - started:.0f}s: {summary}"
    )


def test_etcd_stopped_for_seconds_mid_run_loses_nothing(
    cluster: Cluster, namespace: str, history: History, daemon: Daemon, kubelet: run.Kubelet
) -> None:
    api = TaskSets(cluster, namespace)
    planned = workload(TASKSETS, SEED, prefix="e")
    daemon.start()
    started = time.monotonic()
    create(api, planned[::2])
    time.sleep(3.0)
    troubled_before = troubled_requests(daemon)
    stopped = time.monotonic()
    cluster.stop_etcd()
    try:
        time.sleep(ETCD_DOWNTIME / 2)
        # kube-apiserver holds a request while etcd is away rather than failing it: ask with a deadline.
        probe = cluster.kubectl("get", "ns", namespace, "--request-timeout=1s", check=False, timeout=10)
        assert probe.returncode != 0, "the API server still served reads with etcd stopped"
        time.sleep(max(0.0, stopped + ETCD_DOWNTIME - time.monotonic()))
    finally:
        cluster.start_etcd()  # returns once etcd is healthy
    down = time.monotonic() - stopped
    eventually(lambda: api_answers(cluster, namespace), RECOVERY_TIMEOUT, "API server serving again")
    create(api, planned[1::2])
    summary = run.finish(api, history, planned)
    troubled = troubled_requests(daemon) - troubled_before
    assert troubled > 0, "no request of the controller met the etcd outage: the fault did not reach it"
    assert daemon.running()
    assert daemon.starts == 1
    print(
        f"etcd down {down:.1f}s, {troubled} requests failed or slow, longest reconcile "
        f"{max(r.get('duration', 0.0) for r in daemon.records() if r.get('msg') == 'reconciled'):.1f}s, "
        f"components restarted {kubelet.restarts}, {time.monotonic() - started:.0f}s: {summary}"
    )


# ----- fault 3: watch expiry ----------------------------------------------------------------------------


class Relay:
    """A TCP relay to kube-apiserver that can cut its clients off: ``cut`` closes every connection and
    refuses new ones (as a network partition would) until ``heal``. TLS passes through untouched, so a
    kubeconfig that only changes the server's port works with the same certificates."""

    def __init__(self, target_port: int) -> None:
        self._target = ("127.0.0.1", target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._cut = False
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True, name="relay")
        self.refused = 0

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    def start(self) -> Relay:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(5)
        self._listener.close()
        self._close_all()

    def cut(self) -> None:
        with self._lock:
            self._cut = True
        self._close_all()

    def heal(self) -> None:
        with self._lock:
            self._cut = False

    def write_kubeconfig(self, cluster: Cluster, path: Path) -> Path:
        config: dict[str, Any] = json.loads(cluster.kubeconfig.read_text())
        config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{self.port}"
        path.write_text(json.dumps(config))
        return path

    def _close_all(self) -> None:
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            try:
                upstream = socket.create_connection(self._target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            # Decided and registered under one lock: a connection accepted while ``cut`` ran would
            # otherwise miss its sweep and carry a watch through the cut-off, never to meet its 410.
            with self._lock:
                cut = self._cut
                if not cut:
                    self._sockets |= {client, upstream}
            if cut:
                self.refused += 1
                client.close()
                upstream.close()
                continue
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


@pytest.fixture(scope="module")
def uncached() -> Iterator[Cluster]:
    """A control plane of this module's own: no watch cache (with one, the API server answers an old
    resource version from its own event window, which compaction never reaches) and 2 s compaction."""
    settings = Settings(
        nodes=2,
        etcd_compaction_interval=COMPACTION_INTERVAL,
        extra_apiserver_args=("--watch-cache=false",),
    )
    with Cluster(settings) as running:
        install_crd(running, CRD_FILE.read_text(), c.CRD_NAME, c.PLURAL)
        yield running


def test_watches_expired_while_cut_off_are_relisted_and_lose_nothing(
    uncached: Cluster, tmp_path: Path
) -> None:
    cluster = uncached
    namespace = f"watch-expiry-{uuid.uuid4().hex[:6]}"
    cluster.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    api = TaskSets(cluster, namespace)
    planned = workload(TASKSETS, SEED, prefix="x")
    batches = [planned[i :: PARTITIONS + 1] for i in range(PARTITIONS + 1)]
    port = int(cluster.server.rsplit(":", 1)[1])
    recorded = History(cluster, namespace).start()
    relay = Relay(port).start()
    kubeconfig = relay.write_kubeconfig(cluster, tmp_path / "through-relay.kubeconfig")
    args = ("--workers=4", f"--kubeconfig={kubeconfig}", "--log-level=debug")  # debug: the reflectors' lists
    process = Daemon(cluster, namespace, tmp_path, *args)
    try:
        with run.Kubelet(cluster) as kubelet:
            process.start()
            started = time.monotonic()
            create(api, batches[0])
            expired = []
            for batch in batches[1:]:
                time.sleep(3.0)  # events flowing: Pods created, running, ending, retried
                mark = len(process.records())
                relay.cut()
                create(api, batch)  # the world goes on without the controller: new TaskSets, Pods ending
                time.sleep(PARTITION)
                relay.heal()
                # Every informer's watch resumes at a compacted resource version, gets 410 and relists
                # (so that all of them watch again when the next cut-off comes).
                expired.append(len(every_informer_relisted_after_410(process, mark)))
            summary = run.finish(api, recorded, planned)
        assert process.running()
        assert process.starts == 1
        print(
            f"{PARTITIONS} cut-offs of {PARTITION}s, informers with 410 per cut-off {expired}, "
            f"{count(process, EXPIRED)} watches ended 410 in all, {relay.refused} connections refused, "
            f"components restarted {kubelet.restarts}, {time.monotonic() - started:.0f}s: {summary}"
        )
    finally:
        recorded.stop()
        if process.running():
            process.stop()
        relay.stop()
        with contextlib.suppress(OSError):
            cluster.request("DELETE", f"/api/v1/namespaces/{namespace}")
