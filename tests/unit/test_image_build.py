"""The background image build (hack/image_build.py): started only by a session that will run the image
test and needs the image built, and one build at a time under a lock that ``make image``'s flock(1)
shares."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hack.image_build import image_lock, should_start

FIELDS = ("collected", "podman", "ci", "fresh", "collect_only")
DECISIONS = [
    # collected, podman, ci, fresh, collect_only -> started
    pytest.param((True, True, False, False, False), True, id="stale image, podman here"),
    pytest.param((True, False, True, False, False), True, id="CI without podman: make installs it"),
    pytest.param((True, True, True, False, False), True, id="CI with podman, stale image"),
    pytest.param((True, True, False, True, False), False, id="fresh image: nothing to build"),
    pytest.param((True, True, True, True, False), False, id="fresh image under CI"),
    pytest.param((True, False, False, False, False), False, id="no podman outside CI: the test skips"),
    pytest.param((False, True, False, False, False), False, id="image test deselected or not collected"),
    pytest.param((False, True, True, False, False), False, id="deselected under CI"),
    pytest.param((True, True, False, False, True), False, id="--collect-only runs nothing"),
]


@pytest.mark.parametrize(("situation", "started"), DECISIONS)
def test_a_session_starts_the_build_only_when_its_image_test_needs_it(
    situation: tuple[bool, ...], started: bool
) -> None:
    assert should_start(**dict(zip(FIELDS, situation, strict=True))) is started


def test_the_lock_excludes_a_second_holder_until_released(tmp_path: Path) -> None:
    lock = tmp_path / "image.lock"
    with image_lock(lock), pytest.raises(BlockingIOError), image_lock(lock, blocking=False):
        pass  # pragma: no cover - never reached: the lock is held
    with image_lock(lock, blocking=False):
        pass  # free again once the first holder left


def test_make_images_flock_waits_for_the_lock_this_module_holds(tmp_path: Path) -> None:
    lock = tmp_path / "image.lock"
    probe = ["flock", "--nonblock", "--conflict-exit-code", "75", str(lock), "true"]
    with image_lock(lock):
        assert subprocess.run(probe, check=False).returncode == 75
    assert subprocess.run(probe, check=False).returncode == 0
