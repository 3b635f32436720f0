"""The C allocator's arenas, bounded before the controller starts its threads.

glibc gives a thread that finds the arenas busy an arena of its own, up to eight per core, and each arena
keeps what its threads freed for their next allocations. The controller's informer, handler, worker and
request threads all decode and build JSON at once, so without a bound the process holds each thread's
high-water mark apart. Two arenas is what ``MALLOC_ARENA_MAX=2`` gives, the setting commonly advised for
multi-threaded Python services; CPython's own allocator (objects up to 512 bytes) is not concerned.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Mapping
from typing import Final

ARENAS: Final = 2
M_ARENA_MAX: Final = -8  # mallopt's parameter number (glibc's malloc.h)
ENVIRONMENT: Final = "MALLOC_ARENA_MAX"  # glibc's own setting: one given to the process wins


def bound_arenas(arenas: int = ARENAS, environ: Mapping[str, str] = os.environ) -> bool:
    """Ask the C library for at most ``arenas`` arenas; whether it took the bound. Not on a C library
    without ``mallopt`` (musl, macOS), nor when ``MALLOC_ARENA_MAX`` is set: glibc applied that already."""
    if ENVIRONMENT in environ:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_ARENA_MAX, arenas) == 1)
