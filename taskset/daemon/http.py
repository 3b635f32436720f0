"""The daemon's HTTP endpoints: Prometheus metrics and the liveness/readiness probes.

===========  ======================================================================================
Path         Answer
===========  ======================================================================================
``/metrics`` the injected registry in the Prometheus text format
``/healthz`` 200 ``ok`` while the process serves (``healthy()`` may veto it); 503 otherwise
``/readyz``  200 ``ok`` when ``ready()`` is True, else 503 with a one-line reason (e.g. caches not
             synced yet, or shutting down)
===========  ======================================================================================

With a TLS context and a guard (``--metrics-secure``, the default), ``/metrics`` is served over HTTPS
and only to callers the guard allows (``taskset.daemon.metrics_auth``: a bearer token, TokenReview,
SubjectAccessReview); a refused caller gets the guard's status (401, 403 or 503) and a one-line reason.
The probes stay plain HTTP on their own address (the kubelet probes without credentials), so the two
addresses must then differ. The TLS handshake runs in the connection's own thread, with a deadline, so a
client that connects and stays silent holds no one else up.

Bind addresses use controller-runtime's spelling: ``:8080`` (every interface), ``127.0.0.1:8080``,
``[::1]:8080``, port ``0`` for a free port chosen by the kernel (read it back from ``metrics_port`` /
``probe_port``), and the bare string ``0`` to disable an endpoint set. When the metrics and probe
addresses are the same string, one server answers all three paths, unless ``/metrics`` is secured: then
a port 0 address gives each its own free port (two ports the kernel picks never collide), and a fixed
port is refused.

Each server is a stdlib ``ThreadingHTTPServer`` on a daemon thread: scrapes and probes are rare and tiny,
and a daemon thread never holds the process open at exit.
"""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final
from urllib.parse import urlsplit

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from taskset.daemon.metrics_auth import Decision

__all__ = ["DISABLED", "BindAddress", "ObservabilityServer", "parse_bind_address"]

DISABLED: Final = "0"  # controller-runtime's value for "do not serve"
_TEXT: Final = "text/plain; charset=utf-8"
# Seconds stop() waits for a serving thread after shutdown(); handlers are tiny, so this is generous.
_JOIN_TIMEOUT: Final = 5.0

# Seconds a client gets to complete the TLS handshake once connected.
HANDSHAKE_TIMEOUT: Final = 10.0

# A route answers (status, content type, body).
Route = Callable[[], tuple[int, str, bytes]]
# A guard decides a request from its Authorization header (None when absent).
Guard = Callable[[str | None], Decision]


@dataclass(frozen=True)
class BindAddress:
    host: str  # "" = every IPv4 interface
    port: int  # 0 = any free port

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def parse_bind_address(text: str) -> BindAddress | None:
    """``":8080"`` → ``BindAddress("", 8080)``; ``"0"`` → ``None`` (disabled). Raises ``ValueError``."""
    text = text.strip()
    if text == DISABLED:
        return None
    host, sep, port_text = text.rpartition(":")
    if not sep:
        raise ValueError("must be host:port, :port, or 0 to disable")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError("an IPv6 host must be in brackets, e.g. [::1]:8080")
    if not (port_text.isascii() and port_text.isdigit()) or int(port_text) > 65535:
        raise ValueError("the port must be a number from 0 to 65535")
    return BindAddress(host=host, port=int(port_text))


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a hung scrape must never hold the process open
    allow_reuse_address = True  # a restarted daemon can rebind at once despite TIME_WAIT sockets

    def __init__(
        self,
        address: BindAddress,
        routes: Mapping[str, Route],
        *,
        tls: ssl.SSLContext | None = None,
        guard: Guard | None = None,
    ) -> None:
        self.address_family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
        self.routes: Final = dict(routes)
        self.tls: Final = tls
        self.guard: Final = guard
        super().__init__((address.host, address.port), _Handler)

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def get_request(self) -> tuple[socket.socket, Any]:
        """Accept, wrapping in TLS without the handshake: the accepting thread must never wait on a client."""
        connection, client = super().get_request()
        if self.tls is not None:
            connection = self.tls.wrap_socket(connection, server_side=True, do_handshake_on_connect=False)
        return connection, client

    def finish_request(self, request: Any, client_address: Any) -> None:
        """Runs in the connection's thread: the handshake first (with a deadline), then the request."""
        if isinstance(request, ssl.SSLSocket):
            request.settimeout(HANDSHAKE_TIMEOUT)
            try:
                request.do_handshake()
            except OSError:  # plain HTTP on the TLS port, a silent or vanished client: nothing to answer
                return
            request.settimeout(None)
        super().finish_request(request, client_address)

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Routes catch their own errors; what is left is clients hanging up mid-request, which the default
        # would print to stderr as a traceback each time.
        return


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"  # keep-alive for Prometheus, which scrapes over one connection

    def do_GET(self) -> None:
        route = self.server.routes.get(urlsplit(self.path).path)
        guard = self.server.guard
        decision = guard(self.headers.get("Authorization")) if route and guard else None
        extra: dict[str, str] = {}
        if route is None:
            status, content_type, body = 404, _TEXT, b"not found\n"
        elif decision is not None and not decision.allowed:
            status, content_type, body = decision.status, _TEXT, f"{decision.reason}\n".encode()
            if status == 401:
                extra["WWW-Authenticate"] = 'Bearer realm="taskset-controller"'
        else:
            try:
                status, content_type, body = route()
            except Exception as err:
                status, content_type, body = 500, _TEXT, f"internal error: {err}\n".encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        # Kubelet probes every few seconds; an access log line each time would drown the real records.
        return


class ObservabilityServer:
    """Serves ``/metrics``, ``/healthz`` and ``/readyz`` on one or two addresses, from daemon threads."""

    def __init__(
        self,
        *,
        metrics_address: BindAddress | None,
        probe_address: BindAddress | None,
        registry: CollectorRegistry,
        ready: Callable[[], bool],
        not_ready_reason: Callable[[], str] = lambda: "not ready",
        healthy: Callable[[], bool] = lambda: True,
        metrics_tls: ssl.SSLContext | None = None,
        metrics_guard: Guard | None = None,
    ) -> None:
        """``metrics_tls`` and ``metrics_guard`` secure ``/metrics`` only; they need an address of its own
        (``ValueError`` otherwise), since the probes stay plain HTTP."""
        self._registry: Final = registry
        self._ready: Final = ready
        self._not_ready_reason: Final = not_ready_reason
        self._healthy: Final = healthy
        metrics_routes: dict[str, Route] = {"/metrics": self._metrics}
        probe_routes: dict[str, Route] = {"/healthz": self._healthz, "/readyz": self._readyz}
        self._metrics_server: _Server | None = None
        self._probe_server: _Server | None = None
        # Binding happens here, so a taken port fails construction (and startup) rather than a thread.
        secure = metrics_tls is not None or metrics_guard is not None
        same = metrics_address if metrics_address == probe_address else None
        if secure and same is not None and same.port != 0:
            raise ValueError("a secured /metrics needs an address apart from the plain-HTTP probes")
        if same is not None and not secure:
            shared = _Server(same, {**metrics_routes, **probe_routes})
            self._metrics_server = self._probe_server = shared
        else:
            try:
                if metrics_address is not None:
                    self._metrics_server = _Server(
                        metrics_address, metrics_routes, tls=metrics_tls, guard=metrics_guard
                    )
                if probe_address is not None:
                    self._probe_server = _Server(probe_address, probe_routes)
            except OSError:
                self._close()
                raise
        self._threads: list[threading.Thread] = []

    @property
    def metrics_port(self) -> int | None:
        """The port ``/metrics`` is bound to (useful with port 0), or None when disabled."""
        return self._metrics_server.port if self._metrics_server else None

    @property
    def probe_port(self) -> int | None:
        """The port of ``/healthz`` and ``/readyz``, or None when disabled."""
        return self._probe_server.port if self._probe_server else None

    def start(self) -> None:
        for server in self._servers():
            thread = threading.Thread(target=server.serve_forever, name=f"http-{server.port}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self) -> None:
        """Stop serving and release the ports; safe to call more than once."""
        if self._threads:
            for server in self._servers():
                server.shutdown()
            for thread in self._threads:
                thread.join(_JOIN_TIMEOUT)
            self._threads.clear()
        self._close()

    def _servers(self) -> list[_Server]:
        servers = [s for s in (self._metrics_server, self._probe_server) if s is not None]
        return list(dict.fromkeys(servers))  # the shared server once

    def _close(self) -> None:
        for server in self._servers():
            server.server_close()

    # ----- routes -----------------------------------------------------------------------------------------
    def _metrics(self) -> tuple[int, str, bytes]:
        return 200, CONTENT_TYPE_LATEST, generate_latest(self._registry)

    def _healthz(self) -> tuple[int, str, bytes]:
        if self._healthy():
            return 200, _TEXT, b"ok\n"
        return 503, _TEXT, b"unhealthy\n"

    def _readyz(self) -> tuple[int, str, bytes]:
        if self._ready():
            return 200, _TEXT, b"ok\n"
        return 503, _TEXT, f"{self._not_ready_reason()}\n".encode()
