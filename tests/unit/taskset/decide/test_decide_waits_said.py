"""Every wait says why in the TaskSet. The pure texts (table-driven), then passes over
a World: admission denials for now and for good, a Pod held in Terminating (named at once, the
PodsStuckTerminating condition after the bound), a ControlUnit or Pod deleted by someone else, and the
Pods an orphaning delete of the ControlUnit left running."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.api.constants import ConditionStatus, ConditionType, EventReason, State
from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import TaskSetPhase as T
from taskset.decide import ActionResult, DeletePod, ResultKind
from taskset.decide.deletions import orphan_message, stuck_message
from taskset.decide.roles import UNFINISHED_AT_END
from taskset.decide.waiting import (
    WAIT_MESSAGE_MAX,
    create_refused_message,
    deleted_pod,
    terminating_message,
    wait_kind,
)
from taskset.observed.views import pod_view
from tests.builders import TaskSetBuilder
from tests.unit.taskset.decide.scenes import reasons, running, single, the_status
from tests.unit.taskset.world import PodBuilder, World, replica

pytestmark = pytest.mark.unit

HOLD = "example.com/hold"


def _held(name: str, *finalizers: str, deleting: bool = True) -> dict[str, Any]:
    pod = PodBuilder(name).running().deleting(deleting).obj()
    if finalizers:
        pod["metadata"]["finalizers"] = list(finalizers)
    return pod


# ----- the texts ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "refusal", "want"),
    [
        pytest.param(
            "job-w-0",
            'pods "job-w-0" is forbidden: exceeded quota: q, requested: pods=1, limited: pods=0',
            'Waiting to create Pod job-w-0, retrying with backoff: pods "job-w-0" is forbidden: exceeded '
            "quota: q, requested: pods=1, limited: pods=0",
            id="a quota's refusal is quoted after the Pod and the promise to retry",
        ),
        pytest.param(
            "job-w-0",
            "x" * 2000,
            ("Waiting to create Pod job-w-0, retrying with backoff: " + "x" * 2000)[: WAIT_MESSAGE_MAX - 3]
            + "...",
            id="a long refusal is clipped to the bound of a wait's message",
        ),
    ],
)
def test_create_refused_message(name: str, refusal: str, want: str) -> None:
    assert create_refused_message(name, refusal) == want
    assert wait_kind(want) == EventReason.POD_CREATION_FAILED


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        pytest.param(
            _held("job-w-0", HOLD),
            f"Pod job-w-0 is terminating, held by finalizers: {HOLD}",
            id="a deleted Pod held by one finalizer names it",
        ),
        pytest.param(
            _held("job-w-0", HOLD, "b.io/x"),
            f"Pod job-w-0 is terminating, held by finalizers: {HOLD}, b.io/x",
            id="several finalizers are named in their order",
        ),
        pytest.param(_held("job-w-0"), None, id="a deleted Pod without finalizers is only going away"),
        pytest.param(
            _held("job-w-0", HOLD, deleting=False), None, id="a finalizer on a live Pod holds nothing"
        ),
    ],
)
def test_terminating_message(pod: dict[str, Any], want: str | None) -> None:
    assert terminating_message(pod_view(pod)) == want
    if want is not None:
        assert wait_kind(want) == EventReason.POD_STUCK_TERMINATING
        assert deleted_pod(want) == "job-w-0"


@pytest.mark.parametrize(
    ("message", "want"),
    [
        pytest.param("Pod job-w-0 was deleted", "job-w-0", id="P10 and P11's message"),
        pytest.param(f"Pod job-w-0 is terminating, held by finalizers: {HOLD}", "job-w-0", id="P12's"),
        pytest.param(
            "Pod job-w-0 was deleted; Retry is forbidden", None, id="a final message is not a cause"
        ),
        pytest.param("Pod is running", None, id="P4's message names no Pod"),
        pytest.param("The deletion request of pod has been made", None, id="P9's message, our own delete"),
    ],
)
def test_deleted_pod(message: str, want: str | None) -> None:
    assert deleted_pod(message) == want


def _pods(*specs: tuple[str, tuple[str, ...]]) -> list[Any]:
    return [pod_view(_held(name, *finalizers)) for name, finalizers in specs]


@pytest.mark.parametrize(
    ("pods", "want"),
    [
        pytest.param(
            _pods(("job-w-0", (HOLD,))),
            f"1 Pod still terminating 300 s after its deletion: job-w-0 (held by finalizers: {HOLD})",
            id="one Pod, named with its finalizer",
        ),
        pytest.param(
            _pods(("job-w-0", ())),
            "1 Pod still terminating 300 s after its deletion: job-w-0 (no finalizer: its node has not "
            "confirmed that it stopped)",
            id="a Pod no finalizer holds waits for its node",
        ),
        pytest.param(
            _pods(*((f"job-w-{i}", (HOLD,)) for i in range(5))),
            f"5 Pods still terminating 300 s after their deletion: job-w-0 (held by finalizers: {HOLD}); "
            f"job-w-1 (held by finalizers: {HOLD}); job-w-2 (held by finalizers: {HOLD}); and 2 more",
            id="the first three are named, the others counted",
        ),
    ],
)
def test_stuck_message(pods: list[Any], want: str) -> None:
    assert stuck_message(pods, 300.0) == want


# ----- admission denials ---------------------------------------------------------------------------------


def test_a_denial_for_now_is_said_once_in_the_replica_and_the_running_condition_and_retried() -> None:
    world = single("w")
    quota = 'pods "job-w-0" is forbidden: exceeded quota: q'
    world.pod_refusal = ActionResult(ResultKind.REFUSED, message=quota)
    first = world.reconcile()
    message = replica(world, "w").phase_message
    assert message == f"Waiting to create Pod job-w-0, retrying with backoff: {quota}"
    assert replica(world, "w").phase == P.ATTEMPT_PENDING
    assert first.backoff
    assert reasons(first).count(EventReason.POD_CREATION_FAILED) == 1
    said_at_once = first.status.condition(ConditionType.RUNNING)  # the status written agrees with itself
    assert said_at_once is not None and said_at_once.message == f"1 replica waiting: w-0: {message}"
    again = world.reconcile()  # the backoff's retry, refused the same way
    assert again.backoff and EventReason.POD_CREATION_FAILED not in reasons(again)
    running_condition = the_status(world).condition(ConditionType.RUNNING)
    assert running_condition is not None
    assert running_condition.message == f"1 replica waiting: w-0: {message}"
    world.pod_refusal = None  # the quota is lifted
    world.settle()
    assert replica(world, "w").phase == P.ATTEMPT_PREPARING
    running_condition = the_status(world).condition(ConditionType.RUNNING)
    assert running_condition is not None and "waiting" not in running_condition.message


@pytest.mark.parametrize(
    "failure",
    [
        pytest.param(
            ActionResult(
                ResultKind.REFUSED,
                message='pods "{pod}" is forbidden: exceeded quota: q, requested: pods=1, limited: pods=0',
            ),
            id="a full quota refuses every Pod, naming it",
        ),
        pytest.param(
            ActionResult(ResultKind.ERROR, message='Internal error: failed calling webhook for pods "{pod}"'),
            id="a failing webhook fails every Pod, naming it",
        ),
    ],
)
def test_a_failure_every_pod_meets_is_one_event_for_the_taskset_not_one_per_pod(
    failure: ActionResult,
) -> None:
    world = single("w", replicas=40)
    world.pod_refusal = failure
    first = world.reconcile()
    assert first.backoff
    assert reasons(first).count(EventReason.POD_CREATION_FAILED) == 1
    assert all(r.phase == P.ATTEMPT_PENDING for r in the_status(world).roles[0].replicas)
    for _ in range(3):  # the backoff's retries, failing the same way
        again = world.reconcile()
        assert reasons(again).count(EventReason.POD_CREATION_FAILED) <= 1
        if failure.kind == ResultKind.REFUSED:  # the status says it: never again while it lasts
            assert EventReason.POD_CREATION_FAILED not in reasons(again)
    world.pod_refusal = ActionResult(failure.kind, message=failure.message + ", and now another reason")
    changed = world.reconcile()
    assert reasons(changed).count(EventReason.POD_CREATION_FAILED) == 1  # a change of reason is said


def test_a_refusal_for_good_sets_pod_creation_refused_and_a_later_create_clears_it() -> None:
    world = single("w", retry=(True, 1, 0))
    refusal = 'pods "job-w-0" is forbidden: violates PodSecurity "restricted:latest": privileged'
    world.pod_refusal = ActionResult(ResultKind.INVALID, message=refusal)
    world.reconcile()
    condition = the_status(world).condition(ConditionType.POD_CREATION_REFUSED)
    assert condition is not None
    assert (condition.status, condition.reason) == (ConditionStatus.TRUE, "Refused")
    assert condition.message == f"Pod job-w-0: {refusal}"
    world.pod_refusal = None  # the namespace's PodSecurity level was relaxed before the retry
    world.settle()
    condition = the_status(world).condition(ConditionType.POD_CREATION_REFUSED)
    assert condition is not None
    assert (condition.status, condition.reason, condition.message) == (
        ConditionStatus.FALSE,
        "Created",
        "Pod job-w-0 was created",
    )


# ----- a Pod held in Terminating ------------------------------------------------------------------------


def _hold_and_delete(world: World, name: str) -> None:
    meta = world.pods[name]["metadata"]
    meta["finalizers"] = [HOLD]
    meta["deletionTimestamp"] = world.now.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_pod_held_terminating_is_named_at_once_and_warned_about_after_the_bound() -> None:
    world = running(single("w"))
    _hold_and_delete(world, "job-w-0")
    plan = world.reconcile()
    held = f"Pod job-w-0 is terminating, held by finalizers: {HOLD}"
    assert (replica(world, "w").phase, replica(world, "w").phase_message) == (
        P.ATTEMPT_DELETION_REQUESTED,
        held,
    )
    assert the_status(world).state == State.RUNNING
    running_condition = the_status(world).condition(ConditionType.RUNNING)
    assert running_condition is not None and running_condition.message == f"1 replica waiting: w-0: {held}"
    assert the_status(world).condition(ConditionType.PODS_STUCK_TERMINATING) is None
    assert plan.requeue_after is not None and plan.requeue_after <= 300

    world.tick(300)
    plan = world.reconcile()
    stuck = the_status(world).condition(ConditionType.PODS_STUCK_TERMINATING)
    assert stuck is not None and stuck.status == ConditionStatus.TRUE
    assert stuck.message == (
        f"1 Pod still terminating 300 s after its deletion: job-w-0 (held by finalizers: {HOLD})"
    )
    assert reasons(plan).count(EventReason.POD_STUCK_TERMINATING) == 1
    world.tick(60)
    assert EventReason.POD_STUCK_TERMINATING not in reasons(world.reconcile())  # said once

    del world.pods["job-w-0"]  # the finalizer is removed
    world.settle()
    status = the_status(world)
    assert status.state == State.FAILED
    assert replica(world, "w").phase_message == "Pod job-w-0 was deleted; Retry is forbidden"
    released = status.condition(ConditionType.PODS_STUCK_TERMINATING)
    assert released is not None and (released.status, released.reason) == (ConditionStatus.FALSE, "Released")


def test_a_strangers_terminating_pod_is_never_named() -> None:
    world = running(single("w"))
    world.pods["job-w-7"] = _held("job-w-7", HOLD)  # carries no UID the status recorded
    world.tick(3600)
    plan = world.reconcile()
    assert the_status(world).condition(ConditionType.PODS_STUCK_TERMINATING) is None
    assert EventReason.POD_STUCK_TERMINATING not in reasons(plan)


# ----- objects deleted by someone else ------------------------------------------------------------------


def test_a_pod_deleted_by_someone_else_is_named_before_the_retry_decision() -> None:
    world = running(single("w"))
    del world.pods["job-w-0"]
    world.settle()
    assert replica(world, "w").phase_message == "Pod job-w-0 was deleted; Retry is forbidden"


def test_a_control_unit_deleted_by_someone_else_is_the_final_message() -> None:
    world = running(single("w"))
    world.units.clear()
    world.pods.clear()
    world.settle()
    status = the_status(world)
    assert (status.phase, status.state) == (T.COMPLETED, State.FAILED)
    assert status.state_message == "ControlUnit c-job-0 was deleted"
    failed = status.condition(ConditionType.FAILED)
    assert failed is not None and failed.message == "ControlUnit c-job-0 was deleted"


def test_pods_orphaned_by_a_control_unit_delete_are_deleted_by_their_recorded_uid_and_no_other() -> None:
    world = running(single("w", replicas=2))
    recorded = {name: pod["metadata"]["uid"] for name, pod in world.pods.items()}
    world.units.clear()
    for pod in world.pods.values():
        pod["metadata"].pop("ownerReferences")  # what the garbage collector does to orphans
    stranger = PodBuilder("job-w-9").running().taskset(world.ref.uid).obj()  # a copied TSUID proves nothing
    world.pods["job-w-9"] = stranger
    plans = []
    for _ in range(4):
        plans.append(world.reconcile())
    deletes = [i for plan in plans for i in plan.intents if isinstance(i, DeletePod)]
    assert {(d.name, d.uid, d.advances) for d in deletes} == {
        (name, uid, False) for name, uid in recorded.items()
    }
    assert set(world.pods) == {"job-w-9"}
    events = [f"{e.reason}: {e.message}" for plan in plans for e in plan.events]
    assert sorted(e for e in events if e.startswith(EventReason.ORPHANED_POD_DELETED)) == [
        f"{EventReason.ORPHANED_POD_DELETED}: {orphan_message(name)}" for name in sorted(recorded)
    ]


@pytest.mark.parametrize(
    "how",
    [
        pytest.param("background", id="the ControlUnit deleted in the background: the collector's turn"),
        pytest.param("cache behind", id="the Pod cache behind the ControlUnit cache's foreground deletion"),
    ],
)
def test_pods_that_still_name_their_control_unit_are_no_orphans(how: str) -> None:
    """Only an orphaning delete strips the Pods' owner reference; a Pod still naming its (gone)
    ControlUnit is the garbage collector's, or already gone where the Pod cache does not show it yet."""
    world = running(single("w", replicas=2))
    if how == "background":
        world.units.clear()  # the Pods keep their owner reference until the collector deletes them
        plans = [world.reconcile() for _ in range(4)]
    else:
        kept = {name: dict(pod) for name, pod in world.pods.items()}
        world.exit("job-w-0", 1)  # the attempt fails, and its end deletes the ControlUnit and its Pods
        world.settle()
        world.pods.update(kept)  # as the lagging Pod cache still shows them
        plans = [world.reconcile() for _ in range(2)]
    assert the_status(world).phase == T.COMPLETED
    assert not [i for plan in plans for i in plan.intents if isinstance(i, DeletePod)]
    assert EventReason.ORPHANED_POD_DELETED not in [r for plan in plans for r in reasons(plan)]


@pytest.mark.parametrize(
    "end",
    [
        pytest.param("another role failed", id="another role's failure ended the attempt"),
        pytest.param("deadline", id="activeDeadlineSeconds ended the attempt"),
    ],
)
def test_replicas_unfinished_at_the_end_do_not_say_their_pod_is_running(end: str) -> None:
    builder = TaskSetBuilder("job").role("a", replicas=1).role("b", replicas=2)
    if end == "deadline":
        builder = builder.spec_field("activeDeadlineSeconds", 5)
    world = running(World(builder.obj()))
    if end == "deadline":
        world.tick(10)
    else:
        world.exit("job-a-0", 1)
    world.settle(40)
    status = the_status(world)
    assert status.phase == T.COMPLETED and not world.pods
    assert {r.phase_message for r in status.roles[1].replicas} == {UNFINISHED_AT_END}
    assert status.roles[1].phase_message == UNFINISHED_AT_END
    if end == "another role failed":
        assert status.roles[0].replicas[0].phase_message == "Retry is forbidden"  # its own outcome stays


def test_a_taskset_deleted_with_orphan_propagation_leaves_its_control_units_pods_alone() -> None:
    """The TaskSet's orphaning delete strips the ControlUnit's owner reference before the TaskSet is
    gone; a pass in between (a loaded collector, a lagging cache) finds a ControlUnit no longer the
    TaskSet's and ends the attempt, but the Pods, still the ControlUnit's, are no orphans of it."""
    world = single("w", replicas=2)
    world.settle()
    assert the_status(world).phase == T.ATTEMPT_PREPARING
    pods = {name: pod["metadata"]["uid"] for name, pod in world.pods.items()}
    world.deleting = True
    for unit in world.units.values():
        unit["metadata"].pop("ownerReferences")
    plans = [world.reconcile() for _ in range(3)]
    assert not [i for plan in plans for i in plan.intents if isinstance(i, DeletePod)]
    assert {name: pod["metadata"]["uid"] for name, pod in world.pods.items()} == pods
    assert EventReason.ORPHANED_POD_DELETED not in [r for plan in plans for r in reasons(plan)]
