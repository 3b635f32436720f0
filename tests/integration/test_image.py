"""The controller image, run as the Deployment runs it: podman with runc, non-root,
read-only root filesystem, no capabilities, no new privileges, ``--network host``, a ServiceAccount token,
its CA and namespace mounted where a kubelet projects them, ``KUBERNETES_SERVICE_HOST``/``PORT`` set, so
the controller takes its in-cluster path. It registers the CRD and reconciles a TaskSet to Succeeded on
the embedded control plane as that ServiceAccount (the base's RBAC, a TokenRequest token), serves its
probes and its secure metrics, and stops cleanly on SIGTERM within the grace period.

The image is ``make image`` (Debian bases from mmdebstrap, then the Dockerfile), built when it is missing
or was built from other sources than these (its label ``hack.image_digest.SOURCE_LABEL`` is not this
tree's digest): by the session in the background from its start (``image_session``,
``hack/image_build.py``), which the ``image`` fixture awaits, or by the fixture itself if the session
started none. Without podman the test is skipped, except under ``CI=true``: there the build installs
podman, runc and mmdebstrap first (``make image-tools``), and any failure is a test failure.

Resource limits: podman asks runc to raise RLIMIT_NOFILE and RLIMIT_NPROC to 1048576 for a rootful
container, which a host that caps the hard limits lower (a sandbox, a CI runner) refuses ("error setting
rlimit type 7: operation not permitted"). The container gets this process's own limits instead, which
need no privilege to keep, except that RLIMIT_NPROC is capped at ``kernel.pid_max``: podman lowers its
own RLIMIT_NPROC to that at start (containers/common), and runc, its child, may not raise it again. No
more processes than ``pid_max`` can exist anyway, and the controller runs a few dozen threads, so
nothing it relies on changes."""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import ssl
import subprocess
import sys
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devcluster import Cluster, free_port, sim
from hack.image_build import built_from
from hack.image_digest import source_digest
from tests.builders import TaskSetBuilder, pod_template
from tests.integration.daemon import json_records, scrape, token_of
from tests.integration.harness import TaskSets, eventually
from tests.integration.image_session import IMAGE, background
from tests.integration.manifests import apply_base_rbac, remove_cluster_rbac

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PODMAN = ("podman", "--runtime", "runc")
SERVICE_ACCOUNT = "taskset-controller"
PROJECTED = "/var/run/secrets/kubernetes.io/serviceaccount"  # where a kubelet mounts the token volume
USER = "65532:65532"  # the Deployment's runAsUser/runAsGroup (and the image's USER)
BUILD_TIMEOUT = 1200.0  # seconds: a cold `make image` (two mmdebstrap runs, the wheels) took 7 min 53 s here
GRACE_PERIOD = 40  # the Deployment's terminationGracePeriodSeconds
PODMAN_RLIMIT_DEFAULT = 1_048_576  # what podman would ask for; never more than that
FORBIDDEN = re.compile(r"forbidden|\b403\b", re.IGNORECASE)
LIMITED = {"nofile": resource.RLIMIT_NOFILE, "nproc": resource.RLIMIT_NPROC}


def podman(*args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*PODMAN, *args], capture_output=True, text=True, check=False, timeout=timeout)


def ulimits() -> list[str]:
    """``--ulimit`` options that keep this process's soft and hard limits, RLIMIT_NPROC at most
    ``kernel.pid_max`` (see the module's docstring)."""
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text())
    options = []
    for name, kind in LIMITED.items():
        ceiling = (
            min(PODMAN_RLIMIT_DEFAULT, pid_max) if kind == resource.RLIMIT_NPROC else PODMAN_RLIMIT_DEFAULT
        )
        soft, hard = (
            ceiling if value == resource.RLIM_INFINITY else min(value, ceiling)
            for value in resource.getrlimit(kind)
        )
        options += ["--ulimit", f"{name}={soft}:{hard}"]
    return options


@pytest.fixture(scope="module")
def image(request: pytest.FixtureRequest) -> str:
    """The image of this tree's sources: the session's background build awaited, or built here if the
    session started none (it was fresh then); its size goes to the test's output."""
    if shutil.which("podman") is None and os.environ.get("CI") != "true":
        pytest.skip("podman is not installed (`make image-tools` installs podman, runc and mmdebstrap)")
    started = background(request.config)
    if started is not None:
        started.wait(BUILD_TIMEOUT)  # the rest of the build, at full speed now that the tests wait
    wanted = source_digest()
    if built_from(IMAGE) != wanted:
        built = subprocess.run(
            [sys.executable, "-m", "hack.image_build", IMAGE, sys.executable],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
            timeout=BUILD_TIMEOUT,
        )
        assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
        assert built_from(IMAGE) == wanted, f"{IMAGE} is not labelled with this tree's digest {wanted}"
    size = podman("image", "inspect", "--format", "{{.Size}}", IMAGE).stdout.strip()
    print(f"image {IMAGE}: {int(size) / 1e6:.0f} MB ({size} bytes)")
    return IMAGE


@pytest.fixture
def token_volume(cluster: Cluster, namespace: str, crd_installed: None, tmp_path: Path) -> Iterator[Path]:
    """The base's RBAC in this namespace, and the ServiceAccount volume a kubelet would project: a
    TokenRequest token, the cluster's CA, the namespace, readable by the container's user."""
    rbac = apply_base_rbac(cluster, namespace)
    volume = tmp_path / "serviceaccount"
    volume.mkdir(mode=0o755)
    (volume / "token").write_text(token_of(cluster, namespace, SERVICE_ACCOUNT))
    (volume / "namespace").write_text(namespace)
    shutil.copy(cluster.pki.ca_cert, volume / "ca.crt")
    for path in volume.iterdir():
        path.chmod(0o644)  # the kubelet's defaultMode
    yield volume
    remove_cluster_rbac(cluster, rbac)


@pytest.mark.timeout(BUILD_TIMEOUT + 300)  # the image fixture may build it
def test_the_image_runs_as_the_deployment_would(
    image: str, cluster: Cluster, namespace: str, token_volume: Path
) -> None:
    api = urllib.parse.urlsplit(cluster.server)  # 127.0.0.1: in the serving certificate's names
    assert api.hostname is not None and api.port is not None
    metrics_port, probe_port = free_port(), free_port()
    name = f"taskset-image-test-{uuid.uuid4().hex[:6]}"
    run = podman(
        "run", "--detach", "--name", name, "--network", "host", *ulimits(),
        "--user", USER, "--read-only", "--cap-drop", "all", "--security-opt", "no-new-privileges",
        "--tmpfs", "/tmp:rw,size=16m,mode=1777",  # the Deployment's emptyDir
        "--volume", f"{token_volume}:{PROJECTED}:ro",
        "--env", f"KUBERNETES_SERVICE_HOST={api.hostname}", "--env", f"KUBERNETES_SERVICE_PORT={api.port}",
        image,
        "--leader-elect", "--leader-elect-lease-duration=4", "--leader-elect-renew-deadline=3",
        "--leader-elect-retry-period=1", f"--namespace={namespace}",
        f"--metrics-bind-address=127.0.0.1:{metrics_port}", "--metrics-secure=true",
        f"--health-probe-bind-address=127.0.0.1:{probe_port}",
    )  # fmt: skip
    try:
        assert run.returncode == 0, run.stderr  # a container refused at start still exists: rm it below
        _reconciles_and_serves(cluster, namespace, name, metrics=metrics_port, probe=probe_port)
        assert podman("kill", "--signal", "TERM", name).returncode == 0
        stopped = podman("wait", name, timeout=GRACE_PERIOD)
        assert stopped.stdout.strip() == "0", _logs(name)[-3000:]
    finally:
        output = _logs(name)
        podman("rm", "--force", name)
    said = [record["msg"] for record in json_records(output)]
    assert said[-2:] == ["released lease", "TaskSet controller stopped"], said[-5:]
    denied = [r for r in json_records(output) if FORBIDDEN.search(json.dumps(r))]
    assert denied == [], denied[:3]  # the base's RBAC is all it needs


def _reconciles_and_serves(cluster: Cluster, namespace: str, name: str, metrics: int, probe: int) -> None:
    def said(message: str) -> list[dict[str, Any]]:
        return [r for r in json_records(_logs(name)) if r.get("msg") == message]

    eventually(lambda: bool(said("became leader, starting workers")), 60, "leadership")
    assert said("Kubernetes client configured")[0]["credentials"] == "in-cluster service account"
    assert said("CRD registered")[0]["action"] in ("unchanged", "updated")  # get (and update) its CRD
    assert said("became leader, starting workers")[0]["lease"].startswith(f"{namespace}/")

    tasksets = TaskSets(cluster, namespace)
    template = pod_template(annotations=sim.outcome(duration=1))
    tasksets.create(
        TaskSetBuilder("from-the-image")
        .role("worker", 2, template=template, event_policy=[("RoleSucceeded", "TaskSetSucceeded")])
        .obj()
    )
    assert tasksets.final("from-the-image", timeout=90)["state"] == "Succeeded"

    assert _status(f"http://127.0.0.1:{probe}/readyz") == 200
    assert _status(f"http://127.0.0.1:{probe}/healthz") == 200
    self_signed = ssl.create_default_context()
    self_signed.check_hostname, self_signed.verify_mode = False, ssl.CERT_NONE  # made at start in /tmp
    assert scrape(metrics, None, self_signed)[0] == 401
    cluster.kubectl("create", "serviceaccount", "scraper", f"--namespace={namespace}")
    binding = f"image-scraper-{namespace}"
    reader = f"--clusterrole=taskset-metrics-reader-{namespace}"  # the base's, from apply_base_rbac
    cluster.kubectl("create", "clusterrolebinding", binding, reader, f"--serviceaccount={namespace}:scraper")
    try:
        status, text = scrape(metrics, token_of(cluster, namespace, "scraper"), self_signed)
    finally:
        cluster.kubectl("delete", "clusterrolebinding", binding, "--ignore-not-found")
    assert status == 200, text
    assert 'controller_runtime_reconcile_total{controller="taskset",result="success"}' in text


def _logs(name: str) -> str:
    shown = podman("logs", name)
    return shown.stdout + shown.stderr


def _status(url: str) -> int:
    with urllib.request.urlopen(url, timeout=5) as response:
        return int(response.status)
