"""Elastic roles: a running attempt follows a change of ``roles[].replicas``, and only that.

The attempt runs on its ControlUnit's spec snapshot (W-18, ``taskset.decide.snapshot``), so an edit of
the TaskSet's spec never reaches it, and the snapshot is never rewritten (its digest in the status is
what proves it untouched). Scaling is the one exception, and it goes through the status, which only the
controller writes:

- **When a scale is taken.** While the attempt is Preparing or Running, a pass compares the live spec
  with the snapshot. If they differ in nothing but roles' ``replicas`` (same roles, same order, every
  other field equal), each role still Waiting or Running takes the live count, clamped to its bounds
  (``minReplicas``/``maxReplicas``, which are then the snapshot's too), and records it in
  ``status.roleStatus[i].targetReplicas``. A live spec that differs in anything else is an edit for the
  next attempt, as before: the recorded targets stand. A completed role (or attempt) is not scaled.
- **The attempt's spec** is the snapshot with each role at its recorded target (``Role.scaled``), its
  completion thresholds re-read at the new count: an absent ``minSucceeded`` follows the count, an
  explicit threshold above it is clamped to it (``taskset.api.spec.thresholds``). The snapshot's digest
  is untouched, so the tampering check never sees a scale.
- **Scale down** stops the replicas at the highest indices (``stopped``, as a completed role stops its
  rest, W-5): their Pods are deleted, they are never retried and never counted by the completion policy
  (``role_completion`` counts indices below the target that are not stopped). Once such a replica is
  completed (its Pod gone) at the tail of the list, its entry is dropped: the status holds no more than
  the role runs plus what is still going away.
- **Scale up** appends fresh replicas at the next indices. An index whose scaled-down replica is still
  going away comes back only once it is gone, as a new instance (a fresh entry: no retries, no Pod),
  so one index never has two Pods.
- **A scale that decides the outcome decides it at once**: the scale is applied before the machines run
  in the same pass, so a role whose succeeded count now reaches the new threshold completes (R1) then.
- **An admission may cap a role** (``RoleAdmission.cap``: Kueue admitted fewer
  replicas than the pod set asked for, partial admission): the target is the lower of the wanted count
  and the cap, taken as any scale, so the role runs with what was admitted and a live scale never goes
  past it.

Each scale is said once: ``lastScale`` (from, to, when, who asked, the membership generation) on the
role's status and a ``TaskRoleScaled`` event (``taskset.decide.membership_generation.announce_scales``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from taskset.api.constants import ReplicaPhase, RolePhase, TaskSetPhase
from taskset.api.elastic_status import ScaleRecord, ScaleStatus
from taskset.api.scale import SCALE_FIELD, scale_of, scale_selector
from taskset.api.spec import ParsedTaskSet, Role, TaskSetSpec
from taskset.api.status import ReplicaStatus, RoleStatus
from taskset.decide.context import PassContext
from taskset.decide.owned_sync import admission_of, attempt_of
from taskset.decide.plan import DeletePod
from taskset.decide.upkeep import SCALED_DOWN_POD
from taskset.integrations.framework import Admissions
from taskset.observed.proof import ProofSubject, proves
from taskset.observed.views import PodView

# Attempt phases in which a scale is taken: the roles' replicas are being run.
_SCALING_PHASES = (TaskSetPhase.ATTEMPT_PREPARING, TaskSetPhase.ATTEMPT_RUNNING)
# Role phases in which a scale is taken: its outcome is not decided yet.
_SCALING_ROLES = (RolePhase.WAITING, RolePhase.RUNNING)


def scaled_spec(ctx: PassContext, spec: TaskSetSpec | None) -> TaskSetSpec | None:
    """The attempt's ``spec`` (its snapshot) at the replicas the status records, after taking any scale
    the live spec asks for now. Unchanged when nothing was ever scaled."""
    if spec is None or not _names_match(spec, ctx.status.roles):
        return spec
    if ctx.status.phase in _SCALING_PHASES:
        _take_scale(ctx, spec)
    roles = tuple(_at_target(role, status) for role, status in zip(spec.roles, ctx.status.roles, strict=True))
    return spec if roles == spec.roles else replace(spec, roles=roles)


def only_replicas_differ(snapshot: Mapping[str, Any], live: Mapping[str, Any]) -> bool:
    """Whether two raw specs are equal but for their roles' ``replicas``."""
    return _without_replicas(snapshot) == _without_replicas(live)


def _without_replicas(raw: Mapping[str, Any]) -> dict[str, Any]:
    """``raw`` without the counts: every role's ``replicas`` and ``spec.scale``, which says only a count
    (its role is immutable; adding or removing it changes only the count its role runs with)."""
    roles = raw.get("roles")
    bare = {k: v for k, v in raw.items() if k != SCALE_FIELD}
    if isinstance(roles, list | tuple):
        bare["roles"] = [
            {k: v for k, v in r.items() if k != "replicas"} if isinstance(r, Mapping) else r for r in roles
        ]
    return bare


def _names_match(spec: TaskSetSpec, roles: list[RoleStatus]) -> bool:
    return len(spec.roles) == len(roles) and all(
        r.name == s.name for r, s in zip(spec.roles, roles, strict=True)
    )


def _at_target(role: Role, status: RoleStatus) -> Role:
    target = status.target_replicas
    return role if target is None or target == role.replicas else role.scaled(target)


def _take_scale(ctx: PassContext, spec: TaskSetSpec) -> None:
    """Record and apply the live spec's replicas, when they are all it changed."""
    live = ctx.live.spec if isinstance(ctx.live, ParsedTaskSet) else None
    if live is None or len(live.roles) != len(spec.roles):
        return
    statuses = ctx.status.roles
    current = [_target(role, status) for role, status in zip(spec.roles, statuses, strict=True)]
    wanted = [role.replicas for role in live.roles]
    if wanted != current and not only_replicas_differ(spec.raw, live.raw):
        wanted = current  # another edit: it waits for the next attempt, and so does this count
    caps = _caps(ctx, spec)
    for role, status, count, cap in zip(spec.roles, statuses, wanted, caps, strict=True):
        if status.phase not in _SCALING_ROLES:
            continue
        target = role.scaled(count if cap is None else min(count, cap)).replicas
        before = _target(role, status)
        if target != before:
            status.target_replicas = target
            status.last_scale = ScaleRecord(
                before, target, ctx.stamp, by=ctx.ref.scale_requesters.get(role.name, "")
            )
            ctx.scaled.append(status)  # announced once the membership generation is known
        if status.target_replicas is not None:  # a role never scaled keeps its list as it is
            resize(status, status.target_replicas, ctx.stamp)


def _caps(ctx: PassContext, spec: TaskSetSpec) -> list[int | None]:
    """Per role, the lowest bound the admissions put on its replicas now (``RoleAdmission.cap``: Kueue
    admitted fewer), or None."""
    attempt = attempt_of(ctx, spec)
    admissions = admission_of(ctx, attempt) if attempt is not None else Admissions()
    return [admissions.cap(role.name) for role in spec.roles]


def _target(role: Role, status: RoleStatus) -> int:
    return role.replicas if status.target_replicas is None else status.target_replicas


def resize(status: RoleStatus, target: int, stamp: str) -> None:
    """Bring a role's replica list to ``target``: stop the indices above it, bring back (fresh) the ones
    below it whose previous instance is gone, and drop the stopped, completed tail."""
    entries = status.replicas
    for replica in entries[target:]:
        if not replica.stopped and replica.phase != ReplicaPhase.COMPLETED:
            replica.stopped = True
            replica.phase_message = f"ScaledDown: replicas {target}"
    for index in range(target):
        if index == len(entries):
            entries.append(ReplicaStatus(index=index, name=status.name, transition_time=stamp))
            continue
        replica = entries[index]
        if not replica.stopped:
            continue
        if replica.phase != ReplicaPhase.COMPLETED:
            break  # still going away: it comes back as a new instance once it is gone
        entries[index] = ReplicaStatus(index=index, name=status.name, transition_time=stamp)
    while len(entries) > target and entries[-1].phase == ReplicaPhase.COMPLETED:
        entries.pop()


def counted_replicas(role: Role, status: RoleStatus) -> list[ReplicaStatus]:
    """The replicas the completion policy counts (spec 6.1): a scaled role's current ones, not those
    scaled down (stopped, or at an index at or above its target); an index still to come back counts as a
    replica not completed yet. A role never scaled counts them all, as before."""
    if status.target_replicas is None:
        return status.replicas
    current = [r for r in status.replicas[: role.replicas] if not r.stopped]
    coming = role.replicas - len(current)
    return current + [ReplicaStatus(index=len(current) + i, name=status.name) for i in range(coming)]


def settle_scale(ctx: PassContext) -> None:
    """After the machines ran: a scaled-down replica that completed in this pass leaves the list, and an
    index waiting for it comes back now, so no watch event is needed for either (the status write of this
    pass carries them; a fresh replica's Pod is asked for by the pass this requeue brings)."""
    if ctx.status.phase not in _SCALING_PHASES:
        return
    for status in ctx.status.roles:
        if status.target_replicas is None or status.phase not in _SCALING_ROLES:
            continue
        fresh = sum(1 for r in status.replicas if r.phase == ReplicaPhase.ATTEMPT_PENDING and not r.stopped)
        resize(status, status.target_replicas, ctx.stamp)
        if (
            sum(1 for r in status.replicas if r.phase == ReplicaPhase.ATTEMPT_PENDING and not r.stopped)
            > fresh
        ):
            ctx.plan.requeue(0.0)


def remove_scaled_down_pods(ctx: PassContext) -> None:
    """Delete this attempt's Pods at indices a role no longer lists. A scaled-down replica leaves the list
    once completed, which it is at once when no Pod was recorded for it; a Pod its create made just before
    a controller died, unrecorded (W-1), would then run on with no replica to look at it. The same Pod is
    left by a scale-up whose status write was lost after its create went out (a scale written again in
    between makes the write conflict): the status the next pass reads never took the scale, and if the
    count is back where it was, nothing else would ever look at that Pod. So every role is checked, scaled
    or not, against the larger of its count and its list.
    Only a Pod the current ControlUnit controls with a valid creation proof is ours to delete."""
    unit, spec = ctx.status.control_unit_uid, ctx.plan.spec
    if unit is None or spec is None or ctx.status.phase not in _SCALING_PHASES:
        return
    for position, (role, status) in enumerate(zip(spec.roles, ctx.status.roles, strict=True)):
        listed = max(role.replicas, len(status.replicas))
        prefix = f"{ctx.ref.name}-{role.name}-"
        for pod in ctx.observed.pods.values():
            index = pod.name.removeprefix(prefix)
            if index == pod.name or not index.isdigit() or int(index) < listed:
                continue
            if _ours_to_delete(ctx, pod, unit):
                ctx.deleted.add(pod.uid)
                ctx.plan.intents.append(
                    DeletePod(pod.name, pod.uid, position, int(index), advances=False, row=SCALED_DOWN_POD)
                )


def _ours_to_delete(ctx: PassContext, pod: PodView, unit: str) -> bool:
    attempt = pod.replica_attempt_id
    if pod.controller_uid != unit or attempt is None or pod.deleting or pod.uid in ctx.deleted:
        return False
    return proves(pod.proof, ctx.settings.proof_key, ProofSubject(ctx.ref.namespace, pod.name, unit, attempt))


def report_scale(ctx: PassContext) -> None:
    """``status.scale`` for the scale subresource: the current count of the role ``spec.scale`` names
    (the attempt's, once it runs; else the live spec's) and its Pods' selector. Absent without
    ``spec.scale``."""
    live = ctx.live.spec if isinstance(ctx.live, ParsedTaskSet) else None
    named = scale_of(live.raw) if live is not None else None
    if live is None or named is None:
        ctx.status.scale = None
        return
    role = (ctx.plan.spec.role(named[0]) if ctx.plan.spec is not None else None) or live.role(named[0])
    if role is not None:
        ctx.status.scale = ScaleStatus(role.replicas, scale_selector(ctx.ref.name, role.name))
