"""Every block of README.md and docs/ claimed for this module runs on the embedded control plane as it is
written (tests/doc_blocks.py finds them; tests/unit/test_doc_blocks.py fails on a block nobody runs):
complete objects and fragments are created with a server-side dry run, so a wrong field name fails;
shell lines run against the cluster; output shown is compared in shape (its keys) with what the real
thing prints; the metrics a query names are the ones a running daemon exports."""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from devcluster import Cluster, free_port, sim
from taskset.api import constants as c
from taskset.runtime.controller import Controller
from tests.doc_blocks import ROOT, Block, claimed, params
from tests.integration.conftest import install_crd
from tests.integration.daemon import Daemon, scratch_namespace
from tests.integration.harness import eventually
from tests.integration.test_crd import PODGROUP_CRD

pytestmark = [pytest.mark.integration, pytest.mark.addons]

TEMPLATE = {"spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}}


def minimal(name: str) -> dict[str, Any]:
    return {
        "apiVersion": c.API_VERSION,
        "kind": c.KIND,
        "metadata": {"name": name},
        "spec": {"roles": [{"name": "worker", "replicas": 1, "template": copy.deepcopy(TEMPLATE)}]},
    }


def dry_run(cluster: Cluster, namespace: str, document: dict[str, Any], where: str) -> None:
    """The example as the API server would take it. A cluster-scoped object another test already made
    (Kueue's ``default`` flavor) is applied instead of created, as the manual says to: the example is
    checked in any order of the tests."""
    text = yaml.safe_dump(document)
    done = cluster.kubectl("create", "--dry-run=server", "-n", namespace, "-f", "-", input=text, check=False)
    if done.returncode != 0 and "AlreadyExists" in done.stderr:
        done = cluster.kubectl(
            *("apply", "--server-side", "--force-conflicts", "--field-manager=docs-reader"),
            *("--dry-run=server", "-n", namespace, "-f", "-"),
            input=text,
            check=False,
        )
    assert done.returncode == 0, f"{where}: {done.stderr}"
    assert "Warning" not in done.stderr, f"{where}: {done.stderr}"


def elided(value: Any) -> bool:
    """The docs' ``...`` for "and the rest": a bare ``...`` or ``{...}``."""
    return value in ("...", {"...": None})


def filled(value: Any) -> Any:
    """The fragment with each elided Pod template made a minimal real one and other elisions dropped."""
    if isinstance(value, dict):
        return {
            k: copy.deepcopy(TEMPLATE) if k == "template" and elided(v) else filled(v)
            for k, v in value.items()
            if k == "template" or not elided(v)
        }
    if isinstance(value, list):
        return [filled(v) for v in value if not elided(v)]
    return value


def merged(base: Any, fragment: Any) -> Any:
    if isinstance(base, dict) and isinstance(fragment, dict):
        return {**base, **{k: merged(base[k], v) if k in base else v for k, v in fragment.items()}}
    if isinstance(base, list) and isinstance(fragment, list):  # roles by position
        return [merged(base[i], v) if i < len(base) else v for i, v in enumerate(fragment)]
    return fragment


def shape(value: Any) -> Any:
    """Keys, not values: a mapping's keys with their shapes, a list by its first item, a scalar's type."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return (
        "number" if isinstance(value, int | float) and not isinstance(value, bool) else type(value).__name__
    )


def manual_taskset(name: str) -> dict[str, Any]:
    """The complete TaskSet a documented example names, as the docs show it."""
    for block in claimed("dry-run"):
        for document in block.documents():
            if document.get("kind") == c.KIND and document["metadata"]["name"] == name:
                return copy.deepcopy(document)
    raise AssertionError(f"no complete TaskSet named {name} in the docs")


def create(cluster: Cluster, namespace: str, document: dict[str, Any]) -> dict[str, Any]:
    path = f"/apis/{c.GROUP}/{c.VERSION}/namespaces/{namespace}/{c.PLURAL}"
    return cluster.request("POST", path, document)  # type: ignore[no-any-return]


def pods_of(cluster: Cluster, namespace: str, name: str, count: int) -> list[dict[str, Any]]:
    def listed() -> list[dict[str, Any]] | None:
        items = cluster.request("GET", f"/api/v1/namespaces/{namespace}/pods")["items"]
        mine = [p for p in items if p["metadata"]["name"].startswith(f"{name}-")]
        return mine if len(mine) >= count else None

    return eventually(listed, 60, f"{count} Pods of {name}")  # type: ignore[no-any-return]


@pytest.mark.parametrize("block", **params("dry-run"))
def test_a_complete_example_is_accepted(
    cluster: Cluster, crd_installed: None, namespace: str, block: Block, request: pytest.FixtureRequest
) -> None:
    if "kueue" in block.args:  # the Kueue objects need Kueue's CRDs and webhooks
        request.getfixturevalue("kueue")
    if "stand-in=PodGroup" in block.args:  # kube-batch is not installed: its CRD stands in, any field kept
        install_crd(cluster, json.dumps(PODGROUP_CRD), "podgroups.scheduling.incubator.k8s.io", "podgroups")
    for document in block.documents():
        dry_run(cluster, namespace, document, block.where)


@pytest.mark.parametrize("block", **params("fragment"))
def test_a_fragment_in_a_minimal_taskset_is_accepted(
    cluster: Cluster, crd_installed: None, namespace: str, block: Block
) -> None:
    (fragment,) = block.documents()
    (where,) = block.args
    document = minimal("fragment")
    at: Any = document
    for step in [] if where == "." else where.split("."):
        at = at[int(step)] if step.isdigit() else at[step]
    at.update(merged(at, filled(fragment)))
    dry_run(cluster, namespace, document, block.where)


@pytest.mark.parametrize("block", **params("status"))
def test_a_status_shown_is_one_the_schema_takes(
    cluster: Cluster, crd_installed: None, namespace: str, block: Block
) -> None:
    (shown,) = block.documents()
    status = filled(shown.get("status", shown))
    created = create(cluster, namespace, minimal("status-shown"))
    created["status"] = status
    done = cluster.kubectl(
        *("replace", "--subresource=status", "--dry-run=server", "--validate=strict", "-n", namespace),
        *("-f", "-"),
        input=json.dumps(created),
        check=False,
    )
    assert done.returncode == 0, f"{block.where}: {done.stderr}"
    assert "Warning" not in done.stderr, f"{block.where}: {done.stderr}"


@pytest.mark.parametrize("block", **params("delete-options"))
def test_a_delete_body_shown_deletes_the_taskset(
    cluster: Cluster, crd_installed: None, namespace: str, block: Block
) -> None:
    (body,) = block.documents()
    created = create(cluster, namespace, minimal("deleted"))
    path = f"/apis/{c.GROUP}/{c.VERSION}/namespaces/{namespace}/{c.PLURAL}/deleted"
    answer = cluster.request("DELETE", path, body)
    assert answer["metadata"]["uid"] == created["metadata"]["uid"]
    assert "foregroundDeletion" in answer["metadata"].get("finalizers", []), answer["metadata"]


@pytest.mark.parametrize("block", **params("pod-env"))
def test_what_a_container_reads_is_in_its_environment(
    cluster: Cluster, namespace: str, controller: Controller, block: Block
) -> None:
    document = manual_taskset(block.args[0])
    create(cluster, namespace, document)
    count = sum(role["replicas"] for role in document["spec"]["roles"])
    pods = pods_of(cluster, namespace, document["metadata"]["name"], count)
    envs = {
        p["metadata"]["name"]: {e["name"]: e.get("value") for e in p["spec"]["containers"][0]["env"]}
        for p in pods
    }
    if block.lang == "json":  # the value of one variable, shown for one replica
        (shown,) = block.documents()
        name = block.args[1]
        pod = f"{document['metadata']['name']}-{shown['task']['type']}-{shown['task']['index']}"
        assert shape(json.loads(envs[pod][name])) == shape(shown), block.where
        return
    read = set(re.findall(r"\$\{?([A-Z_][A-Z0-9_]*)", block.text)) | set(
        re.findall(r"os\.environ\[\"([A-Z_][A-Z0-9_]*)\"\]", block.text)
    )
    assert read, block.where
    for pod, env in envs.items():
        assert read <= set(env), f"{block.where}: {pod} lacks {read - set(env)}"


@pytest.mark.parametrize("block", **params("membership"))
def test_the_membership_shown_has_the_keys_of_a_real_one(
    cluster: Cluster, namespace: str, controller: Controller, block: Block
) -> None:
    (shown,) = block.documents()
    document = minimal("job")
    document["spec"]["roles"][0].update(name="worker", replicas=3, minReplicas=1, maxReplicas=8)
    create(cluster, namespace, document)

    def membership() -> Any:
        got = cluster.request("GET", f"/api/v1/namespaces/{namespace}/configmaps", None)["items"]
        found = [m for m in got if m["metadata"]["name"] == "job-membership"]
        return json.loads(found[0]["data"]["membership.json"]) if found else None

    real = eventually(membership, 60, "the membership ConfigMap")
    assert shape(real) == shape(shown), f"{block.where}: {json.dumps(real)}"


# --- shell ---------------------------------------------------------------------------------------


def shell_env(cluster: Cluster, namespace: str, home: Path) -> dict[str, str]:
    """The reader's shell: ~/.kube/config is the cluster's kubeconfig with the test's namespace as its
    default, kubectl and the project's commands on PATH, and the daemon's ports free ones (two tests
    may run a daemon at once)."""
    config = home / ".kube" / "config"
    config.parent.mkdir(parents=True)
    shutil.copy(cluster.kubeconfig, config)
    subprocess.run(
        [str(cluster.binaries["kubectl"]), f"--kubeconfig={config}", "config", "set-context", "--current",
         f"--namespace={namespace}"],
        check=True, capture_output=True,
    )  # fmt: skip
    path = f"{cluster.binaries['kubectl'].parent}:{Path(sys.executable).parent}:{os.environ['PATH']}"
    return {
        **os.environ,
        "HOME": str(home),
        "KUBECONFIG": str(config),
        "PATH": path,
        "TASKSET_METRICS_BIND_ADDRESS": f"127.0.0.1:{free_port()}",
        "TASKSET_HEALTH_PROBE_BIND_ADDRESS": f"127.0.0.1:{free_port()}",
    }


# After a daemon started in the background: it answers readyz ok within a minute (it syncs its caches
# first, slower on a busy machine), and is then stopped.
READY = (
    "for _ in $(seq 120); do curl -sf -o /dev/null http://$TASKSET_HEALTH_PROBE_BIND_ADDRESS/readyz"
    " && echo daemon-was-ready && break; kill -0 $! || break; sleep 0.5; done; kill $!; wait $! || true"
)


def mnist(namespace: str) -> dict[str, Any]:
    """The job the kubectl examples name, its replicas played by kwok: each exits 0 after a moment."""
    document = minimal("mnist")
    document["spec"]["cleanPodPolicy"] = "Running"  # as the README's job: the exited Pods are kept
    played = {"metadata": {"annotations": sim.outcome(0.5, 0)}, **copy.deepcopy(TEMPLATE)}
    document["spec"]["roles"] = [
        {"name": "ps", "replicas": 1, "template": copy.deepcopy(played)},
        {
            "name": "worker",
            "replicas": 3,
            "template": copy.deepcopy(played),
            "eventPolicy": [{"event": "RoleSucceeded", "action": "TaskSetSucceeded"}],
        },
    ]
    return document


# A command that runs until stopped: a watch, a followed log, a port-forward, anything sent to the
# background (its output pipe stays open).
KEEPS_RUNNING = re.compile(r"\s-w\b|\s--watch\b|\blogs\b.*\s(?:-f|--follow)\b|\bport-forward\b|&\s*$")
RUNS_FOR = 8.0  # seconds such a command is given: still running then is what it does
FINISHES_WITHIN = 120.0  # any other command must end, however busy the machine


def run_line(line: str, env: dict[str, str], cwd: Path) -> tuple[int | None, str]:
    """One command as a shell runs it: its exit code and output, or None for a command that keeps
    running (``KEEPS_RUNNING``) and was still running after ``RUNS_FOR`` seconds. Any other command
    must finish: a slow machine is no reason to take a command that never answered for one that did."""
    keeps_running = bool(KEEPS_RUNNING.search(line)) and "taskset-controller" not in line
    try:
        done = subprocess.run(
            ["bash", "-c", line],
            env=env,
            cwd=cwd,
            check=False,
            capture_output=True,
            text=True,
            timeout=RUNS_FOR if keeps_running else FINISHES_WITHIN,
        )
    except subprocess.TimeoutExpired as running:
        out = running.stdout.decode() if isinstance(running.stdout, bytes) else running.stdout or ""
        assert keeps_running, f"{line!r} did not finish within {FINISHES_WITHIN:.0f} s: {out[-2000:]}"
        return None, out
    return done.returncode, done.stdout + done.stderr


@pytest.mark.parametrize("block", **params("sh"))
def test_a_shell_block_runs_against_the_cluster(  # noqa: PLR0917
    cluster: Cluster,
    crd_installed: None,
    namespace: str,
    block: Block,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    env = shell_env(cluster, namespace, tmp_path / "home")
    clone = tmp_path / "clone"  # the reader's working directory: a clone of the repository
    clone.mkdir()
    for entry in ROOT.iterdir():
        (clone / entry.name).symlink_to(entry)
    skip = {w for a in block.args if a.startswith("skip=") for w in a[5:].split(",")}
    assert not skip or block.reason, f"{block.where}: lines not run need a reason in the claim"
    console = block.lang == "console"
    if console:
        commands = [
            line[2:].split("  #")[0].strip() for line in block.text.splitlines() if line.startswith("$ ")
        ]
    else:
        commands = block.commands()
    if "taskset=mnist" in block.args:
        request.getfixturevalue("controller")
        (clone / "mnist.yaml").write_text(yaml.safe_dump(mnist(namespace)))
        if not any("create -f mnist.yaml" in command for command in commands):
            create(cluster, namespace, mnist(namespace))
    outputs = {}
    for command in commands:
        if command.split()[0] in skip:
            continue
        if command.startswith("taskset-controller") and "--help" not in command:
            # the daemon runs until stopped: it must be up (readyz) a moment later
            code, out = run_line(
                f"{command} & {READY}",
                env,
                clone,
            )
            assert code == 0 and "daemon-was-ready" in out, f"{block.where}: {command}: {out[-2000:]}"
            continue
        code, out = run_line(command, env, clone)
        outputs[command] = out
        if " taskset logs " in command:  # kwok's nodes serve no logs: the plugin says whose it read
            assert code is None or "log of Pod" in out, f"{block.where}: {command}: {out}"
            continue
        assert code in (0, None), f"{block.where}: {command} exited {code}: {out[-2000:]}"
    if console:  # every column header shown is the real one
        for header in re.findall(r"^ *([A-Z]+(?:  +[A-Z]+){3,}) *$", block.text, re.M):
            assert any(header.split() == line.split() for o in outputs.values() for line in o.splitlines()), (
                f"{block.where}: {header!r} not printed"
            )


# --- a running daemon ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def daemon(
    cluster: Cluster, crd_installed: None, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Daemon]:
    """The real daemon, having driven one TaskSet through a phase transition."""
    with scratch_namespace(cluster, "docs-daemon") as namespace:
        # as deployed: with leader election, so its gauge is exported too
        running = Daemon(
            cluster,
            namespace,
            tmp_path_factory.mktemp("daemon"),
            "--leader-elect",
            f"--leader-elect-namespace={namespace}",
        ).start()
        create(cluster, namespace, minimal("logged"))
        eventually(
            lambda: any(r.get("msg") == "TaskSet Phase Transition" for r in running.records()),
            60,
            "a transition logged",
        )
        try:
            yield running
        finally:
            running.stop()


@pytest.mark.parametrize("block", **params("promql"))
def test_every_metric_a_query_names_is_exported(daemon: Daemon, block: Block) -> None:
    status, text = daemon.get(daemon.metrics_port, "/metrics")
    assert status == 200
    exported = {
        line.split("{")[0].split()[0] for line in text.splitlines() if line and not line.startswith("#")
    }
    for query in block.commands():
        bare = re.sub(r"\{[^}]*\}|\[[^]]*\]|\bby\s*\([^)]*\)", "", query)
        names = set(re.findall(r"[a-z_][a-z0-9_:]*", bare)) - {
            "sum",
            "rate",
            "max",
            "histogram_quantile",
            "le",
        }
        assert names and names <= exported, f"{block.where}: {query}: not exported {names - exported}"


@pytest.mark.parametrize("block", **params("log-shape"))
def test_a_log_record_shown_has_the_keys_of_a_real_one(daemon: Daemon, block: Block) -> None:
    (shown,) = block.documents()
    real = next(r for r in daemon.records() if r.get("msg") == shown["msg"])
    assert sorted(real) == sorted(shown), f"{block.where}: {real}"


@pytest.mark.parametrize("block", **params("config-file"))
def test_a_config_file_shown_starts_the_daemon(
    cluster: Cluster, crd_installed: None, namespace: str, block: Block, tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(block.text)
    running = Daemon(cluster, namespace, tmp_path, f"--config={config}").start()
    try:
        assert "unknown" not in running.output().lower(), running.output()
    finally:
        running.stop()


def test_the_docs_have_complete_examples() -> None:
    assert len(claimed("dry-run")) >= 10
