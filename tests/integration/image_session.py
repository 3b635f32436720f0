"""The image build overlapped with the test session (hack/image_build.py): started when the session has
collected ``tests/integration/test_image.py`` and the image is not fresh, awaited by that test's ``image``
fixture, stopped when the session ends. A session without the image test (``-m unit``, ``-k``, other
files) starts nothing."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from hack.background import BackgroundJob
from hack.image_build import background_build, is_fresh, should_start

IMAGE = os.environ.get("TASKSET_TEST_IMAGE", "localhost/taskset-controller:0.1.0")
IMAGE_TEST = Path(__file__).with_name("test_image.py")
BUILD = pytest.StashKey[BackgroundJob]()


def start(session: pytest.Session) -> None:
    """Start the build in the background if this session will run the image test and needs it."""
    collected = any(Path(str(item.path)) == IMAGE_TEST for item in session.items)
    podman = shutil.which("podman") is not None
    decided = should_start(
        collected=collected,
        podman=podman,
        ci=os.environ.get("CI") == "true",
        fresh=collected and podman and is_fresh(IMAGE),  # podman is asked only when it matters
        collect_only=bool(session.config.option.collectonly),
    )
    if decided:
        session.config.stash[BUILD] = background_build(IMAGE)


def background(config: pytest.Config) -> BackgroundJob | None:
    """The build this session started, if it started one."""
    return config.stash.get(BUILD, None)


def stop(session: pytest.Session) -> None:
    """A build still running when the session ends (the image test was not reached) is ended with it."""
    build = background(session.config)
    if build is not None:
        build.stop()
