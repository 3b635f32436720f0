"""``--profile``: py-spy sampling the controller process during a scenario, and the hottest functions.

py-spy (a bench-only dependency) writes collapsed stacks (``frame;frame;frame count`` per line, the
format flamegraph.pl and speedscope read). The summary ranks functions by *self* samples (where the CPU
actually is) and by *inclusive* samples (what it was spent for), as fractions of all samples, so the
figures of one run compare with each other and not with another run's.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

RATE = 200  # samples per second
TOP = 20


def py_spy() -> str | None:
    """The py-spy executable next to this interpreter, or on PATH."""
    beside = Path(sys.executable).with_name("py-spy")
    return str(beside) if beside.exists() else shutil.which("py-spy")


class Profiler:
    """``py-spy record`` on one pid, from ``start`` until ``stop`` (SIGINT makes py-spy write its file)."""

    def __init__(self, pid: int, output: Path) -> None:
        executable = py_spy()
        if executable is None:
            raise RuntimeError("--profile needs py-spy: pip install -e '.[bench]'")
        self.output = output
        self.argv = [
            executable,
            "record",
            "--pid",
            str(pid),
            "--rate",
            str(RATE),
            "--format",
            "raw",
            "--nonblocking",  # never pause the controller: its timings stay close to an unprofiled run
            "--gil",  # the thread holding the GIL (by CPU seconds: bench.threads)
            "--output",
            str(output),
        ]
        self._popen: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        self._popen = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def stop(self) -> dict[str, Any]:
        assert self._popen is not None
        self._popen.send_signal(signal.SIGINT)
        try:
            _, stderr = self._popen.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self._popen.kill()
            _, stderr = self._popen.communicate()
        if not self.output.exists():
            raise RuntimeError(f"py-spy wrote no profile: {stderr.decode(errors='replace')[-500:]}")
        return summarise(self.output.read_text().splitlines()) | {"collapsed_stacks": str(self.output)}


def summarise(lines: list[str], top: int = TOP) -> dict[str, Any]:
    """Top functions by self and by inclusive samples, from collapsed-stack lines."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    samples = 0
    for line in lines:
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_short(frame) for frame in stack.split(";")]
        samples += count
        own[frames[-1]] += count
        for frame in set(frames):
            inclusive[frame] += count
    return {
        "samples": samples,
        "self": _ranked(own, samples, top),
        "inclusive": _ranked(inclusive, samples, top),
    }


def _short(frame: str) -> str:
    """``fn (path/to/module.py:123)`` → ``fn (module.py)``: one entry per function, not per line."""
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    return f"{name} ({Path(path).name})" if path else name


def _ranked(counter: Counter[str], samples: int, top: int) -> list[tuple[str, float]]:
    return [(name, round(count / samples, 3)) for name, count in counter.most_common(top)] if samples else []
