"""Loopback ports for processes that bind them later.

A port the kernel hands out for ``bind(0)`` comes from the ephemeral range, the same range it draws the
local ports of outgoing connections from. Between choosing a port and a child process binding it, a
busy control plane opens hundreds of connections, and one of them can take the port ("bind: address
already in use", seen when kwok started last). Ports below that range are never handed out that way.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST = 10000  # below this: well-known and registered services


def ephemeral_start() -> int:
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def free_port(attempts: int = 200) -> int:
    """A loopback TCP port that is free now and outside the ephemeral range (any free port if none is)."""
    high = ephemeral_start() - 1
    for _ in range(attempts if high > LOWEST else 0):
        port = random.randint(LOWEST, high)
        if _bindable(port):
            return port
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _bindable(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True
