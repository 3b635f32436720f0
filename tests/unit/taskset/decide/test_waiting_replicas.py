"""Stuck Pods: a replica whose Pod will not start by itself, and a Pod in phase Unknown.

A Pod that was created and observed but never starts has no timeout (spec S53), so decide() makes the
wait visible instead: the replica's phaseMessage says why, one Warning event per Pod and cause, and the
Running condition names the waiting replicas, all derived from the observed Pod alone (no status write
on a resync). A Pod whose phase becomes Unknown ends the attempt as failed (spec 8.2) and the text that
says so survives to the retry decision.

Spec 8.2 says tests MUST NOT cover ``Unknown``; a TaskSet that never waits silently needs it, and that wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from taskset.api.constants import ConditionType, State
from taskset.api.constants import EventReason as E
from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import TaskSetPhase as T
from taskset.api.status import Condition, TaskSetStatus
from taskset.decide import (
    WAIT_MESSAGE_MAX,
    WAITING_SUMMARY_MAX,
    Plan,
    PodWait,
    pod_wait,
    waiting_summary,
)
from taskset.observed.views import pod_view
from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import World, replica

pytestmark = pytest.mark.unit

SCHEDULER = (
    "0/4 nodes are available: 4 node(s) didn't match Pod's node affinity/selector. "
    "preemption: 0/4 nodes are available: 4 Preemption is not helpful for scheduling."
)
LATER = "0/5 nodes are available: 5 node(s) didn't match Pod's node affinity/selector."
PULL = 'Back-off pulling image "registry.invalid/nope:1"'
STARTING = "Creation has be made,and pod appears at local"  # P3's message, O's text
RETRY_DELAY = 10  # seconds; long enough that a pass stops at RetryPending and shows the decision


# ----- raw Pod statuses ------------------------------------------------------------------------------


def unschedulable(message: str = SCHEDULER) -> dict[str, Any]:
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
    return {"phase": "Pending", "conditions": [condition]}


def scheduled() -> dict[str, Any]:
    """Bound to a node, no IP yet."""
    return {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]}


def waiting(
    reason: str, message: str = "", *, container: str = "c0", init: bool = False, phase: str = "Pending"
) -> dict[str, Any]:
    """Assigned (both IPs) with one container waiting for ``reason``."""
    state: dict[str, Any] = {
        "waiting": {"reason": reason, "message": message} if message else {"reason": reason}
    }
    key = "initContainerStatuses" if init else "containerStatuses"
    return {
        "phase": phase,
        "hostIP": "10.0.0.1",
        "podIP": "10.0.1.1",
        key: [{"name": container, "state": state}],
    }


def pod_with(status: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "job-r-0", "uid": "u"},
        "spec": {"containers": [{"name": "c0"}]},
        "status": status,
    }


# ----- helpers ---------------------------------------------------------------------------------------


def single(**role: Any) -> World:
    return World(TaskSetBuilder("job").role("r", **role).obj())


def preparing(world: World) -> World:
    world.settle()
    assert world.status is not None and world.status.phase == T.ATTEMPT_PREPARING
    return world


def status_of(world: World) -> TaskSetStatus:
    assert world.status is not None
    return world.status


def running_condition(world: World) -> Condition | None:
    return status_of(world).condition(ConditionType.RUNNING)


def events(plan: Plan) -> list[tuple[str, str, bool]]:
    """Events other than the phase transitions: (reason, message, warning)."""
    return [
        (str(e.reason), e.message, e.warning) for e in plan.events if e.reason != E.TASKSET_STATE_TRANSITION
    ]


def pod_becomes(world: World, name: str, status: dict[str, Any]) -> Plan:
    """The Pod's status changes; one pass sees it."""
    world.pods[name]["status"] = status
    plan = world.reconcile()
    world.gc()
    return plan


# ----- why a Pod waits ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        pytest.param(
            unschedulable(),
            PodWait(E.POD_UNSCHEDULABLE, f"Pod is unschedulable: {SCHEDULER}"),
            id="the scheduler found no node: its message",
        ),
        pytest.param(
            unschedulable(""),
            PodWait(E.POD_UNSCHEDULABLE, "Pod is unschedulable: Unschedulable"),
            id="the scheduler found no node and said nothing: the reason",
        ),
        pytest.param(
            waiting("ImagePullBackOff", PULL),
            PodWait(E.POD_CONTAINER_WAITING, f"container c0 waiting: ImagePullBackOff: {PULL}"),
            id="an image that cannot be pulled",
        ),
        pytest.param(
            waiting("CreateContainerConfigError", container="side"),
            PodWait(E.POD_CONTAINER_WAITING, "container side waiting: CreateContainerConfigError"),
            id="a missing ConfigMap or Secret, without a message",
        ),
        pytest.param(
            waiting("CrashLoopBackOff", "back-off 10s", container="init", init=True),
            PodWait(E.POD_CONTAINER_WAITING, "container init waiting: CrashLoopBackOff: back-off 10s"),
            id="an init container that keeps failing",
        ),
        pytest.param(
            unschedulable() | {"containerStatuses": waiting("ErrImagePull")["containerStatuses"]},
            PodWait(E.POD_UNSCHEDULABLE, f"Pod is unschedulable: {SCHEDULER}"),
            id="an unschedulable Pod is reported as such first",
        ),
        pytest.param(waiting("ContainerCreating"), None, id="a container being created is just starting"),
        pytest.param(
            waiting("PodInitializing"), None, id="a container behind its init containers is starting"
        ),
        pytest.param(
            waiting("CrashLoopBackOff", phase="Running"),
            None,
            id="a running Pod's restarts are not a stuck start",
        ),
        pytest.param(scheduled(), None, id="a scheduled Pod without containers yet"),
        pytest.param({}, None, id="a Pod without status"),
        pytest.param(
            {"phase": "Pending", "containerStatuses": [{"name": "c0", "state": {"waiting": "junk"}}, 7]},
            None,
            id="malformed container statuses are ignored",
        ),
    ],
)
def test_pod_wait_says_why_a_pending_pod_does_not_start(
    status: dict[str, Any], expected: PodWait | None
) -> None:
    assert pod_wait(pod_view(pod_with(status))) == expected


@pytest.mark.parametrize(
    "status",
    [
        pytest.param(unschedulable("x" * 5000), id="a huge scheduler message"),
        pytest.param(waiting("ErrImagePull", "y" * 5000), id="a huge container message"),
    ],
)
def test_a_wait_message_is_bounded(status: dict[str, Any]) -> None:
    wait = pod_wait(pod_view(pod_with(status)))
    assert wait is not None
    assert len(wait.message) == WAIT_MESSAGE_MAX
    assert wait.message.endswith("...")


# ----- an unschedulable Pod: reported once, and the status settles ---------------------------------------


def test_an_unschedulable_pod_is_reported_once_and_nothing_times_out() -> None:
    world = preparing(single())
    plan = pod_becomes(world, "job-r-0", unschedulable())
    rep = replica(world, "r")
    assert (rep.phase, rep.phase_message) == (P.ATTEMPT_PREPARING, f"Pod is unschedulable: {SCHEDULER}")
    assert events(plan) == [("PodUnschedulable", f"job-r-0: Pod is unschedulable: {SCHEDULER}", True)]
    status = status_of(world)
    assert (status.phase, status.state) == (T.ATTEMPT_PREPARING, State.WAITING)
    condition = running_condition(world)
    assert condition is not None
    assert (condition.status, condition.reason, condition.message) == (
        "False",
        "Waiting",
        f"1 replica waiting: r-0: Pod is unschedulable: {SCHEDULER}",
    )
    written = status.to_json()
    # Resyncs, long after: the same observation gives the same status (nothing to write), no event, no
    # action, and no timer: an observed Pod has no timeout (spec S53).
    for _ in range(3):
        world.tick(3600)
        plan = world.reconcile()
        assert (plan.events, plan.intents, plan.requeue_after) == ([], [], None)
        assert plan.status.to_json() == written


@dataclass(frozen=True)
class Step:
    status: dict[str, Any]
    phase: P
    message: str
    events: list[str]  # reasons of the events this pass emits
    condition: str  # the Running condition's message ("" when there is none)


def waits(message: str) -> str:
    return f"1 replica waiting: r-0: {message}"


UNSCHEDULABLE, RESCHEDULED = f"Pod is unschedulable: {SCHEDULER}", f"Pod is unschedulable: {LATER}"
PULL_FAILED = "container c0 waiting: ErrImagePull: pull failed"
BACK_OFF = f"container c0 waiting: ImagePullBackOff: {PULL}"
PREPARING = "Control unit is synced,prepare to launch tasks"  # the state message while Preparing

STEPS = [
    Step(unschedulable(), P.ATTEMPT_PREPARING, UNSCHEDULABLE, ["PodUnschedulable"], waits(UNSCHEDULABLE)),
    # the scheduler's message changes as nodes come and go: the texts follow, the event is not repeated
    Step(unschedulable(LATER), P.ATTEMPT_PREPARING, RESCHEDULED, [], waits(RESCHEDULED)),
    # scheduled at last, no IP yet: the phase's own message and the state message come back
    Step(scheduled(), P.ATTEMPT_PREPARING, STARTING, [], PREPARING),
    # a new cause is a new report
    Step(
        waiting("ErrImagePull", "pull failed"),
        P.ATTEMPT_ASSIGNED,
        PULL_FAILED,
        ["PodContainerWaiting"],
        waits(PULL_FAILED),
    ),
    # the kubelet alternates ErrImagePull and ImagePullBackOff: one cause, one event
    Step(waiting("ImagePullBackOff", PULL), P.ATTEMPT_ASSIGNED, BACK_OFF, [], waits(BACK_OFF)),
    Step(waiting("ContainerCreating"), P.ATTEMPT_ASSIGNED, "Pod is assigned to a node", [], PREPARING),
    Step(
        waiting("ContainerCreating", phase="Running"),
        P.ATTEMPT_RUNNING,
        "Pod is running",
        ["TaskRole is running", "TaskSet is running"],
        "Some TaskRole is running",
    ),
]


def test_the_report_follows_the_pod_from_unschedulable_to_running() -> None:
    world = preparing(single())
    for step in STEPS:
        plan = pod_becomes(world, "job-r-0", step.status)
        rep = replica(world, "r")
        condition = running_condition(world)
        seen = (rep.phase, rep.phase_message, [reason for reason, _, _ in events(plan)])
        assert seen == (step.phase, step.message, step.events), step
        assert (condition.message if condition else "") == step.condition, step


def test_each_attempt_s_pod_is_reported_once() -> None:
    world = preparing(single(retry=(True, 1, 0)))
    reported = [pod_becomes(world, "job-r-0", unschedulable()) for _ in range(2)]
    # the unschedulable Pod is deleted by someone; the replica retries with a new Pod, just as stuck
    world.pods["job-r-0"]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:05Z"
    world.settle()
    del world.pods["job-r-0"]
    world.settle()
    assert replica(world, "r").total_retried_count == 1
    reported += [pod_becomes(world, "job-r-0", unschedulable()) for _ in range(2)]
    assert [len(events(plan)) for plan in reported] == [1, 0, 1, 0]
    assert world.events.count(f"PodUnschedulable: job-r-0: Pod is unschedulable: {SCHEDULER}") == 2


def test_the_condition_names_a_few_waiting_replicas_and_stays_bounded() -> None:
    world = preparing(single(replicas=10, min_succeeded=1, max_failed=10))
    for index in range(10):
        world.pods[f"job-r-{index}"]["status"] = unschedulable(f"node {index}: " + "z" * 5000)
    plan = world.reconcile()
    assert len(events(plan)) == 10
    assert all(len(message) <= WAIT_MESSAGE_MAX for _, message, _ in events(plan))
    condition = running_condition(world)
    assert condition is not None
    assert len(condition.message) <= WAITING_SUMMARY_MAX
    assert condition.message.startswith("10 replicas waiting: r-0: Pod is unschedulable: node 0: zzz")
    assert "; r-1: Pod is unschedulable: node 1: " in condition.message
    assert "; r-2: Pod is unschedulable: node 2: " in condition.message
    assert "r-3:" not in condition.message
    assert condition.message.endswith("...; and 7 more")
    assert all(len(rep.phase_message) <= WAIT_MESSAGE_MAX for rep in status_of(world).roles[0].replicas)


def test_a_running_taskset_names_its_waiting_replica_in_the_running_condition() -> None:
    world = World(TaskSetBuilder("job").role("ps").role("worker").obj())
    preparing(world)
    world.run("job-ps-0")
    world.pods["job-worker-0"]["status"] = unschedulable()
    world.settle()
    status = status_of(world)
    assert (status.phase, status.state) == (T.ATTEMPT_RUNNING, State.RUNNING)
    condition = running_condition(world)
    assert condition is not None
    became_running = condition.last_transition_time
    assert (condition.status, condition.reason, condition.message) == (
        "True",
        "Running",
        f"1 replica waiting: worker-0: Pod is unschedulable: {SCHEDULER}",
    )
    world.tick(30)
    world.run("job-worker-0")
    world.settle()
    condition = running_condition(world)
    assert condition is not None
    assert (condition.status, condition.message) == ("True", "Some TaskRole is running")
    assert condition.last_transition_time == became_running


def test_a_decided_attempt_stops_naming_waiting_replicas() -> None:
    world = World(TaskSetBuilder("job").role("ps").role("worker").obj())
    preparing(world)
    world.run("job-ps-0")
    world.pods["job-worker-0"]["status"] = unschedulable()
    world.settle()
    assert waiting_summary(status_of(world))
    world.exit("job-ps-0", 1)  # the default policy: a failed role fails the TaskSet
    seen: list[tuple[T, str]] = []
    while status_of(world).phase != T.COMPLETED and len(seen) < 20:
        plan = world.reconcile()
        world.gc()
        condition = plan.status.condition(ConditionType.RUNNING)
        assert condition is not None
        seen.append((plan.status.phase, condition.message))
    ending = [
        (phase, message) for phase, message in seen if phase not in (T.ATTEMPT_PREPARING, T.ATTEMPT_RUNNING)
    ]
    assert ending[-1][0] == T.COMPLETED
    assert all("waiting" not in message for _, message in ending), ending
    assert status_of(world).state == State.FAILED


def test_waiting_summary_counts_only_replicas_whose_pods_wait() -> None:
    world = preparing(single(replicas=3, min_succeeded=1, max_failed=3))
    world.pods["job-r-1"]["status"] = unschedulable("no")
    world.run("job-r-2")
    world.settle()
    assert waiting_summary(status_of(world)) == "1 replica waiting: r-1: Pod is unschedulable: no"


# ----- a Pod in phase Unknown (never waiting silently overrides spec 8.2's "tests MUST NOT cover Unknown") --


def unknown(reason: str, message: str) -> dict[str, Any]:
    """What the devcluster's pod-unknown stage (and a node lifecycle controller of old) leaves."""
    status: dict[str, Any] = {"phase": "Unknown", "hostIP": "10.0.0.1", "podIP": "10.0.1.1"}
    if reason:
        status["reason"] = reason
    if message:
        status["message"] = message
    return status


COUNTED = "Failure rule count-node-loss (Pod reason NodeLost): RetryCounted"


@pytest.mark.parametrize(
    ("retry", "reason", "message", "decisions"),
    [
        pytest.param(
            None,
            "NodeLost",
            "node lost contact",
            ["Retry is forbidden"],
            id="without a retry policy the first Unknown fails the replica",
        ),
        pytest.param(
            (True, 2, RETRY_DELAY),
            "NodeLost",
            "node lost contact",
            [
                "Policy.Retry is true,and current retry time is smaller than MaxRetryCount",
                "Policy.Retry is true,and current retry time is smaller than MaxRetryCount",
                "Can't retry anymore",
            ],
            id="each Unknown is a failed attempt until the retries run out",
        ),
        pytest.param(
            None, "", "", ["Retry is forbidden"], id="an Unknown Pod without reason or message is still named"
        ),
    ],
)
def test_a_pod_in_phase_unknown_is_a_failed_attempt_and_the_retry_policy_applies(
    retry: tuple[bool, int, int] | None, reason: str, message: str, decisions: list[str]
) -> None:
    # Node loss is a platform failure by default (not counted); this rule counts it again.
    counted = [{"name": "count-node-loss", "action": "RetryCounted", "onPodReasons": ["NodeLost"]}]
    world = preparing(single(retry=retry, failureRules=counted))
    exit_text = f"PodPhase:Unknown ,PodMessage:{message} ,PodReason: {reason}"
    for attempt, decision in enumerate(decisions):
        world.run("job-r-0")
        world.settle()
        assert replica(world, "r").phase == P.ATTEMPT_RUNNING
        # The pass that sees Unknown deletes the Pod; the exit text stays while it goes (W-23).
        pod_becomes(world, "job-r-0", unknown(reason, message))
        rep = replica(world, "r")
        assert (rep.phase, rep.phase_message) == (P.ATTEMPT_DELETION_REQUESTED, exit_text)
        world.reconcile()  # the Pod is gone: the retry decision, after the reason
        world.gc()
        rep = replica(world, "r")
        assert rep.phase_message == f"{exit_text}; {COUNTED}; {decision}"
        assert (rep.pod_reason, rep.terminated_info, rep.total_retried_count) == (reason, None, attempt)
        world.tick(RETRY_DELAY)
        world.settle()
    rep = replica(world, "r")
    assert (rep.phase, rep.succeeded, rep.total_retried_count) == (P.COMPLETED, False, len(decisions) - 1)
    assert rep.phase_message == f"{exit_text}; {COUNTED}; {decisions[-1]}"
    assert [p["metadata"]["annotations"]["ReplicaAttemptID"] for p in world.created_pods] == [
        str(n) for n in range(len(decisions))
    ]
    assert (status_of(world).phase, status_of(world).state) == (T.COMPLETED, State.FAILED)
