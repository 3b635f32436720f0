"""The pinned layout: the control plane on one core, the controller (or the raw client, which
is this driver) on the other.

On two cores the unpinned figures measure the controller *and* its contention with the API server: both
want every core during a burst (as the bench found), so a ratio to the raw client mixes how fast
the controller is with how much of the API server's CPU it takes away. Pinned, each side has its own core,
and the ratio measures the controller. Both views are reported (`--pin` chooses).

Linux applies an affinity to one thread; every thread a process has now is pinned, and threads it starts
later inherit their creator's mask.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Final

CONTROL_PLANE_CORE: Final = 0
CLIENT_CORE: Final = 1


def pin_process(pid: int, core: int) -> int:
    """Pin every thread of ``pid`` to ``core``; returns how many threads were pinned (a thread that ended
    in between is skipped)."""
    pinned = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), {core})
        except ProcessLookupError:
            continue
        pinned += 1
    return pinned


def pin_layout(control_plane: Mapping[str, int], clients: Mapping[str, int]) -> dict[str, int]:
    """Pin the control plane's processes to ``CONTROL_PLANE_CORE`` and the clients' (the controller, this
    driver) to ``CLIENT_CORE``; returns the cores each process name was given. Fails on a machine with
    fewer than two usable cores, where there is no layout to choose."""
    usable = os.sched_getaffinity(0)
    if not {CONTROL_PLANE_CORE, CLIENT_CORE} <= usable:
        raise RuntimeError(
            f"--pin needs cores {CONTROL_PLANE_CORE} and {CLIENT_CORE}; usable: {sorted(usable)}"
        )
    layout: dict[str, int] = {}
    for names, core in ((control_plane, CONTROL_PLANE_CORE), (clients, CLIENT_CORE)):
        for name, pid in names.items():
            pin_process(pid, core)
            layout[name] = core
    return layout
