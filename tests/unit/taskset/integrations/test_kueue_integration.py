"""The Kueue integration's pure hooks (issue 24, item 4): which TaskSets get a Workload, what it holds,
and when the roles' Pods may start; and what an owned object's cache keeps of its conditions."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.api.slim import OWNED_CONDITIONS_MAX, slim_owned
from taskset.api.spec import ParsedTaskSet, parse_taskset
from taskset.api.views import Observed, OwnedView, owned_view
from taskset.integrations.base import Attempt
from taskset.integrations.kueue import QUEUE_LABEL, WORKLOADS, KueueWorkload, workload_name
from taskset.objects.owned import Scope
from tests.builders import TaskSetBuilder, pod_template

pytestmark = pytest.mark.unit


def attempt(labels: dict[str, str], number: int = 0) -> Attempt:
    template = pod_template()
    template["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "1"}}
    parsed = parse_taskset(TaskSetBuilder("job").role("ps", 1).role("worker", 3, template=template).obj())
    assert isinstance(parsed, ParsedTaskSet)
    return Attempt("job", "ns", "uid-1", number, parsed.spec, labels=labels)


def observed(*conditions: str) -> Observed:
    view = OwnedView(workload_name("job", 0), "w-uid", False, "cu-uid", true_conditions=frozenset(conditions))
    return Observed(control_unit=None, pods={}, owned={(WORKLOADS.key, view.name): view})


def test_a_taskset_without_a_queue_gets_no_workload_and_no_gate() -> None:
    hooks, plain = KueueWorkload(), attempt({"team": "a"})
    assert hooks.owned_objects(plain) == ()
    assert hooks.gate(plain, plain.spec.roles[0], observed()) is None


def test_a_queued_attempt_gets_a_workload_with_a_pod_set_per_role() -> None:
    (wanted,) = KueueWorkload().owned_objects(attempt({QUEUE_LABEL: "team"}, number=2))
    assert (wanted.kind, wanted.name, wanted.scope, wanted.holds) == (
        WORKLOADS,
        "taskset-job-2",
        Scope.ATTEMPT,
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
    reason = KueueWorkload().gate(queued, queued.spec.roles[1], observed(*conditions))
    assert (reason is not None) is held
    if held:
        assert reason == "waiting for Kueue to admit Workload taskset-job-0 (queue team)"


def test_an_owned_objects_cache_keeps_only_which_conditions_hold_bounded() -> None:
    conditions = [{"type": f"T{i}", "status": "True", "message": "x" * 10_000} for i in range(40)]
    conditions[0] = {"type": "Admitted", "status": "True", "reason": "r", "lastTransitionTime": "t"}
    conditions[1] = {"type": "Evicted", "status": "False"}
    obj = {
        "metadata": {"name": "w", "uid": "u"},
        "status": {"conditions": conditions, "admission": {"big": 1}},
    }
    slim = slim_owned(obj)
    assert set(slim["status"]) == {"conditions"}
    assert len(slim["status"]["conditions"]) == OWNED_CONDITIONS_MAX
    assert all(set(c) == {"type", "status"} for c in slim["status"]["conditions"])
    view = owned_view(slim)
    assert "Admitted" in view.true_conditions and "Evicted" not in view.true_conditions
    assert slim_owned(slim) == slim, "idempotent"
