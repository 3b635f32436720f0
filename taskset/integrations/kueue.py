"""Kueue admission (issue 24, item 4; enabled by the controller flag ``--kueue``).

A TaskSet labelled with Kueue's queue name (``QUEUE_LABEL``) is a job Kueue admits by quota, as an
external framework (Kueue's configuration names ``TaskSet.v1alpha1.octopus.openi.pcl.cn``; see
``docs/user-manual.md``, "Shared clusters"). Per attempt, this integration asks for a ``Workload``
owned by the attempt's ControlUnit, with one pod set per role (its replicas and its Pod template, whose
requests Kueue counts), and holds every role's Pods until Kueue admits it (its ``Admitted`` condition).

The Workload goes away with its attempt (owner references), so Kueue frees the quota when the attempt
ends and a retry queues anew. When Kueue evicts it (preemption by a higher ``spec.priority``, which the
Workload carries), the attempt stops its Pods as a suspension does, counting nothing
(``suspends``), then deletes the evicted Workload (``stale_objects``), which frees its quota; the next
pass asks for a new one, which queues again, and the Pods start again once it is admitted. Not yet:
the admission's node selectors and tolerations in the Pods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

from taskset.api.spec import Role
from taskset.api.status import TaskSetStatus
from taskset.api.views import Observed
from taskset.integrations.base import Attempt, Integration
from taskset.objects.owned import ObjectKind, OwnedObject, Scope

QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL: Final = "kueue.x-k8s.io/priority-class"
WORKLOADS: Final = ObjectKind(group="kueue.x-k8s.io", version="v1beta2", plural="workloads", kind="Workload")
ADMITTED: Final = "Admitted"
EVICTED: Final = "Evicted"
NAME_FORMAT: Final = "taskset-{taskset}-{attempt}"


def workload_name(taskset: str, attempt: int) -> str:
    """The attempt's Workload: a name of its own per attempt, so a retry's never meets the last one's."""
    return NAME_FORMAT.format(taskset=taskset, attempt=attempt)


def pod_set(role: Role) -> dict[str, Any]:
    """One role as Kueue counts it: its replicas, and its Pod template (the containers' requests)."""
    spec = role.template.get("spec")
    return {
        "name": role.name,
        "count": role.replicas,
        "template": {"spec": dict(spec) if isinstance(spec, Mapping) else {}},
    }


class KueueWorkload(Integration):
    """A Workload per attempt of a queued TaskSet; the roles wait for its admission."""

    name: ClassVar[str] = "kueue"
    kinds: ClassVar[tuple[ObjectKind, ...]] = (WORKLOADS,)

    def owned_objects(self, attempt: Attempt) -> Sequence[OwnedObject]:
        queue = attempt.labels.get(QUEUE_LABEL)
        if not queue:
            return ()
        labels = {
            key: attempt.labels[key] for key in (QUEUE_LABEL, PRIORITY_CLASS_LABEL) if key in attempt.labels
        }
        spec: dict[str, Any] = {"queueName": queue, "podSets": [pod_set(role) for role in attempt.spec.roles]}
        if attempt.spec.priority is not None:  # Kueue orders and preempts by it (no webhook fills it in)
            spec["priority"] = attempt.spec.priority
        body = {"metadata": {"labels": labels}, "spec": spec}
        name = workload_name(attempt.taskset, attempt.attempt)
        return (OwnedObject(WORKLOADS, name, Scope.ATTEMPT, body, self.name),)

    def gate(self, attempt: Attempt, role: Role, observed: Observed, status: TaskSetStatus) -> str | None:
        queue = attempt.labels.get(QUEUE_LABEL)
        if not queue:
            return None
        name = workload_name(attempt.taskset, attempt.attempt)
        seen = observed.owned.get((WORKLOADS.key, name))
        if seen is not None and ADMITTED in seen.true_conditions:
            return None
        return f"waiting for Kueue to admit Workload {name} (queue {queue})"

    def suspends(self, attempt: Attempt, observed: Observed) -> str | None:
        """Kueue evicted the attempt's Workload (preemption, or its admission was withdrawn): stop every
        Pod, counting nothing, as a suspension does."""
        evicted = self._evicted(attempt, observed)
        return None if evicted is None else f"Kueue evicted Workload {evicted}"

    def stale_objects(self, attempt: Attempt, observed: Observed) -> Sequence[tuple[ObjectKind, str]]:
        """An evicted Workload, once the attempt's Pods are gone: deleted, it frees its quota, and the
        new one the next pass asks for queues again."""
        evicted = self._evicted(attempt, observed)
        return () if evicted is None else ((WORKLOADS, evicted),)

    @staticmethod
    def _evicted(attempt: Attempt, observed: Observed) -> str | None:
        if not attempt.labels.get(QUEUE_LABEL):
            return None
        name = workload_name(attempt.taskset, attempt.attempt)
        seen = observed.owned.get((WORKLOADS.key, name))
        return name if seen is not None and EVICTED in seen.true_conditions else None
