"""The real daemon against the embedded control plane: probes, metrics, JSON logs, signals, exit codes."""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
import textwrap
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from devcluster import Cluster, free_port
from taskset.daemon.config import Config
from taskset.daemon.crd import CRDRegistrationError, ensure_crd
from taskset.daemon.proof_key import KEY_BYTES, key_of
from taskset.runtime.kube import KubeClient

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
BASE_KEYS = ("logger", "level", "ts", "caller", "msg")
STARTUP_TIMEOUT = 120.0  # seconds until /readyz: CRD registration plus the first LIST of three caches
GRACE_PERIOD = 10.0  # seconds, passed as --shutdown-grace-period
EXIT_SLACK = 10.0  # seconds beyond the grace period the process may take to exit after SIGTERM
POLL = 0.2  # seconds between probe polls


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
    except OSError:
        return 0, ""  # not listening yet


@dataclass
class Daemon:
    process: subprocess.Popen[bytes]
    stdout: Path
    stderr: Path
    metrics_port: int
    probe_port: int

    def get(self, path: str) -> tuple[int, str]:
        port = self.metrics_port if path == "/metrics" else self.probe_port
        return _get(port, path)

    def wait_for(self, path: str, status: int, timeout: float = STARTUP_TIMEOUT) -> str:
        deadline = time.monotonic() + timeout
        got: tuple[int, str] = (0, "")
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"daemon exited early:\n{self.output()}"
            got = self.get(path)
            if got[0] == status:
                return got[1]
            time.sleep(POLL)
        raise AssertionError(f"{path} still {got} after {timeout} s:\n{self.output()}")

    def log_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.read_text().splitlines()]

    def output(self) -> str:
        return f"--- stdout\n{self.stdout.read_text()[-4000:]}\n--- stderr\n{self.stderr.read_text()[-4000:]}"

    def stop(self, sig: int = signal.SIGTERM, timeout: float = GRACE_PERIOD + EXIT_SLACK) -> int:
        self.process.send_signal(sig)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise AssertionError(f"no exit {timeout} s after signal {sig}:\n{self.output()}") from None


@pytest.fixture
def start_daemon(cluster: Cluster, namespace: str, tmp_path: Path) -> Iterator[Callable[..., Daemon]]:
    """Daemons watch only this test's namespace, so they never act on other tests' TaskSets."""
    started: list[Daemon] = []

    def start(*extra: str, env: dict[str, str] | None = None, argv: Sequence[str] | None = None) -> Daemon:
        metrics_port, probe_port = free_port(), free_port()
        index = len(started)
        stdout, stderr = tmp_path / f"stdout-{index}.log", tmp_path / f"stderr-{index}.log"
        command = argv or [
            sys.executable,
            "-m",
            "taskset.daemon.main",
            "--kubeconfig",
            str(cluster.kubeconfig),
            "--metrics-bind-address",
            f"127.0.0.1:{metrics_port}",
            "--metrics-secure=false",  # secured: test_the_default_metrics_are_https_and_refuse_strangers
            "--health-probe-bind-address",
            f"127.0.0.1:{probe_port}",
            "--shutdown-grace-period",
            str(GRACE_PERIOD),
            "--namespace",
            namespace,
            *extra,
        ]
        with stdout.open("wb") as out, stderr.open("wb") as err:
            process = subprocess.Popen(
                command, stdout=out, stderr=err, cwd=ROOT, env={**os.environ, **(env or {})}
            )
        daemon = Daemon(process, stdout, stderr, metrics_port, probe_port)
        started.append(daemon)
        return daemon

    yield start
    for daemon in started:
        if daemon.process.poll() is None:
            daemon.process.kill()
            daemon.process.wait()


def test_the_daemon_serves_probes_and_metrics_logs_json_and_stops_cleanly(
    start_daemon: Callable[..., Daemon],
) -> None:
    daemon = start_daemon()
    assert daemon.wait_for("/healthz", 200) == "ok\n"
    daemon.wait_for("/readyz", 200)

    status, metrics = daemon.get("/metrics")
    assert status == 200
    assert 'controller_runtime_reconcile_total{controller="taskset",result="success"}' in metrics
    assert "controller_runtime_max_concurrent_reconciles" in metrics
    assert "workqueue_depth" in metrics
    assert "rest_client_requests_total" in metrics

    assert daemon.stop(signal.SIGTERM) == 0
    lines = daemon.log_lines()
    assert lines, daemon.output()
    for line in lines:
        assert list(line)[:5] == list(BASE_KEYS), line
        assert isinstance(line["ts"], float)
    messages = [line["msg"] for line in lines]
    assert messages[0] == "TaskSet controller starting"
    assert "CRD registered" in messages
    assert "shutting down" in messages
    assert messages[-1] == "TaskSet controller stopped"
    shutdown = next(line for line in lines if line["msg"] == "shutting down")
    assert shutdown["signal"] == "SIGTERM"
    assert daemon.stderr.read_text() == ""


def test_the_default_metrics_are_https_and_refuse_strangers(start_daemon: Callable[..., Daemon]) -> None:
    """Secure by default: a self-signed certificate for 127.0.0.1 made at start, and no
    answer without a bearer token; plain HTTP on that port gets nothing. The probes stay plain HTTP.
    Tokens with and without the reader role: tests/integration/test_rbac.py."""
    daemon = start_daemon("--metrics-secure=true")  # after the fixture's =false: the last flag wins
    daemon.wait_for("/readyz", 200)
    pem = ssl.get_server_certificate(("127.0.0.1", daemon.metrics_port), timeout=5)
    pinned = ssl.create_default_context(cadata=pem)  # verifies the certificate names 127.0.0.1
    request = urllib.request.Request(f"https://127.0.0.1:{daemon.metrics_port}/metrics")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, context=pinned, timeout=5)
    assert refused.value.code == 401
    assert refused.value.headers["WWW-Authenticate"] == 'Bearer realm="taskset-controller"'
    assert refused.value.read() == b"Unauthorized: a bearer token is required\n"
    assert daemon.get("/metrics") == (0, "")  # plain HTTP: the TLS handshake fails, no answer
    assert daemon.get("/healthz") == (200, "ok\n")
    assert daemon.stop() == 0
    serving = next(line for line in daemon.log_lines() if line["msg"] == "serving HTTP endpoints")
    assert (serving["metrics_scheme"], serving["metrics_cert"]) == ("https", "self-signed")
    assert daemon.stderr.read_text() == ""


def test_a_bad_config_value_exits_2_with_a_one_line_message(start_daemon: Callable[..., Daemon]) -> None:
    daemon = start_daemon(env={"WorkerAmount": "ten"})
    assert daemon.process.wait(30) == 2
    assert daemon.stderr.read_text() == (
        "taskset-controller: invalid value 'ten' for WorkerAmount (env): must be an integer\n"
    )
    assert daemon.stdout.read_text() == ""


SETTINGS = [
    pytest.param(
        {"file": "workerAmount: 2\n"},
        {"workers": 2, "cache_creation_timeout": 300},
        None,
        id="a config file with only workerAmount starts with defaults for the rest (S61)",
    ),
    pytest.param(
        {"env": {"WorkerAmount": "0"}},
        {"workers": 10},
        "WorkerAmount (env) is 0; using 10 workers, as the original",
        id="WorkerAmount 0 starts with 10 workers and says so (S61)",
    ),
]


@pytest.mark.parametrize(("given", "summary", "warning"), SETTINGS)
def test_startup_settings_are_logged(
    start_daemon: Callable[..., Daemon],
    tmp_path: Path,
    given: dict[str, Any],
    summary: dict[str, Any],
    warning: str | None,
) -> None:
    extra: list[str] = []
    if "file" in given:
        config = tmp_path / "config.yaml"
        config.write_text(given["file"])
        extra = ["--config", str(config)]
    daemon = start_daemon(*extra, env=given.get("env"))
    daemon.wait_for("/readyz", 200)
    assert daemon.stop() == 0
    lines = daemon.log_lines()
    startup = lines[0]
    assert startup["msg"] == "TaskSet controller starting"
    assert {key: startup[key] for key in summary} == summary
    warnings = [line["msg"] for line in lines if line["level"] == "warn"]
    assert warnings == ([warning] if warning else [])


# A daemon whose controller never finishes stopping, to show that a second signal does not wait for it.
STUCK_CONTROLLER = textwrap.dedent(
    """
    import sys, threading
    import taskset.daemon.wiring

    class Stuck:
        def start(self): pass
        def has_synced(self): return True
        def stop(self, timeout): threading.Event().wait()

    taskset.daemon.wiring.build_controller = lambda **kwargs: Stuck()
    from taskset.daemon.main import main
    sys.exit(main(sys.argv[1:]))
    """
)


def test_a_second_signal_exits_1_at_once(start_daemon: Callable[..., Daemon], cluster: Cluster) -> None:
    metrics_port, probe_port = free_port(), free_port()
    daemon = start_daemon(
        argv=[
            sys.executable,
            "-c",
            STUCK_CONTROLLER,
            "--kubeconfig",
            str(cluster.kubeconfig),
            "--register-crd=false",
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            f"127.0.0.1:{probe_port}",
            "--shutdown-grace-period",
            "60",
        ]
    )
    daemon.probe_port = probe_port
    daemon.metrics_port = metrics_port
    daemon.wait_for("/readyz", 200)
    daemon.process.send_signal(signal.SIGTERM)
    daemon.wait_for("/readyz", 503, timeout=10)  # the handler turns readiness off at once, still alive
    # The second signal is meant for the graceful stop the main thread begins, logging it, once it wakes:
    # on a loaded machine that can come seconds after the handler ran.
    deadline = time.monotonic() + 30
    while "shutting down" not in logged_messages(daemon):
        assert time.monotonic() < deadline, f"no graceful stop begun:\n{daemon.output()}"
        time.sleep(POLL)
    started = time.monotonic()
    # "At once" is measured against the 60 s grace the first signal started: a busy machine may take some
    # seconds to end a Python process, never the grace.
    assert daemon.stop(signal.SIGINT, timeout=30) == 1
    assert time.monotonic() - started < 30
    assert logged_messages(daemon)[-1] == "second signal, exiting immediately"


def logged_messages(daemon: Daemon) -> list[str]:
    """The messages of the complete lines logged so far (the last one may be in the middle of a write)."""
    messages = []
    for line in daemon.stdout.read_text().splitlines():
        try:
            messages.append(str(json.loads(line)["msg"]))
        except (ValueError, KeyError, TypeError):
            continue
    return messages


def _widget_crd(columns: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """A small stand-in CRD in its own group, so changing it cannot disturb the TaskSet CRD of other tests."""
    version: dict[str, Any] = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
    }
    if columns:
        version["additionalPrinterColumns"] = columns
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.daemon-test.example.com", "labels": {"owner": "test-daemon"}},
        "spec": {
            "group": "daemon-test.example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [version],
        },
    }


def test_ensure_crd_creates_then_leaves_alone_then_updates(cluster: Cluster, tmp_path: Path) -> None:
    manifest = tmp_path / "crd.yaml"
    api_client = cluster.api_client()
    cluster.kubectl("delete", "crd", "widgets.daemon-test.example.com", "--ignore-not-found", check=False)
    try:
        manifest.write_text(json.dumps(_widget_crd()))
        assert ensure_crd(KubeClient(api_client), manifest) == "created"
        assert (
            ensure_crd(KubeClient(api_client), manifest) == "unchanged"
        )  # server-side defaults do not count as drift
        column = {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
        manifest.write_text(json.dumps(_widget_crd([column])))
        assert ensure_crd(KubeClient(api_client), manifest) == "updated"
        assert ensure_crd(KubeClient(api_client), manifest) == "unchanged"
        got = cluster.kubectl("get", "crd", "widgets.daemon-test.example.com", "-o", "json")
        live = json.loads(got.stdout)
        assert live["spec"]["versions"][0]["additionalPrinterColumns"] == [column]
        assert live["metadata"]["labels"]["owner"] == "test-daemon"
    finally:
        cluster.kubectl("delete", "crd", "widgets.daemon-test.example.com", "--ignore-not-found", check=False)
        api_client.close()


def test_ensure_crd_fails_clearly_on_an_unreadable_manifest(cluster: Cluster, tmp_path: Path) -> None:
    api_client = cluster.api_client()
    try:
        with pytest.raises(CRDRegistrationError, match=r"cannot read CRD manifest .*missing\.yaml"):
            ensure_crd(KubeClient(api_client), tmp_path / "missing.yaml")
    finally:
        api_client.close()


# ----- the key of the Pods' creation proofs ----------------------------------------------


def _secret(cluster: Cluster, namespace: str) -> dict[str, Any] | None:
    return KubeClient(cluster.api_client()).get(
        f"/api/v1/namespaces/{namespace}/secrets/{Config().proof_key_secret}", resource="secrets"
    )


def test_the_proof_key_is_made_once_and_kept_across_restarts(
    start_daemon: Callable[..., Daemon], cluster: Cluster, namespace: str
) -> None:
    """The first daemon creates the Secret; the next one reads the same key, so that a Pod one leader
    created is still proven for its successor (W-1 adoption after a restart)."""
    assert _secret(cluster, namespace) is None
    first = start_daemon(f"--leader-elect-namespace={namespace}")
    first.wait_for("/readyz", 200)
    made = _secret(cluster, namespace)
    assert made is not None, first.output()
    key = key_of(made, "made")
    assert len(key) == KEY_BYTES
    assert first.stop() == 0

    second = start_daemon(f"--leader-elect-namespace={namespace}")
    second.wait_for("/readyz", 200)
    kept = _secret(cluster, namespace)
    assert kept is not None
    assert (kept["metadata"]["uid"], key_of(kept, "kept")) == (made["metadata"]["uid"], key)
    assert second.stop() == 0


def test_a_proof_key_secret_without_a_usable_key_stops_the_daemon_with_a_clear_error(
    start_daemon: Callable[..., Daemon], cluster: Cluster, namespace: str
) -> None:
    short = {"metadata": {"name": "short-key"}, "data": {"key": "c2hvcnQ="}}  # b"short"
    KubeClient(cluster.api_client()).create(
        f"/api/v1/namespaces/{namespace}/secrets", short, resource="secrets"
    )
    daemon = start_daemon(f"--leader-elect-namespace={namespace}", "--proof-key-secret=short-key")
    assert daemon.process.wait(60) == 1, daemon.output()
    [line] = [line for line in daemon.log_lines() if line["level"] == "error"]
    assert line["msg"] == "cannot load the key of the Pods' creation proofs"
    assert line["error"] == f"Secret {namespace}/short-key: data.key holds 5 bytes, at least 32 needed"
