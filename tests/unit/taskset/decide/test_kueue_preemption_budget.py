"""A Kueue eviction by preemption is one preemption of the TaskSet: which evictions count, that each
counts once however many passes, lost status writes and restarts see it, and that the one past
``maxPreemptions`` fails the TaskSet with the preemption as its reason."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taskset.api.constants import ConditionType, ReplicaPhase, TaskSetPhase
from taskset.api.status import TaskSetStatus
from taskset.decide import Settings
from taskset.integrations import BUILT_IN, Framework
from taskset.integrations.kueue import QUEUE_LABEL, WORKLOADS, KueueWorkload
from taskset.observed.slim import slim_owned
from taskset.observed.views import owned_view
from tests.builders import TaskSetBuilder, pod_template
from tests.unit.taskset.world import World, execute_write_lost, pass_once, replica

pytestmark = pytest.mark.unit

KEY = (WORKLOADS.key, "taskset-job-0")
PREEMPTOR = "0f3c6a7e-8b1a-4b3c-9953-c4618e5d3b0f"
KUEUE_SAYS = (
    f"Preempted to accommodate a workload (UID: {PREEMPTOR}, JobUID: UNKNOWN) due to prioritization in "
    "the ClusterQueue; preemptor path: /cq; preemptee path: /cq"
)


def world(max_preemptions: int | None = None) -> World:
    obj = TaskSetBuilder("job").role("r", 2, template=pod_template(), retry=(True, 3, 0)).obj()
    obj["metadata"]["labels"] = {QUEUE_LABEL: "team"}
    if max_preemptions is not None:
        obj["spec"]["retryPolicy"] = {"maxPreemptions": max_preemptions}
    return World(obj, settings=Settings(framework=Framework((*BUILT_IN, KueueWorkload()))))


def admit_and_run(w: World) -> None:
    w.settle()
    w.owned[KEY]["status"] = {
        "conditions": [{"type": "Admitted", "status": "True", "reason": "Admitted"}],
        "admission": {"podSetAssignments": [{"name": "r"}]},
    }
    w.settle()
    for index in range(2):
        w.run(f"job-r-{index}")
    w.settle()


def evict(w: World, reason: str, at: str = "2026-01-01T00:01:00Z", *, preempted: bool | None = None) -> None:
    """Kueue's eviction as v0.17 writes it: the Evicted condition with ``reason``, and for a preemption
    the Preempted condition in the same write, whose message names the preemptor."""
    conditions: list[dict[str, Any]] = w.owned[KEY]["status"]["conditions"]
    conditions.append(
        {"type": "Evicted", "status": "True", "reason": reason, "message": "...", "lastTransitionTime": at}
    )
    if preempted if preempted is not None else reason == "Preempted":
        conditions.append(
            {
                "type": "Preempted",
                "status": "True",
                "reason": "InClusterQueue",
                "message": KUEUE_SAYS,
                "lastTransitionTime": at,
            }
        )


@pytest.mark.parametrize(
    ("reason", "preempted", "counted"),
    [
        pytest.param("Preempted", None, True, id="Evicted Preempted with its Preempted condition: counted"),
        pytest.param("Preempted", False, True, id="Evicted Preempted alone: counted"),
        pytest.param("SomethingNew", True, True, id="a Preempted condition under a new eviction reason"),
        pytest.param("PodsReadyTimeout", None, False, id="PodsReadyTimeout: not a preemption"),
        pytest.param("Deactivated", None, False, id="an inactive Workload: not a preemption"),
        pytest.param("AdmissionCheck", None, False, id="an admission check turned False: not one"),
        pytest.param("ClusterQueueStopped", None, False, id="a stopped ClusterQueue: not one"),
        pytest.param("NodeFailures", None, False, id="node failures: not one"),
    ],
)
def test_which_kueue_evictions_count_as_a_preemption(
    reason: str, preempted: bool | None, counted: bool
) -> None:
    w = world()
    admit_and_run(w)
    first = w.owned[KEY]["metadata"]["uid"]
    evict(w, reason, preempted=preempted)
    w.settle()
    assert w.status is not None
    # Either way the attempt stops its Pods, counting no failure, and queues a new Workload (as before).
    assert w.owned[KEY]["metadata"]["uid"] != first and w.pods == {}
    assert w.status.total_retried_count == 0 and w.status.phase == TaskSetPhase.ATTEMPT_RUNNING
    assert replica(w, "r", 0).phase == ReplicaPhase.ATTEMPT_PENDING
    assert w.status.preempt_count == (1 if counted else 0)
    condition = w.status.condition(ConditionType.PREEMPTED)
    if not counted:
        assert condition is None and w.status.counted_eviction is None
        assert not any(e.startswith("TaskSetPreempted") for e in w.events)
        return
    assert condition is not None and condition.reason == "EvictedByKueue"
    assert condition.message.startswith("Workload taskset-job-0 preempted 1 time; last: Kueue preempted")
    if preempted is not False:
        assert PREEMPTOR in condition.message, "the preemptor, as Kueue names it"
        assert "(InClusterQueue)" in condition.message
    assert w.status.counted_eviction == f"{first}@2026-01-01T00:01:00Z"
    assert sum(e.startswith("TaskSetPreempted") for e in w.events) == 1


def test_preempted_past_the_budget_the_taskset_fails_with_the_preemption_as_its_reason() -> None:
    w = world(max_preemptions=1)
    admit_and_run(w)
    evict(w, "Preempted")
    w.settle()
    assert w.status is not None and w.status.preempt_count == 1
    assert w.status.phase == TaskSetPhase.ATTEMPT_RUNNING, "within the budget it queues again"
    condition = w.status.condition(ConditionType.PREEMPTED)
    assert condition is not None and "of at most 1" in condition.message

    admit_and_run(w)
    assert replica(w, "r", 0).phase == ReplicaPhase.ATTEMPT_RUNNING, "admitted again, it runs again"
    evict(w, "Preempted", "2026-01-01T00:05:00Z")
    w.settle()
    status = w.status
    assert status.preempt_count == 2
    assert status.phase == TaskSetPhase.COMPLETED and status.state == "Failed"
    assert status.total_retried_count == 0, "no retry follows, whatever the retry policy"
    assert status.attempt_result is not None and status.attempt_result.final
    assert status.attempt_result.reason.startswith("PreemptionBudgetExceeded: Workload taskset-job-0")
    condition = status.condition(ConditionType.PREEMPTED)
    assert condition is not None and condition.reason == "PreemptionBudgetExceeded"
    assert "more than spec.retryPolicy.maxPreemptions (1)" in condition.message
    (entry,) = status.attempt_history.attempts
    assert entry.preempt_count == 2 and "PreemptionBudgetExceeded" in entry.reason


def test_without_a_budget_every_preemption_is_counted_and_the_taskset_goes_on() -> None:
    w = world()
    for n in range(3):
        admit_and_run(w)
        evict(w, "Preempted", f"2026-01-01T00:0{n}:30Z")
        w.settle()
    assert w.status is not None and w.status.preempt_count == 3
    assert w.status.phase == TaskSetPhase.ATTEMPT_RUNNING


def test_the_same_workload_evicted_again_after_kueue_admitted_it_again_is_a_second_preemption() -> None:
    """Kueue may admit an evicted Workload again before the controller deletes it (its Evicted
    condition turns False) and evict it once more: the same UID, a new eviction time."""
    w = world()
    admit_and_run(w)
    evict(w, "Preempted")
    w.reconcile()  # seen and counted; its Pods are being stopped
    assert w.status is not None and w.status.preempt_count == 1
    conditions = w.owned[KEY]["status"]["conditions"]
    for condition in conditions:
        if condition["type"] in ("Evicted", "Preempted"):
            condition["status"] = "False"
    w.reconcile()
    for condition in [c for c in conditions if c["type"] in ("Evicted", "Preempted")]:
        conditions.remove(condition)
    evict(w, "Preempted", "2026-01-01T00:09:00Z")
    w.settle()
    assert w.status.preempt_count == 2


def test_a_lost_status_write_never_loses_the_count_with_the_workload() -> None:
    """The evicted Workload is the only evidence of the preemption: its delete goes out only once the
    count is persisted, so a status write lost after it still carries the count."""
    w = world()
    w.settle()
    # Admitted and preempted before any Pod was made: the first pass that sees the eviction also
    # retires the Workload.
    w.owned[KEY]["status"] = {"conditions": [{"type": "Admitted", "status": "True"}]}
    evict(w, "Preempted")
    first = w.owned[KEY]["metadata"]["uid"]
    for _ in range(10):
        execute_write_lost(w, pass_once(w))
        w.gc()
    w.settle()
    assert w.status is not None
    assert w.owned[KEY]["metadata"]["uid"] != first
    assert w.status.preempt_count == 1


def test_an_owned_objects_cache_keeps_why_a_condition_holds_bounded() -> None:
    long = "m" * 10_000
    obj = {
        "metadata": {"name": "w", "uid": "u"},
        "status": {
            "conditions": [
                {"type": "Evicted", "status": "True", "reason": "Preempted", "message": long, "x": 1},
                {"type": "Preempted", "status": "False", "reason": "QuotaReserved", "message": long},
            ]
        },
    }
    slim = slim_owned(obj)
    evicted, preempted = slim["status"]["conditions"]
    assert evicted["reason"] == "Preempted" and len(evicted["message"]) <= 512 and "x" not in evicted
    assert set(preempted) == {"type", "status"}, "of a condition that does not hold, only that"
    assert owned_view(slim).condition_words["Evicted"][0] == "Preempted"
    assert slim_owned(slim) == slim, "idempotent"


# ----- never counted twice ---------------------------------------------------------------------------------

STEPS = st.lists(st.sampled_from(("pass", "lost", "restart", "evict", "admit", "other")), max_size=30)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS)
def test_each_eviction_by_preemption_is_counted_exactly_once(steps: list[str]) -> None:
    """Whatever the order of passes, lost status writes, controller restarts (the status read back from
    its JSON), Kueue's admissions and its evictions (by preemption or not), the count is the number
    of evictions by preemption once the passes settle: never more, never less."""
    w = world()
    admit_and_run(w)
    evictions = 0
    for n, step in enumerate(steps):
        workload = w.owned.get(KEY)
        conditions = workload.get("status", {}).get("conditions", []) if workload else []
        evicted = any(c["type"] == "Evicted" and c["status"] == "True" for c in conditions)
        admitted = any(c["type"] == "Admitted" for c in conditions)
        if step == "pass":
            w.reconcile()
            w.gc()
        elif step == "lost":
            execute_write_lost(w, pass_once(w))
            w.gc()
        elif step == "restart":
            assert w.status is not None
            w.status = TaskSetStatus.from_json(w.status.to_json())
        elif step in ("evict", "other") and admitted and not evicted:
            evict(w, "Preempted" if step == "evict" else "PodsReadyTimeout", f"2026-01-01T01:{n:02d}:00Z")
            evictions += step == "evict"
        elif step == "admit" and workload is not None and not admitted:
            workload["status"] = {
                "conditions": [{"type": "Admitted", "status": "True"}],
                "admission": {"podSetAssignments": [{"name": "r"}]},
            }
        assert w.status is not None and w.status.preempt_count <= evictions
    w.settle()
    assert w.status is not None and w.status.preempt_count == evictions
