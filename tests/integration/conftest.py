"""Session fixtures for integration tests: one embedded control plane for the whole run, the TaskSet CRD,
a fresh namespace per test, and a controller scoped to that namespace.

Under ``CI=true`` a control plane that fails to start is a test failure (the fixture raises), never a
skip; outside CI it is reported as an error too, because a missing prerequisite must be visible.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
import structlog
from kubernetes import client

from devcluster import Cluster, Settings
from devcluster.coscheduling import Coscheduler
from devcluster.kueue import Kueue
from taskset.api import constants as c
from taskset.integrations import BUILT_IN, Integration
from taskset.runtime.controller import Controller, ControllerSettings
from tests.integration import addon_session, image_session
from tests.integration.harness import ObjectLog, Recorder, TaskSets, watching

ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = ROOT / "manifests" / "crd" / f"{c.CRD_NAME}.yaml"
# Short enough that a test can provoke 410 Gone within seconds; long enough not to disturb others.
TEST_COMPACTION_INTERVAL = "5s"
ESTABLISH_TIMEOUT = 60.0  # seconds; a CRD of this size is established in about one on a warm apiserver
SYNC_TIMEOUT = 30.0


# Hardened clusters (OpenShift and others) check that whoever sets blockOwnerDeletion may update the
# owner's finalizers; on here so that test_rbac proves the manifests' RBAC holds there too.
TEST_ADMISSION_PLUGINS = ("--enable-admission-plugins=OwnerReferencesPermissionEnforcement",)


def pytest_collection_finish(session: pytest.Session) -> None:
    """The controller image, if the session runs its test and it is stale, and the add-ons not built yet
    build while the tests run."""
    addon_session.start(session)  # first: the chaos suite, which runs first, needs Kueue
    image_session.start(session)


def pytest_sessionfinish(session: pytest.Session) -> None:
    addon_session.stop(session)
    image_session.stop(session)


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    settings = Settings(
        nodes=4,
        etcd_compaction_interval=TEST_COMPACTION_INTERVAL,
        extra_apiserver_args=TEST_ADMISSION_PLUGINS,
    )
    with Cluster(settings) as running:
        yield running


@pytest.fixture
def namespace(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace per test, deleted (without waiting) afterwards."""
    base = request.node.name.lower().replace("_", "-")
    name = "".join(ch for ch in base if ch.isalnum() or ch == "-")[:40].strip("-")
    name = f"{name}-{uuid.uuid4().hex[:6]}"
    cluster.request("POST", "/api/v1/namespaces", {"metadata": {"name": name}})
    yield name
    with contextlib.suppress(OSError):
        cluster.request("DELETE", f"/api/v1/namespaces/{name}")


def install_crd(cluster: Cluster, manifest: str, name: str, resource: str) -> None:
    applied = cluster.kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", "-", input=manifest, check=False
    )
    assert applied.returncode == 0, applied.stderr
    deadline = time.monotonic() + ESTABLISH_TIMEOUT
    jsonpath = '{.status.conditions[?(@.type=="Established")].status}'
    while time.monotonic() < deadline:
        established = cluster.kubectl("get", "crd", name, "-o", f"jsonpath={jsonpath}", check=False)
        # Established can precede discovery by a moment; a list proves kubectl can resolve the resource.
        if (
            established.stdout == "True"
            and cluster.kubectl("get", resource, "-A", check=False).returncode == 0
        ):
            return
        time.sleep(0.2)
    raise AssertionError(f"CRD {name} not established within {ESTABLISH_TIMEOUT}s")


@pytest.fixture(scope="session")
def crd_installed(cluster: Cluster) -> None:
    """The generated TaskSet CRD, applied server-side as `make` and the docs do, and established."""
    install_crd(cluster, CRD_FILE.read_text(), c.CRD_NAME, c.PLURAL)


def start_controller(
    cluster: Cluster, namespace: str, integrations: Sequence[Integration] = BUILT_IN, **settings: object
) -> Controller:
    controller = Controller(
        api_client=cluster.api_client(),
        settings=ControllerSettings(namespace=namespace, **settings),
        logger=structlog.get_logger("taskset-test").bind(test_namespace=namespace),
        integrations=integrations,
    )
    controller.start()
    if not controller.wait_for_sync(SYNC_TIMEOUT):
        controller.stop(1)
        raise AssertionError("controller caches did not sync")
    return controller


@pytest.fixture
def controller(cluster: Cluster, namespace: str, crd_installed: None) -> Iterator[Controller]:
    """An in-process controller watching only this test's namespace (so tests never share one)."""
    running = start_controller(cluster, namespace, workers=4)
    yield running
    running.stop(5)


@pytest.fixture
def ts(cluster: Cluster, namespace: str, controller: Controller) -> TaskSets:
    """This test's TaskSets, with its controller running."""
    return TaskSets(cluster, namespace)


@pytest.fixture
def pods(cluster: Cluster, namespace: str) -> Iterator[ObjectLog]:
    """Every version of every Pod the namespace shows, from a watch of its own."""
    with watching(cluster, namespace, "pods") as log:
        yield log


@pytest.fixture
def recorder(cluster: Cluster, namespace: str) -> Iterator[Recorder]:
    recorder = Recorder(cluster, namespace)
    recorder.start()
    yield recorder
    recorder.stop()


@pytest.fixture(scope="module")
def kueue(cluster: Cluster) -> Iterator[Kueue]:
    """Kueue beside the control plane, for the tests of one module; a failure to start fails
    them, never a skip."""
    running = Kueue(cluster).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def coscheduler(cluster: Cluster) -> Iterator[Coscheduler]:
    """scheduler-plugins' coscheduling scheduler, for the tests of one module; a failure to
    start fails them, never a skip."""
    running = Coscheduler(cluster).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def small_nodes(cluster: Cluster, namespace: str) -> Iterator[str]:
    """Two simulated nodes of one CPU each, tainted and labelled for this test alone: the others' Pods
    never land on them, and so never take their capacity."""
    core = client.CoreV1Api(cluster.api_client())
    names = cluster.create_nodes(
        2,
        namespace[:60],
        capacity={"cpu": "1", "memory": "4Gi", "pods": "10"},
        labels={"gang-test": namespace},
        taints=({"key": "gang-test", "value": namespace, "effect": "NoSchedule"},),
    )
    yield namespace
    for name in names:
        with contextlib.suppress(client.ApiException):
            core.delete_node(name)
