"""What the optional components (issue 24: ``devcluster.kueue``, ``devcluster.coscheduling``) share: one
process beside a running control plane, started on demand, ready when its health endpoint answers, and
stopped with it (it also dies with the process that started it)."""

from __future__ import annotations

import contextlib
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self

from devcluster.cluster import die_with_parent

if TYPE_CHECKING:
    from devcluster.cluster import Cluster

READY_TIMEOUT = 120.0  # seconds; informers sync in a few on a warm API server, 2 busy cores are slower
STOP_GRACE = 10.0  # seconds to exit after SIGTERM before SIGKILL


class Addon:
    """One optional component's process; subclasses say how to prepare, run and probe it."""

    name = "addon"

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.directory = cluster.directory / self.name
        self._process: subprocess.Popen[bytes] | None = None

    # ----- what a component says --------------------------------------------------------------
    def prepare(self) -> list[str]:
        """Apply its CRDs, write its configuration; return the command that runs it."""
        raise NotImplementedError

    def ready(self) -> bool:
        """Whether its health endpoint answers."""
        raise NotImplementedError

    # ----- shared -----------------------------------------------------------------------------
    @property
    def log_path(self) -> Path:
        return self.directory / f"{self.name}.log"

    def apply_crds(self, path: Path) -> None:
        """Apply CRDs (a file or a directory) and wait until the API server serves them."""
        self.cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(path))
        self.cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", str(path))

    def start(self) -> Self:
        self.directory.mkdir(parents=True, exist_ok=True)
        command = self.prepare()
        log = self.log_path.open("ab")
        try:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=die_with_parent,  # noqa: PLW1509  (only a prctl, as the cluster's components)
            )
        finally:
            log.close()
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.ready():
                return self
            if self._process.poll() is not None:
                break
            time.sleep(0.2)
        tail = self.log()[-3000:]
        self.stop()
        raise RuntimeError(f"{self.name} did not become ready:\n{tail}")

    def log(self) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")
        return ""

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(STOP_GRACE)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.stop()
