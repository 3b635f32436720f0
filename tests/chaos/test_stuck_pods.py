"""A Pod stuck Pending forever (unschedulable) and a Pod whose phase becomes Unknown.

Against the real control plane (kube-scheduler and kwok's nodes are running):

* a Pod no node can take (a nodeSelector no node matches, a CPU request no node can hold) never starts.
  The documented policy is to wait without a timeout (spec S53: the Pod was created and observed), so
  the point is that the TaskSet does not wait silently: within seconds the replica's ``phaseMessage``,
  the ``Running`` condition and one Warning event ``PodUnschedulable`` all carry the scheduler's reason;
  then the TaskSet stays ``Waiting`` with an unchanged status (no timeout, no status-write storm) for a
  window several times the controller's cache timeout, and deleting it cleans everything up.
* a Pod driven to phase ``Unknown`` (the ``sim.octopus.openi.pcl.cn/phase`` annotation; kwok's stage also
  sets ``reason: NodeLost``) ends its replica attempt as failed; the role's retry policy applies, the
  TaskSet ends as declared, and the replica's ``phaseMessage`` names Unknown. Spec 8.2 says tests MUST
  NOT cover ``Unknown``; a TaskSet that never hangs silently needs exactly that, and that wins.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from typing import Any, Final

import pytest

from devcluster import Cluster, sim
from taskset.api import constants as c
from taskset.runtime.controller import Controller
from tests.builders import TaskSetBuilder, pod_template
from tests.integration.conftest import recorder, start_controller, ts
from tests.integration.harness import (
    PodFacts,
    Recorder,
    TaskSets,
    eventually,
    exits,
    never_overlapping,
    replica,
)

__all__ = ["recorder", "ts"]  # the integration fixtures, used here by name

# The controller's cache timeout in this module: short, so the waiting window below outlasts it several
# times over and would see any timeout that wrongly applied to an observed Pod (spec 8.6 applies only to
# a Pod the cache never showed). Long enough that a slow cache on a busy machine does not trip it.
CACHE_TIMEOUT = 8.0
WINDOW = 3 * CACHE_TIMEOUT  # seconds the stuck TaskSet is watched
REPORT_TIMEOUT = 30.0  # seconds until the reason shows; seconds on an idle machine
FINAL_TIMEOUT = 90.0
PREPARING = "TaskRoleReplicaAttemptPreparing"
UNKNOWN_EXIT = "PodPhase:Unknown ,"
NODE_LOST = "NodeLost"  # the Pod reason kwok's pod-unknown stage sets (devcluster/stages/stages.yaml)


@pytest.fixture
def controller(cluster: Cluster, namespace: str, crd_installed: None) -> Iterator[Controller]:
    """The test controller with a short cache timeout (``ts`` starts it through this fixture)."""
    running = start_controller(cluster, namespace, workers=2, cache_creation_timeout=CACHE_TIMEOUT)
    yield running
    running.stop(5)


def warnings(ts: TaskSets, name: str, reason: str) -> list[str]:
    """Messages of the Warning events ``reason`` on TaskSet ``name``."""
    items = ts.core.list_namespaced_event(
        ts.namespace, field_selector=f"involvedObject.name={name},involvedObject.kind={c.KIND}"
    ).items
    return [e.message or "" for e in items if e.reason == reason and e.type == c.EVENT_TYPE_WARNING]


def running_condition(status: dict[str, Any]) -> dict[str, Any]:
    found = [cond for cond in status.get("conditions") or [] if cond["type"] == c.ConditionType.RUNNING]
    return found[0] if found else {}


# ----- (a) a Pod no node can take ----------------------------------------------------------------------


def unschedulable_template(**spec: Any) -> dict[str, Any]:
    # If it ever ran, it would succeed at once: only the scheduler keeps this TaskSet waiting.
    return pod_template(annotations=sim.outcome(duration=0.5), **spec)


def cpu_request_template() -> dict[str, Any]:
    template = unschedulable_template()
    # kwok's nodes have 1000 CPUs (README): ask for more than any of them holds.
    template["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "5000"}}
    return template


@pytest.mark.parametrize(
    ("template", "because"),
    [
        pytest.param(
            unschedulable_template(nodeSelector={"taskset.test/no-such-label": "anywhere"}),
            "didn't match Pod's node affinity/selector",
            id="a nodeSelector no node matches",
        ),
        pytest.param(cpu_request_template(), "Insufficient cpu", id="a CPU request no node can hold"),
    ],
)
def test_an_unschedulable_pod_says_why_and_waits_without_a_timeout(
    ts: TaskSets, recorder: Recorder, template: dict[str, Any], because: str
) -> None:
    ts.create(TaskSetBuilder("stuck").role("r", 1, template=copy.deepcopy(template)).obj())

    def reported() -> dict[str, Any] | None:
        status = ts.status("stuck")
        try:
            message = str(replica(status, "r", 0).get("phaseMessage", ""))
        except (KeyError, IndexError):
            return None
        told = message.startswith("Pod is unschedulable: ") and because in message
        return status if told and because in running_condition(status).get("message", "") else None

    status = eventually(reported, REPORT_TIMEOUT, "the replica and the Running condition name the reason")
    assert (status["phase"], status["state"]) == ("TaskSetAttemptPreparing", "Waiting")
    condition = running_condition(status)
    assert (condition["status"], condition["reason"]) == ("False", "Waiting")
    assert condition["message"].startswith("1 replica waiting: r-0: Pod is unschedulable: ")
    events = eventually(lambda: warnings(ts, "stuck", "PodUnschedulable"), REPORT_TIMEOUT, "the event")
    assert len(events) == 1 and events[0].startswith("stuck-r-0: Pod is unschedulable: "), events
    assert because in events[0]

    # The window: the TaskSet keeps waiting, with exactly this status (the texts are derived from the
    # observation alone, so resyncs and scheduler retries write nothing), and no timeout fires.
    settled = len(recorder.history("stuck"))
    deadline = time.monotonic() + WINDOW
    while time.monotonic() < deadline:
        assert ts.status("stuck") == status
        pod = ts.pod("stuck-r-0")
        assert pod is not None and pod["status"]["phase"] == "Pending"
        assert pod["spec"].get("nodeName") is None
        time.sleep(1)
    assert len(recorder.history("stuck")) == settled, recorder.history("stuck")[settled - 1 :]
    assert warnings(ts, "stuck", "PodUnschedulable") == events  # once per Pod
    assert [(entry.name, entry.gone) for entry in recorder.pod_log()] == [("stuck-r-0", None)]

    ts.delete("stuck")
    eventually(
        lambda: ts.get("stuck") is None and ts.configmap("c-stuck-0") is None and ts.pods("stuck") == [],
        60,
        "the stuck TaskSet cleaned up",
    )


# ----- (b) a Pod whose phase becomes Unknown -------------------------------------------------------------


def first_replica(status: dict[str, Any]) -> dict[str, Any]:
    try:
        return replica(status, "r", 0)
    except (KeyError, IndexError):
        return {}


def lost_to_unknown(rep: dict[str, Any]) -> bool:
    return str(rep.get("phaseMessage", "")).startswith(UNKNOWN_EXIT)


def unknown_in(attempts: set[int], ts: TaskSets) -> Any:
    """A driver: the Pods of these replica attempts turn Unknown once running; the others succeed."""

    def script(pod: PodFacts) -> Any:
        if pod.replica_attempt in attempts:
            ts.core.patch_namespaced_pod(
                pod.name, ts.namespace, {"metadata": {"annotations": {sim.PHASE: "Unknown"}}}
            )
            return None
        return exits(0)

    return script


# A lost node is a platform failure by default, retried without counting; this rule counts it
# again, as before failure rules existed, so that the retry policy decides.
COUNT_NODE_LOSS: Final = [{"name": "count-node-loss", "action": "RetryCounted", "onPodReasons": ["NodeLost"]}]


def test_by_default_a_pod_lost_to_unknown_is_retried_without_counting(
    ts: TaskSets, recorder: Recorder
) -> None:
    """No retry policy, and still the replica gets another attempt: the built-in failure rule."""
    recorder.script = unknown_in({0}, ts)
    ts.create(TaskSetBuilder("lost").role("r", 1).obj())
    status = ts.final("lost", FINAL_TIMEOUT)
    assert status["state"] == "Succeeded", status
    final = replica(status, "r", 0)
    assert (final["totalRetriedCount"], final["uncountedRetries"]) == (1, 1)
    assert final["terminatedInfo"]["exitCode"] == 0
    assert never_overlapping(recorder.pod_log("lost-r-0"))


@pytest.mark.parametrize(
    ("retry", "unknown", "state", "retried", "decision"),
    [
        pytest.param(None, {0}, "Failed", 0, "Retry is forbidden", id="no retry policy: the replica fails"),
        pytest.param(
            (True, 1, 0), {0}, "Succeeded", 1, None, id="one retry: the next attempt runs and succeeds"
        ),
        pytest.param(
            (True, 1, 0), {0, 1}, "Failed", 1, "Can't retry anymore", id="retries run out on Unknown"
        ),
    ],
)
def test_a_pod_in_phase_unknown_fails_its_attempt_and_the_retry_policy_applies(
    *,
    ts: TaskSets,
    recorder: Recorder,
    retry: tuple[bool, int, int] | None,
    unknown: set[int],
    state: str,
    retried: int,
    decision: str | None,
) -> None:
    recorder.script = unknown_in(unknown, ts)
    ts.create(TaskSetBuilder("lost").role("r", 1, retry=retry, failureRules=COUNT_NODE_LOSS).obj())
    status = ts.final("lost", FINAL_TIMEOUT)

    assert status["state"] == state
    final = replica(status, "r", 0)
    assert final["phase"] == c.ReplicaPhase.COMPLETED
    assert final["totalRetriedCount"] == retried
    if decision is not None:  # the last attempt was lost: the final status says so, and why
        assert lost_to_unknown(final), final
        assert final["phaseMessage"].endswith(f"; {decision}"), final
        assert (final["podReason"], final["terminatedInfo"]) == (NODE_LOST, None)
    else:
        assert final["terminatedInfo"]["exitCode"] == 0
    # The lost attempt's Pod was deleted with its status saying Unknown, before any next attempt.
    seen = [first_replica(status) for status in recorder.history("lost")]
    lost = [rep for rep in seen if rep.get("totalRetriedCount") == 0 and lost_to_unknown(rep)]
    assert lost and lost[0]["podReason"] == NODE_LOST, seen
    pods = recorder.pod_log("lost-r-0")
    assert [entry.replica_attempt for entry in pods] == [str(n) for n in range(retried + 1)]
    assert never_overlapping(pods)
