"""One informer per watched collection, shared by every controller in the process.

Two callers asking for the same resource, namespace and selectors get the same informer, so the API server
sees one watch and the process holds one cache. Indexes requested by different callers are merged.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Mapping
from typing import Final

from clock import Clock, RealClock

from .informer import InformerSettings, SharedInformer, wait_for_cache_sync
from .listwatch import ListerWatcherFactory, Resource, WatchTarget
from .logs import Logger, default_logger
from .metrics import InformerMetrics, NoopInformerMetrics
from .store import IndexFunc
from .transform import Transform, strip_managed_fields

__all__ = ["SharedInformerFactory"]


class SharedInformerFactory:
    """Creates and owns informers; ``start`` runs every informer created so far (call it again after
    creating more), ``stop`` stops them all."""

    def __init__(
        self,
        *,
        lister_watcher_for: ListerWatcherFactory,
        settings: InformerSettings | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        logger: Logger | None = None,
        metrics: InformerMetrics | None = None,
    ) -> None:
        self._lister_watcher_for: Final = lister_watcher_for
        self._settings: Final = settings or InformerSettings()  # for every informer created
        self._clock: Final[Clock] = clock or RealClock()
        self._rng: Final = rng or random.Random()
        self._logger: Final = logger or default_logger()
        self._metrics: Final[InformerMetrics] = metrics or NoopInformerMetrics()
        self._lock: Final = threading.Lock()
        # target -> its informer, and the transform it was created with. guarded by _lock
        self._informers: dict[WatchTarget, tuple[SharedInformer, Transform | None]] = {}
        self._stopped = False  # guarded by _lock

    def informer_for(
        self,
        resource: Resource,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexers: Mapping[str, IndexFunc] | None = None,
        transform: Transform | None = strip_managed_fields,
    ) -> SharedInformer:
        """The shared informer of this collection, created on first request.

        ``indexers`` are added to the informer's store (an existing name with another function raises
        ``IndexConflictError``). ``transform`` must match the one the informer was created with.
        """
        target = WatchTarget(
            resource=resource,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
        )
        with self._lock:
            if self._stopped:
                raise RuntimeError("informer factory is stopped")
            existing = self._informers.get(target)
            if existing is None:
                informer = SharedInformer(
                    name=str(target),
                    lister_watcher=self._lister_watcher_for(target),
                    indexers=indexers,
                    transform=transform,
                    settings=self._settings,
                    clock=self._clock,
                    rng=random.Random(self._rng.random()),
                    logger=self._logger,
                    metrics=self._metrics,
                )
                self._informers[target] = (informer, transform)
                return informer
        informer, created_with = existing
        if created_with is not transform:
            raise ValueError(f"informer for {target} already exists with a different transform")
        if indexers:
            informer.add_indexers(indexers)
        return informer

    def start(self) -> None:
        """Start every informer not running yet."""
        with self._lock:
            if self._stopped:
                raise RuntimeError("informer factory is stopped")
            informers = [informer for informer, _ in self._informers.values()]
        for informer in informers:
            informer.start()

    def wait_for_cache_sync(self, timeout: float | None = None) -> dict[WatchTarget, bool]:
        """Wait until every informer has synced or ``timeout`` seconds pass; reports each one's state."""
        with self._lock:
            informers = {target: informer for target, (informer, _) in self._informers.items()}
        wait_for_cache_sync([i.has_synced for i in informers.values()], timeout=timeout, clock=self._clock)
        return {target: informer.has_synced() for target, informer in informers.items()}

    def stop(self) -> None:
        """Stop every informer; the factory cannot be used afterwards."""
        with self._lock:
            self._stopped = True
            informers = [informer for informer, _ in self._informers.values()]
        for informer in informers:
            informer.stop()
