"""The port to the API server: list a collection page by page, and watch it from a resource version.

Everything crossing this port is raw JSON (``dict``/``list``/``str``), never client models: decoding a pod
into a model costs ~16x a plain JSON decode and ~2x the memory (``python-ecosystem.md`` §2.3). Errors
cross it as ``ApiError`` (the server answered with a ``Status``) or ``TransportError`` (it did not), so
fakes can inject 410/429/500 without importing ``kubernetes``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, Protocol, TypedDict

__all__ = [
    "ApiError",
    "EventType",
    "ListOptions",
    "ListResult",
    "ListerWatcher",
    "ListerWatcherFactory",
    "RawMeta",
    "RawObject",
    "RawOwnerReference",
    "RawStatus",
    "RawStatusCause",
    "RawStatusDetails",
    "Resource",
    "SelectionChange",
    "SelectionChangedError",
    "TransportError",
    "WatchEvent",
    "WatchStream",
    "WatchTarget",
    "comparable_resource_version",
]

RawObject = dict[str, Any]
"""A Kubernetes object exactly as decoded from JSON. Once handed to a store it is shared: never mutate it."""

# apimachinery metav1.CauseTypeResourceVersionTooLarge: the server has not caught up with the requested RV.
CAUSE_RESOURCE_VERSION_TOO_LARGE: Final = "ResourceVersionTooLarge"
# Message of servers older than 1.18.6, which flagged the same condition only in text.
TOO_LARGE_RESOURCE_VERSION_MESSAGE: Final = "Too large resource version"
RESOURCE_VERSION_MATCH_NOT_OLDER_THAN: Final = "NotOlderThan"
RESOURCE_VERSION_MATCH_EXACT: Final = "Exact"


def comparable_resource_version(rv: str) -> int | None:
    """``rv`` as a number, or None when it is not one. Since Kubernetes 1.35 the resource versions of one
    resource are positive decimal integers without leading zeros that grow with every write, and may be
    compared (apimachinery's ``CompareResourceVersion``); anything else (an older or a foreign server)
    compares with nothing, and the caller falls back to what does not need to compare."""
    if not rv or rv[0] == "0" or not rv.isascii() or not rv.isdigit():
        return None
    return int(rv)


class RawOwnerReference(TypedDict, total=False):
    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool
    blockOwnerDeletion: bool


class RawMeta(TypedDict, total=False):
    """The ``metadata`` fields this package and its callers read; the JSON may hold more."""

    name: str
    generateName: str
    namespace: str
    uid: str
    resourceVersion: str
    generation: int
    creationTimestamp: str
    deletionTimestamp: str
    labels: dict[str, str]
    annotations: dict[str, str]
    ownerReferences: list[RawOwnerReference]
    finalizers: list[str]
    managedFields: list[dict[str, Any]]


class RawStatusCause(TypedDict, total=False):
    reason: str
    message: str
    field: str


class RawStatusDetails(TypedDict, total=False):
    name: str
    kind: str
    causes: list[RawStatusCause]
    retryAfterSeconds: int


class RawStatus(TypedDict, total=False):
    """A ``metav1.Status``: the body of an HTTP error, or the object of a watch ``ERROR`` event."""

    kind: str
    apiVersion: str
    status: str
    message: str
    reason: str
    code: int
    details: RawStatusDetails


class WatchEvent(TypedDict):
    """One line of a watch stream. ``object`` is a ``RawStatus`` when ``type`` is ``ERROR``."""

    type: str
    object: RawObject


class EventType(StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"
    BOOKMARK = "BOOKMARK"
    ERROR = "ERROR"


class ApiError(Exception):
    """The API server answered with an error ``Status`` (an HTTP error, or a watch ``ERROR`` event)."""

    def __init__(
        self,
        *,
        code: int,
        reason: str = "",
        message: str = "",
        causes: tuple[RawStatusCause, ...] = (),
        retry_after_seconds: int | None = None,
    ) -> None:
        super().__init__(f"{code} {reason}: {message}" if reason else f"{code}: {message}")
        self.code: Final = code
        self.reason: Final = reason
        self.message: Final = message
        self.causes: Final = causes
        self.retry_after_seconds: Final = retry_after_seconds

    @classmethod
    def from_status(cls, status: RawStatus, *, default_code: int = 500) -> ApiError:
        details = status.get("details") or RawStatusDetails()
        return cls(
            code=int(status.get("code") or default_code),
            reason=status.get("reason", ""),
            message=status.get("message", ""),
            causes=tuple(details.get("causes") or ()),
            retry_after_seconds=details.get("retryAfterSeconds"),
        )

    @property
    def is_expired(self) -> bool:
        """410: the resource version (or continue token) is older than the server keeps history for."""
        # Servers up to 1.17 said "Gone", later ones "Expired"; both come with 410 (client-go isExpiredError).
        return self.code == 410 or self.reason in ("Expired", "Gone")

    @property
    def is_too_large_resource_version(self) -> bool:
        """The requested resource version is newer than the server (or its watch cache) has seen."""
        if any(c.get("reason") == CAUSE_RESOURCE_VERSION_TOO_LARGE for c in self.causes):
            return True
        if self.code != 504 and self.reason != "Timeout":
            return False
        return TOO_LARGE_RESOURCE_VERSION_MESSAGE in self.message or any(
            c.get("message") == TOO_LARGE_RESOURCE_VERSION_MESSAGE for c in self.causes
        )

    @property
    def is_too_many_requests(self) -> bool:
        return self.code == 429 or self.reason == "TooManyRequests"

    @property
    def is_internal_error(self) -> bool:
        return self.reason == "InternalError" or (self.code == 500 and not self.reason)


class TransportError(Exception):
    """No ``Status`` came back: connection refused or reset, a read timeout, a broken or garbled stream."""


@dataclass(frozen=True)
class SelectionChange:
    """How a collection's selection moved since its last complete list, so that the reflector can follow it
    without listing again what its store already holds.

    The store holds the old selection at some resource version ``rv``. After the change it must hold the
    new one: the objects ``keeps`` accepts stay (at ``rv``), those it refuses leave (they left the
    selection, not the server), and ``list_added`` lists only what entered the selection, consistently,
    as it is now (the caller passes the options): at some ``fresh`` RV no older than ``rv``. ``commit(fresh)``
    tells the collection the store now holds the new selection, the added part as of ``fresh``: its watch
    may open from ``rv``, and it passes on no event of the added part that is not newer than ``fresh``
    (the store already holds that part as of ``fresh``; replaying older writes would take it back).
    ``gains`` is False when nothing entered the selection (buckets were only given up): there is nothing
    to list. A collection that cannot say (it never listed) raises no change: all is listed.

    Listing the added part at ``rv`` instead would save the comparison, but ``rv`` can be minutes old
    (a collection holding nothing hears nothing): whoever acts as soon as the store follows would then
    see the added part as it was then, not as its previous owner last wrote it.
    """

    keeps: Callable[[RawObject], bool]
    list_added: Callable[[ListOptions], ListResult]
    commit: Callable[[str], None]
    gains: bool = True


class SelectionChangedError(Exception):
    """Raised by a ``ListerWatcher`` whose own selection changed since its last list (a sharded collection
    whose held buckets moved): the cache must follow the new selection. Not a failure of the server or the
    network, so the reflector follows at once, without backing off: the selection changes only when its
    owner decides (a few times per Lease round at most), never in a loop. ``change`` (when given) lets it
    list only what entered the selection instead of everything."""

    def __init__(self, message: str, change: SelectionChange | None = None) -> None:
        super().__init__(message)
        self.change: Final = change


@dataclass(frozen=True, kw_only=True)
class ListOptions:
    """One LIST request. Continuation requests carry ``continue_token`` and no resource version."""

    resource_version: str = ""
    """``""``: a consistent (quorum) read; ``"0"``: any cached state; other: at least this fresh."""

    resource_version_match: str | None = None
    """``"NotOlderThan"`` or ``"Exact"``; only meaningful with a non-empty ``resource_version``."""

    limit: int = 0
    """Page size; 0 asks for everything in one response."""

    continue_token: str = ""


@dataclass(frozen=True, kw_only=True)
class ListResult:
    """One page of a LIST: its items, the collection's resource version, and the token for the next page."""

    items: list[RawObject]
    resource_version: str
    continue_token: str = ""
    shard_selector: str = ""
    """``metadata.shardInfo.selector``: the shard selector the server says it applied; ``""`` if none."""


class WatchStream(Protocol):
    """The events of one WATCH request, in server order. Iteration ends when the server closes the stream.

    Iterating raises ``TransportError`` when the connection breaks. ``ERROR`` events are yielded as they
    come; turning them into ``ApiError`` is the reader's job. ``close`` may be called from any thread, at
    any time, any number of times; it makes a blocked iteration end promptly.
    """

    def __iter__(self) -> Iterator[WatchEvent]: ...

    def close(self) -> None: ...


class ListerWatcher(Protocol):
    """Lists and watches one collection (a resource type, optionally narrowed by namespace and selectors)."""

    def list(self, options: ListOptions) -> ListResult:
        """One page. Raises ``ApiError`` or ``TransportError``."""

    def watch(self, *, resource_version: str, timeout_seconds: int, allow_bookmarks: bool) -> WatchStream:
        """Open a watch from ``resource_version``; the server ends it after ``timeout_seconds``.

        Raises ``ApiError`` or ``TransportError`` when the watch cannot be opened.
        """


@dataclass(frozen=True, kw_only=True)
class Resource:
    """A resource type by group, version and plural name (``group=""`` is the core API)."""

    group: str
    version: str
    plural: str

    def __str__(self) -> str:
        return f"{self.plural}.{self.version}.{self.group}" if self.group else f"{self.plural}.{self.version}"


@dataclass(frozen=True, kw_only=True)
class WatchTarget:
    """Everything that picks one watched collection; informers are shared per distinct value."""

    resource: Resource
    namespace: str | None = None
    """``None`` watches every namespace (or a cluster-scoped resource)."""

    label_selector: str | None = None
    field_selector: str | None = None
    shard_selector: str | None = None
    """``shardSelector`` (KEP-5866, ``informers.shards``); servers without the feature ignore it."""

    def __str__(self) -> str:
        parts = [str(self.resource)]
        if self.namespace:
            parts.append(f"namespace={self.namespace}")
        if self.label_selector:
            parts.append(f"labels={self.label_selector}")
        if self.field_selector:
            parts.append(f"fields={self.field_selector}")
        return " ".join(parts)


ListerWatcherFactory = Callable[[WatchTarget], ListerWatcher]
"""Builds the ``ListerWatcher`` of one target; the factory's only link to a real API server."""
