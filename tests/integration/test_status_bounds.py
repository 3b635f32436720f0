"""A status that never wedges on content, on the embedded control plane.

400 replicas that each end with a 4 KiB termination message (the kubelet's maximum) once made a status of
1.27 MB that etcd refused on every later write, while the TaskSet stayed Running with nothing said. Now
every outside text is clipped to a documented length (``taskset.api.status``), and a status write the
API server refuses for good is reported in a Warning event, once, without a hot loop.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import structlog
from kubernetes import client

from devcluster import Cluster, sim
from taskset.api import constants as c
from taskset.api.status import EXIT_MESSAGE_MAX, TaskSetStatus, clip, stamp
from taskset.runtime.controller import Controller, ControllerSettings
from tests.builders import TaskSetBuilder, pod_template
from tests.integration.conftest import SYNC_TIMEOUT
from tests.integration.harness import TaskSets, eventually

pytestmark = pytest.mark.integration

ETCD_REQUEST_LIMIT = 1_572_864  # bytes: etcd's default --max-request-bytes (1.5 MiB)
REPLICAS = 400
TERMINATION_MESSAGE_BYTES = 4096  # the kubelet's limit on one container's termination message
# The bound this test states for the finished status: a third of etcd's limit, so that the status has
# room to spare. Measured: about 400 KB (about 1 KB per replica, a quarter of it the clipped message).
STATUS_BOUND = ETCD_REQUEST_LIMIT // 3
FINISH_TIMEOUT = 480.0  # seconds; 400 Pods on kwok take about a minute here, on a loaded machine more


def termination_message() -> str:
    """4096 bytes, the way a failing job writes them: numbered lines of a log's tail."""
    lines = "".join(f"line {n:04d}: the worker says something at length here\n" for n in range(100))
    return lines[:TERMINATION_MESSAGE_BYTES]


def json_size(obj: Any) -> int:
    """Bytes of ``obj`` as compact JSON (UTF-8), as it is stored."""
    return len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode())


def test_400_replicas_each_ending_with_a_4_kib_termination_message_succeed_with_a_bounded_status(
    cluster: Cluster, namespace: str, controller: Controller
) -> None:
    ts = TaskSets(cluster, namespace)
    message = termination_message()
    assert len(message.encode()) == TERMINATION_MESSAGE_BYTES
    annotations = sim.outcome(1.0, 0, **{sim.MESSAGE: message})
    template = pod_template(annotations=annotations)
    ts.create(TaskSetBuilder("loud").role("w", REPLICAS, template=template).obj())

    status = ts.final("loud", timeout=FINISH_TIMEOUT)

    size = json_size(status)
    replicas = status["roleStatus"][0]["replicaStatus"]
    unclipped = size + len(replicas) * (TERMINATION_MESSAGE_BYTES - EXIT_MESSAGE_MAX)
    print(f"status of {REPLICAS} replicas x {TERMINATION_MESSAGE_BYTES} B termination messages: {size} bytes")
    print(f"(with the messages whole it would be about {unclipped} bytes; etcd takes {ETCD_REQUEST_LIMIT})")
    assert status["state"] == c.State.SUCCEEDED, status["stateMessage"]
    assert [r["terminatedInfo"]["exitCode"] for r in replicas] == [0] * REPLICAS
    assert {r["terminatedInfo"]["exitMessage"] for r in replicas} == {clip(message, EXIT_MESSAGE_MAX)}
    assert size < STATUS_BOUND
    assert c.EventReason.STATUS_WRITE_REFUSED not in ts.reasons("loud")


# ----- a status write refused for good --------------------------------------------------------------------

REFUSAL = "etcdserver: request is too large"
QUIET_SECONDS = 15.0  # how long the refused TaskSet is watched for a hot loop
# Status writes allowed meanwhile: the per-key backoff doubles from 5 ms, so about a dozen retries and a
# few passes the Pod's events bring; a hot loop makes hundreds a second.
MAX_WRITES = 40


class StatusWrites:
    """The controller's reconcile metrics, counting status writes by result."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}

    def observe_status_write(self, result: str) -> None:
        self.counts[result] = self.counts.get(result, 0) + 1

    def observe_action(self, kind: str, result: str) -> None: ...

    def observe_transition(self, machine: str, source: str, target: str) -> None: ...


def _apply(cluster: Cluster, obj: dict[str, Any]) -> None:
    applied = cluster.kubectl("apply", "-f", "-", input=json.dumps(obj), check=False)
    assert applied.returncode == 0, applied.stderr


@pytest.fixture
def status_writes_refused(cluster: Cluster, namespace: str, crd_installed: None) -> Iterator[str]:
    """An admission policy that refuses every TaskSet status write in ``namespace`` as too large (a 413,
    as an API server answers a status over its limits); yields the binding's name, which a test may
    delete to lift the refusal."""
    name = f"refuse-status-{namespace}"
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": [c.GROUP],
                        "apiVersions": ["*"],
                        "operations": ["UPDATE"],
                        "resources": [f"{c.PLURAL}/status"],
                    }
                ]
            },
            "validations": [{"expression": "false", "message": REFUSAL, "reason": "RequestEntityTooLarge"}],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name},
        "spec": {
            "policyName": name,
            "validationActions": ["Deny"],
            "matchResources": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
            },
        },
    }
    _apply(cluster, policy)
    _apply(cluster, binding)
    try:
        _wait_until_refused(cluster, namespace)
        yield name
    finally:
        cluster.kubectl("delete", "validatingadmissionpolicybinding", name, "--ignore-not-found", check=False)
        cluster.kubectl("delete", "validatingadmissionpolicy", name, "--ignore-not-found", check=False)


def _wait_until_refused(cluster: Cluster, namespace: str) -> None:
    """Policies take effect a moment after they are created: probe with a TaskSet no controller sees."""
    ts = TaskSets(cluster, namespace)
    ts.create(TaskSetBuilder("probe").role("r").obj())

    now = stamp(datetime.now(UTC))
    probe = TaskSetStatus(phase_message="probe", transition_time=now, created_at=now).to_json()

    answers: list[str] = []

    def refused() -> bool:
        body = {**(ts.get("probe") or {}), "status": probe}
        try:
            ts.custom.replace_namespaced_custom_object_status(
                c.GROUP, c.VERSION, namespace, c.PLURAL, "probe", body
            )
        except client.ApiException as err:
            answers.append(f"{err.status}: {err.body}")
            return bool(err.status == 413)
        answers.append("accepted")
        return False

    try:
        eventually(refused, 30, "the status policy in force")
    except AssertionError as err:
        raise AssertionError(f"{err}; the last answer: {answers[-1:]}") from None
    ts.delete("probe")
    eventually(lambda: ts.get("probe") is None, 30, "the probe TaskSet gone")


def test_a_status_write_refused_for_good_is_said_once_in_a_warning_event_without_a_hot_loop(
    cluster: Cluster, namespace: str, status_writes_refused: str
) -> None:
    writes = StatusWrites()
    controller = Controller(
        api_client=cluster.api_client(),
        settings=ControllerSettings(namespace=namespace, workers=2),
        logger=structlog.get_logger("taskset-test").bind(test_namespace=namespace),
        reconcile_metrics=writes,
    )
    controller.start()
    try:
        assert controller.wait_for_sync(SYNC_TIMEOUT)
        ts = TaskSets(cluster, namespace)
        template = pod_template(annotations=sim.outcome(1.0, 0))
        ts.create(TaskSetBuilder("wedged").role("r", 1, template=template).obj())

        def refusals() -> list[str]:
            return [m for r, m in ts.events("wedged") if r == c.EventReason.STATUS_WRITE_REFUSED]

        said = eventually(refusals, 60, "a StatusWriteRefused event")
        time.sleep(QUIET_SECONDS)

        print(f"in {QUIET_SECONDS + 1:.0f}+ s: status writes {writes.counts}; the event: {said[0]}")
        assert len(refusals()) == 1, refusals()
        (message,) = said
        assert REFUSAL in message and "413" in message
        assert "bytes of JSON" in message
        assert writes.counts.get("error", 0) <= MAX_WRITES, writes.counts
        assert ts.status("wedged") == {}  # nothing got through meanwhile

        # Lifted, the next retry writes the status and the TaskSet carries on to its end.
        cluster.kubectl("delete", "validatingadmissionpolicybinding", status_writes_refused, check=False)
        final = ts.final("wedged", timeout=120)
        assert final["state"] == c.State.SUCCEEDED
    finally:
        controller.stop(5)
