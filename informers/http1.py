"""The writes' own HTTP/1.1 client: one request, one whole response, over kept-alive TLS connections.

Every create, delete, patch and status write of the daemon is a small request answered by a small JSON
body. Through urllib3 (and the ``http.client`` and ``email`` header parsing beneath it) one such request
cost about 1.1 ms of the controller's CPU, a third of a burst's samples; written as one ``sendall`` and
read back with a buffered reader it costs about a third of that. Lists and watches, which stream, stay
on urllib3 (``informers.rest``).

What it does, and no more: ``Content-Length`` and ``chunked`` bodies (a body with neither is read to the
end of the connection), ``Connection: close``, a connection checked for having been dropped before it is
reused, and urllib3's default retries, which the writes relied on: a request that could not connect is
tried again whatever its method (three more times); one that broke after it was sent, and a 413, 429 or
503 with ``Retry-After`` (waited out), only for the methods that are safe to repeat (GET, PUT, DELETE).
A proxy is not spoken here: ``informers.rest`` keeps urllib3 for an endpoint behind one.
"""

from __future__ import annotations

import contextlib
import select
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from typing import BinaryIO, Final
from urllib.parse import urlsplit

__all__ = ["Answer", "ConnectFailedError", "Connections", "RequestBrokenError", "Target"]

RETRIES: Final = 3  # urllib3's default Retry(3)
IDEMPOTENT: Final = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"})  # urllib3's
RETRY_AFTER_CODES: Final = frozenset({413, 429, 503})
MAX_HEADER_LINES: Final = 200
MAX_LINE: Final = 65536
_UNSAFE: Final = frozenset("\r\n\0")


class ConnectFailedError(OSError):
    """No connection could be made (refused, timed out, the TLS handshake failed): nothing was sent."""


class RequestBrokenError(OSError):
    """The connection failed after the request was (perhaps) sent: it may have been carried out."""


@dataclass(frozen=True)
class Answer:
    status: int
    data: bytes
    headers: dict[str, str]  # lower-cased names; a repeated header keeps its last value


@dataclass(frozen=True)
class Target:
    """Where requests go: ``https://host:port/prefix`` split once."""

    tls: bool
    host: str
    port: int
    netloc: str  # the Host header
    prefix: str  # a path the endpoint's URL carries before every request's own (e.g. behind a gateway)

    @classmethod
    def of(cls, url: str) -> Target:
        parts = urlsplit(url)
        tls = parts.scheme.lower() != "http"
        if not parts.hostname:
            raise ValueError(f"no host in the API server's URL {url!r}")
        port = parts.port or (443 if tls else 80)
        return cls(tls, parts.hostname, port, parts.netloc, parts.path.rstrip("/"))


class _Connection:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.reader: BinaryIO = sock.makefile("rb")

    def dropped(self) -> bool:
        """Whether the server closed (or wrote to) the idle connection: it must not be reused."""
        try:
            readable, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    def close(self) -> None:
        for closing in (self.reader.close, self.sock.close):
            with contextlib.suppress(OSError):
                closing()


class Connections:
    """Kept-alive connections to one API server, shared by every thread; at most ``keep`` idle ones."""

    def __init__(
        self, target: Target, context: ssl.SSLContext | None, *, server_hostname: str | None, keep: int
    ) -> None:
        self.target: Final = target
        self._context: Final = context
        self._server_hostname: Final = server_hostname or target.host
        self._keep: Final = max(keep, 1)
        self._lock = threading.Lock()
        self._idle: list[_Connection] = []  # guarded by _lock
        self._closed = False

    def request(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes | None,
        *,
        connect_timeout: float,
        read_timeout: float,
        deadline: float | None = None,
    ) -> Answer:
        """Send one request and return its whole answer, retried as the module docstring says. Raises
        ``ConnectFailedError`` or ``RequestBrokenError`` (both ``OSError``) once the retries are spent."""
        head = self._head(method, path, headers, body)
        retries = RETRIES
        while True:
            try:
                answer = self._once(head, body, method, (connect_timeout, read_timeout), deadline)
            except ConnectFailedError:
                if retries <= 0 or _past(deadline):
                    raise
            except RequestBrokenError:
                if retries <= 0 or method not in IDEMPOTENT or _past(deadline):
                    raise
            else:
                wait = _retry_after(answer) if method in IDEMPOTENT else None
                if wait is None or retries <= 0 or _past(deadline, after=wait):
                    return answer
                time.sleep(wait)
            retries -= 1

    def close(self) -> None:
        """Close the idle connections; one in use closes when its request ends."""
        with self._lock:
            idle, self._idle = self._idle, []
            self._closed = True
        for connection in idle:
            connection.close()

    # ----- one try -------------------------------------------------------------------------------------

    def _head(self, method: str, path: str, headers: dict[str, str], body: bytes | None) -> bytes:
        target = f"{self.target.prefix}{path}"
        lines = [f"{method} {target} HTTP/1.1", f"Host: {self.target.netloc}"]
        lines.extend(f"{name}: {value}" for name, value in headers.items())
        if body is not None or method in ("POST", "PUT", "PATCH"):
            lines.append(f"Content-Length: {len(body or b'')}")
        if any(_UNSAFE.intersection(line) for line in lines) or " " in target:
            raise ValueError("a request's path or header holds a space, a line break or a NUL")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def _once(
        self,
        head: bytes,
        body: bytes | None,
        method: str,
        timeouts: tuple[float, float],
        deadline: float | None,
    ) -> Answer:
        connect_timeout, read_timeout = timeouts
        connection = self._idle_connection() or self._connect(_bounded(connect_timeout, deadline))
        try:
            connection.sock.settimeout(_bounded(read_timeout, deadline))
            connection.sock.sendall(head + body if body else head)
            answer, reusable = _read_answer(connection.reader, method)
        except (OSError, ValueError) as err:  # ValueError: a malformed answer
            connection.close()
            raise RequestBrokenError(f"the request broke off: {err}") from err
        if reusable:
            self._give_back(connection)
        else:
            connection.close()
        return answer

    def _idle_connection(self) -> _Connection | None:
        while True:
            with self._lock:
                if not self._idle:
                    return None
                connection = self._idle.pop()
            if not connection.dropped():
                return connection
            connection.close()

    def _give_back(self, connection: _Connection) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < self._keep:
                self._idle.append(connection)
                return
        connection.close()

    def _connect(self, timeout: float) -> _Connection:
        target = self.target
        try:
            sock = socket.create_connection((target.host, target.port), timeout=timeout)
        except OSError as err:
            raise ConnectFailedError(f"cannot connect to {target.netloc}: {err}") from err
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._context is not None:
                sock = self._context.wrap_socket(sock, server_hostname=self._server_hostname)
        except OSError as err:  # ssl.SSLError is one
            sock.close()
            raise ConnectFailedError(f"TLS with {target.netloc} failed: {err}") from err
        return _Connection(sock)


def _past(deadline: float | None, *, after: float = 0.0) -> bool:
    return deadline is not None and time.monotonic() + after >= deadline


def _bounded(timeout: float, deadline: float | None) -> float:
    if deadline is None:
        return timeout
    return max(min(timeout, deadline - time.monotonic()), 0.001)


def _retry_after(answer: Answer) -> float | None:
    """Seconds the server asked to wait before a retry, for the codes urllib3 retries on; else None."""
    if answer.status not in RETRY_AFTER_CODES:
        return None
    text = answer.headers.get("retry-after", "").strip()
    if not text.isdigit():
        return None  # urllib3 also reads HTTP dates; the API server sends seconds
    return float(text)


def _line(reader: BinaryIO) -> bytes:
    line = reader.readline(MAX_LINE + 1)
    if not line:
        raise ConnectionResetError("the server closed the connection")
    if len(line) > MAX_LINE:
        raise ValueError("a line of the answer is too long")
    return line


def _read_answer(reader: BinaryIO, method: str) -> tuple[Answer, bool]:
    """The answer, and whether the connection may carry another request."""
    while True:
        status_line = _line(reader).decode("latin-1").rstrip("\r\n")
        version, _, rest = status_line.partition(" ")
        code_text = rest[:3]
        if not version.startswith("HTTP/") or not code_text.isdigit():
            raise ValueError(f"not an HTTP status line: {status_line[:80]!r}")
        status = int(code_text)
        headers: dict[str, str] = {}
        for _ in range(MAX_HEADER_LINES):
            line = _line(reader)
            if line in (b"\r\n", b"\n"):
                break
            name, sep, value = line.decode("latin-1").partition(":")
            if not sep:
                raise ValueError(f"not a header line: {line[:80]!r}")
            headers[name.strip().lower()] = value.strip()
        else:
            raise ValueError("too many header lines")
        if not 100 <= status < 200:
            break  # an interim answer (we never ask for one) is skipped
    keep = version != "HTTP/1.0" and "close" not in headers.get("connection", "").lower()
    if method == "HEAD" or status in (204, 304):
        return Answer(status, b"", headers), keep
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return Answer(status, _chunked(reader), headers), keep
    length_text = headers.get("content-length")
    if length_text is not None:
        if not length_text.isdigit():
            raise ValueError(f"a Content-Length that is not a number: {length_text[:40]!r}")
        length = int(length_text)
        data = reader.read(length)
        if len(data) < length:
            raise ConnectionResetError("the answer ended before its Content-Length")
        return Answer(status, data, headers), keep
    return Answer(status, reader.read(), headers), False  # to the end of the connection


def _chunked(reader: BinaryIO) -> bytes:
    parts: list[bytes] = []
    while True:
        size_text = _line(reader).split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise ValueError(f"not a chunk size: {size_text[:40]!r}") from None
        if size == 0:
            while _line(reader) not in (b"\r\n", b"\n"):  # trailers, ignored
                pass
            return b"".join(parts)
        chunk = reader.read(size)
        if len(chunk) < size:
            raise ConnectionResetError("the answer ended inside a chunk")
        parts.append(chunk)
        _line(reader)  # the chunk's CRLF
