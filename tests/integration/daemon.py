"""The real controller process (``python -m taskset.daemon.main``) for tests that need one: restarts, SIGKILL,
log records on stdout, configuration handling."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from devcluster import Cluster, free_port

READY_TIMEOUT = 60.0


class Daemon:
    """One controller process scoped to a namespace, its stdout kept in a file."""

    def __init__(
        self,
        cluster: Cluster,
        namespace: str | None,
        log_dir: Path,
        *args: str,
        env: dict[str, str] | None = None,
    ) -> None:
        self.cluster = cluster
        self.namespace = namespace
        self.log_dir = log_dir
        self.args = list(args)
        self.env = env or {}
        self.process: subprocess.Popen[bytes] | None = None
        self.health_port = 0
        self.metrics_port = 0
        self.starts = 0

    @property
    def log_path(self) -> Path:
        return self.log_dir / f"controller-{self.starts}.log"

    def start(self, wait_ready: bool = True) -> Daemon:
        self.starts += 1
        self.health_port, self.metrics_port = free_port(), free_port()
        argv = [
            sys.executable,
            "-m",
            "taskset.daemon.main",
            f"--kubeconfig={self.cluster.kubeconfig}",
            f"--health-probe-bind-address=127.0.0.1:{self.health_port}",
            f"--metrics-bind-address=127.0.0.1:{self.metrics_port}",
            "--metrics-secure=false",  # plain HTTP for the tests that read metrics; test_rbac secures it
            "--register-crd=false",
            *self.args,
        ]
        if self.namespace:
            argv.append(f"--namespace={self.namespace}")
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **self.env}
            )
        if wait_ready:
            self.wait_ready()
        return self

    def get(self, port: int, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()
        except OSError:
            return 0, ""

    def wait_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(
                    f"controller exited with {self.process.returncode}:\n{self.output()[-3000:]}"
                )
            if self.get(self.health_port, "/readyz")[0] == 200:
                return
            time.sleep(0.1)
        raise AssertionError(f"controller not ready within {READY_TIMEOUT}s:\n{self.output()[-3000:]}")

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait: a graceful shutdown."""
        assert self.process is not None
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout)

    def kill(self) -> None:
        """SIGKILL: the process gets no chance to clean up."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def output(self) -> str:
        return "\n".join(
            (self.log_dir / f"controller-{n}.log").read_text(errors="replace")
            for n in range(1, self.starts + 1)
        )

    def records(self) -> list[dict[str, Any]]:
        """Every JSON line the process(es) wrote to stdout."""
        return json_records(self.output())


def json_records(output: str) -> list[dict[str, Any]]:
    """The log records in a controller's output: its JSON lines (anything else, e.g. a traceback, is not)."""
    parsed = []
    for line in output.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            parsed.append(value)
    return parsed


def token_of(cluster: Cluster, namespace: str, account: str) -> str:
    """A token of the ServiceAccount from the TokenRequest API, as a kubelet projects one into a Pod."""
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}
    path = f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token"
    token: str = cluster.request("POST", path, request)["status"]["token"]
    return token


@contextlib.contextmanager
def scratch_namespace(cluster: Cluster, prefix: str) -> Iterator[str]:
    """A namespace of its own for a module's tests (``<prefix>-<random>``), deleted after them."""
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    cluster.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    try:
        yield name
    finally:
        with contextlib.suppress(OSError):
            cluster.request("DELETE", f"/api/v1/namespaces/{name}")


def account_kubeconfig(cluster: Cluster, namespace: str, account: str, path: Path) -> Path:
    """A kubeconfig at ``path`` holding only a TokenRequest token of the ServiceAccount (the admin
    kubeconfig is not involved), with ``namespace`` as its default."""
    token = token_of(cluster, namespace, account)
    server = {"server": cluster.server, "certificate-authority": str(cluster.pki.ca_cert)}
    context = {"cluster": "devcluster", "user": account, "namespace": namespace}
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "devcluster", "cluster": server}],
        "users": [{"name": account, "user": {"token": token}}],
        "contexts": [{"name": "controller", "context": context}],
        "current-context": "controller",
    }
    path.write_text(json.dumps(config))
    return path


def scrape(port: int, token: str | None, context: ssl.SSLContext) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"https://127.0.0.1:{port}/metrics", headers=headers)
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
