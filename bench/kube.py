"""A small, fast API client for the benchmark driver: urllib3 + orjson, no models, no client-side limits.
Kept apart from the controller's own client on purpose: the harness must not share code paths with what
it measures. (The raw reference client limits itself with the controller's own token bucket,
``taskset.runtime.kube.RateLimiter``, so both obey the same QPS/burst semantics.)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import orjson
import urllib3

from devcluster import Cluster
from informers.kube import parse_watch_lines

RawObject = dict[str, Any]
RETRIES_429 = 100
GET_ATTEMPTS = 3  # a GET the API server broke off (under load it sometimes does) is asked again
WATCH_TIMEOUT = 20  # seconds per watch request; short so that stop() is honoured quickly


class ApiError(RuntimeError):
    def __init__(self, method: str, path: str, status: int, body: bytes) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {body[:300]!r}")
        self.status = status


class Api:
    """Admin requests to one embedded control plane; thread-safe (urllib3 pool)."""

    def __init__(self, cluster: Cluster, maxsize: int = 32) -> None:
        self.server = cluster.server
        self.pool = urllib3.PoolManager(
            num_pools=2,
            maxsize=maxsize,
            block=False,
            ca_certs=str(cluster.pki.ca_cert),
            cert_file=str(cluster.pki.admin_cert),
            key_file=str(cluster.pki.admin_key),
            retries=False,
            timeout=urllib3.Timeout(connect=10, read=120),
        )

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        allow: tuple[int, ...] = (),
    ) -> RawObject:
        """The decoded response; ``{}`` for a status in ``allow`` (e.g. 404), ApiError for other errors."""
        data = None if body is None else orjson.dumps(body)
        headers = {"Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        response = self._send(method, path, data, headers)
        for _ in range(RETRIES_429):  # "storage is (re)initializing" just after a CRD is established
            if response.status != 429:
                break
            time.sleep(0.2)
            response = self._send(method, path, data, headers)
        if response.status >= 300:
            if response.status in allow:
                return {}  # an allowed error (e.g. 404 on a delete): no object
            raise ApiError(method, path, response.status, response.data)
        if not response.data:
            return {}
        decoded: RawObject = orjson.loads(response.data)
        return decoded

    def _send(self, method: str, path: str, data: bytes | None, headers: dict[str, str]) -> Any:
        """One request; a GET broken off before its answer was read whole is sent again (it changes
        nothing, so asking twice is safe), so that a run ends on the controller's result, not on the
        driver's lost connection. Other methods are sent once: a write may have been applied."""
        for attempt in range(1, GET_ATTEMPTS + 1):
            try:
                return self.pool.request(method, self.server + path, body=data, headers=headers)
            except urllib3.exceptions.ProtocolError:
                if method != "GET" or attempt == GET_ATTEMPTS:
                    raise
                time.sleep(0.2 * attempt)
        raise AssertionError("unreachable")

    def count(self, path: str, query: str, page: int = 1000) -> int:
        """How many objects ``path`` lists with ``query``, read in pages of ``page``: one list of 10,000
        Pods was 12 MB, and a busy API server sometimes broke it off (the run then ended on the driver's
        error, not the controller's)."""
        count, token = 0, ""
        while True:
            listed = self.request("GET", f"{path}?{query}&{urlencode({'limit': page, 'continue': token})}")
            count += len(listed.get("items") or [])
            token = (listed.get("metadata") or {}).get("continue") or ""
            if not token:
                return count

    def watch(self, path: str, stop: threading.Event) -> Iterator[tuple[str, RawObject]]:
        """List ``path`` (yielding its items as ADDED), then watch it until ``stop`` is set, resuming
        from the last resourceVersion after each timeout. A 410 Gone relists (events may repeat)."""
        listed = self.request("GET", path)
        version = str(listed["metadata"].get("resourceVersion", ""))
        for item in listed.get("items") or []:
            yield "ADDED", item
        while not stop.is_set():
            query = urlencode(
                {
                    "watch": "true",
                    "allowWatchBookmarks": "true",
                    "resourceVersion": version,
                    "timeoutSeconds": str(WATCH_TIMEOUT),
                }
            )
            response = self.pool.request(
                "GET", f"{self.server}{path}?{query}", preload_content=False, timeout=WATCH_TIMEOUT + 10
            )
            try:
                if response.status != 200:
                    time.sleep(0.2)
                    continue
                for event in parse_watch_lines(response.stream(1 << 16)):
                    kind, obj = event["type"], event["object"]
                    if kind == "ERROR":
                        if obj.get("code") == 410:  # relist
                            listed = self.request("GET", path)
                            version = str(listed["metadata"].get("resourceVersion", ""))
                            for item in listed.get("items") or []:
                                yield "ADDED", item
                        break
                    version = str(obj.get("metadata", {}).get("resourceVersion", version))
                    if kind == "BOOKMARK":
                        continue
                    yield kind, obj
                    if stop.is_set():
                        return
            finally:
                response.release_conn()
