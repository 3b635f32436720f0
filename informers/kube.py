"""The ``ListerWatcher`` for a real API server, over ``informers.rest``'s transport, as raw JSON.

Responses are read as they come (``stream``) and each watch line is decoded once: whole with ``orjson``,
or, for a collection whose cache keeps a known part of each object, into that part alone
(``informers.pruned``). No generated model is ever built or imported (``informers.kubeconfig`` loads
the credentials).

Timeouts: every request has a connect timeout and a read timeout. For watches the read timeout is a
per-read inactivity limit, set a little above the API server's bookmark interval (about a minute): a
healthy watch always has something to say within it, so silence means a dead connection (half-open TCP
hangs forever otherwise; kubernetes-client/python#1148). The server-side ``timeoutSeconds`` comes from the
reflector (randomized in [300, 600) s by default).
"""

from __future__ import annotations

import builtins
import http.client
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

import orjson
import urllib3

from .listwatch import (
    ApiError,
    ListerWatcherFactory,
    ListOptions,
    ListResult,
    RawObject,
    RawStatus,
    Resource,
    TransportError,
    WatchEvent,
    WatchTarget,
)
from .pruned import PrunedDecoder, decode_whole_event
from .rest import as_transport

__all__ = [
    "KubeListerWatcher",
    "KubeSettings",
    "collection_path",
    "lister_watcher_factory",
    "parse_watch_lines",
]

# Largest read per call; the API server flushes each watch event as its own chunk, so this rarely binds.
READ_CHUNK_BYTES: Final = 64 * 1024


@dataclass(frozen=True, kw_only=True)
class KubeSettings:
    connect_timeout: float = 10.0
    """Seconds to establish a connection (TCP + TLS)."""

    watch_read_timeout: float = 70.0
    """Seconds a watch may stay silent before the connection is presumed dead and the watch reopened.
    The API server sends a bookmark about every 60 s, and keeps ~75 s of recent events in its watch cache,
    so 70 s notices a dead peer without losing the place (kopf#1268 settled on the same value)."""

    list_read_timeout: float = 60.0
    """Seconds a LIST may stay silent while the server assembles or sends a page."""


def collection_path(target: WatchTarget) -> str:
    """``/api/v1/namespaces/ns/pods``, ``/apis/group/version/plural``, ..."""
    resource = target.resource
    base = f"/apis/{resource.group}/{resource.version}" if resource.group else f"/api/{resource.version}"
    if target.namespace:
        base += f"/namespaces/{target.namespace}"
    return f"{base}/{resource.plural}"


class KubeListerWatcher:
    """Lists and watches one ``WatchTarget`` on the API server of ``api_client``: a ``Transport``, or a
    ``kubernetes`` ``ApiClient`` whose configuration one is made from (``informers.rest.as_transport``)."""

    def __init__(
        self,
        *,
        api_client: Any,
        target: WatchTarget,
        settings: KubeSettings | None = None,
        decoder: PrunedDecoder | None = None,
    ) -> None:
        """``decoder``: builds only what the target's cache keeps of each object (``informers.pruned``);
        without one, objects are decoded whole."""
        self._api: Final = as_transport(api_client)
        self._target: Final = target
        self._settings: Final = settings or KubeSettings()
        self._path: Final = collection_path(target)
        self._decoder: Final = decoder

    def list(self, options: ListOptions) -> ListResult:
        query: list[tuple[str, str]] = []
        if options.resource_version:
            query.append(("resourceVersion", options.resource_version))
        if options.resource_version_match:
            query.append(("resourceVersionMatch", options.resource_version_match))
        if options.limit:
            query.append(("limit", str(options.limit)))
        if options.continue_token:
            query.append(("continue", options.continue_token))
        response = self._get(query + self._selectors(), self._settings.list_read_timeout)
        try:
            body = response.data
        except (urllib3.exceptions.HTTPError, OSError, http.client.HTTPException) as err:
            raise TransportError(f"reading list of {self._target}: {err}") from err
        finally:
            response.release_conn()
        pruned = self._decoder.page(body) if self._decoder is not None else None
        try:
            decoded = orjson.loads(body) if pruned is None else pruned
        except orjson.JSONDecodeError as err:
            raise TransportError(f"undecodable list of {self._target}: {err}") from err
        if not isinstance(decoded, dict):
            raise TransportError(f"list of {self._target} is not an object")
        items: list[RawObject] = decoded.get("items") or []
        # Items of a list carry no kind/apiVersion, watch events do; fill them in so cached objects look
        # the same whichever way they arrived.
        kind = str(decoded.get("kind", ""))
        api_version = decoded.get("apiVersion")
        if kind.endswith("List") and api_version:
            item_kind = kind.removesuffix("List")
            for item in items:
                if isinstance(item, dict):
                    item.setdefault("kind", item_kind)
                    item.setdefault("apiVersion", api_version)
        meta = decoded.get("metadata") or {}
        return ListResult(
            items=items,
            resource_version=meta.get("resourceVersion", ""),
            continue_token=meta.get("continue", ""),
            shard_selector=(meta.get("shardInfo") or {}).get("selector", ""),
        )

    def watch(
        self, *, resource_version: str, timeout_seconds: int, allow_bookmarks: bool
    ) -> _KubeWatchStream:
        query = [("watch", "true"), ("timeoutSeconds", str(timeout_seconds))]
        if resource_version:
            query.append(("resourceVersion", resource_version))
        if allow_bookmarks:
            query.append(("allowWatchBookmarks", "true"))
        response = self._get(query + self._selectors(), self._settings.watch_read_timeout)
        decode = decode_whole_event if self._decoder is None else self._decoder.event
        return _KubeWatchStream(response, str(self._target), decode)

    def _selectors(self) -> builtins.list[tuple[str, str]]:
        query = []
        if self._target.label_selector:
            query.append(("labelSelector", self._target.label_selector))
        if self._target.field_selector:
            query.append(("fieldSelector", self._target.field_selector))
        if self._target.shard_selector:
            query.append(("shardSelector", self._target.shard_selector))
        return query

    def _get(self, query: builtins.list[tuple[str, str]], read_timeout: float) -> urllib3.HTTPResponse:
        """Send a GET and return the streaming response of a 2xx, or raise ``ApiError``/``TransportError``."""
        timeout = urllib3.Timeout(connect=self._settings.connect_timeout, read=read_timeout)
        try:
            response = self._api.stream(self._path, query=query, timeout=timeout)
        except (urllib3.exceptions.HTTPError, OSError, http.client.HTTPException) as err:
            raise TransportError(f"GET {self._path}: {err}") from err
        if 200 <= response.status < 300:
            return response
        try:
            body = response.data
        except (urllib3.exceptions.HTTPError, OSError, http.client.HTTPException) as err:
            raise TransportError(f"GET {self._path} -> {response.status}, body unreadable: {err}") from err
        finally:
            response.release_conn()
        raise _api_error(response.status, response.reason or "", body)


class _KubeWatchStream:
    """One watch response. ``close`` from another thread shuts the socket down so a blocked read returns."""

    def __init__(
        self, response: urllib3.HTTPResponse, description: str, decode: Callable[[bytes], WatchEvent]
    ) -> None:
        self._response: Final = response
        self._description: Final = description
        self._decode: Final = decode
        self._lock: Final = threading.Lock()
        self._closed = False  # guarded by _lock
        self._reading = False  # a thread is inside __iter__'s body; guarded by _lock
        self._released = False  # the connection went back to the pool; guarded by _lock

    def __iter__(self) -> Iterator[WatchEvent]:
        with self._lock:
            if self._closed:
                self._release_locked(reusable=False)
                return
            self._reading = True
        clean = False
        try:
            yield from parse_watch_lines(self._chunks(), self._decode)
            clean = True
        except TransportError:
            if not self._is_closed():
                raise
        except (urllib3.exceptions.HTTPError, OSError, http.client.HTTPException, ValueError) as err:
            # After close() the socket is shut down under the reader: whatever the read raised is expected.
            if not self._is_closed():
                raise TransportError(f"watch of {self._description} broke: {err}") from err
        finally:
            with self._lock:
                self._reading = False
                self._release_locked(reusable=clean and not self._closed)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if not self._reading:
                self._release_locked(reusable=False)
                return
        try:
            self._response.shutdown()  # urllib3 >= 2.3: shuts the socket for reading, waking the reader
        except (ValueError, RuntimeError, OSError):  # already released: nothing is blocked on it
            return

    def _is_closed(self) -> bool:
        with self._lock:
            return self._closed

    def _release_locked(self, *, reusable: bool) -> None:
        if self._released:
            return
        self._released = True
        if not reusable:
            self._response.close()
        self._response.release_conn()

    def _chunks(self) -> Iterator[bytes]:
        response = self._response
        if response.chunked and response.supports_chunked_reads():
            yield from response.read_chunked(READ_CHUNK_BYTES, decode_content=True)
            return
        while chunk := response.read1(READ_CHUNK_BYTES):
            yield chunk


def parse_watch_lines(
    chunks: Iterable[bytes], decode: Callable[[bytes], WatchEvent] = decode_whole_event
) -> Iterator[WatchEvent]:
    """Split a watch response body into newline-delimited JSON events and ``decode`` each once.

    Raises ``TransportError`` for a line that is not a JSON watch event (a garbled stream is a broken one).
    """
    partial: list[bytes] = []  # pieces of a line split across chunks
    for chunk in chunks:
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            if partial:
                partial.append(chunk[start:end])
                line = b"".join(partial)
                partial.clear()
            else:
                line = chunk[start:end]
            if line and not line.isspace():
                yield decode(line)
            start = end + 1
        if start < len(chunk):
            partial.append(chunk[start:])
    if partial:
        line = b"".join(partial)
        if not line.isspace():
            yield decode(line)


def _api_error(status: int, reason: str, body: bytes) -> ApiError:
    """The ``ApiError`` of an HTTP error response, from its ``Status`` body when it has one."""
    try:
        decoded: Any = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        decoded = None
    if isinstance(decoded, dict) and decoded.get("kind") == "Status":
        status_body: RawStatus = decoded  # type: ignore[assignment]
        return ApiError.from_status(status_body, default_code=status)
    text = body[:200].decode("utf-8", errors="replace") if body else ""
    return ApiError(code=status, reason=reason, message=text)


def lister_watcher_factory(
    api_client: Any, *, settings: KubeSettings | None = None, shapes: Mapping[Resource, Any] | None = None
) -> ListerWatcherFactory:
    """A ``ListerWatcherFactory`` for ``SharedInformerFactory``: every target on the same transport.
    ``shapes``: of a resource whose caches keep only part of each object, that part
    (``informers.pruned``); its objects are decoded into it.

    Size the transport's pool for the watches: at least the number of informers plus worker threads, or
    urllib3 discards and reopens connections.
    """
    api_client = as_transport(api_client)
    decoders = {resource: PrunedDecoder(shape) for resource, shape in (shapes or {}).items()}

    def build(target: WatchTarget) -> KubeListerWatcher:
        decoder = decoders.get(target.resource)
        return KubeListerWatcher(api_client=api_client, target=target, settings=settings, decoder=decoder)

    return build
