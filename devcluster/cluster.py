"""A real Kubernetes control plane on loopback: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and kwok with simulated nodes, started as child processes and torn down with them.

Every port is picked free at start (and picked again if another process binds it first), so two
clusters can run side by side. Children get
``PR_SET_PDEATHSIG=SIGKILL``: if the Python process that started them dies (even by SIGKILL), the
kernel kills them too, so no etcd or apiserver outlives a crashed test run.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from devcluster import build, certs, node_health
from devcluster.node_health import NodeHealth
from devcluster.nodes import NodePool
from devcluster.ports import free_port

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

STAGES_FILE = Path(__file__).resolve().parent / "stages" / "stages.yaml"
SERVICE_CIDR = "10.96.0.0/16"
POD_CIDR = "10.0.0.1/16"
NODE_ANNOTATION = "kwok.x-k8s.io/node"
# The controllers the project relies on: garbage collection (control unit -> pods cascade), namespace
# deletion, resource quotas (their usage, which quota admission needs), and ServiceAccounts with their
# tokens (so ServiceAccount admission can stay on), and EndpointSlices (a TaskSet's headless Service lists
# its replicas in them, and CoreDNS answers from them).
KCM_CONTROLLERS = (
    "endpointslice-controller",
    "garbage-collector-controller",
    "namespace-controller",
    "resourcequota-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
)
PORT_ATTEMPTS = 3
PORT_TAKEN = "address already in use"
START_TIMEOUT = 90.0  # seconds; a cold apiserver on 2 busy cores takes ~10 s, CI machines can be slower
STOP_GRACE = 10.0  # seconds to exit after SIGTERM before SIGKILL
PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class Settings:
    """Knobs of one control plane; defaults suit tests and the demo."""

    nodes: int = 4
    # Simulated node size. Generous so that benchmarks with thousands of pods fit on a few nodes.
    node_cpu: str = "1000"
    node_memory: str = "4Ti"
    node_pods: str = "5000"
    # Extended resources the seeds' ML examples request (e.g. nvidia.com/gpu limits), so they schedule.
    node_extended: tuple[tuple[str, str], ...] = (("nvidia.com/gpu", "8"),)
    # etcd compaction period passed to kube-apiserver; a short one (e.g. "5s") lets tests provoke 410 Gone.
    etcd_compaction_interval: str = "5m"
    # Turn off the apiserver's in-flight limits and priority & fairness, for benchmarks of raw throughput.
    disable_qps_limits: bool = False
    # Client QPS of the scheduler/controller-manager/kwok; high so they never become the bottleneck.
    component_qps: int = 1000
    directory: Path | None = None
    extra_apiserver_args: tuple[str, ...] = ()
    # Simulated nodes of other shapes beside the plain ones (``python -m devcluster up --pool``).
    pools: tuple[NodePool, ...] = ()
    # Heartbeats, the node lifecycle and taint-eviction controllers: a node can be lost
    # (``devcluster.node_health``). None: every node is alive for ever.
    node_health: NodeHealth | None = None


def _die_with_parent() -> None:
    """Runs in the child before exec: ask the kernel to SIGKILL us when our parent dies."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


@dataclass
class _Process:
    name: str
    argv: list[str]
    log_path: Path
    popen: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = self.log_path.open("ab")
        try:
            self.popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,  # noqa: PLW1509  (only a prctl; children start from the main thread)
            )
        finally:
            log.close()

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def stop(self, sig: int = signal.SIGTERM) -> None:
        # Forgotten before it is signalled, so that ``Cluster.restart_exited`` never mistakes a component
        # being stopped on purpose for one that exited on its own.
        popen, self.popen = self.popen, None
        if popen is None:
            return
        if popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                popen.send_signal(sig)
            try:
                popen.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait()

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


class ClusterError(RuntimeError):
    """The control plane could not start; the message carries the failing component's log tail."""


@dataclass
class Cluster:
    """One embedded control plane. Use as a context manager, or call ``start``/``stop``."""

    settings: Settings = field(default_factory=Settings)
    directory: Path = field(init=False)
    kubeconfig: Path = field(init=False)
    server: str = field(init=False)
    pki: certs.PKI = field(init=False)
    binaries: dict[str, Path] = field(init=False)
    _processes: dict[str, _Process] = field(init=False, default_factory=dict)
    _owns_directory: bool = field(init=False, default=False)
    _ports: dict[str, int] = field(init=False, default_factory=dict)

    # ----- lifecycle -------------------------------------------------------------------------
    def start(self) -> Cluster:
        self.binaries = build.binary_paths()
        if self.settings.directory is None:
            self.directory = Path(tempfile.mkdtemp(prefix="devcluster-"))
            self._owns_directory = True
        else:
            self.directory = self.settings.directory
            self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / "logs").mkdir(exist_ok=True)
        self.pki = certs.generate(self.directory / "pki")
        self.kubeconfig = self.directory / "admin.kubeconfig"
        try:
            self._launch_on_free_ports()
            self._start("kube-controller-manager", self._kcm_args())
            self._start("kube-scheduler", self._scheduler_args())
            self._start("kwok", self._kwok_args())
            self._start_terminator()
            self._wait_for(self._default_service_account_exists, "kube-controller-manager")
            self.create_nodes(self.settings.nodes)
            for pool in self.settings.pools:
                self.create_pool(pool)
            self._wait_for(self._nodes_ready, "kwok")
        except BaseException:
            self.stop()
            raise
        self._write_state()
        return self

    def _launch_on_free_ports(self) -> None:
        """Start etcd and kube-apiserver, on new ports when another process bound a chosen one first.

        A port is free when chosen but only taken when the child binds it, seconds later; a second
        control plane starting beside this one (two test runs on one machine) can take it meanwhile."""
        for attempt in range(1, PORT_ATTEMPTS + 1):
            self._ports = {name: free_port() for name in ("etcd", "etcd-peer", "apiserver")}
            self.server = f"https://127.0.0.1:{self._ports['apiserver']}"
            self._write_kubeconfig()
            try:
                self._start_etcd()
                self._start_apiserver()
                return
            except ClusterError as error:
                if PORT_TAKEN not in str(error) or attempt == PORT_ATTEMPTS:
                    raise
                self._stop_processes()

    def stop(self) -> None:
        """Stop every component, newest first, and remove the data unless the caller chose the directory."""
        self._stop_processes()
        if self._owns_directory:
            shutil.rmtree(self.directory, ignore_errors=True)

    def _stop_processes(self) -> None:
        for process in reversed(list(self._processes.values())):
            process.stop()
        self._processes.clear()

    def __enter__(self) -> Cluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def pids(self) -> dict[str, int]:
        return {name: p.popen.pid for name, p in self._processes.items() if p.popen is not None}

    # ----- fault injection -------------------------------------------------------------------
    def restart_apiserver(self, downtime: float = 0.0) -> None:
        """Stop kube-apiserver and start it again on the same port, against the same etcd."""
        self._processes["kube-apiserver"].stop()
        time.sleep(downtime)
        self._start_apiserver()

    def stop_etcd(self) -> None:
        self._processes["etcd"].stop()

    def start_etcd(self) -> None:
        self._start_etcd(fresh=False)

    def restart_exited(self) -> dict[str, int]:
        """Start again every component that exited on its own, as kubelet restarts a crashed static Pod;
        returns each one's name and exit code. Components stopped on purpose (``stop_etcd``, the middle of
        ``restart_apiserver``) are left alone.

        Nothing restarts components by itself: a test that restarts kube-apiserver calls this, because
        kube-scheduler exits by design (code 1, "Scheduler cache is corrupted") when the events it gets
        after a reconnection contradict its cache, and a real cluster would simply restart it."""
        restarted = {}
        for name, process in list(self._processes.items()):
            popen = process.popen
            if popen is not None and (code := popen.poll()) is not None:
                process.start()
                restarted[name] = code
        return restarted

    def lose_node(self, name: str) -> None:
        """Stop ``name``'s heartbeats, as when its kubelet dies (``devcluster.node_health``)."""
        node_health.lose_node(self, name)

    def restore_node(self, name: str) -> None:
        """Start ``name``'s heartbeats again; the deletions that waited on it are confirmed."""
        node_health.restore_node(self, name)

    # ----- clients ---------------------------------------------------------------------------
    def env(self) -> dict[str, str]:
        """Environment for child processes: KUBECONFIG set and the built kubectl first on PATH."""
        kubectl_dir = str(self.binaries["kubectl"].parent)
        return {
            **os.environ,
            "KUBECONFIG": str(self.kubeconfig),
            "PATH": f"{kubectl_dir}:{os.environ['PATH']}",
        }

    def kubectl(
        self, *args: str, check: bool = True, input: str | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run the real kubectl against this cluster; output is captured as text."""
        return subprocess.run(
            [str(self.binaries["kubectl"]), f"--kubeconfig={self.kubeconfig}", *args],
            capture_output=True,
            text=True,
            check=check,
            input=input,
            timeout=timeout,
        )

    def api_client(self) -> ApiClient:
        """A ``kubernetes`` client authenticated as the admin (group system:masters)."""
        from kubernetes import config  # noqa: PLC0415  (only tests and tools need the client)

        client: ApiClient = config.new_client_from_config(str(self.kubeconfig))  # type: ignore[no-untyped-call]
        return client

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """A small admin HTTP call to the API server, returning decoded JSON."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.server + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, context=self._ssl_context(), timeout=30) as response:
            return json.loads(response.read() or b"null")

    def create_nodes(
        self,
        count: int,
        prefix: str = "kwok-node",
        *,
        capacity: dict[str, str] | None = None,
        labels: dict[str, str] | None = None,
        taints: tuple[dict[str, str], ...] = (),
    ) -> list[str]:
        """Simulated nodes ``<prefix>-<i>``, of the settings' size unless ``capacity`` says otherwise (a
        gang test wants small ones), with extra ``labels`` and ``taints``."""
        names = [f"{prefix}-{i}" for i in range(count)]
        resources = capacity or {
            "cpu": self.settings.node_cpu,
            "memory": self.settings.node_memory,
            "pods": self.settings.node_pods,
            **dict(self.settings.node_extended),
        }
        for name in names:
            node = {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "annotations": {NODE_ANNOTATION: "fake"},
                    "labels": {
                        "type": "kwok",
                        "kubernetes.io/hostname": name,
                        "kubernetes.io/os": "linux",
                        **(labels or {}),
                    },
                },
                "spec": {"taints": list(taints)},
                "status": {"allocatable": resources, "capacity": resources},
            }
            with contextlib.suppress(urllib.error.HTTPError):
                self.request("POST", "/api/v1/nodes", node)
        return names

    def create_pool(self, pool: NodePool) -> list[str]:
        """The simulated nodes of one pool: its labels and taints, its CPU if it names one."""
        capacity = None
        if pool.cpu is not None:
            capacity = {
                "cpu": pool.cpu,
                "memory": self.settings.node_memory,
                "pods": self.settings.node_pods,
                **dict(self.settings.node_extended),
            }
        return self.create_nodes(
            pool.count, pool.name, capacity=capacity, labels=dict(pool.labels), taints=pool.taint_objects()
        )

    # ----- components ------------------------------------------------------------------------
    def _start(self, name: str, argv: Sequence[str]) -> _Process:
        process = _Process(name, [str(self.binaries[name]), *argv], self.directory / "logs" / f"{name}.log")
        process.start()
        self._processes[name] = process
        return process

    def _start_terminator(self) -> None:
        """Removes terminating Pods by UID, as a kubelet does (see ``devcluster.terminator``)."""
        pki = self.pki
        argv = [sys.executable, "-m", "devcluster.terminator", self.server]
        argv += [str(pki.ca_cert), str(pki.admin_cert), str(pki.admin_key)]
        if self.settings.node_health is not None:
            argv.append("--node-health")  # confirm deletions only on nodes whose heartbeats go on
        process = _Process("pod-terminator", argv, self.directory / "logs" / "pod-terminator.log")
        process.start()
        self._processes["pod-terminator"] = process

    def _start_etcd(self, fresh: bool = True) -> None:
        data_dir = self.directory / "etcd-data"
        if fresh:
            shutil.rmtree(data_dir, ignore_errors=True)
        client = f"http://127.0.0.1:{self._ports['etcd']}"
        peer = f"http://127.0.0.1:{self._ports['etcd-peer']}"
        process = self._start(
            "etcd",
            [
                "--name=devcluster",
                f"--data-dir={data_dir}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=devcluster={peer}",
                "--unsafe-no-fsync=true",  # test data; fsync costs seconds per run on slow disks
                "--quota-backend-bytes=8589934592",
                "--log-level=warn",
            ],
        )
        self._wait_for(lambda: self._http_ok(f"{client}/health"), "etcd", process)

    def _apiserver_args(self) -> list[str]:
        pki = self.pki
        args = [
            f"--etcd-servers=http://127.0.0.1:{self._ports['etcd']}",
            "--bind-address=127.0.0.1",
            "--advertise-address=127.0.0.1",
            f"--secure-port={self._ports['apiserver']}",
            f"--cert-dir={self.directory / 'apiserver-certs'}",
            f"--tls-cert-file={pki.serving_cert}",
            f"--tls-private-key-file={pki.serving_key}",
            f"--client-ca-file={pki.ca_cert}",
            "--authorization-mode=RBAC",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki.sa_public}",
            f"--service-account-signing-key-file={pki.sa_private}",
            "--allow-privileged=true",
            # Nodes are created not-ready-tainted by this plugin and only the node-lifecycle controller
            # lifts it; kwok's nodes are Ready at once, so skip the taint instead of running that loop.
            "--disable-admission-plugins=TaintNodesByCondition",
            "--endpoint-reconciler-type=none",
            f"--etcd-compaction-interval={self.settings.etcd_compaction_interval}",
            "--profiling=false",
            "--v=1",
        ]
        if self.settings.disable_qps_limits:
            args += [
                "--max-requests-inflight=0",
                "--max-mutating-requests-inflight=0",
                "--enable-priority-and-fairness=false",
            ]
        if self.settings.node_health is not None:
            args += self.settings.node_health.apiserver_args()
        return args + list(self.settings.extra_apiserver_args)

    def _start_apiserver(self) -> None:
        process = self._start("kube-apiserver", self._apiserver_args())
        self._wait_for(lambda: self._http_ok(f"{self.server}/readyz"), "kube-apiserver", process)

    def _kcm_args(self) -> list[str]:
        health = self.settings.node_health
        controllers = KCM_CONTROLLERS + (node_health.KCM_CONTROLLERS if health is not None else ())
        return [
            f"--kubeconfig={self.kubeconfig}",
            "--leader-elect=false",
            "--secure-port=0",  # nothing reads its health endpoints; a port bound is a port to race for
            f"--controllers={','.join(controllers)}",
            f"--service-account-private-key-file={self.pki.sa_private}",
            f"--root-ca-file={self.pki.ca_cert}",
            f"--kube-api-qps={self.settings.component_qps}",
            f"--kube-api-burst={self.settings.component_qps * 2}",
            "--concurrent-gc-syncs=20",
            "--v=1",
            *(health.kcm_args() if health is not None else ()),
        ]

    def _scheduler_args(self) -> list[str]:
        config = self.directory / "scheduler.yaml"
        qps = self.settings.component_qps
        config.write_text(
            "apiVersion: kubescheduler.config.k8s.io/v1\n"
            "kind: KubeSchedulerConfiguration\n"
            "clientConnection:\n"
            f"  kubeconfig: {self.kubeconfig}\n"
            f"  qps: {qps}\n"
            f"  burst: {qps * 2}\n"
            "leaderElection:\n"
            "  leaderElect: false\n"
        )
        return [
            f"--config={config}",
            "--secure-port=0",
            "--v=1",
        ]

    def _kwok_args(self) -> list[str]:
        return [
            f"--kubeconfig={self.kubeconfig}",
            f"--config={STAGES_FILE}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={NODE_ANNOTATION}=fake",
            f"--cidr={POD_CIDR}",
            "--node-ip=10.0.0.1",
            *(self.settings.node_health.kwok_args() if self.settings.node_health is not None else ()),
        ]

    # ----- readiness -------------------------------------------------------------------------
    def _ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.pki.ca_cert))
        context.load_cert_chain(str(self.pki.admin_cert), str(self.pki.admin_key))
        return context

    def _http_ok(self, url: str) -> bool:
        try:
            context = self._ssl_context() if url.startswith("https") else None
            with urllib.request.urlopen(url, context=context, timeout=5) as response:
                return bool(response.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def _default_service_account_exists(self) -> bool:
        try:
            self.request("GET", "/api/v1/namespaces/default/serviceaccounts/default")
        except (OSError, urllib.error.URLError):
            return False
        return True

    def _nodes_ready(self) -> bool:
        nodes = self.request("GET", "/api/v1/nodes?labelSelector=type%3Dkwok")["items"]
        ready = [
            n
            for n in nodes
            if any(
                c["type"] == "Ready" and c["status"] == "True"
                for c in n.get("status", {}).get("conditions", [])
            )
        ]
        return len(ready) >= self.settings.nodes + sum(pool.count for pool in self.settings.pools)

    def _wait_for(self, predicate: Any, component: str, process: _Process | None = None) -> None:
        process = process or self._processes.get(component)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if predicate():
                return
            if process is not None and not process.running():
                raise ClusterError(f"{component} exited during start-up:\n{process.tail()}")
            time.sleep(0.1)
        tail = process.tail() if process else ""
        raise ClusterError(f"{component} not ready after {START_TIMEOUT:.0f}s:\n{tail}")

    # ----- files -----------------------------------------------------------------------------
    def _write_kubeconfig(self) -> None:
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "devcluster",
                    "cluster": {"server": self.server, "certificate-authority": str(self.pki.ca_cert)},
                }
            ],
            "users": [
                {
                    "name": "admin",
                    "user": {
                        "client-certificate": str(self.pki.admin_cert),
                        "client-key": str(self.pki.admin_key),
                    },
                }
            ],
            "contexts": [{"name": "devcluster", "context": {"cluster": "devcluster", "user": "admin"}}],
            "current-context": "devcluster",
        }
        self.kubeconfig.write_text(json.dumps(kubeconfig, indent=2))

    def _write_state(self) -> None:
        state = {"server": self.server, "kubeconfig": str(self.kubeconfig), "pids": self.pids()}
        (self.directory / "state.json").write_text(json.dumps(state, indent=2))


@contextlib.contextmanager
def running(settings: Settings | None = None) -> Iterator[Cluster]:
    """Start a control plane for the duration of a ``with`` block."""
    cluster = Cluster(settings or Settings())
    with cluster:
        yield cluster
