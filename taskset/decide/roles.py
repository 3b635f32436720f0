"""The role machine (spec 5.2): a role waits for its replicas, runs, and completes once its completion
policy decides it (freezing the outcome, W-6) and every replica is done.

``sync_roles`` steps every role of the attempt, each stepping its replicas first (``run_replica``);
``ROLE_ROWS`` says what each row does and what message it writes.
"""

from __future__ import annotations

from dataclasses import dataclass

from taskset.api.constants import LOG_MSG_POD_COMPLETED, EventReason, QueryKey, ReplicaPhase, RolePhase, State
from taskset.api.names import pod_name
from taskset.api.spec import Role
from taskset.api.status import RoleStatus
from taskset.decide.capture import pod_history
from taskset.decide.context import (
    PassContext,
    Row,
    check_rows,
    fixed_message,
    row_message,
    shape_matches,
    transition_record,
    unhandled,
)
from taskset.decide.elastic import counted_replicas
from taskset.decide.machines import REPLICA_MACHINE, ROLE_MACHINE, ReplicaFacts, RoleFacts
from taskset.decide.plan import Event
from taskset.decide.policies import role_completion
from taskset.decide.replicas import REPLICA_ROWS, run_replica
from taskset.observed.views import PodClass

# Replica phases that say the replica's Pod ran (or the replica is done): the role has started.
_STARTED_PHASES = (
    ReplicaPhase.ATTEMPT_RUNNING,
    ReplicaPhase.ATTEMPT_DELETION_PENDING,
    ReplicaPhase.ATTEMPT_DELETION_REQUESTED,
    ReplicaPhase.ATTEMPT_COMPLETED,
    ReplicaPhase.COMPLETED,
)


@dataclass(frozen=True)
class RoleAt:
    """What a role row reads: the role's spec and its status."""

    role: Role
    status: RoleStatus


def sync_roles(ctx: PassContext) -> None:
    """Step every role of the running attempt (and, through them, every replica)."""
    spec = ctx.plan.spec
    if spec is None or not shape_matches(spec, ctx.status.roles):
        return  # the TaskSet's facts end such an attempt
    for position, (role, role_status) in enumerate(zip(spec.roles, ctx.status.roles, strict=True)):
        _run_role(ctx, position, role, role_status)


def _role_facts(role: Role, status: RoleStatus) -> RoleFacts:
    return RoleFacts(
        complete=role_completion(role, counted_replicas(role, status)) is not None,
        started=any(r.phase in _STARTED_PHASES for r in status.replicas),
        all_replicas_completed=all(r.phase == ReplicaPhase.COMPLETED for r in status.replicas),
    )


def _run_role(ctx: PassContext, position: int, role: Role, status: RoleStatus) -> None:
    for _ in range(ctx.settings.max_chain):
        if status.phase != RolePhase.COMPLETED:
            for replica in status.replicas:
                if (position, replica.index) not in ctx.busy:
                    run_replica(ctx, position, role, replica)
        transition = ROLE_MACHINE.step(status.phase, _role_facts(role, status))
        if transition is None:
            return
        row = ROLE_ROWS[transition.label]
        at = RoleAt(role, status)
        if transition.target is None:
            if row.wait is not None:
                row.wait(ctx, at)
            return
        if row.effect is not None and not row.effect(ctx, at):
            return  # an action is in flight
        _move_role(ctx, role.name, status, transition.target, row_message(row, ctx, at, status.phase_message))
    unhandled(ctx, f"role {role.name} did not settle within the chain bound")


# The message of a role or replica still unfinished when the TaskSet ends: the replica row's.
UNFINISHED_AT_END = fixed_message(REPLICA_ROWS, "S3")


def say_unfinished_ended(ctx: PassContext, label: str) -> None:
    """Close the roles and replicas still unfinished when the TaskSet ends (another role's outcome, a
    deadline, the ControlUnit's deletion ended the attempt first) along row ``S3`` of their machines:
    each becomes ``TaskRoleCompleted`` / ``TaskRoleReplicaCompleted``, since nothing will move them
    again, and a reader of the final status should not see a replica ``Running`` whose Pod the end
    deleted (as FrameworkController completes every Task with its Framework). A replica is marked
    ``stopped`` (the end stopped it; its outcome counts as failed, spec 2.5.3, though nothing counts
    after the end); a role keeps its state, which only its completion policy decides. Their messages
    say that the TaskSet ended, not what the last sync saw (the "Pod is running" of a deleted Pod).

    An illegal TaskSet (``T1``, ``label``) ran no attempt: its roles stay as built, only saying so."""
    for status in ctx.status.roles:
        if label == "T1":
            status.phase_message = UNFINISHED_AT_END
            for replica in status.replicas:
                replica.phase_message = UNFINISHED_AT_END
            continue
        for replica in status.replicas:
            facts = ReplicaFacts(pod=PodClass.ABSENT, stopped=True, taskset_ended=True)
            transition = REPLICA_MACHINE.step(replica.phase, facts)
            if transition is None or transition.target is None:
                continue  # completed already: a final phase never moves
            name = replica.pod_name or pod_name(ctx.ref.name, status.name, replica.index)
            ctx.plan.records.append(
                transition_record(
                    ctx,
                    QueryKey.REPLICA_TRANSITION,
                    str(replica.phase),
                    str(transition.target),
                    UNFINISHED_AT_END,
                    Role=status.name,
                    PodName=name,
                    ReplicaIndex=replica.index,
                )
            )
            replica.phase, replica.phase_message = transition.target, UNFINISHED_AT_END
            replica.transition_time, replica.stopped = ctx.stamp, True
            ctx.plan.records.append(pod_history(ctx, replica, LOG_MSG_POD_COMPLETED))
        ended = RoleFacts(complete=False, started=False, all_replicas_completed=True, taskset_ended=True)
        closing = ROLE_MACHINE.step(status.phase, ended)
        if closing is not None and closing.target is not None:
            _move_role(ctx, status.name, status, closing.target, UNFINISHED_AT_END)


# ----- what the rows do ----------------------------------------------------------------------------------


def _decide_role(ctx: PassContext, at: RoleAt) -> bool:
    """Freeze the outcome (W-6) and mark every unfinished replica stopped (W-5)."""
    role, status = at.role, at.status
    outcome = role_completion(role, counted_replicas(role, status))
    assert outcome is not None
    status.state = State.SUCCEEDED if outcome.succeeded else State.FAILED
    status.state_message = outcome.reason
    reason = EventReason.ROLE_SUCCEEDED if outcome.succeeded else EventReason.ROLE_FAILED
    ctx.plan.events.append(Event(reason, f"TaskRole:{role.name}, Reason:{outcome.reason}"))
    for replica in status.replicas:
        if replica.phase != ReplicaPhase.COMPLETED:
            replica.stopped = True
    return True


def _outcome_reason(ctx: PassContext, at: RoleAt) -> str:
    """The completion policy's reason, as the effect froze it into the role's state message."""
    return at.status.state_message


def _start_running(ctx: PassContext, at: RoleAt) -> bool:
    """The role's state becomes Running, with a TaskRoleRunning event."""
    at.status.state = State.RUNNING
    ctx.plan.events.append(Event(EventReason.ROLE_RUNNING, f"TaskRole:{at.role.name}"))
    return True


ROLE_ROWS: dict[str, Row[RoleAt]] = {
    "R1": Row(effect=_decide_role, message=_outcome_reason),
    "R2": Row(effect=_start_running, message="Some replica is running"),
    "R-wait": Row(),
    "R4": Row(message="TaskRole is completed ,because all replica are completed"),
    "R4b": Row(),
    "S3": Row(message=UNFINISHED_AT_END),
}
check_rows(ROLE_MACHINE, ROLE_ROWS)


def _move_role(ctx: PassContext, name: str, status: RoleStatus, target: RolePhase, message: str) -> None:
    ROLE_MACHINE.check(status.phase, target)
    ctx.plan.moves.append(str(target))
    ctx.plan.records.append(
        transition_record(ctx, QueryKey.ROLE_TRANSITION, str(status.phase), str(target), message, Role=name)
    )
    status.phase = target
    status.phase_message = message
    status.transition_time = ctx.stamp
