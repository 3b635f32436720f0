"""The daemon bounds glibc's arenas before it starts a thread: threads that allocate at once then share
two arenas instead of one each (``taskset.daemon.allocator``). Counted by glibc itself
(``malloc_info``), in a fresh interpreter each time, since the bound holds for the whole process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from taskset.daemon.allocator import ARENAS, bound_arenas

pytestmark = pytest.mark.unit

# Eight threads start together and each allocates (past CPython's own allocator: 4 KiB buffers) while
# the others do; then glibc's own account of its heaps (arenas) is counted.
ARENAS_AFTER_THREADS = textwrap.dedent(
    """
    import ctypes, os, sys, tempfile, threading
    {setup}
    libc = ctypes.CDLL(None)
    gate = threading.Barrier(8)
    def allocate():
        gate.wait()
        held = [bytearray(4096) for _ in range(2000)]
        del held
    threads = [threading.Thread(target=allocate) for _ in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()
    path = os.path.join(tempfile.mkdtemp(), "malloc.xml")
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = (ctypes.c_char_p, ctypes.c_char_p)
    libc.fclose.argtypes = (ctypes.c_void_p,)
    libc.malloc_info.argtypes = (ctypes.c_int, ctypes.c_void_p)
    stream = libc.fopen(path.encode(), b"w")
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    print(open(path).read().count("<heap nr="))
    """
)


def arenas_after_threads(setup: str, env: dict[str, str] | None = None) -> int:
    program = ARENAS_AFTER_THREADS.format(setup=setup)
    environ = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"} | (env or {})
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, env=environ, check=True
    )
    return int(done.stdout.strip().splitlines()[-1])


def test_threads_without_the_bound_take_an_arena_each() -> None:
    """The control: what the bound changes (glibc's default is eight arenas a core)."""
    assert arenas_after_threads("") > ARENAS


def test_the_daemon_bounds_the_arenas_before_anything_else() -> None:
    """``main`` sets the bound first, even for ``--help``: every thread it starts later shares them."""
    setup = "from taskset.daemon.main import main; main(['--help'])"
    assert arenas_after_threads(setup) <= ARENAS


def test_an_arena_bound_given_to_the_process_is_left_to_glibc() -> None:
    assert bound_arenas(environ={"MALLOC_ARENA_MAX": "4"}) is False
    assert arenas_after_threads("", env={"MALLOC_ARENA_MAX": "1"}) == 1
