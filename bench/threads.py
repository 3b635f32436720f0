"""The controller's CPU by thread: which of its threads spent a scenario's CPU seconds.

A ``--profile`` (py-spy ``--gil``) counts the frames of the thread that held the GIL when it was sampled;
a thread the kernel took off the CPU while it held the GIL (right after waking another, say) is counted
all the time it waits for a core, so its shares say where the GIL was, not where the CPU went. The
kernel counts each thread's CPU itself (``/proc/<pid>/task/<tid>/stat``); ``py-spy dump`` names the
threads (Python's thread names are not given to the kernel), and a thread is counted under its name
without the number its pool gave it (``worker-3`` and ``pod-action_12`` as ``worker`` and
``pod-action``). A thread that ended before the scenario did is left out.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

from bench.controller import cpu_by_process, stat_cpu_seconds
from bench.profile import py_spy

Snapshot = tuple[dict[str, float], dict[int, float]]  # CPU seconds by process name, by controller thread
UNNAMED = "unnamed"  # a thread py-spy did not name (no py-spy, or it started after the dump)
# "Thread 31917 (idle): "MainThread"", one per thread, in py-spy dump's output (its native thread id).
_DUMPED = re.compile(r'^Thread (\d+) \([^)]*\): "(.*)"$', re.MULTILINE)
_NUMBERED = re.compile(r"[-_]\d+$")


def cpu_by_thread(pid: int) -> dict[int, float]:
    """User + system CPU seconds of each thread of ``pid`` so far, by native thread id."""
    found: dict[int, float] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tids:
        try:
            found[int(tid)] = stat_cpu_seconds(Path(f"/proc/{pid}/task/{tid}/stat"))
        except OSError:  # the thread ended meanwhile
            continue
    return found


def thread_names(pid: int) -> dict[int, str]:
    """Each thread's Python name by native thread id, from ``py-spy dump`` (without pausing ``pid``);
    empty without py-spy."""
    executable = py_spy()
    if executable is None:
        return {}
    dumped = subprocess.run(
        [executable, "dump", "--pid", str(pid), "--nonblocking"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return parse_dump(dumped.stdout)


def parse_dump(text: str) -> dict[int, str]:
    return {int(tid): name for tid, name in _DUMPED.findall(text)}


def group(name: str) -> str:
    """A thread's name without its number in a pool."""
    return _NUMBERED.sub("", name)


def by_group(before: dict[int, float], after: dict[int, float], names: dict[int, str]) -> dict[str, float]:
    """CPU seconds spent between ``before`` and ``after`` by each group of threads, most first; a thread
    that started meanwhile counts from zero."""
    spent: dict[str, float] = {}
    for tid, seconds in after.items():
        key = group(names[tid]) if tid in names else UNNAMED
        spent[key] = spent.get(key, 0.0) + seconds - before.get(tid, 0.0)
    ordered = sorted(spent.items(), key=lambda item: (-item[1], item[0]))
    return {key: round(seconds, 2) for key, seconds in ordered if round(seconds, 2) > 0}


def cpu_now(processes: dict[str, int], controller: int) -> Snapshot:
    """CPU seconds so far of each named process and of each of the ``controller`` process's threads."""
    return cpu_by_process(processes), cpu_by_thread(controller)


def cpu_since(before: Snapshot, processes: dict[str, int], controller: int) -> dict[str, Any]:
    """What each process, and each group of the controller's threads, spent since ``before``."""
    by_process, by_thread = before
    return {
        "cpu_seconds_by_process": cpu_difference(cpu_by_process(processes), by_process),
        "controller_cpu_by_thread": by_group(by_thread, cpu_by_thread(controller), thread_names(controller)),
    }


def cpu_difference(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {name: round(after[name] - before[name], 2) for name in after if name in before}
