"""Logging: one JSON object per line on stdout, for structlog loggers and stdlib ``logging`` alike.

Every line starts with the original controller's base keys (spec 10.2), then the record's own fields:

==========  ==========================================================================================
Key         Value
==========  ==========================================================================================
``logger``  ``TaskSetController`` for our loggers (``get_logger()``); a stdlib record keeps its logger's
            name (``urllib3.connectionpool``, ``kubernetes.client.rest``), so a query on
            ``logger=TaskSetController`` finds exactly the controller's own records, as with the original
``level``   lower case: ``debug``, ``info``, ``warn``, ``error``, ``critical``. ``warn`` is zap's
            spelling, which the original wrote and existing log queries match
``ts``      Unix epoch seconds, float
``caller``  ``<dotted module>:<line>`` of the call, e.g. ``taskset.runtime.reconciler:212``
``msg``     the event text (structlog's ``event``)
==========  ==========================================================================================

An exception is rendered as a traceback string under ``exception``. Values that JSON cannot hold are
written as ``str(value)``.

Design: one ``StreamHandler`` owns the stream. structlog events run through the processors below and
are written by ``_HandlerWriter`` under that handler's lock; foreign stdlib records (``kubernetes``,
``urllib3``) reach the same handler, whose ``ProcessorFormatter`` runs them through the same chain. One
lock per stream means lines never interleave. (structlog's documented recipe sends its events through a
stdlib ``LogRecord`` as well; that round trip was nearly two thirds of a record's cost, 53 against
19 µs, and a 2,000-replica TaskSet logs thousands of transition records.) Levels below the configured
one cost one comparison (``make_filtering_bound_logger``). The chatty client libraries stay at
``warning`` unless the level is ``debug``.

Context per reconcile: bind it with ``structlog.contextvars.bound_contextvars(...)``; it is merged into
every record written by that thread meanwhile.

A pass's records (its phase transitions, dozens a pass, thousands on a large TaskSet) go through a bound
logger's ``records`` method instead: the lines the processors would write, rendered in one go and written
under one lock with one flush, at about a fifth of a record's cost through the processors (the caller is
looked up once, not walked to per record). Callers find the method with ``getattr``: a logger this module
did not configure has none, and logs its records one by one.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable, Mapping
from typing import Any, Final, TextIO

import orjson
import structlog
from structlog.typing import EventDict, FilteringBoundLogger, Processor, WrappedLogger

from taskset.api.constants import LOGGER_NAME

__all__ = ["BASE_KEYS", "configure_logging", "get_logger"]

BASE_KEYS: Final = ("logger", "level", "ts", "caller", "msg")
# Client libraries that log every request or retry at debug/info; at warning they still report pool
# exhaustion and failed retries (python-ecosystem.md section 4).
NOISY_LOGGERS: Final = ("kubernetes", "urllib3")
_LEVEL_NAMES: Final = {"warning": "warn"}  # zap's spelling (the original's logs)
_STDLIB_LEVELS: Final = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
}


def _add_caller(logger: WrappedLogger, method_name: str, event_dict: EventDict) -> EventDict:
    """``caller`` = ``module:line``, from the stack for structlog events or from the stdlib record."""
    module = event_dict.pop("qual_module", None)
    line = event_dict.pop("lineno", None)
    if module == "__main__":  # run with `python -m taskset.daemon.main`: name the module, not the role
        module = _main_module_name()
    record: logging.LogRecord | None = event_dict.get("_record")  # only foreign stdlib records have one
    if record is not None:
        # A logger named after its module (`getLogger(__name__)`) gives the dotted path; else the file's.
        module = record.name if record.name.endswith(record.module) else record.module
        line = record.lineno
    event_dict["caller"] = f"{module}:{line}"
    return event_dict


def _main_module_name() -> str:
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return str(getattr(spec, "name", None) or "__main__")


def _level(logger: WrappedLogger, method_name: str, event_dict: EventDict) -> EventDict:
    level = str(event_dict.get("level", method_name)).lower()
    event_dict["level"] = _LEVEL_NAMES.get(level, level)
    return event_dict


def _logger_name(logger: WrappedLogger, method_name: str, event_dict: EventDict) -> EventDict:
    record: logging.LogRecord | None = event_dict.get("_record")
    if "logger" not in event_dict:
        name = record.name if record is not None else getattr(logger, "name", None)
        event_dict["logger"] = name or LOGGER_NAME
    return event_dict


def _json_default(value: object) -> str:
    return str(value)


def _render(logger: WrappedLogger, method_name: str, event_dict: EventDict) -> str:
    """The base keys first, in spec order, then the record's fields; one line of JSON."""
    event_dict["msg"] = event_dict.pop("event", "")
    ordered = {key: event_dict.pop(key) for key in BASE_KEYS if key in event_dict}
    ordered.update(event_dict)
    try:
        return orjson.dumps(ordered, default=_json_default, option=orjson.OPT_NON_STR_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        # orjson refuses integers beyond 64 bits and exotic key types; the slow path takes anything.
        import json  # noqa: PLC0415  (rarely needed)

        return json.dumps(ordered, default=_json_default, ensure_ascii=False)


def _shared_processors() -> list[Processor]:
    """The steps both structlog events and foreign stdlib records go through, before rendering."""
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        _level,
        structlog.processors.TimeStamper(fmt=None, utc=True, key="ts"),
        structlog.processors.CallsiteParameterAdder(
            [
                structlog.processors.CallsiteParameter.QUAL_MODULE,
                structlog.processors.CallsiteParameter.LINENO,
            ]
        ),
        _add_caller,
        structlog.processors.StackInfoRenderer(),
        structlog.processors.format_exc_info,
    ]


class _JsonHandler(logging.StreamHandler[TextIO]):
    """Marks the handler ``configure_logging`` installed, so a second call replaces it."""


class _HandlerWriter:
    """structlog's end of the line: a rendered event written straight to the handler's stream, under
    the handler's lock (so it never interleaves with a stdlib record's line), without the stdlib
    ``LogRecord`` round trip (most of what a record cost)."""

    def __init__(self, handler: logging.StreamHandler[TextIO], name: str) -> None:
        self._handler = handler
        self.name = name

    def msg(self, line: str) -> None:
        self.write(line + "\n")

    def write(self, text: str) -> None:
        """``text`` (whole lines) to the stream, under the handler's lock, flushed once."""
        handler = self._handler
        handler.acquire()
        try:
            handler.stream.write(text)
            handler.flush()
        except Exception:  # as StreamHandler.emit: a failing stream must not fail the caller
            handler.handleError(logging.makeLogRecord({"msg": text}))
        finally:
            handler.release()

    debug = info = warning = warn = error = critical = exception = fatal = log = msg


def _bound_logger_class(threshold: int) -> type[FilteringBoundLogger]:
    """structlog's filtering bound logger for ``threshold``, with ``records``."""
    base: Any = structlog.make_filtering_bound_logger(threshold)

    class BoundLogger(base):  # type: ignore[misc]
        def records(self, records: Iterable[tuple[str, str, Mapping[str, Any]]]) -> None:
            """Write ``records`` (level, msg, fields) as ``self.<level>(msg, logger=TaskSetController,
            **fields)`` would, one after the other: the same keys in the same order, this logger's bound
            values and the thread's context variables included; ``caller`` is the line that called this."""
            writer = self._logger
            if not isinstance(writer, _HandlerWriter):  # wrapping another logger: the processors' way
                for level, msg, fields in records:
                    method: Any = getattr(self, level, None) or self.info
                    method(msg, logger=LOGGER_NAME, **fields)
                return
            frame = sys._getframe(1)
            module = frame.f_globals.get("__name__", "?")
            caller = f"{_main_module_name() if module == '__main__' else module}:{frame.f_lineno}"
            variables = structlog.contextvars.get_contextvars()
            lines = []
            for level, msg, fields in records:
                named = level if level in _STDLIB_LEVELS else "info"
                if _STDLIB_LEVELS[named] < threshold:
                    continue
                # The event dict the processors would hand ``_render``: the call's, the context variables
                # after it, then what the chain's steps set (a field of those names is overwritten).
                event: dict[str, Any] = {**self._context, "logger": LOGGER_NAME, **fields, "event": msg}
                for key, value in variables.items():
                    event.setdefault(key, value)
                event.update(level=_LEVEL_NAMES.get(named, named), ts=time.time(), caller=caller)
                lines.append(_render(writer, named, event))
            if lines:
                writer.write("\n".join(lines) + "\n")

    return BoundLogger


def configure_logging(level: str = "info", stream: TextIO | None = None) -> None:
    """Send every log record, structlog's and the stdlib's, as JSON lines to ``stream`` (stdout).

    ``level`` is ``debug``, ``info``, ``warning`` (or ``warn``), ``error`` or ``critical``. Safe to call
    again (tests do): the previous handler is replaced and loggers already handed out follow the new
    configuration.
    """
    numeric = _STDLIB_LEVELS.get(level.lower())
    if numeric is None:
        raise ValueError(f"unknown log level {level!r}")
    shared = _shared_processors()
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[_logger_name, *shared],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, _render],
    )
    handler = _JsonHandler(stream if stream is not None else sys.stdout)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _JsonHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric)
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(
            numeric if numeric <= logging.DEBUG else max(numeric, logging.WARNING)
        )

    structlog.configure(
        processors=[_logger_name, *shared, _render],
        logger_factory=lambda name=LOGGER_NAME, *_: _HandlerWriter(handler, name),
        wrapper_class=_bound_logger_class(numeric),
        # Not cached: a reconfiguration (a test, a changed level) must reach loggers already handed out.
        cache_logger_on_first_use=False,
    )


def get_logger(name: str = LOGGER_NAME, **initial: Any) -> FilteringBoundLogger:
    """A structlog logger whose records carry ``logger=<name>`` (``TaskSetController`` by default)."""
    logger: FilteringBoundLogger = structlog.get_logger(name, **initial)
    return logger
