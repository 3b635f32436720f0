"""The Python SDK (``taskset_sdk``) against the embedded control plane, with a controller running: every
verb as a user calls it (builders, create, get, list, watch, wait, locate the log, logs, delete), and each
error naming the TaskSet and the cause as the API server gave it.

kwok runs no containers and its nodes serve no kubelet API, so the API server cannot fetch a log here:
``locate_log`` (which Pod and container hold a replica attempt's log) is checked against the real API,
and ``logs`` is checked to relay the API server's refusal for that Pod unchanged.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

import taskset_sdk
from devcluster import Cluster, sim
from taskset.runtime.controller import Controller
from taskset_sdk import (
    Client,
    LogsUnavailableError,
    Role,
    TaskSet,
    TaskSetAlreadyExistsError,
    TaskSetInvalidError,
    TaskSetNotFoundError,
    TaskSetView,
    WaitFailedError,
    WaitTimeoutError,
    pod_template,
)
from tests.doc_blocks import Block, params
from tests.unit.taskset_sdk.test_sdk_builders import full_taskset

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def client(cluster: Cluster, namespace: str, controller: Controller) -> Client:
    """A client as a user makes one: from the cluster's kubeconfig, defaulting to the test namespace."""
    return Client(kubeconfig=cluster.kubeconfig, namespace=namespace)


def template(seconds: float | None, exit_code: int = 0, **annotations: str) -> dict[str, object]:
    return pod_template(
        "busybox",
        ["sh", "-c", f"exit {exit_code}"],
        container="trainer",
        annotations={**sim.outcome(seconds, exit_code), **annotations},
        terminationGracePeriodSeconds=1,
    )


def ps_worker(name: str, *, worker_exit: int = 0) -> TaskSet:
    return (
        TaskSet(name)
        .role(Role("ps", 1, template(None)))
        .role(
            Role("worker", 2, template(0.5, worker_exit))
            .completion(min_succeeded=2, max_failed=1)
            .on("RoleSucceeded", "TaskSetSucceeded")
        )
    )


def test_create_watch_wait_get_list_delete(client: Client, namespace: str) -> None:
    created = client.create(ps_worker("sdk-life"))
    assert (created.namespace, created.name) == (namespace, "sdk-life")

    seen: list[str] = []
    for view in client.watch("sdk-life", timeout=60):
        seen.append(view.state)
        if view.finished:
            break
    final = client.wait("sdk-life", state="Succeeded", timeout=5)
    assert final.state == "Succeeded" and final.finished
    assert "Running" in seen, seen  # the watch saw the TaskSet run before it finished

    worker = final.replica("worker", 1)
    assert worker is not None and worker.exit_code == 0 and worker.reason == "Completed"
    assert worker.pod_name == "sdk-life-worker-1"
    assert client.get("sdk-life").uid == created.uid
    assert [v.name for v in client.list()] == ["sdk-life"]
    assert "sdk-life" in {v.name for v in client.list(all_namespaces=True)}

    client.delete("sdk-life", wait=True, timeout=60)
    with pytest.raises(TaskSetNotFoundError) as gone:
        client.get("sdk-life")
    assert str(gone.value).startswith(f"TaskSet {namespace}/sdk-life: ")
    assert gone.value.status == 404


def test_watch_yields_each_status_change_until_the_taskset_is_deleted(client: Client) -> None:
    client.create(ps_worker("sdk-watch"))
    states: list[str] = []
    started = time.monotonic()
    for view in client.watch("sdk-watch", timeout=60):
        if view.finished and not any(s == "Succeeded" for s in states):
            client.delete("sdk-watch")
        states.append(view.state)
    assert time.monotonic() - started < 50, "ended by the deletion, not by the timeout"
    first_final = states.index("Succeeded")
    assert set(states[first_final:]) == {"Succeeded"}, states
    assert "Running" in states[:first_final], states


def test_the_api_servers_validation_message_is_shown_as_it_is(client: Client, namespace: str) -> None:
    bad = TaskSet("sdk-bad").role(Role("w", 0, template(1))).to_dict()
    with pytest.raises(TaskSetInvalidError) as refused:
        client.create(bad)
    assert refused.value.status == 422
    message = str(refused.value)
    assert message.startswith(f"TaskSet {namespace}/sdk-bad: ")
    assert "spec.roles[0].replicas" in message, message


def test_a_name_taken_is_a_conflict(client: Client) -> None:
    client.create(ps_worker("sdk-twice"))
    with pytest.raises(TaskSetAlreadyExistsError, match="already exists"):
        client.create(ps_worker("sdk-twice"))


def test_wait_fails_as_soon_as_the_state_can_no_longer_come(client: Client, namespace: str) -> None:
    client.create(ps_worker("sdk-fails", worker_exit=3))
    with pytest.raises(WaitFailedError) as failed:
        client.wait("sdk-fails", state="Succeeded", timeout=60)
    assert str(failed.value).startswith(f"TaskSet {namespace}/sdk-fails: ended Failed")
    assert "(waited for state Succeeded)" in str(failed.value)
    assert client.wait("sdk-fails", state="Failed", timeout=5).state == "Failed"
    assert client.wait("sdk-fails", condition="Failed", timeout=5).condition("Failed") is not None


def test_wait_times_out_naming_what_it_saw(client: Client, namespace: str) -> None:
    client.create(TaskSet("sdk-slow").role(Role("w", 1, template(None))))
    client.wait("sdk-slow", state="Running", timeout=30)
    with pytest.raises(WaitTimeoutError) as late:
        client.wait("sdk-slow", state="Succeeded", timeout=2)
    assert str(late.value) == (
        f"TaskSet {namespace}/sdk-slow: not state Succeeded after 2s "
        f"(last seen: state Running, phase TaskSetAttemptRunning)"
    )


def test_wait_for_a_taskset_that_does_not_exist(client: Client, namespace: str) -> None:
    with pytest.raises(TaskSetNotFoundError, match=f"^TaskSet {namespace}/nobody: "):
        client.wait("nobody", timeout=5)


def test_the_log_of_a_replica_attempt_is_located_on_the_real_api(
    cluster: Cluster, client: Client, namespace: str
) -> None:
    # Both replicas run until told otherwise; worker-0's first attempt is then made to fail and retried.
    client.create(TaskSet("sdk-logs").role(Role("worker", 2, template(None)).retry(max_retry_count=1)))
    client.wait("sdk-logs", state="Running", timeout=30)
    end = (f"{sim.DURATION}=0s", f"{sim.EXIT_CODE}=7")
    cluster.kubectl("annotate", "pod", "sdk-logs-worker-0", f"--namespace={namespace}", *end)
    _eventually_retried(client, "worker", 0)

    target = client.locate_log("sdk-logs", "worker", 1)
    assert (target.pod, target.container, target.attempt) == ("sdk-logs-worker-1", "trainer", 0)
    assert client.locate_log("sdk-logs", "worker", 0).attempt == 1
    with pytest.raises(LogsUnavailableError) as gone:
        client.locate_log("sdk-logs", "worker", 0, attempt=0)
    assert "attempt 0 is gone: its Pod sdk-logs-worker-0 runs attempt 1" in str(gone.value)
    with pytest.raises(LogsUnavailableError, match=r"no replica worker-5; replicas: worker \(0\.\.1\)"):
        client.locate_log("sdk-logs", "worker", 5)
    with pytest.raises(LogsUnavailableError, match="has no container 'sidecar'"):
        client.locate_log("sdk-logs", "worker", 1, container="sidecar")

    # The request goes to the API server, which cannot reach a kwok node's kubelet: its answer is shown.
    with pytest.raises(LogsUnavailableError) as unreachable:
        list(client.logs("sdk-logs", "worker", 1))
    message = str(unreachable.value)
    assert message.startswith(
        f"TaskSet {namespace}/sdk-logs: log of Pod sdk-logs-worker-1 container trainer: "
    )
    assert "/containerLogs/" + f"{namespace}/sdk-logs-worker-1/trainer" in message, message


def _eventually_retried(client: Client, role: str, index: int) -> None:
    for view in client.watch("sdk-logs", timeout=30):
        replica = view.replica(role, index)
        if replica is not None and replica.retries == 1 and replica.phase.endswith("AttemptRunning"):
            return
    raise AssertionError(f"replica {role}-{index} was not retried")


def test_a_client_from_the_environment(
    cluster: Cluster, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No arguments: $KUBECONFIG, and its context's namespace (``default`` when it names none)."""
    monkeypatch.setenv("KUBECONFIG", str(cluster.kubeconfig))
    assert Client().namespace == "default"
    assert Client(namespace=namespace).list() == []
    monkeypatch.setenv("KUBECONFIG", str(Path("/nonexistent")))
    monkeypatch.setenv("HOME", "/nonexistent")
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(RuntimeError, match="no Kubernetes configuration"):
        Client()


def test_the_whole_spec_the_builders_write_is_accepted(
    cluster: Cluster, namespace: str, crd_installed: None
) -> None:
    """Every field of the spec, as the builders write it, passes the CRD's schema and rules."""
    done = cluster.kubectl(
        "create",
        "--dry-run=server",
        "-n",
        namespace,
        "-f",
        "-",
        input=json.dumps(full_taskset().to_dict()),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr, done.stderr


@pytest.mark.usefixtures("controller")
@pytest.mark.parametrize("session", **params("session"))
def test_the_documented_session_runs_as_written_down_its_failure_path(
    cluster: Cluster,
    namespace: str,
    session: Block,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The session as a reader runs it, with ``Client()`` from $KUBECONFIG. kwok runs no trainer, so
    the test plays the job: in the first run every worker but worker-0 exits 3 in each of its attempts
    (the role fails, and with it the TaskSet); the run by hand after it succeeds. The failure path then
    finds the failed replica, prints its last words, and reads its log or says why it cannot."""

    class PlayedJob(Client):
        runs = 0

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("namespace", namespace)  # the namespace the test's controller watches
            super().__init__(*args, **kwargs)

        def create(self, taskset: TaskSet | Mapping[str, Any], **kwargs: Any) -> TaskSetView:
            body = taskset.to_dict() if isinstance(taskset, TaskSet) else json.loads(json.dumps(taskset))
            PlayedJob.runs += 1
            for role in body["spec"]["roles"]:
                if role["name"] != "worker":
                    continue
                annotations = role["template"].setdefault("metadata", {}).setdefault("annotations", {})
                annotations.update(sim.outcome(0.2, 0))
                for index in range(1, role["replicas"]) if PlayedJob.runs == 1 else ():
                    for attempt in range(role["retryPolicy"]["maxRetryCount"] + 1):
                        annotations[sim.attempt_exit_code(0, index, attempt)] = "3"
            return super().create(body, **kwargs)

    monkeypatch.setenv("KUBECONFIG", str(cluster.kubeconfig))
    monkeypatch.setattr(taskset_sdk, "Client", PlayedJob)
    exec(compile(session.text, session.where, "exec"), {"__name__": "documented_session"})

    out = capsys.readouterr().out
    assert PlayedJob.runs == 2, "the failure path ran the job again by hand"
    assert re.search(r"^worker-\d 3 Error", out, re.M), out
    # The failed replica's Pod was kept (cleanPodPolicy Running) and found by its UID; kwok's node then
    # serves no log, which the example prints instead of dying.
    assert re.search(r"log of Pod mnist-worker-\d container main: ", out), out
    with pytest.raises(TaskSetNotFoundError):
        PlayedJob().get("mnist")
