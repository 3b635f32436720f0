"""Gang scheduling's pure hooks: the check of spec.gang, a PodGroup per attempt for
the scheduler asked for, and the Pods joining it; a TaskSet without spec.gang is untouched."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.api.spec import ParsedTaskSet, ValidationFailure, parse_taskset
from taskset.integrations import Framework
from taskset.integrations.base import Attempt
from taskset.integrations.gang import (
    COSCHEDULING_LABEL,
    COSCHEDULING_PODGROUPS,
    REPLACEMENTS_ANNOTATION,
    VOLCANO_ANNOTATION,
    VOLCANO_PODGROUPS,
    Coscheduling,
    VolcanoGang,
    gang_integrations,
)
from taskset.objects.owned import Scope
from taskset.objects.pods import PodIdentity
from tests.builders import TaskSetBuilder

pytestmark = pytest.mark.unit


def taskset(gang: Any = None) -> dict[str, Any]:
    obj = TaskSetBuilder("job").role("ps", 1).role("worker", 3).obj()
    if gang is not None:
        obj["spec"]["gang"] = gang
    return obj


def attempt(gang: Any, number: int = 0) -> Attempt:
    parsed = parse_taskset(taskset(gang))
    assert isinstance(parsed, ParsedTaskSet)
    return Attempt("job", "ns", "uid", number, parsed.spec)


def identity() -> PodIdentity:
    return PodIdentity("job", "ns", "uid", "worker", 0, "job-worker-0", "c-job-0", "cu", 0, 0, "proof")


@pytest.mark.parametrize(
    ("gang", "enabled", "failure"),
    [
        pytest.param(None, (), None, id="no gang: nothing to check"),
        pytest.param({"scheduler": "coscheduling"}, ("coscheduling",), None, id="a served scheduler"),
        pytest.param(
            {"scheduler": "volcano"},
            ("coscheduling",),
            ("spec.gang.scheduler", "'volcano' is not served by this controller"),
            id="a scheduler this controller does not serve",
        ),
        pytest.param("all", ("coscheduling",), ("spec.gang", "must be an object"), id="not an object"),
        pytest.param(
            {"scheduler": "coscheduling", "minAvailable": 5},
            ("coscheduling",),
            ("spec.gang.minAvailable", "between 1 and the 4 Pods"),
            id="more than the TaskSet's Pods",
        ),
        pytest.param(
            {"scheduler": "coscheduling", "minAvailable": True},
            ("coscheduling",),
            ("spec.gang.minAvailable", "between 1 and the 4 Pods"),
            id="a boolean is no count",
        ),
        pytest.param(
            {"scheduler": "coscheduling", "minAvailable": 4}, ("coscheduling",), None, id="all four"
        ),
    ],
)
def test_spec_gang_is_checked_naming_the_field(
    gang: Any, enabled: tuple[str, ...], failure: tuple[str, str] | None
) -> None:
    parsed = parse_taskset(
        taskset(gang), Framework(gang_integrations(enabled) or (Coscheduling(enabled),)).spec_checks()
    )
    if failure is None:
        assert isinstance(parsed, ParsedTaskSet)
    else:
        assert isinstance(parsed, ValidationFailure)
        assert (
            parsed.field == failure[0]
            and failure[1] in parsed.message
            and parsed.message.startswith(failure[0])
        )


def test_coscheduling_makes_a_podgroup_per_attempt_and_labels_every_pod() -> None:
    hooks = Coscheduling()
    (group,) = hooks.owned_objects(attempt({"scheduler": "coscheduling", "scheduleTimeoutSeconds": 30}, 2))
    assert (group.kind, group.name, group.scope, group.holds) == (
        COSCHEDULING_PODGROUPS,
        "taskset-job-2",
        Scope.ATTEMPT,
        True,
    )
    assert group.body == {
        "metadata": {"annotations": {REPLACEMENTS_ANNOTATION: "0"}},
        "spec": {"minMember": 4, "scheduleTimeoutSeconds": 30},
    }
    assert group.updates, "it follows the attempt's replacements"
    retried = attempt({"scheduler": "coscheduling"}, 3)
    decoration = hooks.decorate_pod(retried, retried.spec.roles[1], identity())
    assert decoration is not None and decoration.labels == {COSCHEDULING_LABEL: "taskset-job-3"}
    assert VolcanoGang().owned_objects(retried) == (), "one scheduler's TaskSet is not the other's"


def test_volcano_makes_its_podgroup_with_the_queue_and_annotates_every_pod() -> None:
    hooks = VolcanoGang()
    chosen = attempt({"scheduler": "volcano", "minAvailable": 2, "queue": "research"})
    (group,) = hooks.owned_objects(chosen)
    assert (group.kind, group.body["spec"]) == (VOLCANO_PODGROUPS, {"minMember": 2, "queue": "research"})
    decoration = hooks.decorate_pod(chosen, chosen.spec.roles[0], identity())
    assert decoration is not None and decoration.annotations == {VOLCANO_ANNOTATION: "taskset-job-0"}


def test_a_taskset_without_spec_gang_is_untouched() -> None:
    plain = attempt(None)
    for hooks in (Coscheduling(), VolcanoGang()):
        assert hooks.owned_objects(plain) == ()
        assert hooks.decorate_pod(plain, plain.spec.roles[0], identity()) is None


def test_the_flag_chooses_the_integrations_in_a_fixed_order() -> None:
    assert [i.name for i in gang_integrations(("volcano", "coscheduling"))] == ["coscheduling", "volcano"]
    assert gang_integrations(()) == ()
