"""The kubernetes adapter against a local HTTP server: request shapes, raw JSON decoding, error mapping, and a
``close`` that unblocks a reader stuck on a silent watch."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypedDict
from urllib.parse import parse_qsl, urlsplit

import pytest

from informers import ApiError, ListOptions, Resource, TransportError, WatchTarget
from informers.kube import (
    KubeListerWatcher,
    KubeSettings,
    collection_path,
    lister_watcher_factory,
    parse_watch_lines,
)
from informers.rest import Endpoint, Identity, Transport
from informers.testing import eventually

pytestmark = [pytest.mark.unit, pytest.mark.timeout(20)]

PODS = Resource(group="", version="v1", plural="pods")
WIDGETS = Resource(group="example.com", version="v1alpha1", plural="widgets")


@dataclass
class Request:
    path: str
    query: dict[str, str]
    headers: dict[str, str]


Respond = Callable[["_Handler"], None]


@dataclass
class FakeApiServer:
    """Answers every GET with ``respond``; records each request."""

    port: int = 0
    respond: Respond | None = None
    requests: list[Request] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    """Set at teardown, so handlers holding a connection open let go."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def do_GET(self) -> None:
        fake: FakeApiServer = self.server.fake
        url = urlsplit(self.path)
        fake.requests.append(Request(url.path, dict(parse_qsl(url.query)), dict(self.headers)))
        assert fake.respond is not None
        fake.respond(self)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def send_json(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def start_chunked(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()

    def chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_chunked(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    fake = FakeApiServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.fake = fake  # type: ignore[attr-defined]
    fake.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield fake
    fake.release.set()
    httpd.shutdown()
    httpd.server_close()


def api_client(port: int, **options: Any) -> Transport:
    return Transport(Endpoint(host=f"http://127.0.0.1:{port}"), **options)


def lister(port: int, target: WatchTarget | None = None, **settings: float) -> KubeListerWatcher:
    return KubeListerWatcher(
        api_client=api_client(port),
        target=target or WatchTarget(resource=PODS, namespace="ns"),
        settings=KubeSettings(**settings),
    )


def pod(name: str, rv: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": rv}}


def event_line(kind: str, obj: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, "object": obj}).encode() + b"\n"


@pytest.mark.parametrize(
    ("target", "path"),
    [
        pytest.param(
            WatchTarget(resource=PODS, namespace="ns"), "/api/v1/namespaces/ns/pods", id="core, one namespace"
        ),
        pytest.param(WatchTarget(resource=PODS), "/api/v1/pods", id="core, all namespaces"),
        pytest.param(
            WatchTarget(resource=WIDGETS, namespace="ns"),
            "/apis/example.com/v1alpha1/namespaces/ns/widgets",
            id="a group resource in one namespace",
        ),
        pytest.param(
            WatchTarget(resource=WIDGETS), "/apis/example.com/v1alpha1/widgets", id="a group resource"
        ),
    ],
)
def test_collection_path(target: WatchTarget, path: str) -> None:
    assert collection_path(target) == path


def test_list_sends_the_options_and_returns_raw_items_with_their_kind(server: FakeApiServer) -> None:
    server.respond = lambda h: h.send_json(
        200,
        {
            "kind": "PodList",
            "apiVersion": "v1",
            "metadata": {"resourceVersion": "42", "continue": "next-page"},
            "items": [pod("a", "40"), pod("b", "41")],
        },
    )
    target = WatchTarget(
        resource=PODS, namespace="ns", label_selector="app=web,tier!=db", field_selector="a=b"
    )

    result = lister(server.port, target).list(
        ListOptions(resource_version="40", resource_version_match="NotOlderThan", limit=2, continue_token="")
    )

    assert result.resource_version == "42"
    assert result.continue_token == "next-page"
    assert result.items == [
        {**pod("a", "40"), "kind": "Pod", "apiVersion": "v1"},
        {**pod("b", "41"), "kind": "Pod", "apiVersion": "v1"},
    ]
    request = server.requests[0]
    assert request.path == "/api/v1/namespaces/ns/pods"
    assert request.query == {
        "resourceVersion": "40",
        "resourceVersionMatch": "NotOlderThan",
        "limit": "2",
        "labelSelector": "app=web,tier!=db",
        "fieldSelector": "a=b",
    }
    assert request.headers["Accept"] == "application/json"


def test_a_consistent_list_sends_no_resource_version(server: FakeApiServer) -> None:
    server.respond = lambda h: h.send_json(
        200, {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": []}
    )

    result = lister(server.port).list(ListOptions(continue_token="tok", limit=5))

    assert server.requests[0].query == {"limit": "5", "continue": "tok"}
    assert (result.items, result.resource_version, result.continue_token) == ([], "", "")


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        pytest.param(
            410,
            {
                "kind": "Status",
                "code": 410,
                "reason": "Expired",
                "message": "too old resource version: 1 (9)",
            },
            (410, "Expired", True),
            id="a Status body becomes the error",
        ),
        pytest.param(
            429,
            {"kind": "Status", "code": 429, "reason": "TooManyRequests", "details": {"retryAfterSeconds": 2}},
            (429, "TooManyRequests", False),
            id="a 429 keeps its reason",
        ),
        pytest.param(
            503, "upstream down", (503, "Service Unavailable", False), id="a non-Status body keeps the code"
        ),
    ],
)
def test_http_errors_become_api_errors(
    status: int, body: Any, expected: tuple[int, str, bool], server: FakeApiServer
) -> None:
    server.respond = lambda h: h.send_json(status, body)

    with pytest.raises(ApiError) as raised:
        lister(server.port).list(ListOptions())

    assert (raised.value.code, raised.value.reason, raised.value.is_expired) == expected


def test_watch_streams_raw_events_split_across_chunks(server: FakeApiServer) -> None:
    lines = [
        event_line("ADDED", pod("a", "11")),
        event_line("BOOKMARK", {"kind": "Pod", "metadata": {"resourceVersion": "12"}}),
        event_line("ERROR", {"kind": "Status", "code": 410, "reason": "Expired"}),
    ]
    body = b"".join(lines)

    def respond(h: _Handler) -> None:
        h.start_chunked()
        for start in range(0, len(body), 7):  # chunk boundaries fall inside lines
            h.chunk(body[start : start + 7])
        h.end_chunked()

    server.respond = respond

    stream = lister(server.port).watch(resource_version="10", timeout_seconds=321, allow_bookmarks=True)
    events = list(stream)

    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK", "ERROR"]
    assert events[0]["object"] == pod("a", "11")
    assert server.requests[0].query == {
        "watch": "true",
        "timeoutSeconds": "321",
        "resourceVersion": "10",
        "allowWatchBookmarks": "true",
    }


def test_a_watch_refused_with_a_status_raises_api_error(server: FakeApiServer) -> None:
    server.respond = lambda h: h.send_json(403, {"kind": "Status", "code": 403, "reason": "Forbidden"})

    with pytest.raises(ApiError) as raised:
        lister(server.port).watch(resource_version="1", timeout_seconds=5, allow_bookmarks=False)

    assert raised.value.code == 403


def silent_watch(server: FakeApiServer) -> None:
    """Serve one event, then keep the connection open and say nothing more."""

    def respond(h: _Handler) -> None:
        h.start_chunked()
        h.chunk(event_line("ADDED", pod("a", "11")))
        server.release.wait(15)

    server.respond = respond


def test_close_unblocks_a_reader_waiting_on_a_silent_watch(server: FakeApiServer) -> None:
    silent_watch(server)
    stream = lister(server.port).watch(resource_version="10", timeout_seconds=300, allow_bookmarks=True)
    received: list[Any] = []
    errors: list[BaseException] = []

    def read() -> None:
        try:
            received.extend(stream)
        except BaseException as err:
            errors.append(err)

    reader = threading.Thread(target=read)
    reader.start()
    eventually(lambda: received)

    stream.close()
    reader.join(2.0)

    assert not reader.is_alive()
    assert errors == []
    assert [e["object"]["metadata"]["name"] for e in received] == ["a"]


def test_a_silent_connection_times_out_as_a_transport_error(server: FakeApiServer) -> None:
    silent_watch(server)
    stream = lister(server.port, watch_read_timeout=0.3).watch(
        resource_version="10", timeout_seconds=300, allow_bookmarks=True
    )

    events = iter(stream)
    assert next(events)["type"] == "ADDED"
    with pytest.raises(TransportError, match="broke"):
        next(events)


def test_nothing_listening_is_a_transport_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = KubeListerWatcher(
        api_client=api_client(port, retries=False),
        target=WatchTarget(resource=PODS, namespace="ns"),
        settings=KubeSettings(connect_timeout=1.0),
    )

    with pytest.raises(TransportError):
        client.watch(resource_version="1", timeout_seconds=5, allow_bookmarks=True)


@pytest.mark.parametrize(
    ("chunks", "types"),
    [
        pytest.param([b'{"type":"ADDED","object":{}}\n'], ["ADDED"], id="one event per chunk"),
        pytest.param(
            [b'{"type":"ADDED","object":{}}\n{"type":"DELETED","object":{}}\n'],
            ["ADDED", "DELETED"],
            id="two events in one chunk",
        ),
        pytest.param(
            [b'{"type":"ADD', b'ED","obj', b'ect":{}}\n'], ["ADDED"], id="one event over three chunks"
        ),
        pytest.param([b'\n{"type":"ADDED","object":{}}\n\n  \n'], ["ADDED"], id="blank lines are skipped"),
        pytest.param(
            [b'{"type":"BOOKMARK","object":{}}'], ["BOOKMARK"], id="a last line without newline counts"
        ),
    ],
)
def test_parse_watch_lines(chunks: list[bytes], types: list[str]) -> None:
    assert [e["type"] for e in parse_watch_lines(chunks)] == types


@pytest.mark.parametrize(
    "chunk",
    [
        pytest.param(b"{not json}\n", id="undecodable JSON"),
        pytest.param(b'["a list"]\n', id="JSON that is not an event"),
    ],
)
def test_a_garbled_watch_line_is_a_transport_error(chunk: bytes) -> None:
    with pytest.raises(TransportError):
        list(parse_watch_lines([chunk]))


def test_every_request_asks_the_endpoint_who_to_be(server: FakeApiServer) -> None:
    """A token the loader refreshed is sent from the next request on; a renewed client certificate gets a
    new pool (the old one's connections would still present the old certificate)."""
    server.respond = lambda h: h.send_json(200, {"kind": "PodList", "apiVersion": "v1", "items": []})
    identities = iter(
        [
            Identity(authorization="Bearer one"),
            Identity(authorization="Bearer two"),
            Identity(authorization="Bearer two", cert_file=None, key_file="renewed.key"),
        ]
    )
    transport = Transport(Endpoint(host=f"http://127.0.0.1:{server.port}", identity=lambda: next(identities)))
    listed = KubeListerWatcher(api_client=transport, target=WatchTarget(resource=PODS, namespace="ns"))

    listed.list(ListOptions())
    first_pool = transport._pool(Identity(authorization="Bearer one"))
    listed.list(ListOptions())

    assert [r.headers["Authorization"] for r in server.requests] == ["Bearer one", "Bearer two"]
    assert server.requests[0].headers["User-Agent"] == "informers"
    assert transport._pool(Identity()) is first_pool
    listed.list(ListOptions(limit=1))
    renewed = Identity(key_file="renewed.key")
    assert transport._pool(renewed) is not first_pool
    assert transport._pool(renewed) is transport._pool(renewed)


def test_a_kubernetes_api_client_is_used_through_its_configuration(server: FakeApiServer) -> None:
    from kubernetes.client import ApiClient, Configuration  # noqa: PLC0415  (tools and tests hold one)

    server.respond = lambda h: h.send_json(200, {"kind": "PodList", "apiVersion": "v1", "items": []})
    configuration = Configuration(host=f"http://127.0.0.1:{server.port}")
    configuration.api_key["BearerToken"] = "Bearer from-configuration"
    listed = KubeListerWatcher(api_client=ApiClient(configuration), target=WatchTarget(resource=PODS))

    assert listed.list(ListOptions()).items == []
    assert server.requests[0].headers["Authorization"] == "Bearer from-configuration"
    assert server.requests[0].path == "/api/v1/pods"


# What a cache of Pods keeps in this test: their names, and one label.
class _Kept(TypedDict, total=False):
    keep: str


class _NamesMeta(TypedDict, total=False):
    name: str
    labels: _Kept


class _NamesShape(TypedDict, total=False):
    metadata: _NamesMeta


def test_a_shaped_resource_is_listed_and_watched_into_its_shape_and_others_whole(
    server: FakeApiServer,
) -> None:
    """``lister_watcher_factory``'s ``shapes``: Pods arrive as the shape (a list's items filled in with their
    kind as before), a bookmark whole; a resource without a shape arrives whole."""
    whole = {"metadata": {"name": "a", "namespace": "ns", "labels": {"keep": "1", "drop": "2"}}, "spec": {}}
    watched = event_line("ADDED", whole) + event_line("BOOKMARK", {"metadata": {"resourceVersion": "12"}})

    def respond(h: _Handler) -> None:
        if "watch" not in h.path:
            h.send_json(
                200,
                {
                    "kind": "PodList",
                    "apiVersion": "v1",
                    "metadata": {"resourceVersion": "9"},
                    "items": [whole],
                },
            )
            return
        h.start_chunked()
        h.chunk(watched)
        h.end_chunked()

    server.respond = respond
    build = lister_watcher_factory(api_client(server.port), shapes={PODS: _NamesShape})
    pruned = {"metadata": {"name": "a", "labels": {"keep": "1"}}}

    pods = build(WatchTarget(resource=PODS, namespace="ns"))
    assert pods.list(ListOptions()).items == [{**pruned, "kind": "Pod", "apiVersion": "v1"}]
    events = list(pods.watch(resource_version="9", timeout_seconds=5, allow_bookmarks=True))
    assert [e["object"] for e in events] == [pruned, {"metadata": {"resourceVersion": "12"}}]

    widgets = build(WatchTarget(resource=WIDGETS, namespace="ns"))
    (first, *_) = widgets.watch(resource_version="9", timeout_seconds=5, allow_bookmarks=False)
    assert first["object"] == whole
