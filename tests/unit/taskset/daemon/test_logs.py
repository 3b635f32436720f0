"""JSON log lines: the original's base keys, stdlib records through the same renderer, level filtering."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import structlog

from taskset.daemon.logs import BASE_KEYS, configure_logging, get_logger


class _Lines:
    """Parses the buffer on every access, so a test can log, then look."""

    def __init__(self, stream: io.StringIO) -> None:
        self._stream = stream

    def all(self) -> list[dict[str, Any]]:
        text = self._stream.getvalue()
        assert text.endswith("\n") or not text
        return [json.loads(line) for line in text.splitlines()]


@pytest.fixture
def output() -> Iterator[Callable[[str], _Lines]]:
    """Configure logging onto a buffer at a level; returns the buffer's parsed lines."""
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (
        list(root.handlers),
        root.level,
        {n: logging.getLogger(n).level for n in ("kubernetes", "urllib3")},
    )

    def lines(level: str = "info") -> _Lines:
        configure_logging(level, stream)
        return _Lines(stream)

    yield lines
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])
    for name, level in saved[2].items():
        logging.getLogger(name).setLevel(level)
    structlog.reset_defaults()


def test_a_structlog_record_has_the_base_keys_first_then_its_fields(output: Callable[[str], _Lines]) -> None:
    lines = output("info")
    get_logger().info("TaskSet Phase Transition", QueryKey="TaskSetPhaseTransition", TaskSet="ts1")
    [record] = lines.all()
    assert list(record)[:5] == list(BASE_KEYS)
    assert record["logger"] == "TaskSetController"
    assert record["level"] == "info"
    assert isinstance(record["ts"], float)
    assert record["caller"].startswith(f"{__name__}:")
    assert record["caller"].rsplit(":", 1)[1].isdigit()
    assert record["msg"] == "TaskSet Phase Transition"
    assert (record["QueryKey"], record["TaskSet"]) == ("TaskSetPhaseTransition", "ts1")


LEVELS = [
    pytest.param("debug", "debug", id="debug"),
    pytest.param("info", "info", id="info"),
    pytest.param("warning", "warn", id="warning is written as zap's warn"),
    pytest.param("error", "error", id="error"),
    pytest.param("exception", "error", id="exception is an error"),
]


@pytest.mark.parametrize(("method", "written"), LEVELS)
def test_levels_are_lower_case(output: Callable[[str], _Lines], method: str, written: str) -> None:
    lines = output("debug")
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        getattr(get_logger(), method)("something")
    [record] = lines.all()
    assert record["level"] == written
    assert ("exception" in record) is (method == "exception")


def test_records_below_the_level_are_dropped(output: Callable[[str], _Lines]) -> None:
    lines = output("warning")
    log = get_logger()
    log.debug("d")
    log.info("i")
    log.warning("w")
    log.error("e")
    assert [r["msg"] for r in lines.all()] == ["w", "e"]


def test_stdlib_records_go_through_the_same_json_renderer(output: Callable[[str], _Lines]) -> None:
    lines = output("info")
    logging.getLogger("kubernetes.client.rest").warning("retrying %s", "GET /api")
    logging.getLogger("some.module").info("plain stdlib")
    kube, plain = lines.all()
    assert list(kube)[:5] == list(BASE_KEYS)
    assert kube["logger"] == "kubernetes.client.rest"
    assert kube["level"] == "warn"
    assert kube["msg"] == "retrying GET /api"
    assert isinstance(kube["ts"], float)
    assert kube["caller"].startswith(
        f"{__name__.rsplit('.', 1)[-1]}:"
    )  # the file's module: logger not named after it
    assert plain["logger"] == "some.module"


def test_client_libraries_stay_at_warning_unless_debugging(output: Callable[[str], _Lines]) -> None:
    lines = output("info")
    logging.getLogger("urllib3.connectionpool").info("Starting new HTTPS connection")
    logging.getLogger("urllib3.connectionpool").warning("Connection pool is full")
    assert [r["msg"] for r in lines.all()] == ["Connection pool is full"]
    lines = output("debug")
    logging.getLogger("urllib3.connectionpool").debug("now visible")
    assert lines.all()[-1]["msg"] == "now visible"


def test_bound_context_and_named_loggers(output: Callable[[str], _Lines]) -> None:
    lines = output("info")
    get_logger("informers").bind(controller="taskset").info("synced", items=3)
    with structlog.contextvars.bound_contextvars(reconcile_id="abc"):
        get_logger().info("reconciled")
    synced, reconciled = lines.all()
    assert (synced["logger"], synced["controller"], synced["items"]) == ("informers", "taskset", 3)
    assert reconciled["reconcile_id"] == "abc"


def test_values_json_cannot_hold_are_written_as_text(output: Callable[[str], _Lines]) -> None:
    lines = output("info")
    get_logger().info("odd values", obj=object(), big=2**70, items={1: "a"})
    [record] = lines.all()
    assert record["obj"].startswith("<object object")
    assert record["big"] == 2**70
    assert record["items"] == {"1": "a"}


def test_reconfiguring_replaces_the_handler_instead_of_adding_one(output: Callable[[str], _Lines]) -> None:
    output("info")
    lines = output("info")
    get_logger().info("once")
    assert [r["msg"] for r in lines.all()] == ["once"]


def test_an_unknown_level_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown log level 'loud'"):
        configure_logging("loud", io.StringIO())


class _BrokenStream(io.StringIO):
    def write(self, text: str) -> int:
        raise BrokenPipeError("the reader went away")


def test_a_failing_stream_does_not_fail_the_code_that_logs(monkeypatch: pytest.MonkeyPatch) -> None:
    """As with a stdlib handler: the reconcile that logs a transition must not fail because stdout did."""
    monkeypatch.setattr(logging, "raiseExceptions", False)  # stdlib handlers then stay silent too
    root = logging.getLogger()
    saved = list(root.handlers), root.level
    try:
        configure_logging("info", _BrokenStream())
        get_logger().info("TaskSet Phase Transition", TaskSet="ts1")
        logging.getLogger("taskset.test").warning("a stdlib record")
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        structlog.reset_defaults()


class _Strange:
    def __str__(self) -> str:
        return "strange"


# (level, msg, fields): an ordinary transition, an error, one below the level, fields named as base keys
# (the base key wins, as in structlog's chain), a value JSON cannot hold, an integer beyond 64 bits.
RECORDS: list[tuple[str, str, dict[str, Any]]] = [
    ("info", "", {"QueryKey": "ReplicaTransition", "TaskSet": "ts1", "ReplicaIndex": 0, "PrePhase": "a"}),
    ("error", "an invariant broke", {"QueryKey": "UnhandleSitutation", "TaskSet": "ts1"}),
    ("debug", "below the level", {"TaskSet": "ts1"}),
    ("info", "shadowed", {"level": "x", "ts": "y", "caller": "z", "msg": "w", "test_namespace": "mine"}),
    ("info", "odd values", {"value": _Strange(), "big": 2**70, "nested": {"k": [1, 2]}}),
    ("no-such-level", "an unknown level is info", {"TaskSet": "ts1"}),
]


def test_a_pass_s_records_written_in_one_go_read_as_the_processors_write_them(
    output: Callable[[str], _Lines],
) -> None:
    """The bound logger's ``records`` writes, line for line, what logging each record through
    structlog's processors writes: the same keys in the same order, bound values and context variables
    included, records below the level dropped; only ``ts`` and ``caller`` (this line) differ."""
    lines = output("info")
    log: Any = get_logger("taskset-test").bind(test_namespace="ns1")
    with structlog.contextvars.bound_contextvars(reconcile_id="r1", TaskSet="from-context"):
        for level, msg, fields in RECORDS:
            getattr(log, level, log.info)(msg, logger="TaskSetController", **fields)
        one_by_one = lines.all()
        log.records(RECORDS)
    together = lines.all()[len(one_by_one) :]
    assert len(one_by_one) == len(RECORDS) - 1  # the debug record is below the level
    assert [list(r) for r in together] == [list(r) for r in one_by_one]
    for mine, theirs in zip(together, one_by_one, strict=True):
        assert {k: v for k, v in mine.items() if k not in ("ts", "caller")} == {
            k: v for k, v in theirs.items() if k not in ("ts", "caller")
        }
        assert isinstance(mine["ts"], float)
        assert mine["caller"].startswith(f"{__name__}:")
    assert together[2]["test_namespace"] == "mine" and together[2]["level"] == "info"
    assert together[0]["TaskSet"] == "ts1" and together[0]["reconcile_id"] == "r1"


class _CountingStream(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes = self.flushes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)

    def flush(self) -> None:
        self.flushes += 1


def test_a_pass_s_records_take_one_write_and_one_flush() -> None:
    """The point of ``records``: one lock, one write and one flush for the pass, not one per record."""
    root = logging.getLogger()
    saved = list(root.handlers), root.level
    stream = _CountingStream()
    try:
        configure_logging("info", stream)
        log: Any = get_logger().bind()
        log.records(RECORDS[:2])
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        structlog.reset_defaults()
    assert (stream.writes, stream.flushes) == (1, 1)
    assert [json.loads(line)["TaskSet"] for line in stream.getvalue().splitlines()] == ["ts1", "ts1"]


def test_a_pass_s_records_on_a_logger_wrapping_another_go_through_its_processors(
    output: Callable[[str], _Lines],
) -> None:
    """The configured class may wrap a logger that is not this module's writer (``structlog.wrap_logger``):
    ``records`` then logs each record the processors' way, to that logger."""
    output("info")
    seen: list[dict[str, Any]] = []

    def keep(logger: Any, method: str, event: Any) -> str:
        seen.append(dict(event, method=method))
        return ""

    log: Any = structlog.wrap_logger(
        structlog.ReturnLogger(), processors=[keep], wrapper_class=structlog.get_config()["wrapper_class"]
    )
    log.records(RECORDS[:3])
    assert [(e["method"], e["event"], e["TaskSet"]) for e in seen] == [
        ("info", "", "ts1"),
        ("error", "an invariant broke", "ts1"),
    ]
