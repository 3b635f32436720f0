"""A thin REST transport to the API server on urllib3's connection pool (what client-go's ``rest`` is to
its informers and clients), so nothing on the daemon's path imports the ``kubernetes`` package's
generated models: their import alone is about 30 MiB of a process that needs none of them.

It sends bytes and hands back urllib3 responses (lists and watches, read as they stream) or a status and
the whole body (``call``: the writes, on ``informers.http1``'s lighter connections unless a proxy or
custom retries ask for urllib3): callers decode the JSON into plain dicts and map the status codes to
their own errors (``informers.kube`` for lists and watches, ``taskset.runtime.kube`` for
the writes). Where to connect and who to be come from an ``Endpoint``, made from a kubeconfig or the
Pod's service account by ``informers.kubeconfig``, or from a ``kubernetes`` client's ``Configuration``
(``endpoint_of``). The bearer token and the client certificate are asked of it on every request, so a
token the loader refreshed (an exec plugin's, a projected service account token re-read from its file)
or a client certificate it renewed is used from the next request on.
"""

from __future__ import annotations

import ssl
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast
from urllib.parse import urlencode, urlsplit

import urllib3

from .http1 import Connections, Target

__all__ = [
    "DEFAULT_POOL_SIZE",
    "Endpoint",
    "Identity",
    "StreamObserver",
    "Transport",
    "as_transport",
    "endpoint_of",
]

# Connections kept per API server: every open watch holds one for its life, each worker one while it
# writes; urllib3 opens more past this and drops them afterwards, so size it for both (the daemon does).
DEFAULT_POOL_SIZE: Final = 10


@dataclass(frozen=True)
class Identity:
    """Who a request is sent as: an ``Authorization`` header value and/or a client certificate."""

    authorization: str | None = None
    cert_file: str | None = None
    key_file: str | None = None


def _anonymous() -> Identity:
    return Identity()


@dataclass(frozen=True, kw_only=True)
class Endpoint:
    """Where the API server answers and how to trust it; ``identity`` is asked before every request."""

    host: str
    ca_file: str | None = None
    ca_data: str | None = None
    verify: bool = True
    tls_server_name: str | None = None
    assert_hostname: str | bool | None = None
    proxy: str | None = None
    proxy_headers: Mapping[str, str] | None = None
    identity: Callable[[], Identity] = field(default=_anonymous, compare=False)


# (method, url, HTTP status or 0 for no answer, seconds to the response headers)
StreamObserver = Callable[[str, str, int, float], None]


class Transport:
    """One connection pool to one API server, shared by every thread (urllib3's pool is thread-safe)."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        pool_size: int = DEFAULT_POOL_SIZE,
        user_agent: str = "informers",
        retries: urllib3.Retry | int | bool | None = None,
    ) -> None:
        """``retries``: urllib3's; None keeps urllib3's default, as the ``kubernetes`` client's pool did:
        three tries in all, a connection refused retried for any method, a broken read and a 413, 429 or
        503 with ``Retry-After`` (waited out) only for idempotent ones (GET, PUT, DELETE; never a create
        or a patch). What is left reaches the caller as an error with its status code."""
        self.endpoint: Final = endpoint
        self._retries: Final = retries
        self.host: Final = endpoint.host.rstrip("/")
        self._pool_size: Final = max(pool_size, 1)
        self._user_agent: Final = user_agent
        self._lock: Final = threading.Lock()
        self._manager: urllib3.PoolManager | None = None  # guarded by _lock
        self._certificate: tuple[str | None, str | None] = (None, None)  # the manager's; guarded by _lock
        self._connections: Connections | None = None  # the writes'; guarded by _lock
        self._connections_certificate: tuple[str | None, str | None] = (None, None)
        # The writes' lighter connections speak neither a proxy nor urllib3's custom retries, nor match the
        # server's name against another than the one sent (``assert_hostname`` as a string).
        self._light: Final = (
            not endpoint.proxy and retries is None and not isinstance(endpoint.assert_hostname, str)
        )
        self._stream_observer: StreamObserver | None = None

    def observe_streams(self, observer: StreamObserver) -> None:
        """Report every ``stream`` request (the informers' lists and watches) to ``observer``; the writes
        (``request``) are reported by their client, which knows their resource. Call before sharing."""
        self._stream_observer = observer

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: bytes | None = None,
        content_type: str | None = None,
        timeout: urllib3.Timeout,
        stream: bool = False,
    ) -> urllib3.HTTPResponse:
        """Send one request and return urllib3's response: whole (``stream=False``) or to be read, then
        released, by the caller. Raises urllib3's, ``http.client``'s and ``OSError``'s errors for a
        request that got no answer, as urllib3 does."""
        identity = self.endpoint.identity()
        headers = self._headers(identity, content_type)
        url = self.host + path + ("?" + urlencode(query) if query else "")
        response = self._pool(identity).request(
            method, url, body=body, headers=headers, timeout=timeout, preload_content=not stream
        )
        return cast(urllib3.HTTPResponse, response)  # what a PoolManager's connections answer with

    def call(
        self,
        method: str,
        path: str,
        *,
        body: bytes | None = None,
        content_type: str | None = None,
        connect_timeout: float,
        read_timeout: float,
        deadline: float | None = None,
    ) -> tuple[int, bytes]:
        """Send one request and return its status and whole body. ``deadline`` (``time.monotonic()``)
        bounds the whole request, retries included. Raises ``OSError`` (or urllib3's and ``http.client``'s
        errors, behind a proxy) for a request that got no answer."""
        if not self._light:
            timeout = (
                urllib3.Timeout(connect=connect_timeout, read=read_timeout)
                if deadline is None
                else urllib3.Timeout(total=max(deadline - time.monotonic(), 0.001))
            )
            response = self.request(method, path, body=body, content_type=content_type, timeout=timeout)
            return response.status, response.data
        identity = self.endpoint.identity()
        headers = self._headers(identity, content_type)
        answer = self._writes(identity).request(
            method,
            path,
            headers,
            body,
            connect_timeout=connect_timeout,
            read_timeout=read_timeout,
            deadline=deadline,
        )
        return answer.status, answer.data

    def stream(
        self, path: str, *, query: Sequence[tuple[str, str]], timeout: urllib3.Timeout
    ) -> urllib3.HTTPResponse:
        """A GET whose body the caller reads as it comes (a list, a watch), timed to its headers as
        client-go times a watch, not over the life of the stream."""
        observer = self._stream_observer
        if observer is None:
            return self.request("GET", path, query=query, timeout=timeout, stream=True)
        started = time.monotonic()
        code = 0
        try:
            response = self.request("GET", path, query=query, timeout=timeout, stream=True)
            code = response.status
            return response
        finally:
            url = self.host + path + ("?" + urlencode(query) if query else "")
            observer("GET", url, code, time.monotonic() - started)

    def close(self) -> None:
        """Close the pool's idle connections; a stream still open closes its own when released."""
        with self._lock:
            manager, self._manager = self._manager, None
            connections, self._connections = self._connections, None
        if manager is not None:
            manager.clear()
        if connections is not None:
            connections.close()

    def _headers(self, identity: Identity, content_type: str | None) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": self._user_agent}
        if content_type:
            headers["Content-Type"] = content_type
        if identity.authorization:
            headers["Authorization"] = identity.authorization
        return headers

    def _writes(self, identity: Identity) -> Connections:
        certificate = (identity.cert_file, identity.key_file)
        with self._lock:
            connections = self._connections
            if connections is not None and certificate == self._connections_certificate:
                return connections
            # As ``_pool``: a renewed client certificate is presented by new connections from now on.
            fresh = Connections(
                Target.of(self.host),
                self._tls_context(identity),
                server_hostname=self.endpoint.tls_server_name,
                keep=self._pool_size,
            )
            self._connections, self._connections_certificate = fresh, certificate
        if connections is not None:
            connections.close()
        return fresh

    def _tls_context(self, identity: Identity) -> ssl.SSLContext | None:
        """What urllib3 would check, made once per client certificate."""
        if not Target.of(self.host).tls:
            return None
        endpoint = self.endpoint
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        if endpoint.verify:
            if endpoint.ca_file or endpoint.ca_data:
                context.load_verify_locations(cafile=endpoint.ca_file, cadata=endpoint.ca_data)
            else:
                context.load_default_certs()
            context.check_hostname = endpoint.assert_hostname is not False
        else:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if identity.cert_file:
            context.load_cert_chain(identity.cert_file, identity.key_file)
        return context

    def _pool(self, identity: Identity) -> urllib3.PoolManager:
        certificate = (identity.cert_file, identity.key_file)
        with self._lock:
            manager = self._manager
            if manager is not None and certificate == self._certificate:
                return manager
            # First use, or the loader renewed the client certificate: new connections present the new
            # one; the old pool's connections close as their requests end.
            self._manager, self._certificate = self._new_manager(identity), certificate
            fresh = self._manager
        if manager is not None:
            manager.clear()
        return fresh

    def _new_manager(self, identity: Identity) -> urllib3.PoolManager:
        endpoint = self.endpoint
        options: dict[str, Any] = {
            "maxsize": self._pool_size,
            "cert_reqs": ssl.CERT_REQUIRED if endpoint.verify else ssl.CERT_NONE,
            "ca_certs": endpoint.ca_file,
            "ca_cert_data": endpoint.ca_data,
            "cert_file": identity.cert_file,
            "key_file": identity.key_file,
        }
        if self._retries is not None:
            options["retries"] = self._retries
        if endpoint.assert_hostname is not None:
            options["assert_hostname"] = endpoint.assert_hostname
        if endpoint.tls_server_name:
            options["server_hostname"] = endpoint.tls_server_name
        if not endpoint.proxy:
            return urllib3.PoolManager(**options)
        if urlsplit(endpoint.proxy).scheme.lower().startswith("socks"):
            from urllib3.contrib.socks import SOCKSProxyManager  # noqa: PLC0415  (needs PySocks, rarely used)

            return SOCKSProxyManager(endpoint.proxy, headers=endpoint.proxy_headers, **options)
        return urllib3.ProxyManager(endpoint.proxy, proxy_headers=endpoint.proxy_headers, **options)


def endpoint_of(configuration: Any) -> Endpoint:
    """The ``Endpoint`` of a ``kubernetes.client.Configuration`` as its loaders fill it in (read by name:
    nothing here imports the package). Its refresh hook runs before every request, as the client's own
    ``auth_settings`` runs it, and the certificate files are read after it, so both follow a refresh."""

    def identity() -> Identity:
        bearer = configuration.auth_settings().get("BearerToken") or {}
        return Identity(
            authorization=bearer.get("value") or None,
            cert_file=configuration.cert_file or None,
            key_file=configuration.key_file or None,
        )

    return Endpoint(
        host=str(configuration.host),
        ca_file=configuration.ssl_ca_cert or None,
        ca_data=getattr(configuration, "ca_cert_data", None) or None,
        verify=bool(configuration.verify_ssl),
        tls_server_name=getattr(configuration, "tls_server_name", None) or None,
        assert_hostname=getattr(configuration, "assert_hostname", None),
        proxy=getattr(configuration, "proxy", None) or None,
        proxy_headers=getattr(configuration, "proxy_headers", None) or None,
        identity=identity,
    )


def as_transport(client: Transport | Any) -> Transport:
    """A ``Transport`` as given, or one on the ``Configuration`` of a ``kubernetes`` ``ApiClient`` (tools
    and tests that hold one already; only its configuration is used, its pool size kept). None stays
    None: a controller built for tests of its handlers and queue, which never sends a request."""
    if client is None or isinstance(client, Transport):
        return cast(Transport, client)
    configuration = client.configuration
    size = getattr(configuration, "connection_pool_maxsize", None) or DEFAULT_POOL_SIZE
    return Transport(endpoint_of(configuration), pool_size=size, retries=configuration.retries)
