"""What the optional components (``devcluster.kueue``, ``devcluster.coscheduling``) share: one
process beside a running control plane, started on demand, ready when its health endpoint answers, and
stopped with it (it also dies with the process that started it)."""

from __future__ import annotations

import abc
import ssl
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Self

from devcluster.cluster import ClusterError, _Process

if TYPE_CHECKING:
    from devcluster.cluster import Cluster

READY_TIMEOUT = 120.0  # seconds; informers sync in a few on a warm API server, 2 busy cores are slower


class Addon(abc.ABC):
    """One optional component's process; subclasses say how to prepare, run and probe it. ``start`` returns
    it ready, ``stop`` ends it (tests do so in a ``finally``)."""

    name = "addon"

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.directory = cluster.directory / self.name
        self._process: _Process | None = None
        self.port = 0  # the loopback port ``ready`` probes, chosen by ``prepare``

    # ----- what a component says --------------------------------------------------------------
    @abc.abstractmethod
    def prepare(self) -> list[str]:
        """Apply its CRDs, write its configuration; return the command that runs it."""

    @abc.abstractmethod
    def ready(self) -> bool:
        """Whether its health endpoint answers."""

    # ----- shared -----------------------------------------------------------------------------
    @staticmethod
    def answers(url: str, context: ssl.SSLContext | None = None) -> bool:
        """Whether ``url`` answers 200 now (a health endpoint)."""
        try:
            with urllib.request.urlopen(url, timeout=2, context=context) as answer:
                return bool(answer.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    @property
    def log_path(self) -> Path:
        return self.directory / f"{self.name}.log"

    def apply_crds(self, path: Path) -> None:
        """Apply CRDs (a file or a directory) and wait until the API server serves them."""
        self.cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(path))
        self.cluster.kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", str(path))

    def start(self) -> Self:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._process = _Process(self.name, self.prepare(), self.log_path)
        self._process.start()
        deadline = time.monotonic() + READY_TIMEOUT
        while time.monotonic() < deadline:
            if self.ready():
                return self
            if not self._process.running():
                break
            time.sleep(0.2)
        tail = self._process.tail(60)
        self.stop()
        raise ClusterError(f"{self.name} did not become ready:\n{tail}")

    def stop(self) -> None:
        if self._process is not None:
            self._process.stop()
