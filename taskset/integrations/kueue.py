"""Kueue admission (issue 24, item 4; enabled by the controller flag ``--kueue``).

A TaskSet labelled with Kueue's queue name (``QUEUE_LABEL``) is a job Kueue admits by quota, as an
external framework (Kueue's configuration names ``TaskSet.v1alpha1.octopus.openi.pcl.cn``; see
``docs/user-manual.md``, "Shared clusters"). Per attempt, this integration asks for a ``Workload``
owned by the attempt's ControlUnit, with one pod set per role (its replicas and its Pod template, whose
requests Kueue counts), and holds every role's Pods until Kueue admits it (its ``Admitted`` condition).

The Workload goes away with its attempt (owner references), so Kueue frees the quota when the attempt
ends and a retry queues anew. What this first step does not do yet (the report of issue 24 lists it):
inject the admission's node selectors and tolerations into the Pods, and stop an attempt whose Workload
Kueue evicts (preemption).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Final

from taskset.api.spec import Role
from taskset.api.views import Observed
from taskset.integrations.base import Attempt, Integration
from taskset.objects.owned import ObjectKind, OwnedObject, Scope

QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL: Final = "kueue.x-k8s.io/priority-class"
WORKLOADS: Final = ObjectKind(group="kueue.x-k8s.io", version="v1beta2", plural="workloads", kind="Workload")
ADMITTED: Final = "Admitted"
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
        body = {
            "metadata": {"labels": labels},
            "spec": {"queueName": queue, "podSets": [pod_set(role) for role in attempt.spec.roles]},
        }
        name = workload_name(attempt.taskset, attempt.attempt)
        return (OwnedObject(WORKLOADS, name, Scope.ATTEMPT, body, self.name),)

    def gate(self, attempt: Attempt, role: Role, observed: Observed) -> str | None:
        queue = attempt.labels.get(QUEUE_LABEL)
        if not queue:
            return None
        name = workload_name(attempt.taskset, attempt.attempt)
        seen = observed.owned.get((WORKLOADS.key, name))
        if seen is not None and ADMITTED in seen.true_conditions:
            return None
        return f"waiting for Kueue to admit Workload {name} (queue {queue})"
