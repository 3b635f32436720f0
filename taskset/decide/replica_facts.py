"""A replica's facts for its machine's guards (``ReplicaFacts``), worked out from the pass as the
guards read them, and the two that ask the pass more than the replica (earlier attempts' Pods, and
whether a Pod may be created now)."""

from __future__ import annotations

from dataclasses import fields

from taskset.api.constants import ReplicaPhase
from taskset.api.spec import Role
from taskset.api.status import ReplicaStatus, seconds_since
from taskset.decide.cleanup import keeps_pods
from taskset.decide.context import PassContext
from taskset.decide.deadlines import deadline_exceeded
from taskset.decide.machines import ReplicaFacts
from taskset.decide.owned_sync import gate
from taskset.decide.policies import replica_may_retry, retry_due
from taskset.decide.retrying import replica_delay
from taskset.decide.start_deadline import start_deadline_passed
from taskset.decide.suspension import suspended
from taskset.observed.views import PodClass, PodView


def earlier_attempt_alive(ctx: PassContext) -> bool:
    """W-11: a Pod of this TaskSet that the current ControlUnit does not control belongs to an earlier
    attempt, left behind when that attempt's ControlUnit was deleted externally with Background or Orphan
    propagation (8.3). Row P0 deletes each replica's own; no replica starts the next attempt's Pod until
    every one of them is gone, or the two attempts would overlap."""
    unit = ctx.status.control_unit_uid
    found = ctx.earlier_attempt_pods.get(unit)
    if found is None:
        pods = ctx.observed.pods.values()
        found = any(pod.taskset_uid == ctx.ref.uid and pod.controller_uid != unit for pod in pods)
        ctx.earlier_attempt_pods[unit] = found
    return found


def creates_allowed(ctx: PassContext, position: int, role: Role, replica: ReplicaStatus) -> bool:
    """Whether the replica's Pod may be created: not while the TaskSet is being deleted, not once its
    ``activeDeadlineSeconds`` passed (the same pass ends the attempt: a retry that fell due then, as
    when the controller was down, starts no Pod), nor while an integration holds the role (asked only
    of replicas about to create: a running role costs nothing)."""
    if ctx.ref.deleting or deadline_exceeded(ctx):
        return False
    return replica.phase != ReplicaPhase.ATTEMPT_PENDING or gate(ctx, position, role) is None


class LazyReplicaFacts(ReplicaFacts):
    """The replica's facts, each worked out when a guard of its phase reads it.

    A pass steps every replica of the TaskSet, and most of them settle in a row that reads a few cheap
    facts (a running Pod still runs; a completed replica has no row at all): working out every fact
    for each (the retry delay, the deadlines, the role's gates, the times parsed) cost a 2,000-replica
    pass most of its time. The guards only read facts, and all of them are read before the row's effect
    changes anything, so a fact worked out late has the value it would have had at the start. Values
    as ``ReplicaFacts`` holds them, field by field those of the facts built whole. Not remembered: a
    step reads each at most a few times, and Python 3.11's ``cached_property`` takes a lock per read."""

    _ctx: PassContext
    _position: int
    _role: Role
    _replica: ReplicaStatus
    _pod: PodView | None
    _kind: PodClass

    def __init__(
        self,
        ctx: PassContext,
        position: int,
        role: Role,
        replica: ReplicaStatus,
        *,
        pod: PodView | None,
        kind: PodClass,
    ) -> None:
        # The instance's own dict: the frozen base refuses attribute writes.
        vars(self).update(_ctx=ctx, _position=position, _role=role, _replica=replica, _pod=pod, _kind=kind)

    @property
    def pod(self) -> PodClass:
        return self._kind

    @property
    def pod_deleting(self) -> bool:
        return self._pod is not None and self._pod.deleting

    @property
    def pod_terminal(self) -> bool:
        return self._pod is not None and self._pod.terminal

    @property
    def pod_running(self) -> bool:
        return self._pod is not None and self._pod.running

    @property
    def pod_assigned(self) -> bool:
        return self._pod is not None and self._pod.assigned

    @property
    def stopped(self) -> bool:
        return self._replica.stopped

    @property
    def creates_allowed(self) -> bool:
        return creates_allowed(self._ctx, self._position, self._role, self._replica)

    @property
    def creation_timed_out(self) -> bool:
        waited = seconds_since(self._replica.transition_time, self._ctx.now)
        return waited > self._ctx.settings.cache_creation_timeout

    @property
    def may_retry(self) -> bool:
        policy = self._role.retry_policy
        return replica_may_retry(policy, self._replica, taskset_deleting=self._ctx.ref.deleting)

    @property
    def retry_due(self) -> bool:
        delay = replica_delay(self._ctx, self._role, self._replica)
        return retry_due(delay, seconds_since(self._replica.transition_time, self._ctx.now))

    @property
    def earlier_attempt_alive(self) -> bool:
        return self._replica.phase == ReplicaPhase.ATTEMPT_PENDING and earlier_attempt_alive(self._ctx)

    @property
    def suspended(self) -> bool:
        return suspended(self._ctx)

    @property
    def suspend_deleted(self) -> bool:
        return self._replica.suspended

    @property
    def start_deadline_passed(self) -> bool:
        own = self._pod if self.ours else None
        return start_deadline_passed(self._role, self._replica, own, self._ctx.now)

    @property
    def keeps_finished(self) -> bool:
        return keeps_pods(self._ctx)


# Every fact a replica's guards may read is worked out above, but the one only the role sets for its
# replicas when the TaskSet ended (``taskset.decide.roles``): a fact added to ``ReplicaFacts`` and
# forgotten here would read its default.
_SET_BY_ROLE = {"taskset_ended"}
if {f.name for f in fields(ReplicaFacts)} - set(vars(LazyReplicaFacts)) != _SET_BY_ROLE:
    raise TypeError("LazyReplicaFacts must work out every field of ReplicaFacts but taskset_ended")
