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
  stop its Pods as a suspension does, and which of its objects to make anew once they are gone.

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
from taskset.api.status import TaskSetStatus
from taskset.api.views import Observed
from taskset.objects.decorations import PodDecoration
from taskset.objects.owned import ObjectKind, OwnedObject
from taskset.objects.pods import PodIdentity

__all__ = ["Attempt", "CheckFailure", "Integration"]


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
    # Whether any object it owns follows the TaskSet (``OwnedObject.updates``, issue 26): only those
    # integrations are asked again at the end of a pass.
    updates_owned: ClassVar[bool] = False

    def check(self, spec: Mapping[str, Any]) -> CheckFailure | None:
        return None

    def owned_objects(self, attempt: Attempt) -> Sequence[OwnedObject]:
        return ()

    def decorate_pod(self, attempt: Attempt, role: Role, identity: PodIdentity) -> PodDecoration | None:
        return None

    def gate(self, attempt: Attempt, role: Role, observed: Observed, status: TaskSetStatus) -> str | None:
        return None

    def suspends(self, attempt: Attempt, observed: Observed) -> str | None:
        """Why the attempt must stop its Pods now, as ``spec.suspend`` stops them (counting nothing),
        or None (issue 24: Kueue evicted its Workload)."""
        return None

    def stale_objects(self, attempt: Attempt, observed: Observed) -> Sequence[tuple[ObjectKind, str]]:
        """Its objects to delete once the attempt has no Pod left, so that they are made anew (issue 24:
        an evicted Workload, which queues again as a new one)."""
        return ()
