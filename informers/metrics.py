"""The metrics port of informers: a hook with a no-op default, so this package needs no Prometheus.

Every call names the informer (its reflector's name) so that one implementation can serve all of them as
a label. Calls happen on the watch thread: implementations must be cheap and must not block.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["InformerMetrics", "NoopInformerMetrics"]


class InformerMetrics(Protocol):
    def event_received(self, name: str, event_type: str) -> None:
        """A watch event (``ADDED``, ``MODIFIED``, ``DELETED``, ``BOOKMARK``, ``ERROR``) was read."""

    def listed(self, name: str, items: int, seconds: float) -> None:
        """A full (possibly paginated) LIST finished and replaced the store."""

    def watch_restarted(self, name: str, reason: str) -> None:
        """A watch ended and will be reopened; ``reason`` is a short fixed word, e.g. ``"timeout"``."""

    def resource_version(self, name: str, resource_version: str) -> None:
        """The last synced resource version moved (opaque; exporters may parse it as an integer)."""


class NoopInformerMetrics:
    def event_received(self, name: str, event_type: str) -> None:
        pass

    def listed(self, name: str, items: int, seconds: float) -> None:
        pass

    def watch_restarted(self, name: str, reason: str) -> None:
        pass

    def resource_version(self, name: str, resource_version: str) -> None:
        pass
