"""A fault-injecting loopback proxy between a client (the controller) and the devcluster kube-apiserver.

The proxy listens on ``http://127.0.0.1:<free port>`` in plain HTTP and forwards every request to the API
server over TLS, authenticated with the admin client certificate, so a client needs no credentials at all
(``write_kubeconfig``). Each client connection gets its own upstream connection, kept alive like the
client's. Responses without a ``Content-Length`` (watches, large lists) are streamed: every piece is
re-chunked and flushed to the client as soon as it arrives.

While faults are on (``enable``/``disable`` switch them at runtime), a ``FaultPolicy`` decides for each
request, before forwarding it, whether to

* answer ``429 Too Many Requests`` itself (``Retry-After: 1`` and a ``Status`` body, as the API server's
  priority and fairness does),
* answer ``500 Internal Server Error`` (a ``Status`` body),
* drop the connection without any reply,
* delay it (sleep, then forward),
* answer ``409 Conflict`` to a PUT/PATCH of a TaskSet's ``/status`` (the optimistic-concurrency answer to
  a stale ``resourceVersion``),
* and, for a watch it forwards, cut the connection mid-stream after a few seconds.

Decisions are deterministic: the n-th request with a given method and path (query and namespace name
excluded) draws from ``random.Random(f"{seed}|{method}|{path}|{n}")``, so the same workload meets the same
faults whatever the interleaving of other requests and whatever its namespace is called. Every injected
fault is counted by kind (``counts``).
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from http import HTTPStatus
from http.client import HTTPException, HTTPResponse, HTTPSConnection, RemoteDisconnected
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from devcluster import Cluster

__all__ = ["Decision", "Fault", "FaultPolicy", "FaultProxy", "FaultRates", "Upstream"]

# Headers that describe one hop, never forwarded (RFC 9110 7.6.1); Host and Content-Length are recomputed.
HOP_BY_HOP: Final = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
UPSTREAM_TIMEOUT: Final = 120.0  # seconds a read may block; watches stay silent at most ~60 s (bookmarks)
# An upstream connection idle longer than this is replaced before use rather than risk the API server
# closing it under the request (its idle timeout is longer; this keeps clear of the race).
UPSTREAM_IDLE_LIMIT: Final = 30.0
STREAM_READ_BYTES: Final = 64 * 1024
RETRY_AFTER_SECONDS: Final = 1
NAMESPACE_SEGMENT: Final = re.compile(r"/namespaces/[^/]+")
# PUT/PATCH of a TaskSet's status subresource: the writes that may be answered 409 Conflict.
TASKSET_STATUS_PATH: Final = re.compile(
    r"^/apis/octopus\.openi\.pcl\.cn/v1alpha1/namespaces/(?P<ns>[^/]+)/tasksets/(?P<name>[^/]+)/status$"
)


class Fault(StrEnum):
    """Kinds of injected fault, as counted by ``FaultProxy.counts``."""

    TOO_MANY_REQUESTS = "429"
    SERVER_ERROR = "500"
    DROP = "drop"  # connection closed without a reply
    DELAY = "delay"  # request held before forwarding
    CONFLICT = "409"  # TaskSet status write refused
    WATCH_CUT = "watch-cut"  # a forwarded watch stream cut mid-way


@dataclass(frozen=True)
class FaultRates:
    """Probabilities per request (each in [0, 1]); 429, 500, drop and delay exclude each other."""

    too_many_requests: float = 0.0
    server_error: float = 0.0
    drop: float = 0.0
    delay: float = 0.0
    delay_seconds: tuple[float, float] = (0.2, 1.0)
    """Range of one delay, seconds (uniform)."""
    status_conflict: float = 0.0
    """Probability that a PUT/PATCH of ``tasksets/<name>/status`` is answered 409 (drawn first)."""
    watch_cut: float = 0.0
    """Probability that a forwarded watch is cut mid-stream."""
    watch_cut_after: tuple[float, float] = (1.0, 8.0)
    """Range of seconds a cut watch streams before its connection is closed (uniform)."""

    def __post_init__(self) -> None:
        exclusive = self.too_many_requests + self.server_error + self.drop + self.delay
        for name in ("too_many_requests", "server_error", "drop", "delay", "status_conflict", "watch_cut"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be a probability, got {getattr(self, name)}")
        if exclusive > 1.0:
            raise ValueError(f"429 + 500 + drop + delay rates add up to {exclusive} > 1")


@dataclass(frozen=True)
class Decision:
    """What to do with one request: a reply-replacing ``fault`` (429, 500, drop, 409) or none; a
    ``delay`` in seconds before forwarding; for a watch, seconds of streaming before the cut."""

    fault: Fault | None = None
    delay: float = 0.0
    cut_after: float | None = None


NO_FAULT: Final = Decision()


class FaultPolicy:
    """Seeded, deterministic decisions (see the module docstring). Thread-safe."""

    def __init__(self, rates: FaultRates, seed: int = 0) -> None:
        self.rates = rates
        self.seed = seed
        self._seen: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def decide(self, method: str, target: str) -> Decision:
        """The decision for a request line's ``method`` and ``target`` (path with its query)."""
        split = urllib.parse.urlsplit(target)
        path = split.path
        key = NAMESPACE_SEGMENT.sub("/namespaces/*", path)  # tests use fresh random namespace names
        with self._lock:
            n = self._seen.get((method, key), 0)
            self._seen[(method, key)] = n + 1
        rng = random.Random(f"{self.seed}|{method}|{key}|{n}")
        rates = self.rates
        status_write = method in ("PUT", "PATCH") and TASKSET_STATUS_PATH.match(path)
        if status_write and rng.random() < rates.status_conflict:
            return Decision(Fault.CONFLICT)
        draw = rng.random()
        for fault, rate in (
            (Fault.TOO_MANY_REQUESTS, rates.too_many_requests),
            (Fault.SERVER_ERROR, rates.server_error),
            (Fault.DROP, rates.drop),
        ):
            if draw < rate:
                return Decision(fault)
            draw -= rate
        delay = rng.uniform(*rates.delay_seconds) if draw < rates.delay else 0.0
        cut_after = None
        if method == "GET" and is_watch(split.query) and rng.random() < rates.watch_cut:
            cut_after = rng.uniform(*rates.watch_cut_after)
        return Decision(None, delay, cut_after)


def is_watch(query: str) -> bool:
    values = urllib.parse.parse_qs(query).get("watch", [])
    return any(v.lower() in ("true", "1") for v in values)


@dataclass(frozen=True)
class Upstream:
    """The API server and the admin credentials the proxy presents to it."""

    host: str
    port: int
    ca_cert: Path
    client_cert: Path
    client_key: Path

    @classmethod
    def of(cls, cluster: Cluster) -> Upstream:
        url = urllib.parse.urlsplit(cluster.server)
        assert url.hostname is not None and url.port is not None, cluster.server
        pki = cluster.pki
        return cls(url.hostname, url.port, pki.ca_cert, pki.admin_cert, pki.admin_key)

    def ssl_context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca_cert))
        context.load_cert_chain(str(self.client_cert), str(self.client_key))
        return context


def status_body(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> bytes:
    """A ``metav1.Status`` failure, as the API server writes it."""
    status: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        status["details"] = details
    return json.dumps(status).encode()


class _Cut:
    """Cuts one streaming exchange after a delay, unless cancelled first (the stream ended on its own)."""

    def __init__(self, after: float, action: Any) -> None:
        self._lock = threading.Lock()
        self._armed = True
        self._action = action
        self._timer = threading.Timer(after, self._fire)
        self._timer.daemon = True

    def start(self) -> None:
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if not self._armed:
                return
            self._armed = False
            self._action()

    def cancel(self) -> None:
        with self._lock:
            self._armed = False
        self._timer.cancel()


class _Handler(BaseHTTPRequestHandler):
    """One client connection; its requests are forwarded over one upstream connection, reused."""

    protocol_version = "HTTP/1.1"  # keep-alive, like the API server; every reply has a length or chunks
    server: _Server

    def setup(self) -> None:
        super().setup()
        self._upstream: HTTPSConnection | None = None
        self._upstream_used = 0.0  # monotonic time the upstream connection last finished a request
        self._sockets_lock = threading.Lock()
        self.server.proxy._track(self)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self._close_upstream()
            self.server.proxy._untrack(self)

    def log_message(self, format: str, *args: Any) -> None:
        return None  # quiet: the test reports figures, not one line per request

    # Every method the Kubernetes API uses goes the same way.
    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def do_PUT(self) -> None:
        self._handle()

    def do_PATCH(self) -> None:
        self._handle()

    def do_DELETE(self) -> None:
        self._handle()

    def do_HEAD(self) -> None:
        self._handle()

    def do_OPTIONS(self) -> None:
        self._handle()

    # ----- one request ---------------------------------------------------------------------------------
    def _handle(self) -> None:
        proxy = self.server.proxy
        body = self._read_body()
        if body is None:
            self.close_connection = True
            return
        proxy._count("requests")
        started = time.monotonic()
        decision = proxy.decide(self.command, self.path)
        self._outcome = ""
        try:
            if decision.delay > 0:
                proxy._count(Fault.DELAY)
                time.sleep(decision.delay)
            if decision.fault is not None:
                proxy._count(decision.fault)
                self._outcome = f"injected {decision.fault}"
                self._inject(decision.fault)
                return
            self._forward(body, decision.cut_after)
        finally:
            proxy._trace(started, self.command, self.path, decision, self._outcome)

    def _read_body(self) -> bytes | None:
        """The request body (``b""`` for none); None if it cannot be read (the connection is closed)."""
        try:
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                pieces: list[bytes] = []
                while True:
                    size = int(self.rfile.readline().split(b";", 1)[0].strip(), 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass  # trailers
                        return b"".join(pieces)
                    pieces.append(self.rfile.read(size))
                    self.rfile.readline()
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""
        except (OSError, ValueError):
            return None

    def _inject(self, fault: Fault) -> None:
        if fault is Fault.DROP:
            self.close_connection = True
            self._shutdown(self.connection)
            return
        if fault is Fault.TOO_MANY_REQUESTS:
            body = status_body(
                429,
                "TooManyRequests",
                "the server has received too many requests and has asked us to try again later",
                {"retryAfterSeconds": RETRY_AFTER_SECONDS},
            )
            self._reply(429, body, [("Retry-After", str(RETRY_AFTER_SECONDS))])
        elif fault is Fault.SERVER_ERROR:
            body = status_body(500, "InternalError", "Internal error occurred: injected by the fault proxy")
            self._reply(500, body)
        elif fault is Fault.CONFLICT:
            match = TASKSET_STATUS_PATH.match(urllib.parse.urlsplit(self.path).path)
            name = match["name"] if match else ""
            message = (
                f'Operation cannot be fulfilled on tasksets.octopus.openi.pcl.cn "{name}": the object '
                "has been modified; please apply your changes to the latest version and try again"
            )
            details = {"name": name, "group": "octopus.openi.pcl.cn", "kind": "tasksets"}
            self._reply(409, status_body(409, "Conflict", message, details))

    def _reply(self, code: int, body: bytes, headers: list[tuple[str, str]] | None = None) -> None:
        try:
            self.send_response_only(code, HTTPStatus(code).phrase)
            self.send_header("Content-Type", "application/json")
            for key, value in headers or []:
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
        except OSError:
            self.close_connection = True

    # ----- forwarding ----------------------------------------------------------------------------------
    def _forward(self, body: bytes, cut_after: float | None) -> None:
        proxy = self.server.proxy
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        try:
            response = self._exchange(body, headers)
        except (OSError, HTTPException) as err:
            self._outcome = f"upstream error {err!r}"
            proxy._count("upstream-error")
            self._reply(502, status_body(502, "BadGateway", f"fault proxy: upstream failed: {err}"))
            self.close_connection = True
            return
        try:
            proxy._count("forwarded")
            streamed = (
                response.getheader("Content-Length") is None
                and self.command != "HEAD"
                and response.status not in (204, 304)
                and response.status >= 200
            )
            self._outcome = f"{response.status} {'streamed' if streamed else 'copied'}"
            if streamed:
                self._stream(response, cut_after)
            else:
                self._copy(response)
        except (OSError, HTTPException) as err:
            self._outcome += f", broken: {err!r}"
            self.close_connection = True  # either side broke: neither connection is in a known state
        finally:
            if self.close_connection or response.will_close:
                self._close_upstream()
            else:
                self._upstream_used = time.monotonic()

    def _exchange(self, body: bytes, headers: dict[str, str]) -> HTTPResponse:
        """Send the request upstream and return its response (headers read, body not yet).

        A reused connection that the API server closed meanwhile fails before any answer; such a request
        is sent once more on a fresh connection (as Go's transport does for a request never answered).
        """
        for attempt in (1, 2):
            connection, reused = self._upstream_connection()
            try:
                connection.request(self.command, self.path, body=body or None, headers=headers)
                return connection.getresponse()
            except (BrokenPipeError, ConnectionResetError, RemoteDisconnected):
                self._close_upstream()
                if not reused or attempt == 2:
                    raise
            except BaseException:
                self._close_upstream()
                raise
        raise AssertionError("unreachable")

    def _upstream_connection(self) -> tuple[HTTPSConnection, bool]:
        with self._sockets_lock:
            connection = self._upstream
            fresh = connection is None or time.monotonic() - self._upstream_used > UPSTREAM_IDLE_LIMIT
        if not fresh:
            assert connection is not None
            return connection, True
        self._close_upstream()
        upstream = self.server.proxy.upstream
        connection = HTTPSConnection(
            upstream.host, upstream.port, context=self.server.proxy.ssl_context, timeout=UPSTREAM_TIMEOUT
        )
        with self._sockets_lock:
            self._upstream = connection
        return connection, False

    def _response_headers(self, response: HTTPResponse) -> None:
        self.send_response_only(response.status, response.reason)
        for key, value in response.getheaders():
            if key.lower() not in HOP_BY_HOP:
                self.send_header(key, value)

    def _copy(self, response: HTTPResponse) -> None:
        data = response.read()
        self._response_headers(response)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _stream(self, response: HTTPResponse, cut_after: float | None) -> None:
        """Forward a body of unknown length piece by piece, re-chunked and flushed at once."""
        cut = _Cut(cut_after, self._cut) if cut_after is not None else None
        self._response_headers(response)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        if cut is not None:
            cut.start()
        try:
            while piece := response.read1(STREAM_READ_BYTES):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        finally:
            if cut is not None:
                cut.cancel()

    def _cut(self) -> None:
        """Runs on the cut timer's thread: drop both connections of this exchange, if faults are still on."""
        proxy = self.server.proxy
        if not proxy.enabled:
            return
        proxy._count(Fault.WATCH_CUT)
        self.close_connection = True
        self.abort()

    # ----- sockets -------------------------------------------------------------------------------------
    def abort(self) -> None:
        """Shut both sockets down so that any thread blocked on them returns (used by cuts and stop)."""
        self._shutdown(self.connection)
        with self._sockets_lock:
            upstream = self._upstream
        if upstream is not None and upstream.sock is not None:
            self._shutdown(upstream.sock)

    @staticmethod
    def _shutdown(sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)

    def _close_upstream(self) -> None:
        with self._sockets_lock:
            connection, self._upstream = self._upstream, None
        if connection is not None:
            with contextlib.suppress(OSError):
                connection.close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    proxy: FaultProxy


class FaultProxy:
    """The proxy: ``start()``, point a client at ``url`` (or ``write_kubeconfig``), ``enable()`` faults."""

    def __init__(
        self, upstream: Upstream, policy: FaultPolicy, *, enabled: bool = False, trace: Path | None = None
    ) -> None:
        """``trace``: a file to append one line per request to (when, what, decision, how it ended)."""
        self.upstream = upstream
        self.trace = trace
        self.policy = policy
        self.ssl_context = upstream.ssl_context()
        self._enabled = threading.Event()
        if enabled:
            self._enabled.set()
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._handlers: set[_Handler] = set()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def for_cluster(
        cls, cluster: Cluster, rates: FaultRates, seed: int = 0, trace: Path | None = None
    ) -> FaultProxy:
        return cls(Upstream.of(cluster), FaultPolicy(rates, seed), trace=trace)

    # ----- lifecycle -----------------------------------------------------------------------------------
    def start(self) -> FaultProxy:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.proxy = self
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="fault-proxy", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        server = self._server
        if server is None:
            return
        server.shutdown()
        server.server_close()
        with self._lock:
            handlers = list(self._handlers)
        for handler in handlers:
            handler.abort()
        if self._thread is not None:
            self._thread.join(5)
        self._server = None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "the proxy is not started"
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def write_kubeconfig(self, path: Path) -> Path:
        """A kubeconfig that reaches the API server through this proxy, without credentials."""
        kubeconfig = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fault-proxy", "cluster": {"server": self.url}}],
            "users": [{"name": "anonymous", "user": {}}],
            "contexts": [{"name": "fault-proxy", "context": {"cluster": "fault-proxy", "user": "anonymous"}}],
            "current-context": "fault-proxy",
        }
        path.write_text(json.dumps(kubeconfig, indent=2))
        return path

    # ----- faults ---------------------------------------------------------------------------------------
    @property
    def enabled(self) -> bool:
        return self._enabled.is_set()

    def enable(self) -> None:
        self._enabled.set()

    def disable(self) -> None:
        """No new fault from now on; a watch cut already scheduled does not happen either."""
        self._enabled.clear()

    @contextlib.contextmanager
    def faults(self) -> Iterator[FaultProxy]:
        self.enable()
        try:
            yield self
        finally:
            self.disable()

    def decide(self, method: str, target: str) -> Decision:
        return self.policy.decide(method, target) if self.enabled else NO_FAULT

    def counts(self) -> dict[str, int]:
        """Injected faults by kind (every ``Fault``, zeros included), plus ``requests`` received,
        ``forwarded`` upstream and ``upstream-error`` (the API server could not be reached)."""
        with self._lock:
            counts = dict(self._counts)
        for key in [*Fault, "requests", "forwarded", "upstream-error"]:
            counts.setdefault(str(key), 0)
        return counts

    def _count(self, kind: str) -> None:
        with self._lock:
            self._counts[str(kind)] = self._counts.get(str(kind), 0) + 1

    def _trace(self, started: float, method: str, target: str, decision: Decision, outcome: str) -> None:
        if self.trace is None:
            return
        ended = time.monotonic()
        line = f"{started:.3f} {ended - started:7.3f}s {method} {target} {decision} -> {outcome}\n"
        with self._lock, self.trace.open("a") as out:
            out.write(line)

    def _track(self, handler: _Handler) -> None:
        with self._lock:
            self._handlers.add(handler)

    def _untrack(self, handler: _Handler) -> None:
        with self._lock:
            self._handlers.discard(handler)
