"""Kueue admission (enabled by the controller flag ``--kueue``).

A TaskSet labelled with Kueue's queue name (``QUEUE_LABEL``) is a job Kueue admits by quota, as an
external framework (Kueue's configuration names ``TaskSet.v1alpha1.octopus.openi.pcl.cn``; see
``docs/user-manual.md``, "Shared clusters"). Per attempt, this integration asks for a ``Workload``
owned by the TaskSet, with one pod set per role (its replicas and its Pod template, whose requests Kueue
counts), and holds every role's Pods until Kueue admits it (its ``Admitted`` condition). Everything
Kueue says of an attempt reaches the controller as one ``Admission`` value (``KueueWorkload.admission``).

Once admitted, each role's Pods get what the admission gives its pod set, as Kueue's jobframework
injects it (``admitted_role``): every flavor's ``nodeLabels`` as node selector entries and its
``tolerations`` (the ResourceFlavors are read through a cluster-scoped cache, ``reads``, that keeps
nothing else of them), then each admission check's ``podSetUpdates``. Kueue refuses to start a job whose
template contradicts its admission, and so does this integration: such an attempt ends as failed
(``Admission.refused``), naming the key and both values.

When Kueue evicts the Workload (preemption by a higher ``spec.priority``, which the Workload carries),
the attempt stops its Pods as a suspension does, counting no failure (``Admission.suspended``); an
eviction Kueue says is a preemption (``Admission.preempted``) is one preemption of the TaskSet, against
``spec.retryPolicy.maxPreemptions`` (``taskset.decide.preemption``). The attempt then deletes the
evicted Workload (``Admission.stale``), which frees its quota; the next pass asks for a new one, which
queues again, and the Pods start again once it is admitted. A Workload deleted (or otherwise no longer
admitted) while the attempt's Pods run stops them the same way, as Kueue's jobframework stops a running
job whose Workload is deleted: the next pass asks for a new Workload, which queues, and the Pods start
again once it is admitted; nothing runs outside the quota meanwhile. When the attempt ends, its Workload is
marked ``Finished`` (``after_attempt``: reason ``Succeeded`` or ``Failed``, as the jobframework marks a
job's), which frees the quota; the last one stays until the TaskSet is deleted, and a retried attempt's
is deleted once the next attempt's exists.

Partial admission: a role that declares ``minReplicas`` (the elastic lower bound) below its replicas
gives its pod set that ``minCount``, and Kueue (its ``PartialAdmission`` feature, on by default) may
admit fewer (``podSetAssignments[].count``). The role then runs with the admitted count as if scaled to
it (``RoleAdmission.cap``; ``taskset.decide.elastic``): a live scale is capped by the admitted count, and the
completion thresholds follow the count as they follow a scale.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from taskset.api.constants import ReplicaPhase
from taskset.api.spec import Role
from taskset.api.status import QUOTED_MAX, AttemptResult, clip
from taskset.integrations.base import (
    Admission,
    Admits,
    AfterAttempt,
    Attempt,
    FinishesAttempts,
    OwnsObjects,
    Preemption,
    ReadsObjects,
    RoleAdmission,
)
from taskset.objects.decorations import PodDecoration
from taskset.objects.owned import ObjectKind, OwnedObject, OwnedStatus, Scope
from taskset.observed.views import Observed, OwnedView

QUEUE_LABEL: Final = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL: Final = "kueue.x-k8s.io/priority-class"
# What a Workload's cache keeps besides its conditions: the admission (each role's flavors and count)
# and the admission checks' pod set updates, which this integration injects into the Pods.
# What it declares is what decides whose quota the Pods take and how much of it: the queue, the
# priority, and per pod set its name and containers' resources (not the whole templates: Kueue's CRD
# defaults fields inside them, a port's protocol, so they never read back as declared). Not a pod set's
# count: it is what the attempt asked for when it queued, while the attempt's spec follows a scale or
# a partial admission, and the Pods never outnumber what Kueue admitted (``RoleAdmission.cap``).
# Never restored: Kueue forbids changing the pod sets of a Workload that holds quota, and one changed
# before admission may have been counted as changed; an attempt whose Workload drifted ends, naming it,
# and its retry queues anew.
WORKLOADS: Final = ObjectKind(
    group="kueue.x-k8s.io",
    version="v1beta2",
    plural="workloads",
    kind="Workload",
    kept=(("status", "admission"), ("status", "admissionChecks")),
    declared=(
        ("spec", "queueName"),
        ("spec", "priority"),
        ("spec", "podSets", "*", "name"),
        ("spec", "podSets", "*", "template", "spec", "containers", "*", "resources"),
        ("spec", "podSets", "*", "template", "spec", "initContainers", "*", "resources"),
    ),
    restorable=False,
)
# Cluster-scoped, written by cluster admins: read (never written) for the node labels and tolerations
# an admission's flavors give the Pods; its cache keeps nothing else of their spec.
RESOURCE_FLAVORS: Final = ObjectKind(
    group="kueue.x-k8s.io",
    version="v1beta2",
    plural="resourceflavors",
    kind="ResourceFlavor",
    namespaced=False,
    kept=(("spec", "nodeLabels"), ("spec", "tolerations")),
)
ADMITTED: Final = "Admitted"
EVICTED: Final = "Evicted"
# Kueue v0.17's word for an eviction to make room for another workload: the Evicted condition's reason
# ``Preempted`` (WorkloadEvictedByPreemption), set in the same write as the ``Preempted`` condition
# (WorkloadPreempted), whose reason says where (InClusterQueue, InCohortReclamation, InCohortFairSharing,
# InCohortReclaimWhileBorrowing) and whose message names the preemptor's Workload UID. Every other
# eviction reason (PodsReadyTimeout, AdmissionCheck, ClusterQueueStopped, LocalQueueStopped,
# Deactivated, NodeFailures, ...) is no preemption and counts nothing, as before.
PREEMPTED: Final = "Preempted"
EVICTED_BY_PREEMPTION: Final = "Preempted"
FINISHED: Final = "Finished"
FINISHED_MESSAGE_MAX: Final = 1024  # the outcome's words, as the TaskSet's status bounds them
NAME_FORMAT: Final = "taskset-{taskset}-{attempt}"


def workload_name(taskset: str, attempt: int) -> str:
    """The attempt's Workload: a name of its own per attempt, so a retry's never meets the last one's."""
    return NAME_FORMAT.format(taskset=taskset, attempt=attempt)


def pod_set(role: Role, min_count: int | None = None) -> dict[str, Any]:
    """One role as Kueue counts it: its replicas, and its Pod template (the containers' requests); with
    ``min_count`` below its replicas, the fewest Kueue may admit it with (partial admission)."""
    spec = role.template.get("spec")
    found = {
        "name": role.name,
        "count": role.replicas,
        "template": {"spec": dict(spec) if isinstance(spec, Mapping) else {}},
    }
    if min_count is not None and min_count < role.replicas:
        found["minCount"] = min_count
    return found


def declared_min(raw: Mapping[str, Any], position: int) -> int | None:
    """The role's ``minReplicas`` as the spec declares it (the elastic lower bound), or None: only a
    declared bound opts the role into partial admission."""
    roles = raw.get("roles")
    role = roles[position] if isinstance(roles, list | tuple) and position < len(roles) else None
    given = role.get("minReplicas") if isinstance(role, Mapping) else None
    return given if isinstance(given, int) and not isinstance(given, bool) else None


def admitted_count(workload: OwnedView, role: Role) -> int | None:
    """How many replicas of ``role`` Kueue admitted (``podSetAssignments[].count``), or None."""
    admission = workload.status.get("admission")
    found = _named(admission.get("podSetAssignments") if isinstance(admission, Mapping) else None, role.name)
    count = found[0].get("count") if found else None
    return count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else None


# ----- the admission, as it reaches a role's Pods ---------------------------------------------------------


@dataclass(frozen=True)
class Admitted:
    """What Kueue's admission gives one role's Pods (``decoration``: only what the template lacks), or
    why it cannot yet (``held``: a flavor not cached yet) or ever (``conflict``: it contradicts the
    template, as Kueue's jobframework refuses to start such a job)."""

    decoration: PodDecoration | None = None
    held: str | None = None
    conflict: str | None = None


def _strings(value: object) -> dict[str, str]:
    """A map of strings as Kueue's API has them; entries of another shape are not Kueue's and are left."""
    if not isinstance(value, Mapping):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def _objects(value: object) -> list[dict[str, Any]]:
    return [dict(item) for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def _named(entries: object, name: str) -> list[dict[str, Any]]:
    return [entry for entry in _objects(entries) if entry.get("name") == name]


class _Merge:
    """The template's labels, annotations, node selector and tolerations, and what the admission adds,
    merged as Kueue's ``podset.Merge`` does: a key already set to another value is a conflict."""

    def __init__(self, template: Mapping[str, Any]) -> None:
        meta, spec = template.get("metadata"), template.get("spec")
        meta = meta if isinstance(meta, Mapping) else {}
        spec = spec if isinstance(spec, Mapping) else {}
        self.have = {
            "labels": _strings(meta.get("labels")),
            "annotations": _strings(meta.get("annotations")),
            "nodeSelector": _strings(spec.get("nodeSelector")),
        }
        self.tolerations = _objects(spec.get("tolerations"))
        self.added: dict[str, dict[str, str]] = {field: {} for field in self.have}
        self.added_tolerations: list[dict[str, Any]] = []

    def add(self, field: str, values: Mapping[str, str], source: str) -> str | None:
        """Add ``values`` to ``field``, or say which key ``source`` sets to another value."""
        for key, value in values.items():
            if self.have[field].get(key, value) != value:
                return (
                    f"{source} sets {field} {key}={value}, but the Pod template has "
                    f"{key}={self.have[field][key]}"
                )
        for key, value in values.items():
            if key not in self.have[field]:
                self.have[field][key] = self.added[field][key] = value
        return None

    def tolerate(self, tolerations: list[dict[str, Any]]) -> None:
        for toleration in tolerations:
            if toleration not in self.tolerations:
                self.tolerations.append(toleration)
                self.added_tolerations.append(toleration)

    def decoration(self) -> PodDecoration:
        return PodDecoration(
            labels=self.added["labels"],
            annotations=self.added["annotations"],
            node_selector=self.added["nodeSelector"],
            tolerations=tuple(self.added_tolerations),
        )


def admitted_role(
    workload: OwnedView, role: Role, read: Mapping[tuple[str, str], Mapping[str, Any]]
) -> Admitted:
    """What ``workload``'s admission gives ``role``'s Pods, as Kueue's jobframework injects it: per
    flavor of the role's pod set assignment, the ResourceFlavor's ``nodeLabels`` as node selector
    entries and its ``tolerations``; then each admission check's ``podSetUpdates`` for the role."""
    admission = workload.status.get("admission")
    assignments = _named(
        admission.get("podSetAssignments") if isinstance(admission, Mapping) else None, role.name
    )
    if not assignments:
        return Admitted(
            held=f"Workload {workload.name} is admitted, but not yet readably for pod set {role.name}"
        )
    merge = _Merge(role.template)
    flavors = dict.fromkeys(_strings(assignments[0].get("flavors")).values())
    refused = _add_flavors(merge, flavors, workload.name, read) or _add_updates(merge, workload, role)
    return refused or Admitted(decoration=merge.decoration())


def _add_flavors(
    merge: _Merge, flavors: Iterable[str], workload: str, read: Mapping[tuple[str, str], Mapping[str, Any]]
) -> Admitted | None:
    """Each flavor's node labels and tolerations (Kueue's ``podset.FromAssignment``)."""
    for flavor in flavors:
        found = read.get((RESOURCE_FLAVORS.key, flavor))
        if found is None:
            waiting = f"waiting for ResourceFlavor {flavor} (Workload {workload} admitted with it)"
            return Admitted(held=f"{waiting} to be cached")
        spec = found.get("spec")
        spec = spec if isinstance(spec, Mapping) else {}
        conflict = merge.add("nodeSelector", _strings(spec.get("nodeLabels")), f"ResourceFlavor {flavor}")
        if conflict is not None:
            return Admitted(conflict=conflict)
        merge.tolerate(_objects(spec.get("tolerations")))
    return None


def _add_updates(merge: _Merge, workload: OwnedView, role: Role) -> Admitted | None:
    """The admission checks' pod set updates for the role (Kueue's ``podset.FromUpdate``)."""
    for check in _objects(workload.status.get("admissionChecks")):
        for update in _named(check.get("podSetUpdates"), role.name):
            source = f"admission check {check.get('name')}"
            for field in ("labels", "annotations", "nodeSelector"):
                if (conflict := merge.add(field, _strings(update.get(field)), source)) is not None:
                    return Admitted(conflict=conflict)
            merge.tolerate(_objects(update.get("tolerations")))
    return None


# Replica phases in which the attempt has a live Pod of the replica, which counts against the quota.
_LIVE: Final = frozenset(
    {
        ReplicaPhase.ATTEMPT_CREATION_REQUESTED,
        ReplicaPhase.ATTEMPT_PREPARING,
        ReplicaPhase.ATTEMPT_ASSIGNED,
        ReplicaPhase.ATTEMPT_RUNNING,
    }
)


def _has_pods(attempt: Attempt) -> bool:
    """Whether the attempt has started Pods that are still live, as the pass's status records them."""
    status = attempt.status
    return status is not None and any(
        replica.phase in _LIVE for role in status.roles for replica in role.replicas
    )


class KueueWorkload(OwnsObjects, ReadsObjects, Admits, FinishesAttempts):
    """A Workload per attempt of a queued TaskSet; the roles wait for its admission, whose flavors and
    admission checks then decorate their Pods."""

    name: ClassVar[str] = "kueue"
    kinds: ClassVar[tuple[ObjectKind, ...]] = (WORKLOADS,)
    reads: ClassVar[tuple[ObjectKind, ...]] = (RESOURCE_FLAVORS,)

    def owned_objects(self, attempt: Attempt) -> Sequence[OwnedObject]:
        queue = attempt.labels.get(QUEUE_LABEL)
        if not queue:
            return ()
        labels = {
            key: attempt.labels[key] for key in (QUEUE_LABEL, PRIORITY_CLASS_LABEL) if key in attempt.labels
        }
        raw = attempt.spec.raw
        pod_sets = [pod_set(role, declared_min(raw, i)) for i, role in enumerate(attempt.spec.roles)]
        spec: dict[str, Any] = {"queueName": queue, "podSets": pod_sets}
        if attempt.spec.priority is not None:  # Kueue orders and preempts by it (no webhook fills it in)
            spec["priority"] = attempt.spec.priority
        body = {"metadata": {"labels": labels}, "spec": spec}
        name = workload_name(attempt.taskset, attempt.attempt)
        # The TaskSet's, not the attempt's: the last attempt's stays, Finished, until the TaskSet goes.
        return (OwnedObject(WORKLOADS, name, Scope.TASKSET, body, self.name),)

    def admission(self, attempt: Attempt, observed: Observed) -> Admission | None:
        """Kueue's word on the attempt, as its jobframework hands it to a job: until the attempt's
        Workload is admitted, every role waits; an evicted Workload stops the Pods (counting nothing, as a
        suspension does) and, once they are gone, is deleted so that the new one the next pass asks for
        queues again; once admitted, each role runs the replicas its pod set was given (fewer than it
        asked is a partial admission), its Pods carry what the flavors and admission checks add, and an
        admission that contradicts a role's Pod template ends the attempt, as no Pod of it could start."""
        queue = attempt.labels.get(QUEUE_LABEL)
        if not queue:
            return None
        seen = self._admitted(attempt, observed)
        if seen is None:
            evicted = self._evicted(attempt, observed)
            name = workload_name(attempt.taskset, attempt.attempt)
            suspended = None if evicted is None else f"Kueue evicted Workload {evicted}"
            if suspended is None and _has_pods(attempt):
                # As Kueue's jobframework stops a running job whose Workload is deleted or not admitted:
                # Pods that run without an admitted Workload run outside any quota.
                suspended = f"Workload {name} is not admitted (deleted, or not admitted again)"
            return Admission(
                waiting=f"waiting for Kueue to admit Workload {name} (queue {queue})",
                suspended=suspended,
                stale=() if evicted is None else ((WORKLOADS, evicted),),
                preempted=self._preempted(attempt, observed),
            )
        roles: dict[str, RoleAdmission] = {}
        refused = None
        for role in attempt.spec.roles:
            admitted = admitted_role(seen, role, observed.read)
            if admitted.conflict is not None and refused is None:
                refused = (
                    f"Kueue's admission of Workload {seen.name} conflicts with role {role.name}: "
                    f"{admitted.conflict}"
                )
            roles[role.name] = RoleAdmission(
                cap=admitted_count(seen, role),
                decoration=admitted.decoration,
                held=admitted.held or admitted.conflict,
            )
        return Admission(refused=refused, roles=roles)

    def after_attempt(
        self, attempt: Attempt, observed: Observed, outcome: AttemptResult | None
    ) -> AfterAttempt | None:
        """Once the attempt has ended, its Workload is marked ``Finished`` (as Kueue's jobframework
        marks a job's: reason ``Succeeded`` or ``Failed``, the outcome's words), which frees its quota;
        earlier attempts' Workloads, finished before, are deleted."""
        if not attempt.labels.get(QUEUE_LABEL):
            return None
        prefix = NAME_FORMAT.format(taskset=attempt.taskset, attempt="")
        stale = tuple(
            (WORKLOADS, name)
            for kind, name in observed.owned
            if kind == WORKLOADS.key
            and name.startswith(prefix)
            and name[len(prefix) :].isdigit()
            and int(name[len(prefix) :]) < attempt.attempt
        )
        seen = self._workload(attempt, observed)
        if outcome is None or seen is None or FINISHED in seen.true_conditions:
            return AfterAttempt(stale=stale)
        condition = {
            "type": FINISHED,
            "status": "True",
            "reason": "Succeeded" if outcome.succeeded else "Failed",
            "message": clip(outcome.reason, FINISHED_MESSAGE_MAX),
        }
        finished = OwnedStatus(WORKLOADS, seen.name, {"conditions": [condition]})
        return AfterAttempt(statuses=(finished,), stale=stale)

    @staticmethod
    def _workload(attempt: Attempt, observed: Observed) -> OwnedView | None:
        if not attempt.labels.get(QUEUE_LABEL):
            return None
        return observed.owned.get((WORKLOADS.key, workload_name(attempt.taskset, attempt.attempt)))

    def _admitted(self, attempt: Attempt, observed: Observed) -> OwnedView | None:
        """The attempt's Workload once Kueue admitted it (and has not evicted it, nor is it being
        deleted: Kueue frees the quota of a Workload it sees deleted), else None."""
        seen = self._workload(attempt, observed)
        admitted = (
            seen is not None
            and not seen.deleting
            and ADMITTED in seen.true_conditions
            and EVICTED not in seen.true_conditions
        )
        return seen if admitted else None

    def _preempted(self, attempt: Attempt, observed: Observed) -> Preemption | None:
        """The attempt's Workload evicted by a preemption, as Kueue says it (the Evicted condition's
        reason ``Preempted``, or its Preempted condition), keyed by the Workload's UID and the
        eviction's time: the new Workload the attempt asks for next has another UID, so each eviction
        is one preemption."""
        seen = self._workload(attempt, observed)
        if seen is None or not seen.uid or EVICTED not in seen.true_conditions:
            return None
        evicted_reason, evicted_said, since = seen.condition_words.get(EVICTED, ("", "", ""))
        if evicted_reason != EVICTED_BY_PREEMPTION and PREEMPTED not in seen.true_conditions:
            return None
        reason, said, _ = seen.condition_words.get(PREEMPTED, ("", "", ""))
        where = f" ({reason})" if reason else ""
        words = f"Kueue preempted Workload {seen.name}{where}: {said or evicted_said or 'no message'}"
        # Kueue may admit the same Workload again (its Evicted condition then turns False) and evict it
        # once more: the eviction's time tells the two apart.
        return Preemption(
            key=f"{seen.uid}@{since}" if since else seen.uid,
            subject=f"Workload {seen.name}",
            reason=reason,
            said=clip(words, QUOTED_MAX),
        )

    def _evicted(self, attempt: Attempt, observed: Observed) -> str | None:
        seen = self._workload(attempt, observed)
        return seen.name if seen is not None and EVICTED in seen.true_conditions else None
