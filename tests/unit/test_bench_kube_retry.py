"""The benchmark driver asks a GET again when the API server broke the connection off before answering
(a run once ended on the driver's ``RemoteDisconnected``, not on the controller's result), and never a
write, which may have been applied. A loopback server plays the API server: it drops the first
``drops`` connections it is asked on without a word, then answers."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import urllib3

from bench.kube import GET_ATTEMPTS, Api

pytestmark = pytest.mark.unit


class Dropping(ThreadingHTTPServer):
    daemon_threads = True
    drops = 0
    seen: list[str]


class Handler(BaseHTTPRequestHandler):
    server: Dropping

    def _answer(self) -> None:
        self.server.seen.append(self.command)
        if self.server.drops > 0:
            self.server.drops -= 1
            self.close_connection = True  # no status line: the client reads a closed connection
            return
        body = b'{"items": [{}, {}], "metadata": {}}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[Dropping]:
    httpd = Dropping(("127.0.0.1", 0), Handler)
    httpd.seen = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


def api_for(server: Dropping) -> Api:
    api = Api.__new__(Api)
    api.server = f"http://127.0.0.1:{server.server_address[1]}"
    api.pool = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=5, read=5))
    return api


@pytest.mark.parametrize("drops", [1, GET_ATTEMPTS - 1])
def test_a_get_broken_off_is_asked_again_and_counted_once(server: Dropping, drops: int) -> None:
    server.drops = drops
    assert api_for(server).count("/api/v1/pods", "labelSelector=x") == 2
    assert server.seen == ["GET"] * (drops + 1)


def test_a_get_broken_off_every_time_ends_on_the_error(server: Dropping) -> None:
    server.drops = GET_ATTEMPTS
    with pytest.raises(urllib3.exceptions.ProtocolError):
        api_for(server).request("GET", "/api/v1/pods")
    assert server.seen == ["GET"] * GET_ATTEMPTS


def test_a_write_broken_off_is_not_sent_twice(server: Dropping) -> None:
    server.drops = 1
    with pytest.raises(urllib3.exceptions.ProtocolError):
        api_for(server).request("POST", "/api/v1/namespaces/n/configmaps", {"metadata": {"name": "x"}})
    assert server.seen == ["POST"]
