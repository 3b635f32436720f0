"""The seam every integration plugs into: pure hooks at the few moments of a TaskSet's life they share.

An integration (networking, framework environments, suspension, Kueue, gang scheduling, ...) is one
object with up to four hooks, each a pure function of what it is given, returning data:

* ``check(spec)``: its own part of the raw TaskSet spec is valid, or the field and why not. A TaskSet
  that fails a check is illegal like any other (Failed, with the message naming the field);
* ``owned_objects(attempt)``: the objects it wants to exist while the TaskSet or the attempt lasts
  (``taskset.objects.owned``). The controller creates them, caches them (``kinds`` says which kinds to
  watch) and lets the garbage collector take them away with their owner;
* ``decorate_pod(attempt, role, identity)``: what it adds to one replica's Pod
  (``taskset.objects.decorations``: env, volumes, hostname/subdomain, labels, scheduling fields);
* ``gate(attempt, role, observed, status)``: whether a role's Pods may be created now, or the human
  reason why not, which the replicas' status shows until the gate opens. ``status`` is the TaskSet's
  status as this pass has it (the current attempt's roles and replicas, read only): what the replicas
  have reached (a ``dependsOn`` waits for it) is recorded there, not in the cluster;
* ``suspends(attempt, observed)`` and ``stale_objects(attempt, observed)``: whether the attempt must
  stop its Pods as a suspension does, and which of its objects to make anew once they are gone;
* ``decorate_role(attempt, role, observed)``: what it adds to every Pod of a role from what the pass
  observed (Kueue's admission: its flavors' node labels and tolerations), beside ``decorate_pod``;
* ``ends_attempt(attempt, observed)``: why the attempt cannot go on and fails now, or None (an
  admission that contradicts the Pod template);
* ``replicas_cap(attempt, role, observed)``: the most replicas the role may run now (Kueue admitted
  fewer than it asked for), which the attempt follows as it follows a scale;
* ``after_attempt(attempt, observed, outcome)``: what to write on its objects once the attempt's
  outcome is known (a Workload marked ``Finished``), and its objects of earlier attempts to delete.

Besides the kinds it owns (``kinds``), an integration may read cluster-scoped kinds it does not own
(``reads``: Kueue's ResourceFlavors); the controller caches them as each kind's ``kept`` says and
hands them to the hooks in ``Observed.read``.

The decisions ask the hooks and carry their answers in their intents; the reconciler only applies what
they return. So an integration never does I/O, never reads the clock and never imports another
integration (``tests/unit/test_layering.py``): adding one means one module here and its registration in
``taskset.integrations.BUILT_IN`` (or in the ``integrations`` a controller is built with).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from taskset.api.spec import CheckFailure, Role, TaskSetSpec
from taskset.api.status import AttemptResult, TaskSetStatus
from taskset.objects.decorations import PodDecoration
from taskset.objects.owned import ObjectKind, OwnedObject, OwnedStatus
from taskset.objects.pods import PodIdentity
from taskset.observed.views import Observed

__all__ = ["AfterAttempt", "Attempt", "CheckFailure", "Integration"]


@dataclass(frozen=True)
class AfterAttempt:
    """What an integration wants done with its objects around an attempt's end: statuses to apply once
    the outcome is known (``statuses``), and objects of earlier attempts to delete (``stale``)."""

    statuses: tuple[OwnedStatus, ...] = ()
    stale: tuple[tuple[ObjectKind, str], ...] = ()


@dataclass(frozen=True)
class Attempt:
    """What a hook may know of the TaskSet attempt it is asked about."""

    taskset: str
    namespace: str
    uid: str
    attempt: int  # the TaskSet attempt id (its retry count)
    spec: TaskSetSpec  # the spec this attempt runs with (the ControlUnit's snapshot once it exists)
    # The TaskSet's metadata.labels, live (Kueue's queue name, issue 24).
    labels: Mapping[str, str] = field(default_factory=dict, compare=False)
    # The TaskSet's status as this pass has it, read only (issue 26: the live membership follows its
    # replicas' retries and the membership generation); None outside a pass.
    status: TaskSetStatus | None = field(default=None, compare=False, repr=False)


class Integration:
    """The base of every integration: each hook does nothing until a subclass says otherwise, so an
    integration writes only the hooks it needs (as Volcano's job plugins do)."""

    name: ClassVar[str] = ""
    # Kinds of object it may own besides ConfigMaps (which the controller always watches): a Service,
    # a PodGroup, ... The controller keeps one cache per kind, selected by the TaskSet label.
    kinds: ClassVar[tuple[ObjectKind, ...]] = ()
    # Cluster-scoped kinds it reads and never writes (issue 24: Kueue's ResourceFlavors), cached whole
    # but for what each kind's ``kept`` leaves out.
    reads: ClassVar[tuple[ObjectKind, ...]] = ()
    # Whether any object it owns follows the TaskSet (``OwnedObject.updates``, issue 26): only those
    # integrations are asked again at the end of a pass.
    updates_owned: ClassVar[bool] = False

    def check(self, spec: Mapping[str, Any]) -> CheckFailure | None:
        return None

    def owned_objects(self, attempt: Attempt) -> Sequence[OwnedObject]:
        return ()

    def decorate_pod(self, attempt: Attempt, role: Role, identity: PodIdentity) -> PodDecoration | None:
        return None

    def decorate_role(self, attempt: Attempt, role: Role, observed: Observed) -> PodDecoration | None:
        """What it adds to every Pod of ``role`` from what the pass observed (issue 24: Kueue's
        admission), asked when a Pod is to be created, after ``decorate_pod``."""
        return None

    def gate(self, attempt: Attempt, role: Role, observed: Observed, status: TaskSetStatus) -> str | None:
        return None

    def replicas_cap(self, attempt: Attempt, role: Role, observed: Observed) -> int | None:
        """The most replicas ``role`` may run now, or None for no bound (issue 24: Kueue's partial
        admission). The attempt runs the role at the lower of this and its wanted count, as a scale
        (``taskset.decide.elastic``)."""
        return None

    def after_attempt(
        self, attempt: Attempt, observed: Observed, outcome: AttemptResult | None
    ) -> AfterAttempt | None:
        """Asked every pass once the TaskSet has run: ``outcome`` is the attempt's once it has ended (its
        ControlUnit going or gone, or the TaskSet completed), else None (issue 24: the Workload of a
        finished attempt is marked ``Finished``, and those of earlier attempts deleted)."""
        return None

    def ends_attempt(self, attempt: Attempt, observed: Observed) -> str | None:
        """Why the attempt cannot go on and ends as failed now (its retry policy decides what follows),
        or None (issue 24: Kueue admitted it with a node selector the Pod template contradicts)."""
        return None

    def suspends(self, attempt: Attempt, observed: Observed) -> str | None:
        """Why the attempt must stop its Pods now, as ``spec.suspend`` stops them (counting nothing),
        or None (issue 24: Kueue evicted its Workload)."""
        return None

    def stale_objects(self, attempt: Attempt, observed: Observed) -> Sequence[tuple[ObjectKind, str]]:
        """Its objects to delete once the attempt has no Pod left, so that they are made anew (issue 24:
        an evicted Workload, which queues again as a new one)."""
        return ()
