"""Fixtures for the spec's acceptance scenarios (section 14): a controller per test namespace, the API
helpers and a recorder of everything the namespace shows."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devcluster import Cluster
from taskset.runtime.controller import Controller
from tests.integration.harness import Recorder, TaskSets


@pytest.fixture
def ts(cluster: Cluster, namespace: str, controller: Controller) -> TaskSets:
    return TaskSets(cluster, namespace)


@pytest.fixture
def recorder(cluster: Cluster, namespace: str) -> Iterator[Recorder]:
    recorder = Recorder(cluster, namespace)
    recorder.start()
    yield recorder
    recorder.stop()
