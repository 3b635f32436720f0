"""The seam every integration plugs into: small capabilities, one per question a pass asks.

An integration (networking, framework environments, start order, membership, gang scheduling, Kueue,
...) is one object with a ``name`` that implements only the capabilities it needs, as Kubeflow Trainer's
runtime plugins and Volcano's job plugins do:

* ``ChecksSpec.check(spec)``: its own part of the raw TaskSet spec is valid, or the field and why not. A
  TaskSet that fails a check is illegal like any other (Failed, with the message naming the field);
* ``OwnsObjects.owned_objects(attempt)``: the objects it wants to exist while the TaskSet or the attempt
  lasts (``taskset.objects.owned``). The controller creates them, caches them (``kinds`` says which kinds
  to watch), keeps each as its body declares (the fields its kind declares, ``ObjectKind.declared``;
  those that follow the TaskSet, ``updates_owned``, at the end of a pass), and lets the garbage
  collector take them away with their owner;
* ``ReadsObjects.reads``: cluster-scoped kinds it reads and never writes (Kueue's ResourceFlavors); the
  controller caches them as each kind's ``kept`` says and hands them over in ``Observed.read``;
* ``DecoratesPods.decorate_pod(attempt, role, identity)``: what it adds to one replica's Pod
  (``taskset.objects.decorations``: env, volumes, hostname/subdomain, labels, scheduling fields);
* ``GatesRoles.gate(attempt, role, observed, status)``: whether a role's Pods may be created now, or the
  human reason why not, which the replicas' status shows until the gate opens. ``status`` is the
  TaskSet's status as this pass has it: what the replicas have reached (a ``dependsOn`` waits for it) is
  recorded there, not in the cluster;
* ``Admits.admission(attempt, observed)``: what an admitting system (a quota queue such as Kueue) says
  of the attempt, as one value (``Admission``): whether it must wait, stop its Pods or end, how many
  replicas each role may run and what their Pods carry, and which of its objects to make anew;
* ``FinishesAttempts.after_attempt(attempt, observed, outcome)``: what to write on its objects once the
  attempt's outcome is known (a Workload marked ``Finished``), and its objects of earlier attempts to
  delete.

Every capability is a pure function of what it is given, returning data: an integration never does I/O,
never reads the clock and never imports another integration (``tests/unit/test_layering.py``). Only the
runner (``taskset.integrations.framework``) calls a capability, and its methods say when in a pass each
one is asked. Adding an integration means one module here and its registration in
``taskset.integrations.BUILT_IN`` (or in the ``integrations`` a controller is built with).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, runtime_checkable

from taskset.api.spec import CheckFailure, Role, TaskSetSpec
from taskset.api.status import AttemptResult, TaskSetStatus
from taskset.objects.decorations import PodDecoration
from taskset.objects.owned import ObjectKind, OwnedObject, OwnedStatus
from taskset.objects.pods import PodIdentity
from taskset.observed.views import Observed

__all__ = [
    "Admission",
    "Admits",
    "AfterAttempt",
    "Attempt",
    "CheckFailure",
    "ChecksSpec",
    "DecoratesPods",
    "FinishesAttempts",
    "GatesRoles",
    "Integration",
    "OwnsObjects",
    "Preemption",
    "ReadsObjects",
    "RoleAdmission",
]


@dataclass(frozen=True)
class Attempt:
    """What a capability may know of the TaskSet attempt it is asked about."""

    taskset: str
    namespace: str
    uid: str
    attempt: int  # the TaskSet attempt id (its retry count)
    spec: TaskSetSpec  # the spec this attempt runs with (the ControlUnit's snapshot once it exists)
    # The TaskSet's metadata.labels, live (the queue a TaskSet asks Kueue for is a label).
    labels: Mapping[str, str] = field(default_factory=dict, compare=False)
    # The TaskSet's status as this pass has it, read only (the live membership follows its replicas'
    # retries and the membership generation); None outside a pass.
    status: TaskSetStatus | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class AfterAttempt:
    """What an integration wants done with its objects around an attempt's end: statuses to apply once
    the outcome is known (``statuses``), and objects of earlier attempts to delete (``stale``)."""

    statuses: tuple[OwnedStatus, ...] = ()
    stale: tuple[tuple[ObjectKind, str], ...] = ()


@dataclass(frozen=True)
class RoleAdmission:
    """What an admission gives one role: the most replicas it may run now (``cap``: fewer than it asked
    for is a partial admission, which the attempt follows as it follows a scale), what every one of its
    Pods carries (``decoration``: the admitted flavors' node labels and tolerations), and why its Pods
    may not be created yet (``held``), shown in the replicas' status like a gate's reason."""

    cap: int | None = None
    decoration: PodDecoration | None = None
    held: str | None = None


@dataclass(frozen=True)
class Preemption:
    """An admission withdrawn to make room for another workload: a preemption, which the TaskSet counts
    against ``spec.retryPolicy.maxPreemptions``. ``key`` names this one withdrawal for good (the evicted
    Workload's UID and the eviction's time), so it is counted once however many passes see it;
    ``subject`` is what lost its admission (``Workload taskset-job-0``), ``reason`` the admitting
    system's word for the preemption (a condition reason) and ``said`` its own words, naming the
    preemptor when it does."""

    key: str
    subject: str
    reason: str
    said: str


@dataclass(frozen=True)
class Admission:
    """What an admitting system says of one attempt, in one value (as Kueue's ``PodSetInfo`` carries an
    admission to a job):

    * ``waiting``: why no Pod of the attempt may be created yet (not admitted), or None;
    * ``suspended``: why the attempt must stop its Pods now, as ``spec.suspend`` stops them, counting
      nothing (its admission was withdrawn: an eviction or a preemption), or None;
    * ``refused``: why the attempt cannot go on and ends as failed now (an admission that contradicts
      the Pod template), or None; its retry policy decides what follows;
    * ``roles``: per role name, what the admission gives that role;
    * ``stale``: its objects to delete once the attempt has no Pod left, so that they are made anew (an
      evicted Workload, which queues again as a new one);
    * ``preempted``: the withdrawal is a preemption (``Preemption``), or None (any other eviction).
    """

    waiting: str | None = None
    suspended: str | None = None
    refused: str | None = None
    roles: Mapping[str, RoleAdmission] = field(default_factory=dict)
    stale: tuple[tuple[ObjectKind, str], ...] = ()
    preempted: Preemption | None = None


class Integration(Protocol):
    """What every integration is: a name (for the events and the owned objects' records). Everything it
    does comes from the capabilities it implements."""

    name: ClassVar[str]


@runtime_checkable
class ChecksSpec(Protocol):
    """It validates its own part of the raw spec."""

    name: ClassVar[str]

    def check(self, spec: Mapping[str, Any]) -> CheckFailure | None: ...


@runtime_checkable
class OwnsObjects(Protocol):
    """It wants objects to exist while the TaskSet or its attempt lasts. ``kinds``: the kinds it may own
    besides ConfigMaps (which the controller always watches), one cache per kind; ``updates_owned``:
    whether any of them follows the TaskSet (``OwnedObject.updates``), so it is asked again at the end of
    a pass."""

    name: ClassVar[str]
    kinds: ClassVar[tuple[ObjectKind, ...]] = ()
    updates_owned: ClassVar[bool] = False

    def owned_objects(self, attempt: Attempt) -> Sequence[OwnedObject]: ...


@runtime_checkable
class ReadsObjects(Protocol):
    """It reads cluster-scoped kinds it never writes, cached whole but for what each kind's ``kept``
    leaves out."""

    name: ClassVar[str]
    reads: ClassVar[tuple[ObjectKind, ...]]


@runtime_checkable
class DecoratesPods(Protocol):
    """It adds to every replica's Pod."""

    name: ClassVar[str]

    def decorate_pod(self, attempt: Attempt, role: Role, identity: PodIdentity) -> PodDecoration | None: ...


@runtime_checkable
class GatesRoles(Protocol):
    """It holds a role's Pods until something it can see has happened."""

    name: ClassVar[str]

    def gate(self, attempt: Attempt, role: Role, observed: Observed, status: TaskSetStatus) -> str | None: ...


@runtime_checkable
class Admits(Protocol):
    """An admitting system decides whether, how far and with what the attempt runs."""

    name: ClassVar[str]

    def admission(self, attempt: Attempt, observed: Observed) -> Admission | None: ...


@runtime_checkable
class FinishesAttempts(Protocol):
    """It writes on its objects once the attempt's outcome is known, and retires earlier attempts'."""

    name: ClassVar[str]

    def after_attempt(
        self, attempt: Attempt, observed: Observed, outcome: AttemptResult | None
    ) -> AfterAttempt | None: ...
