"""Informers: client-go ``tools/cache`` for Python. A local, indexed, eventually consistent cache of one
collection of Kubernetes objects, kept current by LIST+WATCH, with change notifications.

Guarantees (each module's docstring says how):

1. **Eventual consistency.** Once the API server stops changing, the cache converges to its state, across
   watch timeouts, dropped connections, API server restarts and 410 Expired (``reflector``).
2. **No silent loss.** A delete that happened while the watch was down reaches handlers on the relist, as
   a ``DeletedFinalStateUnknown`` tombstone; a crash inside the watch loop is logged and the loop restarts
   from a LIST, with backoff.
3. **Cache first, then notify.** A handler is called only after the store holds the state it is told
   about; one object's states reach a handler in order (some may be skipped, none reordered)
   (``informer``).
4. **Isolated handlers.** Each handler has its own buffer and thread: a slow or raising handler delays
   only itself, never the watch or other handlers (``listener``; buffers are unbounded by default, and
   a bound, if chosen, trades this for memory: a full buffer holds the watch back).
5. **Cheap resync.** Periodic resync replays the cache to handlers; it never calls the API server.
6. **Shared, never mutated objects.** Cached objects are raw JSON dicts (slimmed by a transform, by
   default without ``managedFields``), shared by every reader: never modify one; copy first.
7. **Sync signals.** ``has_synced`` per informer (first LIST stored) and per handler registration (that
   handler has processed the initial state); ``wait_for_cache_sync`` waits for both.

Requests go through ``informers.rest``'s thin transport on urllib3's pool; only ``informers.kubeconfig``
imports ``kubernetes``, for its credential loaders and never its generated models. Everything else speaks
plain dicts through the ``ListerWatcher`` port, and time and randomness are injected. Nothing here knows
about TaskSets.
"""

from .backoff import BackoffSettings, ExponentialBackoff
from .factory import SharedInformerFactory
from .informer import HandlerRegistration, InformerSettings, SharedInformer, wait_for_cache_sync
from .keys import (
    DeletedFinalStateUnknown,
    KeyFunc,
    ObjectKey,
    deletion_handling_key,
    meta_namespace_key,
    object_meta,
    resource_version,
    split_key,
)
from .listener import EventHandler
from .listwatch import (
    ApiError,
    EventType,
    ListerWatcher,
    ListerWatcherFactory,
    ListOptions,
    ListResult,
    RawMeta,
    RawObject,
    RawOwnerReference,
    RawStatus,
    Resource,
    SelectionChange,
    SelectionChangedError,
    TransportError,
    WatchEvent,
    WatchStream,
    WatchTarget,
)
from .logs import Logger
from .metrics import InformerMetrics, NoopInformerMetrics
from .reflector import DEFAULT_PAGE_SIZE, Reflector, ReflectorSettings, ReflectorStore, VeryShortWatchError
from .store import NAMESPACE_INDEX, Change, ChangeType, IndexConflictError, IndexFunc, Store, namespace_index
from .transform import LAST_APPLIED_ANNOTATION, Transform, strip_managed_fields

__all__ = [
    "DEFAULT_PAGE_SIZE",
    "LAST_APPLIED_ANNOTATION",
    "NAMESPACE_INDEX",
    "ApiError",
    "BackoffSettings",
    "Change",
    "ChangeType",
    "DeletedFinalStateUnknown",
    "EventHandler",
    "EventType",
    "ExponentialBackoff",
    "HandlerRegistration",
    "IndexConflictError",
    "IndexFunc",
    "InformerMetrics",
    "InformerSettings",
    "KeyFunc",
    "ListOptions",
    "ListResult",
    "ListerWatcher",
    "ListerWatcherFactory",
    "Logger",
    "NoopInformerMetrics",
    "ObjectKey",
    "RawMeta",
    "RawObject",
    "RawOwnerReference",
    "RawStatus",
    "Reflector",
    "ReflectorSettings",
    "ReflectorStore",
    "Resource",
    "SelectionChange",
    "SelectionChangedError",
    "SharedInformer",
    "SharedInformerFactory",
    "Store",
    "Transform",
    "TransportError",
    "VeryShortWatchError",
    "WatchEvent",
    "WatchStream",
    "WatchTarget",
    "deletion_handling_key",
    "meta_namespace_key",
    "namespace_index",
    "object_meta",
    "resource_version",
    "split_key",
    "strip_managed_fields",
    "wait_for_cache_sync",
]
