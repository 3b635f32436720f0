"""Fixtures for the spec's acceptance scenarios (section 14): a controller per test namespace, the API
helpers, a recorder of everything the namespace shows, and ``run``, the preamble most scenarios share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devcluster import Cluster
from tests.builders import TaskSetBuilder
from tests.integration.daemon import Daemon
from tests.integration.harness import FINAL_TIMEOUT, Recorder, Script, TaskSets
from tests.integration.scenarios.steps import Run


@pytest.fixture
def run(ts: TaskSets, recorder: Recorder) -> Run:
    """Create the TaskSet ``taskset`` describes, its Pods behaving as ``script`` says (when given), and
    return its status once it is completed (the spec's ``final``)."""

    def run(
        taskset: TaskSetBuilder, script: Script | None = None, timeout: float = FINAL_TIMEOUT
    ) -> dict[str, Any]:
        if script is not None:
            recorder.script = script
        obj = taskset.obj()
        ts.create(obj)
        return ts.final(obj["metadata"]["name"], timeout=timeout)

    return run


@pytest.fixture
def api(cluster: Cluster, namespace: str, crd_installed: None) -> TaskSets:
    """The API helpers without an in-process controller, for tests that run the controller process."""
    return TaskSets(cluster, namespace)


@pytest.fixture
def daemon(cluster: Cluster, namespace: str, crd_installed: None, tmp_path: Path) -> Iterator[Daemon]:
    """The real controller process (``tests.integration.daemon``), stopped after the test."""
    process = Daemon(cluster, namespace, tmp_path)
    yield process
    if process.running():
        process.stop()
