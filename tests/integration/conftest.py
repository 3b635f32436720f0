"""Session fixtures for integration tests: one embedded control plane for the whole run.

Under ``CI=true`` a control plane that fails to start is a test failure (the fixture raises), never a
skip; outside CI it is reported as an error too, because a missing prerequisite must be visible.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import pytest

from devcluster import Cluster, Settings

# Short enough that a test can provoke 410 Gone within seconds; long enough not to disturb others.
TEST_COMPACTION_INTERVAL = "5s"


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    with Cluster(Settings(nodes=4, etcd_compaction_interval=TEST_COMPACTION_INTERVAL)) as running:
        yield running


@pytest.fixture
def namespace(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace per test, deleted (without waiting) afterwards."""
    base = request.node.name.lower().replace("_", "-")
    name = "".join(c for c in base if c.isalnum() or c == "-")[:40].strip("-")
    name = f"{name}-{uuid.uuid4().hex[:6]}"
    cluster.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    yield name
    with contextlib.suppress(OSError):
        cluster.request("DELETE", f"/api/v1/namespaces/{name}")
