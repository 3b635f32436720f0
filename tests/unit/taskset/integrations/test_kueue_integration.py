"""The Kueue integration's pure capabilities, asked through the runner: which TaskSets get a Workload,
what it holds, and when the roles' Pods may start; and what an owned object's cache keeps of its
conditions."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.api.constants import ReplicaPhase
from taskset.api.spec import ParsedTaskSet, parse_taskset
from taskset.api.status import TaskSetStatus
from taskset.decide import Settings
from taskset.integrations import BUILT_IN, Framework
from taskset.integrations.base import Attempt
from taskset.integrations.kueue import QUEUE_LABEL, WORKLOADS, KueueWorkload, workload_name
from taskset.objects.owned import Scope
from taskset.observed.slim import OWNED_CONDITIONS_MAX, slim_owned
from taskset.observed.views import Observed, OwnedView, owned_view
from tests.builders import TaskSetBuilder, pod_template
from tests.unit.taskset.world import World, replica

pytestmark = pytest.mark.unit


def attempt(labels: dict[str, str], number: int = 0) -> Attempt:
    template = pod_template()
    template["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    parsed = parse_taskset(TaskSetBuilder("job").role("ps", 1).role("worker", 3, template=template).obj())
    assert isinstance(parsed, ParsedTaskSet)
    return Attempt("job", "ns", "uid-1", number, parsed.spec, labels=labels)


ADMISSION = {"podSetAssignments": [{"name": "ps", "flavors": {}}, {"name": "worker", "flavors": {}}]}


def observed(*conditions: str) -> Observed:
    view = OwnedView(
        workload_name("job", 0),
        "w-uid",
        False,
        "cu-uid",
        true_conditions=frozenset(conditions),
        status={"admission": ADMISSION},
    )
    return Observed(control_unit=None, pods={}, owned={(WORKLOADS.key, view.name): view})


KUEUE = Framework((KueueWorkload(),))


def gate(at: Attempt, position: int, seen: Observed) -> str | None:
    return KUEUE.gate(at, at.spec.roles[position], seen, TaskSetStatus(), KUEUE.admission(at, seen))


def stale(at: Attempt, seen: Observed) -> tuple[tuple[object, str], ...]:
    return tuple((kind, name) for _, kind, name in KUEUE.admission(at, seen).stale())


def test_a_taskset_without_a_queue_gets_no_workload_and_no_gate() -> None:
    plain = attempt({"team": "a"})
    assert tuple(KUEUE.wanted_objects(plain)) == ()
    assert gate(plain, 0, observed()) is None
    assert KUEUE.admission(plain, observed("Evicted")).suspended is None
    assert stale(plain, observed("Evicted")) == ()


@pytest.mark.parametrize(
    ("conditions", "evicted"),
    [
        pytest.param(("Admitted",), False, id="admitted: runs"),
        pytest.param(("Admitted", "Evicted"), True, id="evicted: stop the Pods, then make it anew"),
    ],
)
def test_an_evicted_workload_suspends_and_is_stale(conditions: tuple[str, ...], evicted: bool) -> None:
    queued = attempt({QUEUE_LABEL: "team"})
    said = KUEUE.admission(queued, observed(*conditions)).suspended
    assert said == ("Kueue evicted Workload taskset-job-0" if evicted else None)
    assert stale(queued, observed(*conditions)) == (((WORKLOADS, "taskset-job-0"),) if evicted else ())


def test_a_queued_attempt_gets_a_workload_with_a_pod_set_per_role() -> None:
    (wanted,) = KueueWorkload().owned_objects(attempt({QUEUE_LABEL: "team"}, number=2))
    assert (wanted.kind, wanted.name, wanted.scope, wanted.holds) == (
        WORKLOADS,
        "taskset-job-2",
        Scope.TASKSET,
        True,
    )
    spec: Any = wanted.body["spec"]
    assert spec["queueName"] == "team"
    assert [(s["name"], s["count"]) for s in spec["podSets"]] == [("ps", 1), ("worker", 3)]
    assert spec["podSets"][1]["template"]["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "1"}}
    assert wanted.body["metadata"]["labels"] == {QUEUE_LABEL: "team"}


@pytest.mark.parametrize(
    ("conditions", "held"),
    [
        pytest.param((), True, id="not seen yet, or nothing decided: held"),
        pytest.param(("QuotaReserved",), True, id="quota reserved but not admitted: held"),
        pytest.param(("QuotaReserved", "Admitted"), False, id="admitted: the Pods start"),
    ],
)
def test_the_roles_wait_for_admission(conditions: tuple[str, ...], held: bool) -> None:
    queued = attempt({QUEUE_LABEL: "team"})
    reason = gate(queued, 1, observed(*conditions))
    assert (reason is not None) is held
    if held:
        assert reason == "waiting for Kueue to admit Workload taskset-job-0 (queue team)"


def test_an_owned_objects_cache_keeps_which_conditions_hold_and_why_bounded() -> None:
    conditions = [{"type": f"T{i}", "status": "True", "message": "x" * 10_000} for i in range(40)]
    conditions[0] = {"type": "Admitted", "status": "True", "reason": "r", "lastTransitionTime": "t", "o": "x"}
    conditions[1] = {"type": "Evicted", "status": "False", "reason": "QuotaReserved"}
    obj = {
        "metadata": {"name": "w", "uid": "u"},
        "status": {"conditions": conditions, "admission": {"big": 1}},
    }
    slim = slim_owned(obj)
    assert set(slim["status"]) == {"conditions"}
    assert len(slim["status"]["conditions"]) == OWNED_CONDITIONS_MAX
    # Of the conditions that hold, their reason, message (clipped) and time; of the others, nothing more.
    assert slim["status"]["conditions"][0] == {
        "type": "Admitted",
        "status": "True",
        "reason": "r",
        "lastTransitionTime": "t",
    }
    assert slim["status"]["conditions"][1] == {"type": "Evicted", "status": "False"}
    assert all(len(c["message"]) <= 512 for c in slim["status"]["conditions"][2:])
    view = owned_view(slim)
    assert "Admitted" in view.true_conditions and "Evicted" not in view.true_conditions
    assert slim_owned(slim) == slim, "idempotent"


def test_an_evicted_workload_suspends_the_attempt_and_is_made_anew_once_its_pods_are_gone() -> None:
    """Preemption through the pure decisions: the running Pods go counting nothing, the evicted
    Workload is deleted only then, a new one is asked for, and the Pods wait for its admission."""
    template = pod_template()
    obj = TaskSetBuilder("job").role("r", 2, template=template, retry=(True, 3, 0)).obj()
    obj["metadata"]["labels"] = {QUEUE_LABEL: "team"}
    world = World(obj, settings=Settings(framework=Framework((*BUILT_IN, KueueWorkload()))))
    key = (WORKLOADS.key, "taskset-job-0")
    world.settle()
    assert key in world.owned and world.pods == {}, "held until admitted"
    world.owned[key]["status"] = {
        "conditions": [{"type": "Admitted", "status": "True"}],
        "admission": {"podSetAssignments": [{"name": "r"}]},
    }
    world.settle()
    for index in range(2):
        world.run(f"job-r-{index}")
    world.settle()
    first = world.owned[key]["metadata"]["uid"]

    world.owned[key]["status"]["conditions"].append({"type": "Evicted", "status": "True"})
    world.settle()
    assert world.pods == {}
    assert world.owned[key]["metadata"]["uid"] != first, "the evicted Workload was made anew"
    assert "status" not in world.owned[key]
    assert world.status is not None and world.status.total_retried_count == 0
    for index in range(2):
        kept = replica(world, "r", index)
        assert (kept.phase, kept.total_retried_count) == (ReplicaPhase.ATTEMPT_PENDING, 0)
        assert "waiting for Kueue to admit Workload taskset-job-0" in kept.phase_message
