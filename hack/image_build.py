"""Building the controller image once, off the test session's critical path.

A cold ``make image`` takes about 8 minutes (two mmdebstrap bases, then the Dockerfile). Paid inside
``tests/integration/test_image.py`` it adds those minutes to ``make test`` serially; started when the
session has collected that test, at the lowest CPU priority, it overlaps the rest of the session and the
test only waits for what is left (``tests/integration/conftest.py`` starts it, ``background_build``).

Two builds of one tag at once (this one and a manual ``make image``, or two sessions) would race on the
bases and on the tag, so both hold one file lock (``IMAGE_LOCK``) around the build: ``make image`` with
flock(1), this module with flock(2). Whoever waited for the lock checks again whether the image is fresh
(its ``SOURCE_LABEL`` is the working tree's digest) and builds only if it is not.

Usage: ``python -m hack.image_build IMAGE [PYTHON]`` (from the repository's root): build IMAGE unless
it is fresh, under the lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from hack.background import BackgroundJob
from hack.image_digest import ROOT, SOURCE_LABEL, source_digest

IMAGE_LOCK = Path(os.environ.get("IMAGE_LOCK", "/tmp/taskset-image.lock"))  # make reads IMAGE_LOCK too
PODMAN = ("podman", "--runtime", "runc")
LOG = ROOT / "build" / "image-build.log"  # build/ is ignored by git


def should_start(collected: bool, podman: bool, ci: bool, fresh: bool, collect_only: bool) -> bool:
    """Whether a session starts the image build in the background: it runs the image test (collected,
    not only listed), the test will not be skipped (podman is here, or CI installs it), and the image of
    these sources is not already built."""
    return collected and not collect_only and (podman or ci) and not fresh


def built_from(image: str) -> str | None:
    """The source digest the image was built from; None without podman or without the image."""
    if shutil.which("podman") is None:
        return None
    inspected = subprocess.run(
        [*PODMAN, "image", "inspect", "--format", f'{{{{index .Labels "{SOURCE_LABEL}"}}}}', image],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    return inspected.stdout.strip() if inspected.returncode == 0 else None


def is_fresh(image: str) -> bool:
    """The image exists and was built from the working tree's sources."""
    return built_from(image) == source_digest()


@contextlib.contextmanager
def image_lock(path: Path = IMAGE_LOCK, blocking: bool = True) -> Iterator[None]:
    """Hold the build lock (flock(2), as flock(1) in the Makefile takes it); released when the block
    ends or the holder dies. Not blocking, a held lock raises BlockingIOError."""
    descriptor = os.open(path, os.O_RDONLY | os.O_CREAT, 0o666)  # read-only: another user's file works
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        yield
    finally:
        os.close(descriptor)  # closing the last descriptor releases the lock


def build(image: str, python: str) -> int:
    """Build the image unless it is fresh once the lock is ours; make's exit status."""
    tools = subprocess.run(["make", "image-tools"], cwd=ROOT, check=False)  # apt-get under CI=true
    if tools.returncode != 0:
        return tools.returncode
    with image_lock():
        if is_fresh(image):
            print(f"{image} is fresh (built meanwhile by another build): nothing to do", flush=True)
            return 0
        make = ["make", "image-locked", f"IMAGE={image}", f"PYTHON={python}"]
        return subprocess.run(make, cwd=ROOT, check=False).returncode


def background_build(image: str, log: Path = LOG) -> BackgroundJob:
    """``build`` in a child process at the lowest priority, its output in ``log``."""
    command = [sys.executable, "-m", "hack.image_build", image, sys.executable]
    return BackgroundJob(command, ROOT, log, "make image")


def main(argv: list[str]) -> int:
    image, python = argv[0], argv[1] if len(argv) > 1 else sys.executable
    started = time.monotonic()
    status = build(image, python)
    print(f"image build of {image}: exit {status} after {time.monotonic() - started:.0f} s", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
