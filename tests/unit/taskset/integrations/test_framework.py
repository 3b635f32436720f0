"""The runner of the integrations: it sorts them by capability once, asks each capability in
registration order, and hands an admission to the pass as one value."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import pytest

from taskset.api.spec import CheckFailure, ParsedTaskSet, Role, parse_taskset
from taskset.api.status import AttemptResult, TaskSetStatus
from taskset.integrations import (
    Admission,
    Admissions,
    Admits,
    AfterAttempt,
    Attempt,
    ChecksSpec,
    DecoratesPods,
    FinishesAttempts,
    Framework,
    GatesRoles,
    OwnsObjects,
    ReadsObjects,
    RoleAdmission,
)
from taskset.objects.decorations import PodDecoration
from taskset.objects.owned import CONFIGMAPS, ObjectKind, OwnedObject, Scope
from taskset.objects.pods import PodIdentity
from taskset.observed.views import Observed
from tests.builders import TaskSetBuilder

pytestmark = pytest.mark.unit

THINGS = ObjectKind(group="example.test", version="v1", plural="things", kind="Thing")
OTHER_THINGS = ObjectKind(group="example.test", version="v1", plural="things", kind="OtherThing")
FLAVORS = ObjectKind(group="example.test", version="v1", plural="flavors", kind="Flavor")
NOTHING = Observed(control_unit=None)


def attempt() -> Attempt:
    parsed = parse_taskset(TaskSetBuilder("job").role("a", 2).role("b", 3).obj())
    assert isinstance(parsed, ParsedTaskSet)
    return Attempt("job", "ns", "uid", 0, parsed.spec)


def labelled(value: str) -> PodDecoration:
    return PodDecoration(labels={"by": value})


class Decorates(DecoratesPods):
    def __init__(self, name: str) -> None:
        self.name = name

    def decorate_pod(self, attempt: Attempt, role: Role, identity: PodIdentity) -> PodDecoration:
        return labelled(self.name)


class Gates(GatesRoles):
    def __init__(self, name: str, closed: str | None) -> None:
        self.name, self.closed = name, closed

    def gate(self, attempt: Attempt, role: Role, observed: Observed, status: TaskSetStatus) -> str | None:
        return self.closed


class Admitting(Admits, DecoratesPods):
    """An admitting system that also decorates every Pod on its own."""

    def __init__(self, name: str, admission: Admission | None) -> None:
        self.name, self.given = name, admission

    def admission(self, attempt: Attempt, observed: Observed) -> Admission | None:
        return self.given

    def decorate_pod(self, attempt: Attempt, role: Role, identity: PodIdentity) -> PodDecoration:
        return labelled(f"{self.name}-own")


def identity() -> PodIdentity:
    return PodIdentity("job", "ns", "uid", "a", 0, "job-a-0", "unit", "unit-uid", 0, 0, proof="")


def test_decorations_come_in_registration_order_an_admissions_after_its_own() -> None:
    admitted = Admission(roles={"a": RoleAdmission(decoration=labelled("q-admitted"))})
    framework = Framework((Decorates("first"), Admitting("q", admitted), Decorates("last")))
    at = attempt()
    role = at.spec.roles[0]
    found = framework.pod_decorations(at, role, identity(), framework.admission(at, NOTHING))
    assert [d.labels["by"] for d in found] == ["first", "q-own", "q-admitted", "last"]


@pytest.mark.parametrize(
    ("integrations", "reason"),
    [
        pytest.param((Gates("g1", None), Gates("g2", None)), None, id="every gate open"),
        pytest.param(
            (Gates("g1", "one"), Gates("g2", "two")), "one", id="the first closed gate is the reason"
        ),
        pytest.param(
            (Gates("g1", None), Admitting("q", Admission(waiting="not admitted")), Gates("g2", "two")),
            "not admitted",
            id="an admission that waits holds like a gate, in its place",
        ),
        pytest.param(
            (
                Admitting("q", Admission(roles={"a": RoleAdmission(held="no flavor")})),
                Gates("g", "x"),
            ),
            "no flavor",
            id="a role's own hold",
        ),
        pytest.param(
            (Admitting("q", Admission(roles={"b": RoleAdmission(held="b only")})), Gates("g", None)),
            None,
            id="another role's hold",
        ),
        pytest.param((Admitting("q", None), Gates("g", None)), None, id="no word from the admitting system"),
    ],
)
def test_a_role_waits_for_the_first_closed_gate_in_registration_order(
    integrations: Sequence[Any], reason: str | None
) -> None:
    framework, at = Framework(integrations), attempt()
    admissions = framework.admission(at, NOTHING)
    assert framework.gate(at, at.spec.roles[0], NOTHING, TaskSetStatus(), admissions) == reason


def test_admissions_combine_as_one_value() -> None:
    first = Admission(
        suspended="evicted",
        roles={"a": RoleAdmission(cap=3), "b": RoleAdmission(cap=1)},
        stale=((THINGS, "t-0"),),
    )
    second = Admission(refused="contradicts the template", roles={"a": RoleAdmission(cap=2)})
    admissions = Framework((Admitting("q1", first), Admitting("q2", second))).admission(attempt(), NOTHING)
    assert (admissions.suspended, admissions.refused) == ("evicted", "contradicts the template")
    assert [admissions.cap("a"), admissions.cap("b"), admissions.cap("c")] == [2, 1, None]
    assert list(admissions.stale()) == [("q1", THINGS, "t-0")]
    assert admissions.of("q2") is second and admissions.of("nobody") is None
    assert Admissions().suspended is None and Admissions().cap("a") is None


class Owns(OwnsObjects):
    name: ClassVar[str] = "owns"
    kinds: ClassVar[tuple[ObjectKind, ...]] = (CONFIGMAPS, THINGS)
    updates_owned: ClassVar[bool] = True

    def owned_objects(self, attempt: Attempt) -> Sequence[OwnedObject]:
        return (
            OwnedObject(THINGS, "fixed", Scope.ATTEMPT, {"spec": {}}, self.name),
            OwnedObject(CONFIGMAPS, "follows", Scope.TASKSET, {"data": {}}, self.name, updates=True),
        )


class OwnsAlso(OwnsObjects, ReadsObjects, ChecksSpec, FinishesAttempts):
    name: ClassVar[str] = "also"
    kinds: ClassVar[tuple[ObjectKind, ...]] = (OTHER_THINGS,)
    reads: ClassVar[tuple[ObjectKind, ...]] = (FLAVORS, FLAVORS)

    def owned_objects(self, attempt: Attempt) -> Sequence[OwnedObject]:
        return (
            OwnedObject(CONFIGMAPS, "never-followed", Scope.TASKSET, {"data": {}}, self.name, updates=True),
        )

    def check(self, spec: Mapping[str, Any]) -> CheckFailure | None:
        return CheckFailure("spec.also", "is refused") if spec.get("also") else None

    def after_attempt(
        self, attempt: Attempt, observed: Observed, outcome: AttemptResult | None
    ) -> AfterAttempt | None:
        return AfterAttempt(stale=((THINGS, "old"),)) if outcome is not None else None


def test_kinds_objects_checks_and_ends_are_sorted_by_capability() -> None:
    framework, at = Framework((Owns(), Decorates("d"), OwnsAlso())), attempt()
    # ConfigMaps are always watched; a kind's key is cached once, the first registration's.
    assert framework.owned_kinds() == [THINGS]
    assert framework.read_kinds() == [FLAVORS]
    assert [o.name for o in framework.wanted_objects(at)] == ["fixed", "follows", "never-followed"]
    # Only an integration that says its objects follow the TaskSet is asked again, for those alone.
    assert [o.name for o in framework.followed_objects(at)] == ["follows"]
    (check,) = framework.spec_checks()
    assert check({"also": True}) == CheckFailure("spec.also", "is refused")
    assert list(framework.after_attempt(at, NOTHING, None)) == []
    assert list(framework.after_attempt(at, NOTHING, AttemptResult(True, "done"))) == [
        ("also", AfterAttempt(stale=((THINGS, "old"),)))
    ]


class HalfAnOwner:
    """Has a capability's method but not its switches: an integration that would never be asked."""

    name: ClassVar[str] = "half"

    def owned_objects(self, attempt: Attempt) -> Sequence[OwnedObject]:
        return ()


def test_an_integration_missing_part_of_a_capability_is_refused_when_built() -> None:
    with pytest.raises(TypeError, match="'half' has owned_objects but is not a OwnsObjects"):
        Framework((HalfAnOwner(),))


def test_two_runners_of_the_same_integrations_are_equal() -> None:
    integrations = (Decorates("d"), Gates("g", None))
    assert Framework(integrations) == Framework(integrations)
    assert Framework(integrations) != Framework(integrations[:1])
