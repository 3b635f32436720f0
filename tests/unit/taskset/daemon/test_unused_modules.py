"""Modules the daemon's libraries import and it never uses are not run until used (``unused_modules``):
proven in a fresh interpreter for the daemon itself, and on a module of the test's own for the stand-in's
contract (not run by ``import``; run once, by the first use, from any thread; absent stays absent)."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from taskset.daemon import unused_modules

pytestmark = pytest.mark.unit


def run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout.strip()


def test_the_daemon_starts_without_running_asyncio() -> None:
    """structlog imports asyncio; the daemon's import leaves it a stand-in, none of its modules run."""
    out = run(
        "import sys, taskset.daemon.main\n"
        "ran = sorted(m for m in sys.modules if m.startswith('asyncio.'))\n"
        "print(ran, type(sys.modules['asyncio']).__name__)"
    )
    assert out == "[] _StandIn"


def test_code_that_uses_asyncio_gets_the_real_one() -> None:
    """structlog's own asynchronous method, through the module it bound at import; a submodule's import."""
    out = run(
        "import sys, taskset.daemon.main, structlog, asyncio, asyncio.subprocess\n"
        "async def log():\n"
        "    await structlog.get_logger().ainfo('from a coroutine')\n"
        "    return asyncio.current_task() is not None\n"
        "real = type(sys.modules['asyncio']).__name__, 'asyncio.base_events' in sys.modules\n"
        "print(asyncio.run(log()), *real)"
    )
    assert out.splitlines()[-1] == "True module True"


@pytest.fixture
def module(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A module of the test's own that counts its runs in a file."""
    name, runs = "taskset_unused_probe", tmp_path / "runs"
    (tmp_path / f"{name}.py").write_text(
        "from pathlib import Path\n"
        f"runs = Path({str(runs)!r})\n"
        "runs.write_text(runs.read_text() + 'x' if runs.exists() else 'x')\n"
        "value = 42\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        yield name, runs
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop(name, None)


def test_a_deferred_module_runs_once_at_its_first_use_from_any_thread(module: tuple[str, Path]) -> None:
    name, runs = module
    assert unused_modules.defer(name)
    bound = __import__(name)  # what a library's ``import`` binds
    assert not runs.exists()
    assert not unused_modules.defer(name)  # already in sys.modules: left as it is
    values: list[int] = []
    threads = [threading.Thread(target=lambda: values.append(bound.value)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert values == [42] * 8
    assert runs.read_text() == "x"
    assert type(sys.modules[name]).__name__ == "module"
    assert bound.value == 42  # the stand-in still answers for whoever bound it


def test_a_module_that_is_not_installed_is_not_deferred() -> None:
    assert not unused_modules.defer("taskset_no_such_module")
    assert "taskset_no_such_module" not in sys.modules
    with pytest.raises(ModuleNotFoundError):
        __import__("taskset_no_such_module")
