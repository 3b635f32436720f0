"""``kubectl taskset``, run as a user runs it: the real kubectl finds ``kubectl-taskset`` on PATH (a
console script made from the entry point setup.cfg declares), against the embedded control plane with a
controller running. Output is compared with golden text, the time columns masked."""

from __future__ import annotations

import configparser
import json
import os
import pty
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from devcluster import Cluster, sim
from taskset.runtime.controller import Controller
from taskset_sdk import Client, Role, TaskSet, pod_template
from tests.integration.harness import eventually

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
# The address space a verb may use: its work is bounded per object, whatever a number in an object
# says, so a planted number that asked for more would end the verb with MemoryError, not the machine.
PLUGIN_MEMORY = 1536 * 1024 * 1024


def _bounded_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (PLUGIN_MEMORY, PLUGIN_MEMORY))


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``kubectl-taskset`` as pip would install it: a script calling the declared entry point."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    scripts = dict(
        line.split(" = ") for line in config["options.entry_points"]["console_scripts"].strip().splitlines()
    )
    module, function = scripts["kubectl-taskset"].split(":")
    folder = tmp_path_factory.mktemp("plugin")
    script = folder / "kubectl-taskset"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(ROOT)!r})\n"
        f"from {module} import {function}\nsys.exit({function}())\n"
    )
    script.chmod(0o755)
    return folder


@pytest.fixture
def kubectl(cluster: Cluster, namespace: str, plugin_dir: Path, controller: Controller):
    kubectl_dir = str(Path(cluster.binaries["kubectl"]).parent)
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(plugin_dir), kubectl_dir, os.environ.get("PATH", "")]),
        "KUBECONFIG": str(cluster.kubeconfig),
    }
    env.pop("NO_COLOR", None)

    def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["kubectl", "taskset", f"--namespace={namespace}", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
            preexec_fn=_bounded_memory,
        )
        if check:
            assert done.returncode == 0, done.stderr
        return done

    return run


def mask_last_column(text: str, title: str) -> str:
    """Every row's cell in the last column, titled ``title`` in the header, becomes ``*``."""
    header, *rows = text.splitlines()
    start = header.index(title)
    masked = [row[:start] + "*" if len(row) > start else row for row in rows]
    return "\n".join([header, *masked]) + "\n"


def finished_with_a_retry(client: Client, name: str) -> None:
    """worker-1's first attempt exits 3 and is retried; the second succeeds, and so does the TaskSet
    (worker's event policy); ps, which runs on, is stopped. Returns once every Pod is gone."""
    ends = {sim.DURATION: "300ms", sim.EXIT_CODE: "0", sim.attempt_exit_code(0, 1, 0): "3"}
    worker = Role("worker", 2, pod_template("busybox", ["sh", "-c", "exit 0"], annotations=ends))
    client.create(
        TaskSet(name)
        .role(Role("ps", 1, pod_template("busybox", ["sh", "-c", "sleep 1000"])))
        .role(worker.retry(max_retry_count=1).on("RoleSucceeded", "TaskSetSucceeded"))
    )
    client.wait(name, timeout=60)
    eventually(lambda: client.pods(name) == {}, 30, "the attempt's Pods are gone")


# The tree of finished_with_a_retry("tree"), the AGE column masked.
GOLDEN_TREE = (ROOT / "tests" / "integration" / "golden" / "kubectl-taskset-get.txt").read_text()


def test_get_prints_the_tree_plain_when_piped(cluster: Cluster, namespace: str, kubectl) -> None:
    finished_with_a_retry(Client(kubeconfig=cluster.kubeconfig, namespace=namespace), "tree")
    done = kubectl("get", "tree")
    assert "\x1b[" not in done.stdout  # piped: no colours
    assert mask_last_column(done.stdout, "AGE") == GOLDEN_TREE


def test_get_json_is_the_same_tree_as_data(cluster: Cluster, namespace: str, kubectl) -> None:
    client = Client(kubeconfig=cluster.kubeconfig, namespace=namespace)
    client.create(TaskSet("live").role(Role("w", 2, pod_template("busybox", ["sleep", "1000"]))))
    client.wait("live", state="Running", timeout=30)
    eventually(
        lambda: all(p.node for p in client.pods("live").values()) and len(client.pods("live")) == 2, 30
    )
    data = json.loads(kubectl("get", "live", "-o", "json").stdout)
    assert (data["name"], data["state"], data["namespace"]) == ("live", "Running", namespace)
    replicas = data["roles"][0]["replicas"]
    assert [r["pod"] for r in replicas] == ["live-w-0", "live-w-1"]
    current = [r["attempts"][-1] for r in replicas]
    assert [a["pod"] for a in current] == ["live-w-0", "live-w-1"]
    assert all(a["node"].startswith("kwok-node-") and a["phase"] == "Running" for a in current), current
    listed = json.loads(kubectl("get", "-o", "json").stdout)
    assert [t["name"] for t in listed] == ["live"]


# The describe of finished_with_a_retry("tree"), its times masked, up to the events' header.
GOLDEN_DESCRIBE = (ROOT / "tests" / "integration" / "golden" / "kubectl-taskset-describe.txt").read_text()


def test_describe_shows_attempts_conditions_and_events(cluster: Cluster, namespace: str, kubectl) -> None:
    finished_with_a_retry(Client(kubeconfig=cluster.kubeconfig, namespace=namespace), "tree")
    text = re.sub(r"Created: +\S+ \(\S+ ago\)", "Created:       <time>", kubectl("describe", "tree").stdout)
    text = re.sub(r"^(  0 .*  )\S+$", r"\1<age>", text, flags=re.M)  # the attempt's end, as an age
    # The events' columns are as wide as their widest entry (a Warning's type is wider than Normal's).
    head, _, events = re.split(r"^( +TYPE +REASON +AGE +COUNT +MESSAGE)$\n", text, maxsplit=1, flags=re.M)
    assert head.splitlines() == GOLDEN_DESCRIBE.format(namespace=namespace).splitlines()[:-1]
    rows = {
        re.sub(r"  +\d+s  +\d+  +", " | ", re.sub(r"^(\w+) +", r"\1  ", line.strip()))
        for line in events.splitlines()
    }
    assert {
        "Normal  TaskRole Succeeded | TaskRole:worker, Reason:Completion policy MinSucceeded satisfied,"
        "succeeded count:2",
        "Normal  TaskSet Succeeded | TaskSet:tree",
        "Normal  TaskSet is running | TaskSet:tree",
    } <= rows, rows


def test_describe_lists_why_the_taskset_retried(cluster: Cluster, namespace: str, kubectl) -> None:
    """The attempt history names the replica, its exit code and the rule of the failed
    attempt, and that a TaskSet retry was charged for it."""
    client = Client(kubeconfig=cluster.kubeconfig, namespace=namespace)
    ends = {sim.DURATION: "300ms", sim.EXIT_CODE: "0", sim.attempt_exit_code(0, 0, 0): "3"}
    worker = Role("w", 1, pod_template("busybox", ["sh", "-c", "exit 0"], annotations=ends))
    client.create(TaskSet("again").role(worker).retry(max_retry_count=1))
    view = client.wait("again", timeout=60)
    assert [(a.attempt, a.outcome, a.replica, a.exit_code, a.counted) for a in view.attempts] == [
        (0, "Failed", "w-0", 3, True),
        (1, "Succeeded", "", None, False),
    ]
    text = kubectl("describe", "again").stdout
    history = text.split("Attempt history:\n", 1)[1].split("Roles:", 1)[0].splitlines()
    assert [line.split()[:7] for line in history] == [
        ["ATTEMPT", "OUTCOME", "REPLICA", "EXIT", "RULE", "ACTION", "COUNTED"],
        ["0", "Failed", "w-0", "3", "default", "RetryCounted", "yes"],
        ["1", "Succeeded", "-", "-", "-", "-", "no"],
    ]
    assert "TaskSet completed beacause taskrole(w) is failed" in history[1]


def test_wait_for_a_state_and_its_failure(cluster: Cluster, namespace: str, kubectl) -> None:
    client = Client(kubeconfig=cluster.kubeconfig, namespace=namespace)
    fails = {sim.DURATION: "200ms", sim.EXIT_CODE: "2"}
    client.create(TaskSet("doomed").role(Role("w", 1, pod_template("busybox", ["false"], annotations=fails))))
    done = kubectl("wait", "doomed", "--for=state=Succeeded", "--timeout=60s", check=False)
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: TaskSet {namespace}/doomed: ended Failed"), done.stderr
    assert kubectl("wait", "doomed", "--for=state=Failed", "--timeout=5s").stdout == "taskset/doomed Failed\n"
    done = kubectl("wait", "doomed", "--for=condition=Failed", "--timeout=5s")
    assert done.stdout == "taskset/doomed condition Failed=True\n"
    late = kubectl("wait", "nobody", "--timeout=2s", check=False)
    assert late.returncode == 1 and late.stderr.startswith(f"error: TaskSet {namespace}/nobody: ")


def test_logs_names_the_pod_and_relays_the_api_servers_answer(
    cluster: Cluster, namespace: str, kubectl
) -> None:
    """kwok's nodes serve no logs: the plugin reads the right Pod and shows why it got nothing."""
    client = Client(kubeconfig=cluster.kubeconfig, namespace=namespace)
    client.create(
        TaskSet("chatty").role(Role("w", 1, pod_template("busybox", ["sleep", "1000"], container="c")))
    )
    client.wait("chatty", state="Running", timeout=30)
    done = kubectl("logs", "chatty", "w", "0", "-f", check=False)
    assert done.returncode == 1
    assert done.stderr.startswith(f"error: TaskSet {namespace}/chatty: log of Pod chatty-w-0 container c: ")
    assert f"/containerLogs/{namespace}/chatty-w-0/c" in done.stderr
    gone = kubectl("logs", "chatty", "w", "0", "--attempt", "3", check=False)
    assert gone.returncode == 1 and "attempt 3 is gone" in gone.stderr
    missing = kubectl("logs", "chatty", "w", "4", check=False)
    assert "no replica w-4; replicas: w (0..0)" in missing.stderr


def test_get_colours_the_states_on_a_terminal(
    cluster: Cluster, namespace: str, plugin_dir: Path, kubectl
) -> None:
    client = Client(kubeconfig=cluster.kubeconfig, namespace=namespace)
    client.create(TaskSet("tty").role(Role("w", 1, pod_template("busybox", ["sleep", "1000"]))))
    client.wait("tty", state="Running", timeout=30)
    primary, secondary = pty.openpty()
    env = {
        **os.environ,
        "PATH": os.pathsep.join(
            [str(plugin_dir), str(Path(cluster.binaries["kubectl"]).parent), os.environ["PATH"]]
        ),
        "KUBECONFIG": str(cluster.kubeconfig),
    }
    env.pop("NO_COLOR", None)
    done = subprocess.run(
        ["kubectl", "taskset", "get", "tty", f"--namespace={namespace}"],
        stdout=secondary,
        stderr=subprocess.PIPE,
        env=env,
        timeout=60,
        check=False,
    )
    os.close(secondary)
    assert done.returncode == 0, done.stderr
    text = os.read(primary, 65536).decode()
    os.close(primary)
    assert "\x1b[36mRunning\x1b[0m" in text, repr(text)
    assert "\x1b[36mRunning      " in text, repr(text)  # padded, then coloured: the columns stay aligned
    plain = re.sub(r"\x1b\[\d+m", "", text).replace("\r\n", "\n")
    assert mask_last_column(plain, "AGE") == mask_last_column(kubectl("get", "tty").stdout, "AGE")


# What a container may write as its termination message: a window title, a screen clear, a colour, a
# C1 control sequence introducer, a bidi override, a carriage return.
HOSTILE_MESSAGE = "\x1b]0;owned\x07\x1b[2J\x1b[31mred\x9b1m\u202eevil\r"


def test_a_planted_pod_and_a_hostile_message_reach_no_verb(cluster: Cluster, namespace: str, kubectl) -> None:
    """A replica finished and its Pod is gone; someone who may create Pods plants one under its name,
    with the TaskSet's label and ``ReplicaAttemptID`` "1000000000". Every verb (the namespace's tree,
    the TaskSet's, ``-o json``, ``describe``) answers in bounded memory and shows none of the stranger's
    Pod; ``logs`` refuses to read it as the replica's; the container's escape codes reach the terminal
    as text."""
    client = Client(kubeconfig=cluster.kubeconfig, namespace=namespace)
    client.create(TaskSet("victim").role(Role("w", 1, pod_template("busybox", ["sleep", "1000"]))))
    client.wait("victim", state="Running", timeout=30)
    running = eventually(lambda: client.pods("victim").get("victim-w-0"), 30, "the replica's Pod")
    # The container ends as the kubelet reports it (kwok's templates cannot carry control characters).
    ended = {"terminated": {"exitCode": 1, "reason": "Error", "message": HOSTILE_MESSAGE}}
    status = {
        "phase": "Failed",
        "containerStatuses": [
            {
                "name": "main",
                "image": "busybox",
                "imageID": "",
                "ready": False,
                "restartCount": 0,
                "state": ended,
            }
        ],
    }
    cluster.kubectl(
        "patch",
        "pod",
        running.name,
        "-n",
        namespace,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": status}),
    )
    view = client.wait("victim", state="Failed", timeout=60)
    replica = view.replica("w", 0)
    assert replica is not None and replica.exit_message == HOSTILE_MESSAGE, replica
    eventually(lambda: client.pods("victim") == {}, 30, "the finished replica's Pod is gone")
    planted = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "victim-w-0",
            "labels": {"TaskSet": "victim", "PodTaskRole": "w"},
            "annotations": {"ReplicaAttemptID": "1000000000", "TaskSetAttemptID": "1000000000"},
        },
        "spec": {"containers": [{"name": "main", "image": "busybox"}]},
    }
    cluster.kubectl("create", "-n", namespace, "-f", "-", input=json.dumps(planted))
    stranger = eventually(lambda: client.pods("victim").get("victim-w-0"), 30, "the planted Pod is listed")

    outputs = {
        " ".join(args): kubectl(*args).stdout
        for args in [("get",), ("get", "victim"), ("get", "-o", "json"), ("describe", "victim")]
    }
    for verb, text in outputs.items():
        assert "1000000000" not in text and stranger.uid not in text, verb
        assert not {char for char in text if ord(char) < 0x20 and char != "\n"}, verb
        assert not {char for char in text if 0x7F <= ord(char) < 0xA0 or char == "\u202e"}, verb
    (replica_data,) = json.loads(outputs["get -o json"])[0]["roles"][0]["replicas"]
    assert [(a["attempt"], a["pod"]) for a in replica_data["attempts"]] == [(0, None)]
    assert (
        "termination message: \\x1b]0;owned\\x07\\x1b[2J\\x1b[31mred\\x9b1m\\u202eevil\\r"
        in outputs["describe victim"]
    )
    assert "attempt 0: no Pod now, exit 1 Error" in outputs["describe victim"]

    refused = kubectl("logs", "victim", "w", "0", check=False)
    assert refused.returncode == 1
    assert "Pod victim-w-0 is not the one the TaskSet's status records" in refused.stderr, refused.stderr
