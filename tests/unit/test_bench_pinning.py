"""The bench's pinned layout: every thread of a process goes to the chosen core, including
threads started before the pin, and a machine without both cores is refused rather than measured
unpinned under the pinned label."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from bench.pinning import CLIENT_CORE, CONTROL_PLANE_CORE, pin_layout, pin_process

pytestmark = pytest.mark.unit

# A child with three threads that sleep until told to go: each reads its own affinity when released, and
# the main thread prints them all once the others ended (two threads printing at once can interleave a
# line's text and its newline).
CHILD = """
import os, sys, threading
ready, go, seen = threading.Barrier(3), threading.Event(), []
def worker():
    ready.wait(); go.wait()
    seen.append(sorted(os.sched_getaffinity(0)))
threads = [threading.Thread(target=worker) for _ in range(2)]
for t in threads: t.start()
ready.wait()
print("ready", flush=True)
sys.stdin.readline()
go.set()
for t in threads: t.join()
seen.append(sorted(os.sched_getaffinity(0)))
print("\\n".join(map(str, seen)), flush=True)
"""


def _cores() -> set[int]:
    return os.sched_getaffinity(0)


@pytest.mark.skipif(
    not {CONTROL_PLANE_CORE, CLIENT_CORE} <= _cores() and not os.environ.get("CI"),
    reason="needs cores 0 and 1 (CI machines have them)",
)
def test_every_thread_started_before_the_pin_is_pinned() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdin is not None
    assert child.stdout.readline().strip() == "ready"
    assert pin_process(child.pid, CLIENT_CORE) == 3
    child.stdin.write("go\n")
    child.stdin.flush()
    out, _ = child.communicate(timeout=30)
    assert out.split("\n")[:3] == [f"[{CLIENT_CORE}]"] * 3


def test_a_machine_without_both_cores_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    with pytest.raises(RuntimeError, match=r"--pin needs cores 0 and 1; usable: \[0\]"):
        pin_layout({"etcd": os.getpid()}, {})


def test_the_layout_names_each_process_core() -> None:
    if not {CONTROL_PLANE_CORE, CLIENT_CORE} <= _cores() and not os.environ.get("CI"):
        pytest.skip("needs cores 0 and 1 (CI machines have them)")
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        layout = pin_layout({"etcd": holder.pid}, {"controller": holder.pid})
        assert layout == {"etcd": CONTROL_PLANE_CORE, "controller": CLIENT_CORE}
        assert os.sched_getaffinity(holder.pid) == {CLIENT_CORE}  # the later pin wins
    finally:
        holder.kill()
        holder.wait()
