"""The writes' HTTP/1.1 client against a scripted server on loopback: bodies of every framing, kept-alive
connections and dropped ones, urllib3's retries (connect failures for any method, broken requests and
Retry-After only for the safe ones), TLS checked as urllib3 checks it, and headers that cannot smuggle."""

from __future__ import annotations

import contextlib
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from informers.http1 import ConnectFailedError, Connections, RequestBrokenError, Target
from informers.rest import Endpoint, Identity, Transport

pytestmark = [pytest.mark.unit, pytest.mark.timeout(60)]

Reply = Callable[[str, bytes], bytes | None]  # (request head, body) -> raw answer, or None: hang up


@dataclass
class Scripted:
    """A loopback server answering each request with ``reply``; counts connections and requests."""

    reply: Reply
    context: ssl.SSLContext | None = None
    connections: int = 0
    requests: list[str] = field(default_factory=list)
    sockets: list[socket.socket] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(sock,), daemon=True).start()

    def _serve(self, sock: socket.socket) -> None:
        try:
            if self.context is not None:
                sock = self.context.wrap_socket(sock, server_side=True)
        except OSError:
            sock.close()
            return
        self.sockets.append(sock)
        reader = sock.makefile("rb")
        try:
            while True:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = reader.readline()
                    if not line:
                        return
                    head += line
                text = head.decode("latin-1")
                length = 0
                for header in text.split("\r\n"):
                    if header.lower().startswith("content-length:"):
                        length = int(header.split(":", 1)[1])
                body = reader.read(length) if length else b""
                self.requests.append(text.split("\r\n", 1)[0])
                answer = self.reply(text, body)
                if answer is None:
                    return
                sock.sendall(answer)
                if b"\r\nConnection: close\r\n" in answer:
                    return
        except OSError:
            return
        finally:
            sock.close()

    def drop_idle(self) -> None:
        """Close every connection the server holds (as an API server closes idle ones)."""
        for sock in self.sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.listener.close()


def answer(status: int, body: bytes, *headers: str) -> bytes:
    lines = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body)}", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def plain(server: Scripted) -> Connections:
    return Connections(Target.of(f"http://127.0.0.1:{server.port}"), None, server_hostname=None, keep=4)


def call(
    connections: Connections, method: str = "GET", body: bytes | None = None, **kw: float
) -> tuple[int, bytes]:
    got = connections.request(
        method, "/api/v1/pods", {"Accept": "application/json"}, body, connect_timeout=2, read_timeout=2, **kw
    )
    return got.status, got.data


@pytest.fixture
def served() -> Iterator[Callable[[Reply], Scripted]]:
    servers: list[Scripted] = []

    def make(reply: Reply) -> Scripted:
        servers.append(Scripted(reply))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


@pytest.mark.parametrize(
    "raw",
    [
        answer(201, b'{"kind":"Pod"}'),
        b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
        b'6;x=1\r\n{"kind\r\n8\r\n":"Pod"}\r\n0\r\nX-T: 1\r\n\r\n',
        b'HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 14\r\n\r\n{"kind":"Pod"}',
    ],
    ids=["content-length", "chunked with an extension and a trailer", "after an interim answer"],
)
def test_each_framing_of_a_body_is_read_whole_and_the_connection_kept(
    served: Callable[[Reply], Scripted], raw: bytes
) -> None:
    server = served(lambda _head, _body: raw)
    connections = plain(server)
    assert call(connections, "POST", b"{}") == (201, b'{"kind":"Pod"}')
    assert call(connections, "POST", b"{}") == (201, b'{"kind":"Pod"}')
    assert server.connections == 1


def test_a_body_without_length_is_read_to_the_end_and_the_connection_not_reused(
    served: Callable[[Reply], Scripted],
) -> None:
    server = served(lambda _head, _body: b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n{}")
    connections = plain(server)
    assert call(connections) == (200, b"{}")
    assert call(connections) == (200, b"{}")
    assert server.connections == 2


def test_the_request_carries_its_headers_body_and_length(served: Callable[[Reply], Scripted]) -> None:
    seen: list[tuple[str, bytes]] = []

    def reply(head: str, body: bytes) -> bytes:
        seen.append((head, body))
        return answer(200, b"{}")

    server = served(reply)
    connections = Connections(
        Target.of(f"http://127.0.0.1:{server.port}/prefix/"), None, server_hostname=None, keep=1
    )
    connections.request(
        "PATCH", "/p?x=1", {"Content-Type": "a/b"}, b"12345", connect_timeout=2, read_timeout=2
    )
    head, body = seen[0]
    assert head.startswith("PATCH /prefix/p?x=1 HTTP/1.1\r\n")
    assert f"Host: 127.0.0.1:{server.port}\r\n" in head
    assert "Content-Type: a/b\r\n" in head and "Content-Length: 5\r\n" in head
    assert body == b"12345"


def test_a_connection_the_server_closed_while_idle_is_not_reused(served: Callable[[Reply], Scripted]) -> None:
    server = served(lambda _head, _body: answer(201, b"{}"))
    connections = plain(server)
    assert call(connections, "POST", b"{}")[0] == 201
    server.drop_idle()
    time.sleep(0.1)
    assert call(connections, "POST", b"{}")[0] == 201  # a create is never retried: it went out on a new one
    assert server.connections == 2
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("method", "tries"), [("GET", 4), ("PUT", 4), ("DELETE", 4), ("POST", 1), ("PATCH", 1)]
)
def test_a_request_broken_after_it_was_sent_is_repeated_only_when_safe(
    served: Callable[[Reply], Scripted], method: str, tries: int
) -> None:
    server = served(lambda _head, _body: None)  # hangs up without an answer
    with pytest.raises(RequestBrokenError):
        call(plain(server), method, b"{}")
    assert len(server.requests) == tries  # urllib3's three retries, for the methods safe to repeat


def test_nothing_listening_is_a_connect_failure_after_the_retries() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
    connections = Connections(Target.of(f"http://127.0.0.1:{port}"), None, server_hostname=None, keep=1)
    with pytest.raises(ConnectFailedError):
        call(connections, "POST", b"{}")


@pytest.mark.parametrize(("method", "tries"), [("GET", 2), ("POST", 1)])
def test_retry_after_is_waited_out_only_for_a_safe_method(
    served: Callable[[Reply], Scripted], method: str, tries: int
) -> None:
    answers = iter([answer(429, b"{}", "Retry-After: 1"), answer(200, b"{}")])
    server = served(lambda _head, _body: next(answers))
    started = time.monotonic()
    status, _ = call(plain(server), method)
    assert len(server.requests) == tries
    assert status == (200 if tries == 2 else 429)
    assert (time.monotonic() - started >= 1.0) == (tries == 2)


def test_a_deadline_bounds_the_retries(served: Callable[[Reply], Scripted]) -> None:
    server = served(lambda _head, _body: answer(503, b"{}", "Retry-After: 5"))
    started = time.monotonic()
    status, _ = call(plain(server), "GET", deadline=time.monotonic() + 1)
    assert status == 503
    assert time.monotonic() - started < 1
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    "raw",
    [b"garbage\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}", b"HTTP/1.1 200 OK\r\nX\r\n\r\n"],
)
def test_a_malformed_or_short_answer_is_a_broken_request(
    served: Callable[[Reply], Scripted], raw: bytes
) -> None:
    server = served(lambda _head, _body: raw)
    with pytest.raises(RequestBrokenError):
        call(plain(server), "POST", b"{}")


@pytest.mark.parametrize(
    ("path", "headers"),
    [
        ("/a b", {}),
        ("/a\r\nX: y", {}),
        ("/a", {"Authorization": "Bearer t\r\nX-Evil: 1"}),
        ("/a", {"A": "\0"}),
    ],
)
def test_a_path_or_header_that_would_smuggle_a_line_is_refused(path: str, headers: dict[str, str]) -> None:
    connections = Connections(Target.of("http://127.0.0.1:1"), None, server_hostname=None, keep=1)
    with pytest.raises(ValueError, match="space, a line break or a NUL"):
        connections.request("GET", path, headers, None, connect_timeout=1, read_timeout=1)


# ----- TLS, through the Transport ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA-less pair of self-signed certificates: one naming 127.0.0.1, one naming another host."""
    where = tmp_path_factory.mktemp("pki")
    for name, san in (("good", "IP:127.0.0.1"), ("other", "DNS:elsewhere.example")):
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", str(where / f"{name}.key"), "-out", str(where / f"{name}.crt"), "-days", "1",
             "-subj", "/CN=test", "-addext", f"subjectAltName={san}"],
            check=True,
            capture_output=True,
        )  # fmt: skip
    return where


def tls_server(pki: Path, name: str, seen: list[str]) -> Scripted:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki / f"{name}.crt", pki / f"{name}.key")

    def reply(head: str, _body: bytes) -> bytes:
        seen.append(head)
        return answer(200, b'{"ok":true}')

    return Scripted(reply, context=context)


def test_the_transport_sends_writes_over_tls_as_the_endpoint_says_who_to_be(pki: Path) -> None:
    seen: list[str] = []
    server = tls_server(pki, "good", seen)
    tokens = iter(["Bearer one", "Bearer two"])
    endpoint = Endpoint(
        host=f"https://127.0.0.1:{server.port}",
        ca_file=str(pki / "good.crt"),
        identity=lambda: Identity(authorization=next(tokens)),
    )
    transport = Transport(endpoint, user_agent="ua")
    for _ in range(2):
        assert transport.call("POST", "/x", body=b"{}", connect_timeout=2, read_timeout=2) == (
            200,
            b'{"ok":true}',
        )
    assert ["Authorization: Bearer one" in seen[0], "Authorization: Bearer two" in seen[1]] == [True, True]
    assert "User-Agent: ua\r\n" in seen[0]
    assert server.connections == 1
    transport.close()
    server.close()


@pytest.mark.parametrize(
    ("name", "ca", "verify"),
    [("other", "other", True), ("good", "other", True)],
    ids=["a certificate for another host", "a certificate of an unknown issuer"],
)
def test_a_server_failing_the_tls_check_gets_no_request(pki: Path, name: str, ca: str, verify: bool) -> None:
    seen: list[str] = []
    server = tls_server(pki, name, seen)
    transport = Transport(
        Endpoint(host=f"https://127.0.0.1:{server.port}", ca_file=str(pki / f"{ca}.crt"), verify=verify)
    )
    with pytest.raises(ConnectFailedError, match="TLS"):
        transport.call("POST", "/x", body=b"{}", connect_timeout=2, read_timeout=2)
    assert seen == []
    server.close()


def test_without_verification_or_with_the_name_check_off_the_server_is_reached(pki: Path) -> None:
    seen: list[str] = []
    server = tls_server(pki, "other", seen)
    host = f"https://127.0.0.1:{server.port}"
    for endpoint in (
        Endpoint(host=host, verify=False),
        Endpoint(host=host, ca_file=str(pki / "other.crt"), assert_hostname=False),
        Endpoint(host=host, ca_file=str(pki / "other.crt"), tls_server_name="elsewhere.example"),
    ):
        assert Transport(endpoint).call("GET", "/x", connect_timeout=2, read_timeout=2)[0] == 200
    assert len(seen) == 3
    server.close()
