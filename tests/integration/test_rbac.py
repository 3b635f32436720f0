"""Least privilege, proven on the real API server: the rendered base RBAC is applied (in the test's
namespace), a token for the controller's ServiceAccount comes from the TokenRequest API, and the real
controller process runs AS that ServiceAccount through a whole TaskSet lifecycle, with CRD registration
and leader election on. What it must not do is forbidden, and ``kubectl auth can-i --list`` equals the
table documented in docs/deployment.md (and the manifests, by tests/unit/test_manifests.py).

The session's control plane runs with the OwnerReferencesPermissionEnforcement admission plugin, so the
``*/finalizers`` rules are exercised too (without them every ControlUnit create is refused).
"""

from __future__ import annotations

import json
import re
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devcluster import Cluster, sim
from taskset.api import constants as c
from taskset.daemon.metrics_auth import DECISION_TTL
from taskset.daemon.tls import CERT_FILE, KEY_FILE
from taskset.daemon.tls_mint import self_signed
from tests.builders import TaskSetBuilder, pod_template
from tests.docs import Rule, documented_rbac_rules
from tests.integration.daemon import Daemon, account_kubeconfig, scrape, scratch_namespace, token_of
from tests.integration.harness import TaskSets, eventually
from tests.integration.manifests import apply_base_rbac, remove_cluster_rbac

pytestmark = pytest.mark.integration

SERVICE_ACCOUNT = "taskset-controller"
# Granted to every authenticated user (system:basic-user), not by our manifests.
EVERYONE = {
    "selfsubjectreviews.authentication.k8s.io",
    "selfsubjectaccessreviews.authorization.k8s.io",
    "selfsubjectrulesreviews.authorization.k8s.io",
}


@pytest.fixture(scope="module")
def namespace(cluster: Cluster) -> Iterator[str]:
    """One namespace for the module: the RBAC objects and the token are set up once for all its tests."""
    with scratch_namespace(cluster, "rbac") as name:
        yield name


@pytest.fixture(scope="module")
def account(
    cluster: Cluster, namespace: str, crd_installed: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """The base's RBAC in this namespace, and a kubeconfig holding a TokenRequest token of its SA."""
    tmp_path = tmp_path_factory.mktemp("rbac")
    rbac = apply_base_rbac(cluster, namespace)
    kubeconfig = account_kubeconfig(cluster, namespace, SERVICE_ACCOUNT, tmp_path / "controller.kubeconfig")
    yield kubeconfig
    remove_cluster_rbac(cluster, rbac)


def kubectl_as(cluster: Cluster, kubeconfig: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """kubectl with only the ServiceAccount's credentials (the admin kubeconfig is not involved)."""
    return subprocess.run(
        [str(cluster.binaries["kubectl"]), f"--kubeconfig={kubeconfig}", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


def can_i(cluster: Cluster, kubeconfig: Path, *args: str) -> bool:
    done = kubectl_as(cluster, kubeconfig, "auth", "can-i", *args)
    assert done.stdout.strip() in ("yes", "no"), done.stderr
    return done.stdout.strip() == "yes"


def can_i_list(cluster: Cluster, kubeconfig: Path, namespace: str) -> set[Rule]:
    """The resource rules of ``kubectl auth can-i --list``, parsed by the header's column positions."""
    done = kubectl_as(cluster, kubeconfig, "auth", "can-i", "--list", f"--namespace={namespace}")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header = lines[0]
    starts = [header.index(title) for title in ("Resources", "Non-Resource URLs", "Resource Names", "Verbs")]
    rules: set[Rule] = set()
    for line in lines[1:]:
        cells = [line[a:b].strip() for a, b in zip(starts, [*starts[1:], len(line) + 1], strict=True)]
        resource, _, names, verbs = cells
        if not resource:
            continue  # a non-resource URL (/healthz, /api, ...): discovery, granted to everyone
        rules.add((resource, tuple(_brackets(names)), frozenset(_brackets(verbs))))
    return rules


def _brackets(text: str) -> list[str]:
    return text.strip("[]").split()


def test_the_controller_runs_a_taskset_to_success_as_its_service_account(
    cluster: Cluster, namespace: str, account: Path, tmp_path: Path
) -> None:
    daemon = Daemon(
        cluster,
        namespace,
        tmp_path / "logs",
        f"--kubeconfig={account}",  # after the helper's admin kubeconfig: the last flag wins
        "--register-crd=true",
        "--leader-elect",
        f"--leader-elect-namespace={namespace}",
        "--leader-elect-lease-duration=4",
        "--leader-elect-renew-deadline=3",
        "--leader-elect-retry-period=1",
    )
    (tmp_path / "logs").mkdir()
    daemon.start()
    try:
        records = daemon.records()
        assert any(
            r["msg"] == "Kubernetes client configured" and str(account) in r["credentials"] for r in records
        )
        registered = next(r for r in records if r["msg"] == "CRD registered")
        assert registered["action"] in ("unchanged", "updated")  # get (and update) on our CRD only
        eventually(lambda: any(r["msg"] == "became leader, starting workers" for r in daemon.records()), 30)

        api = TaskSets(cluster, namespace)
        template = pod_template(annotations=sim.outcome(duration=1))
        api.create(
            TaskSetBuilder("least-privilege")
            .role("ps", 1, template=template)
            .role("worker", 2, template=template, event_policy=[("RoleSucceeded", "TaskSetSucceeded")])
            .obj()
        )
        status = api.final("least-privilege", timeout=90)
        assert status["state"] == "Succeeded", status
        eventually(lambda: "TaskSet Succeeded" in api.reasons("least-privilege"), 30, "events were created")
        assert daemon.stop() == 0
    finally:
        if daemon.running():
            daemon.kill()
    records = daemon.records()
    assert "released lease" in [r["msg"] for r in records]
    denied = [r for r in records if re.search(r"forbidden|\b403\b", json.dumps(r), re.IGNORECASE)]
    assert denied == [], denied[:3]


FORBIDDEN = [
    pytest.param(("get", "secrets"), id="read Secrets"),
    pytest.param(("list", "secrets", "--all-namespaces"), id="list Secrets anywhere"),
    pytest.param(("create", "deployments.apps"), id="create Deployments"),
    pytest.param(("create", "jobs.batch"), id="create Jobs"),
    pytest.param(("delete", "services"), id="delete Services"),
    pytest.param(("update", "services"), id="update Services"),
    pytest.param(("update", "nodes"), id="write Nodes"),
    pytest.param(("patch", "nodes", "--subresource=status"), id="write a Node's status"),
    pytest.param(("list", "namespaces"), id="list Namespaces"),
    pytest.param(("create", "tasksets.octopus.openi.pcl.cn"), id="create TaskSets"),
    pytest.param(("update", "tasksets.octopus.openi.pcl.cn"), id="write a TaskSet's spec"),
    pytest.param(("patch", "tasksets.octopus.openi.pcl.cn"), id="patch a TaskSet"),
    pytest.param(("patch", "tasksets.octopus.openi.pcl.cn", "--subresource=status"), id="patch status"),
    pytest.param(("update", "pods"), id="update Pods"),
    pytest.param(("patch", "pods"), id="patch Pods"),
    pytest.param(("deletecollection", "pods"), id="delete all Pods at once"),
    pytest.param(("create", "pods", "--subresource=exec"), id="exec into Pods"),
    pytest.param(("get", "pods", "--subresource=log"), id="read Pod logs"),
    pytest.param(("update", "configmaps"), id="update ConfigMaps"),
    pytest.param(("update", "events"), id="update Events"),
    pytest.param(("create", "serviceaccounts", "--subresource=token"), id="mint tokens"),
    pytest.param(("update", "customresourcedefinitions/widgets.example.com"), id="update another CRD"),
    pytest.param(("delete", "customresourcedefinitions.apiextensions.k8s.io"), id="delete CRDs"),
    pytest.param(("update", "leases.coordination.k8s.io/kube-scheduler"), id="update another Lease"),
    pytest.param(("create", "leases.coordination.k8s.io", "--namespace=default"), id="Leases elsewhere"),
    pytest.param(("create", "clusterrolebindings.rbac.authorization.k8s.io"), id="grant itself more"),
    pytest.param(("impersonate", "users"), id="impersonate"),
]


@pytest.mark.parametrize("action", FORBIDDEN)
def test_what_the_controller_must_not_do_is_forbidden(
    cluster: Cluster, namespace: str, account: Path, action: tuple[str, ...]
) -> None:
    assert not can_i(cluster, account, *in_namespace(action, namespace))


ALLOWED = [
    pytest.param(("create", "pods", "--all-namespaces"), id="create Pods in any namespace"),
    pytest.param(("watch", "configmaps", "--all-namespaces"), id="watch ConfigMaps everywhere"),
    pytest.param(("patch", "configmaps", "--all-namespaces"), id="patch the live membership"),
    pytest.param(("create", "services", "--all-namespaces"), id="create headless Services"),
    pytest.param(("patch", "services", "--all-namespaces"), id="patch a headless Service back"),
    pytest.param(("update", "tasksets.octopus.openi.pcl.cn", "--subresource=status"), id="update status"),
    pytest.param(
        ("delete", "tasksets.octopus.openi.pcl.cn", "--all-namespaces"), id="delete a TaskSet past its TTL"
    ),
    pytest.param(("create", "events", "--namespace=default"), id="Events in any namespace"),
    pytest.param(("patch", "events", "--namespace=default"), id="count a repeated Event"),
    pytest.param(
        ("update", f"customresourcedefinitions/{c.CRD_NAME}"), id="update our CRD (self-registration)"
    ),
    pytest.param(("update", "leases.coordination.k8s.io/taskset-controller"), id="renew its Lease"),
    pytest.param(("watch", "nodes"), id="watch Nodes (lost nodes)"),
]


@pytest.mark.parametrize("action", ALLOWED)
def test_what_the_controller_needs_is_allowed(
    cluster: Cluster, namespace: str, account: Path, action: tuple[str, ...]
) -> None:
    assert can_i(cluster, account, *in_namespace(action, namespace))


def in_namespace(action: tuple[str, ...], namespace: str) -> tuple[str, ...]:
    """The test's namespace unless the action names its own scope."""
    if any(arg.startswith(("--namespace", "--all-namespaces")) for arg in action):
        return action
    return (*action, f"--namespace={namespace}")


def test_a_real_request_for_a_secret_is_refused(cluster: Cluster, namespace: str, account: Path) -> None:
    config: dict[str, Any] = json.loads(account.read_text())
    token = config["users"][0]["user"]["token"]
    request = urllib.request.Request(
        f"{cluster.server}/api/v1/namespaces/{namespace}/secrets",
        headers={"Authorization": f"Bearer {token}"},
    )
    context = ssl.create_default_context(cafile=str(cluster.pki.ca_cert))
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, context=context, timeout=10)
    assert refused.value.code == 403
    body = json.loads(refused.value.read())
    assert f"system:serviceaccount:{namespace}:{SERVICE_ACCOUNT}" in body["message"]


def test_can_i_list_equals_the_documented_rules(cluster: Cluster, namespace: str, account: Path) -> None:
    granted = can_i_list(cluster, account, namespace)
    ours = {rule for rule in granted if rule[0] not in EVERYONE}
    assert {rule[0] for rule in granted - ours} == EVERYONE
    assert ours == documented_rbac_rules()
    # The Lease and Secret rules are namespaced: elsewhere only the cluster-wide rules remain.
    elsewhere = {rule for rule in can_i_list(cluster, account, "default") if rule[0] not in EVERYONE}
    assert elsewhere == {rule for rule in ours if not rule[0].startswith(("leases.", "secrets"))}


# ----- who may read /metrics ----------------------------------------------------------


def test_metrics_are_served_to_a_token_with_the_reader_role_only(
    cluster: Cluster, namespace: str, account: Path, tmp_path: Path
) -> None:
    """The controller, as its ServiceAccount, reviews each caller with the real API server: no token and
    a forged one are 401, a ServiceAccount without ``taskset-metrics-reader`` is 403, one bound to it
    reads the metrics, and once its binding is gone it is refused within the cache's TTL. The
    certificate is a mounted one (``--metrics-cert-dir``), which the client verifies."""
    binding = f"metrics-scraper-{namespace}"
    for name in ("scraper", "stranger"):
        cluster.kubectl("create", "serviceaccount", name, f"--namespace={namespace}")
    reader = f"--clusterrole=taskset-metrics-reader-{namespace}"  # the base's, applied by ``account``
    cluster.kubectl("create", "clusterrolebinding", binding, reader, f"--serviceaccount={namespace}:scraper")
    certs = tmp_path / "certs"
    certs.mkdir()
    pair = self_signed()
    (certs / CERT_FILE).write_bytes(pair.cert_pem)
    (certs / KEY_FILE).write_bytes(pair.key_pem)
    (tmp_path / "logs").mkdir()
    daemon = Daemon(
        cluster,
        namespace,
        tmp_path / "logs",
        f"--kubeconfig={account}",
        f"--leader-elect-namespace={namespace}",  # where the proof key's Secret may be read
        "--metrics-secure=true",
        f"--metrics-cert-dir={certs}",
    )
    daemon.start()
    trusting = ssl.create_default_context(cadata=pair.cert_pem.decode())  # the mounted cert, or no handshake
    port = daemon.metrics_port
    try:
        assert scrape(port, None, trusting) == (401, "Unauthorized: a bearer token is required\n")
        assert scrape(port, "forged", trusting) == (401, "Unauthorized: the token was not accepted\n")
        stranger = f"system:serviceaccount:{namespace}:stranger"
        assert scrape(port, token_of(cluster, namespace, "stranger"), trusting) == (
            403,
            f"Forbidden: {stranger} may not get /metrics\n",
        )
        token = token_of(cluster, namespace, "scraper")
        status, text = scrape(port, token, trusting)
        assert status == 200, text
        assert "controller_runtime_max_concurrent_reconciles" in text
        cluster.kubectl("delete", "clusterrolebinding", binding)
        eventually(lambda: scrape(port, token, trusting)[0] == 403, DECISION_TTL + 20, "revoked")
        assert daemon.stop() == 0
    finally:
        cluster.kubectl("delete", "clusterrolebinding", binding, "--ignore-not-found")
        if daemon.running():
            daemon.kill()
    records = daemon.records()
    serving = next(r for r in records if r["msg"] == "serving HTTP endpoints")
    assert (serving["metrics_scheme"], serving["metrics_cert"]) == ("https", str(certs))
    assert [r for r in records if r["level"] in ("warn", "error")] == []  # every review was allowed
