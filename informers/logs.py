"""The logger port: anything with structlog's calling convention (an event name plus key/value pairs).

Pass ``structlog.get_logger(...)``, or wrap a standard-library logger with
``structlog.wrap_logger(logging.getLogger(...))``. Nothing here looks a logger up by itself except the
default, ``structlog.get_logger("informers")``.
"""

from __future__ import annotations

from typing import Any, Protocol

import structlog

__all__ = ["Logger", "default_logger"]


class Logger(Protocol):
    def bind(self, **kw: Any) -> Logger:
        """A logger that adds ``kw`` to every event."""

    def debug(self, event: str, **kw: Any) -> Any: ...

    def info(self, event: str, **kw: Any) -> Any: ...

    def warning(self, event: str, **kw: Any) -> Any: ...

    def error(self, event: str, **kw: Any) -> Any: ...

    def exception(self, event: str, **kw: Any) -> Any:
        """Like ``error``, with the exception being handled attached."""


def default_logger() -> Logger:
    logger: Logger = structlog.get_logger("informers")
    return logger
