"""Gang scheduling (the schedulers a controller serves are its ``--gang-scheduling``).

A TaskSet opts in with ``spec.gang``: ``scheduler`` (``coscheduling``: scheduler-plugins'
``scheduling.x-k8s.io`` PodGroup; ``volcano``: Volcano's ``scheduling.volcano.sh`` PodGroup),
``minAvailable`` (how many of its Pods must be placed at once; default: all of them, the sum of the
roles' replicas), and per scheduler ``scheduleTimeoutSeconds`` (coscheduling) or ``queue`` (Volcano).
Per attempt the controller creates a PodGroup owned by the attempt's ControlUnit, so a new attempt gets
a fresh gang and the old one goes with its attempt, and every Pod joins it: coscheduling's label, or
Volcano's ``scheduling.k8s.io/group-name`` annotation. The Pods' ``schedulerName`` stays the template's:
it names the gang scheduler as the cluster runs it. A TaskSet without ``spec.gang`` is untouched, the
seed's kube-batch annotation included.

The Volcano PodGroup follows Volcano's API reference (``minMember``, ``queue``); it is checked against
a CRD written from that reference, not against the real Volcano scheduler.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Final

from taskset.api.spec import CheckFailure, Role, TaskSetSpec
from taskset.integrations.base import Attempt, ChecksSpec, DecoratesPods, Integration, OwnsObjects
from taskset.objects.decorations import PodDecoration
from taskset.objects.owned import ObjectKind, OwnedObject, Scope
from taskset.objects.pods import PodIdentity

COSCHEDULING: Final = "coscheduling"
VOLCANO: Final = "volcano"
SCHEDULERS: Final = (COSCHEDULING, VOLCANO)
# How many of the attempt's Pods were replaced so far (its replicas' retries), on its PodGroup. A gang
# scheduler turns away a Pod whose siblings are not all there yet, and coscheduling looks at the Pods it
# turned away again only when a Pod or a PodGroup is added or a PodGroup changes: replacements created
# together (the Pods of a lost node) are each turned away while the others are still being created, and
# then slept on until the scheduler's periodic flush (35 s and more). Written at the end of the pass that
# created them, after them, the change wakes them together, all there.
REPLACEMENTS_ANNOTATION: Final = "octopus.openi.pcl.cn/gang-replacements"
_REPLACEMENTS: Final = ("metadata", "annotations", REPLACEMENTS_ANNOTATION)
# A PodGroup's gang (``minMember``) and its scheduler's own field, both mutable: patched back on drift.
COSCHEDULING_PODGROUPS: Final = ObjectKind(
    group="scheduling.x-k8s.io",
    version="v1alpha1",
    plural="podgroups",
    kind="PodGroup",
    declared=(("spec", "minMember"), ("spec", "scheduleTimeoutSeconds"), _REPLACEMENTS),
    followed=(_REPLACEMENTS,),
)
VOLCANO_PODGROUPS: Final = ObjectKind(
    group="scheduling.volcano.sh",
    version="v1beta1",
    plural="podgroups",
    kind="PodGroup",
    declared=(("spec", "minMember"), ("spec", "queue"), _REPLACEMENTS),
    followed=(_REPLACEMENTS,),
)
COSCHEDULING_LABEL: Final = "scheduling.x-k8s.io/pod-group"
VOLCANO_ANNOTATION: Final = "scheduling.k8s.io/group-name"
_FIELD: Final = "spec.gang"


def podgroup_name(taskset: str, attempt: int) -> str:
    """The attempt's PodGroup: one per attempt, so a retry's gang never meets the last one's."""
    return f"taskset-{taskset}-{attempt}"


def gang_of(spec: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``spec.gang`` when the TaskSet opts in, else None."""
    gang = spec.get("gang")
    return gang if isinstance(gang, Mapping) else None


def min_available(spec: TaskSetSpec) -> int:
    """``spec.gang.minAvailable``, or every Pod of the TaskSet."""
    gang = gang_of(spec.raw) or {}
    given = gang.get("minAvailable")
    return (
        given
        if isinstance(given, int) and not isinstance(given, bool)
        else sum(r.replicas for r in spec.roles)
    )


def check_gang(spec: Mapping[str, Any], enabled: Sequence[str]) -> CheckFailure | None:
    """``spec.gang`` as the controller can serve it: an object, a scheduler it was started for, and a
    ``minAvailable`` between 1 and the TaskSet's Pods."""
    if spec.get("gang") is None:
        return None
    gang = gang_of(spec)
    if gang is None:
        return CheckFailure(_FIELD, f"{_FIELD}: must be an object")
    scheduler = gang.get("scheduler")
    if scheduler not in enabled:
        served = ", ".join(enabled) or "none"
        message = f"{scheduler!r} is not served by this controller (--gang-scheduling: {served})"
        return CheckFailure(f"{_FIELD}.scheduler", f"{_FIELD}.scheduler: {message}")
    roles = spec.get("roles")
    total = sum(
        r["replicas"] for r in roles or () if isinstance(r, Mapping) and isinstance(r.get("replicas"), int)
    )
    given = gang.get("minAvailable")
    if given is not None and (
        not isinstance(given, int) or isinstance(given, bool) or not 1 <= given <= total
    ):
        return CheckFailure(
            f"{_FIELD}.minAvailable",
            f"{_FIELD}.minAvailable: must be between 1 and the {total} Pods of the TaskSet",
        )
    return None


@dataclass(frozen=True)
class Flavor:
    """What one gang scheduler takes: its name in spec.gang, its PodGroup kind, the one field of
    spec.gang its PodGroup takes besides minMember (under the same name), and how a Pod joins a group
    (a label or an annotation, under which key)."""

    scheduler: str
    kind: ObjectKind
    extra: str
    mark: tuple[str, str]


COSCHEDULING_FLAVOR: Final = Flavor(
    COSCHEDULING, COSCHEDULING_PODGROUPS, "scheduleTimeoutSeconds", ("labels", COSCHEDULING_LABEL)
)
VOLCANO_FLAVOR: Final = Flavor(VOLCANO, VOLCANO_PODGROUPS, "queue", ("annotations", VOLCANO_ANNOTATION))


def replacements(attempt: Attempt) -> int:
    """How many of the attempt's Pods were replaced so far: its replicas' retries, as the pass left them."""
    status = attempt.status
    roles = status.roles if status is not None else ()
    return sum(replica.total_retried_count for role in roles for replica in role.replicas)


class _Gang(ChecksSpec, OwnsObjects, DecoratesPods):
    """What both gang schedulers share: the check, a PodGroup per attempt of an opted-in TaskSet (which
    follows the attempt's replacements, ``REPLACEMENTS_ANNOTATION``), and the mark that makes each of its
    Pods a member."""

    flavor: ClassVar[Flavor]
    updates_owned: ClassVar[bool] = True

    def __init__(self, enabled: Sequence[str] = SCHEDULERS) -> None:
        self.enabled = tuple(enabled)

    def check(self, spec: Mapping[str, Any]) -> CheckFailure | None:
        return check_gang(spec, self.enabled)

    def _gang(self, attempt: Attempt) -> Mapping[str, Any] | None:
        gang = gang_of(attempt.spec.raw)
        return gang if gang is not None and gang.get("scheduler") == self.flavor.scheduler else None

    def owned_objects(self, attempt: Attempt) -> Sequence[OwnedObject]:
        gang = self._gang(attempt)
        if gang is None:
            return ()
        spec: dict[str, Any] = {"minMember": min_available(attempt.spec)}
        value = gang.get(self.flavor.extra)
        if value not in (None, "") and not isinstance(value, bool):
            spec[self.flavor.extra] = value
        name = podgroup_name(attempt.taskset, attempt.attempt)
        meta = {"annotations": {REPLACEMENTS_ANNOTATION: str(replacements(attempt))}}
        body = {"metadata": meta, "spec": spec}
        return (OwnedObject(self.flavor.kind, name, Scope.ATTEMPT, body, self.name, updates=True),)

    def decorate_pod(self, attempt: Attempt, role: Role, identity: PodIdentity) -> PodDecoration | None:
        if self._gang(attempt) is None:
            return None
        where, key = self.flavor.mark
        mark = {key: podgroup_name(attempt.taskset, attempt.attempt)}
        return PodDecoration(labels=mark) if where == "labels" else PodDecoration(annotations=mark)


class Coscheduling(_Gang):
    """scheduler-plugins' coscheduling: a ``scheduling.x-k8s.io`` PodGroup and its label on every Pod."""

    name, kinds, flavor = COSCHEDULING, (COSCHEDULING_PODGROUPS,), COSCHEDULING_FLAVOR


class VolcanoGang(_Gang):
    """Volcano: a ``scheduling.volcano.sh`` PodGroup and its group-name annotation on every Pod."""

    name, kinds, flavor = VOLCANO, (VOLCANO_PODGROUPS,), VOLCANO_FLAVOR


def parse_schedulers(raw: object) -> tuple[str, ...]:
    """``--gang-scheduling``: a comma-separated list of served schedulers, each once, in the given order."""
    names = [name.strip() for name in str(raw).split(",") if name.strip()]
    if any(name not in SCHEDULERS for name in names):
        raise ValueError(f"must be a comma-separated list of {', '.join(SCHEDULERS)}")
    return tuple(dict.fromkeys(names))


def gang_integrations(enabled: Sequence[str]) -> tuple[Integration, ...]:
    """The integrations of the gang schedulers a controller serves (``--gang-scheduling``)."""
    chosen = tuple(scheduler for scheduler in SCHEDULERS if scheduler in enabled)
    classes = {COSCHEDULING: Coscheduling, VOLCANO: VolcanoGang}
    return tuple(classes[scheduler](chosen) for scheduler in chosen)
