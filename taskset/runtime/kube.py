"""The controller's writes to the API server, as raw JSON over ``informers.rest``'s transport.

No generated models: bodies are dicts, encoded and decoded with orjson (``informers.kube`` is the read
side, ``informers.kubeconfig`` loads the credentials). Every request goes
through one choke point that applies the client-side rate limit (``--qps``/``--burst``) and reports
verb, resource, code and latency to an injected observer, which feeds the REST client metrics.
"""

from __future__ import annotations

import http.client
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import msgspec
import orjson
import urllib3

from informers.kubeconfig import load_endpoint
from informers.rest import Transport, as_transport
from taskset.api.constants import GROUP, PLURAL, VERSION
from taskset.objects.owned import ObjectKind

__all__ = [
    "KubeClient",
    "KubeError",
    "RateLimiter",
    "RequestObserver",
    "Response",
    "Transport",
    "build_api_client",
    "core_path",
    "taskset_path",
]

CONNECT_TIMEOUT: Final = 10.0  # seconds to open a connection
REQUEST_TIMEOUT: Final = 30.0  # seconds a write may take; the API server's own default is 60 s


# Admission denials (403) that clear up without a change to the request, so a Pod create retries them:
# * a quota, once other Pods finish;
# * the ServiceAccount plugin's "error looking up service account", until the Pod's service account
#   exists. kube-controller-manager creates a namespace's "default" one moments after the namespace (the
#   plugin itself looks for that one 10 times before refusing; a chaos test's TaskSet, created right after
#   its namespace, still met the refusal and ended Failed), and a user may apply a service account and a
#   TaskSet that names it in either order;
# * the quota plugin's "status unknown for quota", while kube-controller-manager has not yet computed a
#   new ResourceQuota's usage.
# Every other 403 (PodSecurity admission, a webhook's or a policy's denial, RBAC) is lasting: the same
# Pod is refused again until someone changes the namespace or the TaskSet (docs/user-manual.md,
# "When the API server refuses a Pod").
TRANSIENT_DENIALS: Final = (
    "exceeded quota",
    "status unknown for quota",
    "error looking up service account",
)
TOO_LARGE: Final = "request is too large"  # etcd's refusal of a write over its --max-request-bytes


class KubeError(Exception):
    """A failed request: ``code`` is the HTTP status, 0 for transport failures (no answer at all)."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(f"{code} {reason}: {message}")
        self.code = code
        self.reason = reason
        self.message = message

    @property
    def not_found(self) -> bool:
        return self.code == 404

    @property
    def already_exists(self) -> bool:
        return self.code == 409 and self.reason == "AlreadyExists"

    @property
    def conflict(self) -> bool:
        return self.code == 409 and self.reason != "AlreadyExists"

    @property
    def invalid(self) -> bool:
        """Retrying the same request cannot succeed: a 422, a 400, or an admission denial that does not
        clear up by itself (``TRANSIENT_DENIALS``)."""
        if self.code in (400, 422):
            return True
        return self.code == 403 and not any(text in self.message for text in TRANSIENT_DENIALS)

    @property
    def denied_for_now(self) -> bool:
        """An admission denial that clears up without a change to the request (``TRANSIENT_DENIALS``):
        a wait to retry with backoff, and to say in the TaskSet's status."""
        return self.code == 403 and not self.invalid

    @property
    def too_large(self) -> bool:
        """The object is over a size limit: the API server's own (413), or etcd's request limit, which
        API servers still report as a 500 with etcd's words (kubernetes/kubernetes#112152)."""
        return self.code == 413 or TOO_LARGE in self.message


RequestObserver = Callable[[str, str, int, float], None]  # (verb, resource, code, seconds)
# What a request's caller reads of a successful answer, from its bytes. The API server answers a write
# with the whole object: the deleted Pod, the created Event, the TaskSet with the status just written
# (up to the status budget, a megabyte). Decoding what nobody reads was a part of every pass's cost.
Reader = Callable[[bytes], Any]


class _Version(msgspec.Struct):
    resourceVersion: str = ""  # noqa: N815 (the API's own name)


class _VersionOnly(msgspec.Struct):
    metadata: _Version = msgspec.field(default_factory=_Version)


_VERSION_DECODER: Final = msgspec.json.Decoder(_VersionOnly)


def read_whole(raw: bytes) -> Any:
    """The answer decoded whole: a dict for a JSON object."""
    return _decode(raw)


def read_nothing(raw: bytes) -> None:
    """The answer is not read (its status code says all the caller needs)."""
    return None


def read_version(raw: bytes) -> dict[str, Any]:
    """``{"metadata": {"resourceVersion": ...}}`` of an answered object, nothing else decoded; ``{}`` for
    an answer without a non-empty string there (never from a real API server, whose writes answer with
    the object). No version is made up: an empty one would make the next write unconditional."""
    try:
        version = _VERSION_DECODER.decode(raw).metadata.resourceVersion
    except (msgspec.ValidationError, msgspec.DecodeError):
        return {}
    return {"metadata": {"resourceVersion": version}} if version else {}


class RateLimiter:
    """A token bucket (client-go's flowcontrol): ``qps`` per second, bursts of ``burst``; qps 0 = off."""

    def __init__(self, qps: float, burst: int) -> None:
        self._qps = qps
        self._burst = max(burst, 1)
        self._tokens = float(self._burst)
        self._last = time.monotonic()
        self._lock = threading.Lock()

    def wait(self) -> None:
        if self._qps <= 0:
            return
        with self._lock:
            now = time.monotonic()
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
            self._last = now
            self._tokens -= 1
            delay = -self._tokens / self._qps if self._tokens < 0 else 0.0
        if delay > 0:
            time.sleep(delay)


@dataclass(frozen=True)
class Response:
    code: int
    body: Any


def _no_observer(verb: str, resource: str, code: int, seconds: float) -> None:
    return None


# The field manager of the controller's server-side applies (``KubeClient.apply_status``), and the
# User-Agent of every request (what the API server's audit log and metrics name the controller by).
APPLY_FIELD_MANAGER: Final = "taskset-controller"
USER_AGENT: Final = "taskset-controller"


class KubeClient:
    """Raw REST calls the reconciler needs: create, get, delete with preconditions, status updates, events.

    ``api_client``: a ``Transport``, or a ``kubernetes`` ``ApiClient`` whose configuration one is made from.
    """

    def __init__(
        self,
        api_client: Any,
        *,
        qps: float = 0.0,
        burst: int = 1,
        observer: RequestObserver = _no_observer,
    ) -> None:
        self._api = as_transport(api_client)
        self._limiter = RateLimiter(qps, burst)
        self._observe = observer

    # ----- generic ---------------------------------------------------------------------------------------
    def request(
        self,
        method: str,
        path: str,
        *,
        resource: str,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | None = None,
        read: Reader = read_whole,
    ) -> Response:
        """Send one request; return the 2xx body as ``read`` decodes it, or raise ``KubeError`` (whose
        ``Status`` is always decoded whole).

        ``timeout`` bounds the whole request in seconds (connect and read); without it the connect and
        read timeouts above apply. Leader election uses it so no renewal outlives its deadline.
        """
        self._limiter.wait()
        started = time.monotonic()
        code = 0
        try:
            code, raw = self._send(method, path, body, content_type, timeout)
        finally:
            self._observe(method, resource, code, time.monotonic() - started)
        if 200 <= code < 300:
            return Response(code, read(raw) if raw else None)
        payload = _decode(raw)
        status = payload if isinstance(payload, dict) else {}
        raise KubeError(code, str(status.get("reason", "")), str(status.get("message", payload)))

    def _send(
        self, method: str, path: str, body: Any, content_type: str, timeout: float | None = None
    ) -> tuple[int, bytes]:
        data = orjson.dumps(body) if body is not None else None
        try:
            code, payload = self._api.call(
                method,
                path,
                body=data,
                content_type=content_type,
                connect_timeout=CONNECT_TIMEOUT,
                read_timeout=REQUEST_TIMEOUT,
                deadline=None if timeout is None else time.monotonic() + timeout,
            )
        except (urllib3.exceptions.HTTPError, OSError, http.client.HTTPException) as err:
            raise KubeError(0, "TransportError", str(err)) from err
        return code, payload

    # ----- objects ---------------------------------------------------------------------------------------
    def create(
        self, path: str, obj: Mapping[str, Any], *, resource: str, read: Reader = read_whole
    ) -> dict[str, Any]:
        """The created object, as ``read`` decodes it (``read_nothing``: None)."""
        created: dict[str, Any] = self.request("POST", path, resource=resource, body=obj, read=read).body
        return created

    def get(self, path: str, *, resource: str) -> dict[str, Any] | None:
        try:
            obj: dict[str, Any] = self.request("GET", path, resource=resource).body
        except KubeError as err:
            if err.not_found:
                return None
            raise
        return obj

    def delete(
        self, path: str, *, uid: str, resource: str, propagation: str | None = None, force: bool = False
    ) -> None:
        """Delete only the object with this UID (a 409 Conflict means another object holds the name);
        ``force``: with grace period 0, not waiting for a kubelet's confirmation."""
        options: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": uid}}
        if propagation:
            options["propagationPolicy"] = propagation
        if force:
            options["gracePeriodSeconds"] = 0
        self.request("DELETE", path, resource=resource, body=options, read=read_nothing)

    def apply_status(self, kind: ObjectKind, namespace: str, name: str, body: Mapping[str, Any]) -> None:
        """Server-side apply of part of an object's status (its ``/status``) as the controller's field
        manager, forced: only what ``body`` holds becomes the controller's (a Kueue
        Workload's ``Finished`` condition; its list is a map by type, so Kueue's own conditions stay
        Kueue's). Idempotent: applying the same again changes nothing."""
        path = namespaced_path(kind.group, kind.version, kind.plural, namespace, name)
        query = f"/status?fieldManager={APPLY_FIELD_MANAGER}&force=true"
        content_type = "application/apply-patch+yaml"  # JSON is YAML
        self.request(
            "PATCH",
            path + query,
            resource=f"{kind.plural}/status",
            body=body,
            content_type=content_type,
            read=read_nothing,
        )

    def replace_status(
        self, namespace: str, name: str, resource_version: str, status: Mapping[str, Any]
    ) -> dict[str, Any]:
        """PUT a TaskSet's whole status through /status, guarded by ``resource_version`` (409 if stale).
        Returns only the written object's ``metadata.resourceVersion``, all the caller reads. An answer
        without one is a failed write (``KubeError``): the next, still on the version before, meets a
        conflict and reads the live object."""
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "TaskSet",
            "metadata": {"name": name, "namespace": namespace, "resourceVersion": resource_version},
            "status": status,
        }
        answer = self.request(
            "PUT",
            f"{taskset_path(namespace, name)}/status",
            resource="tasksets/status",
            body=body,
            read=read_version,
        )
        if not answer.body:
            raise KubeError(
                answer.code, "NoResourceVersion", "the status write's answer holds no resourceVersion"
            )
        updated: dict[str, Any] = answer.body
        return updated


def build_api_client(
    *, kubeconfig: str, api_server: str, pool_size: int, environ: Mapping[str, str] = os.environ
) -> tuple[Transport, str]:
    """The transport, and a description of where its credentials came from (for the log).

    Kubeconfig if given; else the API server URL alone (no credentials: for ``kubectl proxy``); else
    in-cluster, else ``$KUBECONFIG`` / ``~/.kube/config``. ``api_server`` always overrides the host.
    Raises ``ValueError`` naming what could not be used.
    """
    endpoint, source = load_endpoint(kubeconfig=kubeconfig, api_server=api_server, environ=environ)
    return Transport(endpoint, pool_size=pool_size, user_agent=USER_AGENT), source


def taskset_path(namespace: str, name: str | None = None) -> str:
    base = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}"
    return f"{base}/{name}" if name else base


def core_path(namespace: str, plural: str, name: str | None = None) -> str:
    base = f"/api/v1/namespaces/{namespace}/{plural}"
    return f"{base}/{name}" if name else base


def namespaced_path(group: str, version: str, plural: str, namespace: str, name: str | None = None) -> str:
    """The path of a namespaced object (or its collection) of any group; "" is the core group."""
    if not group:
        return core_path(namespace, plural, name)
    base = f"/apis/{group}/{version}/namespaces/{namespace}/{plural}"
    return f"{base}/{name}" if name else base


def _decode(raw: bytes | str | None) -> Any:
    """JSON decoded whole; text that is not JSON as a string (a proxy's error page)."""
    if not raw:
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw if isinstance(raw, str) else raw.decode("utf-8", errors="replace")
