"""The runner: the only code that asks an integration anything.

``Framework(integrations)`` sorts the integrations by the capabilities they implement once, when a
controller is built (as Kubeflow Trainer's runtime framework does), and each of its methods asks one
capability of every integration that has it, in registration order. Registration order matters only
where two integrations add the same thing: the first one's environment variables come first in every
container (``taskset.objects.decorations``), and the first closed gate is the reason a role waits.

When each method runs, in the order a pass meets them:

1. ``spec_checks`` — when a TaskSet (or an attempt's snapshot) is parsed, after the core checks;
2. ``admission`` — first in a pass that knows the attempt's spec: the scale reads its caps before any
   role is synced, and the suspension, the gates, the Pods' decorations and the attempt's end all read
   the same value afterwards;
3. ``wanted_objects`` — once per pass while the attempt runs, before any role's Pods are created;
4. ``gate`` — per role, before its Pods are created (after the owned objects are there), and once more at
   the end of the pass when the moves may have opened a gate that closed on the recorded status;
5. ``pod_decorations`` — per Pod, when it is to be created (after its role's gate is open);
6. ``followed_objects`` — at the end of a pass that compared the owned objects, after every move, so the
   objects that follow the TaskSet see its final status;
7. ``after_attempt`` — last in every pass once the TaskSet has run.

``owned_kinds`` and ``read_kinds`` are asked once, when the controller builds its caches.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final

from taskset.api.spec import Role, SpecCheck
from taskset.api.status import AttemptResult, TaskSetStatus
from taskset.integrations.base import (
    Admission,
    Admits,
    AfterAttempt,
    Attempt,
    ChecksSpec,
    DecoratesPods,
    FinishesAttempts,
    GatesRoles,
    Integration,
    OwnsObjects,
    Preemption,
    ReadsObjects,
    RoleAdmission,
)
from taskset.objects.decorations import PodDecoration
from taskset.objects.owned import CONFIGMAPS, ObjectKind, OwnedObject
from taskset.objects.pods import PodIdentity
from taskset.observed.views import Observed

__all__ = ["Admissions", "Framework"]

# Each capability's method or attribute: an object that has one but is not the capability (a protocol
# member missing) is refused when the framework is built, rather than silently never asked.
_MEMBERS: Final = (
    (ChecksSpec, "check"),
    (OwnsObjects, "owned_objects"),
    (ReadsObjects, "reads"),
    (DecoratesPods, "decorate_pod"),
    (GatesRoles, "gate"),
    (Admits, "admission"),
    (FinishesAttempts, "after_attempt"),
)
_NO_ROLE: Final = RoleAdmission()


@dataclass(frozen=True)
class Admissions:
    """What every admitting integration said of one attempt in this pass, by integration name, in
    registration order."""

    given: tuple[tuple[str, Admission], ...] = ()

    def of(self, integration: str) -> Admission | None:
        return next((admission for name, admission in self.given if name == integration), None)

    @property
    def suspended(self) -> str | None:
        """The first reason to stop the attempt's Pods, counting nothing, or None."""
        return next((a.suspended for _, a in self.given if a.suspended is not None), None)

    @property
    def preempted(self) -> Preemption | None:
        """The first admission withdrawn by a preemption, or None."""
        return next((a.preempted for _, a in self.given if a.preempted is not None), None)

    @property
    def refused(self) -> str | None:
        """The first reason the attempt cannot go on, or None."""
        return next((a.refused for _, a in self.given if a.refused is not None), None)

    def cap(self, role: str) -> int | None:
        """The lowest number of replicas any admission lets ``role`` run now, or None for no bound."""
        caps = [cap for _, a in self.given if (cap := a.roles.get(role, _NO_ROLE).cap) is not None]
        return min(caps) if caps else None

    def stale(self) -> Iterator[tuple[str, ObjectKind, str]]:
        """Each admitting integration's objects to make anew: (integration, kind, name)."""
        for name, admission in self.given:
            for kind, object_name in admission.stale:
                yield name, kind, object_name


def _held(admission: Admission | None, role: str) -> str | None:
    if admission is None:
        return None
    return admission.waiting or admission.roles.get(role, _NO_ROLE).held


class Framework:
    """The integrations a controller runs with, sorted by capability once."""

    def __init__(self, integrations: Sequence[Integration]) -> None:
        for integration in integrations:
            for capability, member in _MEMBERS:
                if hasattr(integration, member) and not isinstance(integration, capability):
                    raise TypeError(
                        f"integration {integration.name!r} has {member} but is not a {capability.__name__}"
                    )
        self.integrations: tuple[Integration, ...] = tuple(integrations)
        self._checkers = tuple(i for i in integrations if isinstance(i, ChecksSpec))
        self._owners = tuple(i for i in integrations if isinstance(i, OwnsObjects))
        self._followers = tuple(i for i in self._owners if i.updates_owned)
        self._readers = tuple(i for i in integrations if isinstance(i, ReadsObjects))
        self._admitters = tuple(i for i in integrations if isinstance(i, Admits))
        self._finishers = tuple(i for i in integrations if isinstance(i, FinishesAttempts))
        # Decorations and gates keep registration order across the two capabilities that give them.
        self._decorating = tuple(
            (i.name, i if isinstance(i, DecoratesPods) else None, isinstance(i, Admits))
            for i in integrations
            if isinstance(i, (DecoratesPods, Admits))
        )
        self._gating = tuple(
            (i.name, i if isinstance(i, GatesRoles) else None, isinstance(i, Admits))
            for i in integrations
            if isinstance(i, (GatesRoles, Admits))
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Framework) and other.integrations == self.integrations

    def __hash__(self) -> int:
        return hash(self.integrations)

    def __repr__(self) -> str:
        return f"Framework({', '.join(i.name for i in self.integrations)})"

    # ----- when the controller is built ---------------------------------------------------------------

    def owned_kinds(self) -> list[ObjectKind]:
        """Every kind the integrations may own besides ConfigMaps (which the controller always
        watches), once each, in registration order."""
        kinds: dict[str, ObjectKind] = {}
        for owner in self._owners:
            for kind in owner.kinds:
                if kind.key != CONFIGMAPS.key:
                    kinds.setdefault(kind.key, kind)
        return list(kinds.values())

    def read_kinds(self) -> list[ObjectKind]:
        """Every cluster-scoped kind the integrations read, once each, in registration order."""
        kinds: dict[str, ObjectKind] = {}
        for reader in self._readers:
            for kind in reader.reads:
                kinds.setdefault(kind.key, kind)
        return list(kinds.values())

    # ----- when a spec is parsed ----------------------------------------------------------------------

    def spec_checks(self) -> tuple[SpecCheck, ...]:
        """The integrations' checks of their own parts of a spec, in order, as ``parse_taskset`` runs
        them after the core checks."""
        return tuple(checker.check for checker in self._checkers)

    # ----- in a pass, in the order a pass asks ------------------------------------------------------------

    def admission(self, attempt: Attempt, observed: Observed) -> Admissions:
        """What every admitting integration says of the attempt: asked once per pass and attempt spec,
        before the scale is settled, and read by the suspension, the gates, the decorations and the
        attempt's end."""
        given = (
            (admitter.name, admission)
            for admitter in self._admitters
            if (admission := admitter.admission(attempt, observed)) is not None
        )
        return Admissions(tuple(given))

    def wanted_objects(self, attempt: Attempt) -> Iterator[OwnedObject]:
        """Every object the integrations want while the attempt runs: once per pass, before any role's
        Pods are created (a missing object that ``holds`` the Pods keeps the roles waiting)."""
        for owner in self._owners:
            yield from owner.owned_objects(attempt)

    def gate(
        self, attempt: Attempt, role: Role, observed: Observed, status: TaskSetStatus, admissions: Admissions
    ) -> str | None:
        """Why ``role``'s Pods may not be created now, or None: the first closed gate in registration
        order, an admitting integration's hold among them. Asked per role before its Pods are created,
        and again at the end of a pass whose moves may have opened a gate."""
        for name, gater, admits in self._gating:
            if admits and (held := _held(admissions.of(name), role.name)) is not None:
                return held
            if gater is not None and (said := gater.gate(attempt, role, observed, status)) is not None:
                return said
        return None

    def pod_decorations(
        self, attempt: Attempt, role: Role, identity: PodIdentity, admissions: Admissions
    ) -> tuple[PodDecoration, ...]:
        """What each integration adds to one replica's Pod, in registration order (its own additions,
        then what its admission gives the whole role), asked when the Pod is to be created: the
        controller's Pods, and the bench's raw copies of them, are decorated by this one method."""
        found: list[PodDecoration] = []
        for name, decorator, admits in self._decorating:
            if decorator is not None and (own := decorator.decorate_pod(attempt, role, identity)) is not None:
                found.append(own)
            admission = admissions.of(name) if admits else None
            given = admission.roles.get(role.name, _NO_ROLE) if admission is not None else _NO_ROLE
            if given.decoration is not None:
                found.append(given.decoration)
        return tuple(found)

    def followed_objects(self, attempt: Attempt) -> Iterator[OwnedObject]:
        """The objects that follow the TaskSet (``OwnedObject.updates``), asked at the end of a pass that
        compared the owned objects, after every move, so they carry the pass's final status."""
        for follower in self._followers:
            yield from (wanted for wanted in follower.owned_objects(attempt) if wanted.updates)

    def after_attempt(
        self, attempt: Attempt, observed: Observed, outcome: AttemptResult | None
    ) -> Iterator[tuple[str, AfterAttempt]]:
        """What each integration wants done around the attempt's end: asked last in every pass once
        the TaskSet has run, with the attempt's ``outcome`` once it is known."""
        for finisher in self._finishers:
            after = finisher.after_attempt(attempt, observed, outcome)
            if after is not None:
                yield finisher.name, after
