"""A build running beside the test session: a child process at the lowest CPU priority, in its own
process group, its output in a log file.

The session's tests keep their share of the two cores (niceness 19), while the build takes what they
leave idle; a test that needs the result waits for it, and whatever still runs when the session ends is
stopped with every process it started. ``hack/image_build.py`` (the controller image) and
``tests/integration/addon_session.py`` (the add-ons' Go builds) run theirs so.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Final

NICENESS: Final = 19  # the lowest priority: the tests running meanwhile keep their CPU share
STOP_GRACE: Final = 30.0  # seconds a build stopped at the session's end gets before SIGKILL


class BackgroundJob:
    """``command`` (run from ``cwd``) at the lowest priority, its output in ``log``; ``what`` names it in
    errors."""

    def __init__(self, command: Sequence[str], cwd: Path, log: Path, what: str) -> None:
        self.log, self.what = log, what
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("wb") as output:  # the child keeps its own copy of the descriptor
            self.process = subprocess.Popen(
                ["nice", "-n", str(NICENESS), *command],
                cwd=cwd,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group, so that ``stop`` reaches all of it
            )

    def wait(self, timeout: float) -> None:
        """Wait until it ends; a failure (or the timeout) raises with the log's tail."""
        try:
            status = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise AssertionError(f"{self.what} ran over {timeout:.0f} s:\n{self.tail()}") from None
        if status != 0:
            raise AssertionError(f"{self.what} failed ({status}):\n{self.tail()}")

    def stop(self) -> None:
        """End the job and every process it started if it still runs: the session is over."""
        if self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(STOP_GRACE)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def tail(self, characters: int = 4000) -> str:
        return self.log.read_text(errors="replace")[-characters:]
