"""The replica machine (spec 5.3): one replica's Pod, from its create to the replica's final outcome.

``run_replica`` steps the machine; ``REPLICA_ROWS`` says what each of its rows does, how it waits and
what message it writes; the ``pod_*`` functions at the end fold a Pod action's result back in, moving
the machine along the row the action was for.
"""

from __future__ import annotations

from dataclasses import dataclass

from taskset.api.constants import (
    LOG_MSG_POD_COMPLETED,
    LOG_MSG_POD_RETRY,
    MSG_POD_DELETED,
    POD_REASON_CREATION_FAILED,
    POD_REASON_NAME_CONFLICT,
    EventReason,
    QueryKey,
    ReplicaPhase,
)
from taskset.api.names import control_unit_name, pod_name
from taskset.api.spec import Role
from taskset.api.status import ReplicaStatus, clip, seconds_since
from taskset.decide.capture import capture_pod, pod_history
from taskset.decide.context import (
    FromResult,
    PassContext,
    Row,
    check_rows,
    fixed_message,
    next_pass_now,
    row_message,
    transient,
    transition_record,
    unhandled,
)
from taskset.decide.deadlines import deadline_exceeded
from taskset.decide.machines import REPLICA_MACHINE
from taskset.decide.next_attempt import pod_decorations
from taskset.decide.owned_sync import report_hold
from taskset.decide.plan import ActionResult, CreatePod, DeletePod, Event, ResultKind, RowRef
from taskset.decide.policies import replica_retry_decision
from taskset.decide.replica_facts import LazyReplicaFacts
from taskset.decide.retrying import count_retry, observe_end, replica_delay, schedule_retry
from taskset.decide.start_deadline import requeue_for_start, start_deadline_rows
from taskset.decide.suspension import replica_rows, suspended
from taskset.decide.upkeep import STRAY_POD
from taskset.decide.waiting import (
    WAIT_MESSAGE_MAX,
    WAITING_PHASES,
    creation_accepted,
    creation_denied_for_now,
    creation_failed,
    creation_refused,
    deleted_pod,
    pod_wait,
    terminating_message,
    wait_kind,
)
from taskset.objects.pods import PodIdentity
from taskset.observed.proof import ProofSubject, creation_proof
from taskset.observed.views import POD_PHASE_UNKNOWN, PodClass, PodView, classify_pod

# Seconds between deletes of a Pod the cache never showed, until the API server answers NotFound.
UNSEEN_DELETE_POLL = 2.0
_OURS = (PodClass.CURRENT, PodClass.ADOPTABLE)


@dataclass(frozen=True)
class ReplicaAt:
    """What a replica row reads: the replica, its role (and position in the spec), and the Pod under
    its name with how that Pod relates to it (spec 5.3.1)."""

    position: int
    role: Role
    replica: ReplicaStatus
    pod: PodView | None
    kind: PodClass


# ----- the step -----------------------------------------------------------------------------------------


def run_replica(ctx: PassContext, position: int, role: Role, replica: ReplicaStatus) -> None:
    """Step the replica's machine until it waits, an action is in flight, or it is done."""
    # Whether the attempt is suspended is worked out once a pass, from the TaskSet's phase when first
    # asked: asked here, at the first replica's step, whether or not a guard reads it, so that a later
    # stage (the attempt may have ended by then) reads the answer the replicas had.
    suspended(ctx)
    for _ in range(ctx.settings.max_chain):
        pod, kind = _replica_pod(ctx, role, replica)
        if pod is not None and kind == PodClass.DUPLICATE:
            _delete_stray(ctx, position, replica, pod)
        if (
            pod is not None
            and kind in (PodClass.CURRENT, PodClass.ADOPTABLE)
            and replica.phase != ReplicaPhase.ATTEMPT_PENDING
        ):
            capture_pod(ctx, replica, pod)
        observe_end(ctx, role, replica, pod if kind in _OURS else None)
        facts = LazyReplicaFacts(ctx, position, role, replica, pod=pod, kind=kind)
        transition = REPLICA_MACHINE.step(replica.phase, facts)
        if transition is None:
            return
        row = REPLICA_ROWS[transition.label]
        at = ReplicaAt(position, role, replica, pod, kind)
        if transition.target is None:
            if row.wait is not None:
                row.wait(ctx, at)
            return
        if row.effect is not None and not row.effect(ctx, at):
            ctx.busy.add((position, replica.index))
            return  # an action is in flight
        message = row_message(row, ctx, at, replica.phase_message)
        _move_replica(ctx, role.name, replica, transition.target, message)
    unhandled(ctx, f"replica {role.name}/{replica.index} did not settle within the chain bound")


def _classify(ctx: PassContext, replica: ReplicaStatus, pod: PodView | None) -> PodClass:
    """How a Pod under the replica's name relates to it (5.3.1), from the cache or a live read."""
    return classify_pod(
        pod,
        recorded_uid=replica.pod_uid,
        control_unit_uid=ctx.status.control_unit_uid,
        taskset_uid=ctx.ref.uid,
        replica_attempt=replica.total_retried_count,
        proof_key=ctx.settings.proof_key,
        namespace=ctx.ref.namespace,
        taskset_name=ctx.ref.name,
        deleted=ctx.deleted,
        resumed=replica.suspended,
    )


def _replica_pod(ctx: PassContext, role: Role, replica: ReplicaStatus) -> tuple[PodView | None, PodClass]:
    pod = ctx.observed.pods.get(pod_name(ctx.ref.name, role.name, replica.index))
    return pod, _classify(ctx, replica, pod)


def _delete_stray(ctx: PassContext, position: int, replica: ReplicaStatus, pod: PodView) -> None:
    """Delete (once per pass) a Pod under the replica's name that is not the replica's own: an earlier
    attempt's (P0) or a duplicate of this attempt's (5.3.1). The replica treats it as absent."""
    if pod.deleting or pod.uid in ctx.deleted:
        return
    ctx.deleted.add(pod.uid)
    ctx.plan.intents.append(
        DeletePod(pod.name, pod.uid, position, replica.index, advances=False, row=STRAY_POD)
    )


# ----- what the rows do ----------------------------------------------------------------------------------


def _create_pod(ctx: PassContext, at: ReplicaAt) -> bool:
    """Ask for the replica's Pod, with what every integration adds; the create's result moves it."""
    replica, attempt = at.replica, ctx.status.attempt_id
    name = pod_name(ctx.ref.name, at.role.name, replica.index)
    identity = PodIdentity(
        taskset=ctx.ref.name,
        namespace=ctx.ref.namespace,
        taskset_uid=ctx.ref.uid,
        role=at.role.name,
        index=replica.index,
        name=name,
        control_unit_name=control_unit_name(ctx.ref.name, attempt),
        control_unit_uid=ctx.status.control_unit_uid or "",
        taskset_attempt=attempt,
        replica_attempt=replica.total_retried_count,
        proof=creation_proof(
            ctx.settings.proof_key,
            ProofSubject(
                ctx.ref.namespace, name, ctx.status.control_unit_uid or "", replica.total_retried_count
            ),
        ),
    )
    ctx.plan.intents.append(
        CreatePod(
            at.position,
            replica.index,
            name,
            attempt,
            replica.total_retried_count,
            identity=identity,
            decorations=pod_decorations(ctx, at.role, replica, identity),
            row=_CREATE_POD,
        )
    )
    return False


def _adopt_pod(ctx: PassContext, at: ReplicaAt) -> bool:
    """Record this attempt's Pod found under the name (a lost status write, W-1) as the replica's own."""
    pod, replica = at.pod, at.replica
    assert pod is not None
    replica.pod_name = pod.name
    replica.pod_uid = pod.uid
    if pod.replica_attempt_id is not None and pod.replica_attempt_id > replica.total_retried_count:
        replica.total_retried_count = pod.replica_attempt_id
    capture_pod(ctx, replica, pod)
    return True


def _pod_conflict(ctx: PassContext, at: ReplicaAt) -> bool:
    """Record the name conflict as the Pod's reason, and say so in a Warning event."""
    _flag_name_conflict(ctx, at.replica, pod_name(ctx.ref.name, at.role.name, at.replica.index))
    return True


def _flag_name_conflict(ctx: PassContext, replica: ReplicaStatus, name: str) -> None:
    replica.pod_reason = POD_REASON_NAME_CONFLICT
    ctx.plan.events.append(Event(EventReason.POD_NAME_CONFLICT, f"Pod name conflict: {name}"))


def _conflict_text(name: str) -> str:
    return f"Pod name conflict: {name} belongs to another owner"


def _conflict_message(ctx: PassContext, at: ReplicaAt) -> str:
    """The name the foreign Pod holds."""
    return _conflict_text(pod_name(ctx.ref.name, at.role.name, at.replica.index))


def _delete_pod(ctx: PassContext, at: ReplicaAt) -> bool:
    """Delete the replica's Pod (UID precondition); the delete's result moves the replica.

    A recorded Pod the cache does not show (P2's timeout, or just vanished) is deleted by name and UID
    anyway: the cache's silence proves nothing, and only the API server's answer does (spec 8.6)."""
    pod, replica = at.pod, at.replica
    if replica.pod_uid and (pod is None or (pod.uid == replica.pod_uid and not pod.deleting)):
        name = replica.pod_name or pod_name(ctx.ref.name, at.role.name, replica.index)
        seen = pod is not None
        ctx.plan.intents.append(
            DeletePod(
                name, replica.pod_uid, at.position, replica.index, advances=True, seen=seen, row=_DELETE_POD
            )
        )
        return False
    return True


def _start_retry(ctx: PassContext, at: ReplicaAt) -> bool:
    """Log the Pod's history, then forget the Pod and count the new attempt."""
    replica = at.replica
    ctx.plan.records.append(pod_history(ctx, replica, LOG_MSG_POD_RETRY))
    count_retry(replica)
    replica.clear_pod()
    replica.total_retried_count += 1
    return True


def _schedule(ctx: PassContext, at: ReplicaAt) -> bool:
    """P13-retry: write when the retry is due."""
    schedule_retry(ctx, at.role, at.replica)
    return True


# ----- the messages rows write ----------------------------------------------------------------------------

_GOING_TO_START = "TaskRole replica is going to start"
_STOPPED = "Replica is stopped by parent TaskRole"
# The start of P5's message for a Pod whose phase became Unknown (spec 8.2).
_UNKNOWN_EXIT = f"PodPhase:{POD_PHASE_UNKNOWN} ,"
_DELETION_REQUESTED = "The deletion request of pod has been made"


def _exit_message(ctx: PassContext, at: ReplicaAt) -> str:
    """The Pod's phase, message and reason, in O's format (spec 2.5.3)."""
    pod = at.pod
    if pod is None:
        return at.replica.phase_message
    return f"PodPhase:{pod.phase} ,PodMessage:{pod.message} ,PodReason: {pod.reason}"


def _ended_unknown(replica: ReplicaStatus) -> bool:
    """Whether this attempt ended because its Pod's phase became Unknown (node lost, spec 8.2)."""
    return replica.phase_message.startswith(_UNKNOWN_EXIT)


def _deletion_message(replica: ReplicaStatus) -> str:
    """P9's message. O overwrites the exit text with its own (W-23); for a Pod lost to phase Unknown that
    text is the only record of why the attempt failed (no container exit, often no Pod reason), so R
    keeps it, and P13 puts it in front of the retry decision."""
    return replica.phase_message if _ended_unknown(replica) else _DELETION_REQUESTED


def _deletion_requested(ctx: PassContext, at: ReplicaAt) -> str:
    """ "The deletion request of pod has been made", or the exit text of a Pod lost to phase Unknown."""
    return _deletion_message(at.replica)


def _final_message(ctx: PassContext, at: ReplicaAt) -> str:
    """Stopped, succeeded (the exit text), or the retry decision after why the attempt failed."""
    replica = at.replica
    if replica.stopped:
        return _STOPPED
    if replica.succeeded:
        if deleted_pod(replica.phase_message) is not None:  # P12 named the finalizers that held it
            return _DELETION_REQUESTED
        return replica.phase_message or "TaskRole replica succeeded"
    return _retry_decision(at.role, replica)


def _retry_message(ctx: PassContext, at: ReplicaAt) -> str:
    """The role's retry decision, after why the attempt failed when only the message keeps that."""
    return _retry_decision(at.role, at.replica)


def _retry_decision(role: Role, replica: ReplicaStatus) -> str:
    """P13's message: the retry decision, after the reason the attempt failed when nothing else in the
    status keeps that reason: a rejected create or a name conflict (no Pod ran), a Pod whose phase
    became Unknown (no container exit was ever reported), or a Pod someone else deleted before it
    exited ("Pod x-w-0 was deleted")."""
    decision = replica_retry_decision(role.retry_policy, replica)
    creation = replica.pod_reason in (POD_REASON_CREATION_FAILED, POD_REASON_NAME_CONFLICT)
    if creation or _ended_unknown(replica):
        return f"{replica.phase_message}; {decision}"
    deleted = deleted_pod(replica.phase_message) if replica.terminated_info is None else None
    return f"{MSG_POD_DELETED.format(name=deleted)}; {decision}" if deleted else decision


def _pod_deleted_message(ctx: PassContext, at: ReplicaAt) -> str:
    """P10's and P11's message: someone else deleted the replica's Pod (P10 sees it terminating, and
    names the finalizers that hold it; P11 sees it gone)."""
    pod, replica = at.pod, at.replica
    held = terminating_message(pod) if pod is not None and at.kind in _OURS else None
    name = replica.pod_name or pod_name(ctx.ref.name, at.role.name, replica.index)
    return held or MSG_POD_DELETED.format(name=name)


# ----- how rows wait --------------------------------------------------------------------------------------


def _wait_for_earlier_pods(ctx: PassContext, at: ReplicaAt) -> None:
    """Delete the earlier Pod under the name, if there is one, and look again later."""
    if at.pod is not None:
        _delete_stray(ctx, at.position, at.replica, at.pod)
    ctx.plan.requeue(ctx.settings.cache_wait_requeue)


def _hold(ctx: PassContext, at: ReplicaAt) -> None:
    """Create nothing: the TaskSet is being deleted, or say in the phaseMessage which integration holds
    the role and why (its watch events bring the pass that creates the Pod)."""
    if not ctx.ref.deleting and not deadline_exceeded(ctx):
        at.replica.phase_message = report_hold(ctx, at.position, at.role, at.replica.phase_message)


def _wait_for_cache(ctx: PassContext, at: ReplicaAt) -> None:
    """Look again when the cache should show the Pod, or when its creation times out."""
    settings = ctx.settings
    remaining = settings.cache_creation_timeout - seconds_since(at.replica.transition_time, ctx.now)
    ctx.plan.requeue(min(settings.cache_wait_requeue, remaining + 1))


def _wait_for_deletion(ctx: PassContext, at: ReplicaAt) -> None:
    """Look again while the Pod goes away (its delete event usually comes first), and say so when
    finalizers hold it in Terminating (a TaskSet never waits on it silently)."""
    held = terminating_message(at.pod) if at.pod is not None else None
    if held is not None and at.replica.phase == ReplicaPhase.ATTEMPT_DELETION_REQUESTED:
        at.replica.phase_message = held
    ctx.plan.requeue(ctx.settings.deletion_wait_requeue)


def _wait_for_retry_delay(ctx: PassContext, at: ReplicaAt) -> None:
    """Look again when the role's retry delay has passed."""
    elapsed = seconds_since(at.replica.transition_time, ctx.now)
    ctx.plan.requeue(replica_delay(ctx, at.role, at.replica) - elapsed)


# The row that entered each waiting phase, whose message comes back once the Pod stops waiting.
_ENTRY_ROW = {ReplicaPhase.ATTEMPT_PREPARING: "P3", ReplicaPhase.ATTEMPT_ASSIGNED: "P6"}


def _report_wait(ctx: PassContext, at: ReplicaAt) -> None:
    """Say why a Pending Pod does not start: in the phaseMessage, and once in a Warning event.

    The replica's phaseMessage says why its Pod waits, and goes back to the phase's own message once it
    no longer does. The event goes out when the message starts saying so (or changes cause): decide's
    only memory is the status, and a phaseMessage that already says so was written together with the
    event, so each Pod's wait is reported once, across passes and restarts."""
    pod, replica = at.pod, at.replica
    requeue_for_start(ctx, at.role, replica, pod if at.kind in _OURS else None)
    wait = pod_wait(pod) if pod is not None and replica.phase in WAITING_PHASES else None
    reported = wait_kind(replica.phase_message)
    if wait is None:
        if reported is not None and replica.phase in _ENTRY_ROW:
            replica.phase_message = fixed_message(REPLICA_ROWS, _ENTRY_ROW[replica.phase])
        return
    assert pod is not None
    if reported != wait.reason:
        ctx.plan.events.append(Event(wait.reason, clip(f"{pod.name}: {wait.message}", WAIT_MESSAGE_MAX)))
    replica.phase_message = wait.message


# ----- Pod action results ---------------------------------------------------------------------------------


def _replica_of(ctx: PassContext, role: int, index: int) -> tuple[str, ReplicaStatus]:
    """The role's name and the replica an intent was for."""
    role_status = ctx.status.roles[role]
    return role_status.name, role_status.replicas[index]


def pod_created(ctx: PassContext, intent: CreatePod, result: ActionResult) -> None:
    """P1's create came back: created (along its row), already there (adopt it, or a conflict),
    rejected (P1-rejected), or a transient failure to retry with backoff."""
    role_name, replica = _replica_of(ctx, intent.role, intent.index)
    pod = result.view if isinstance(result.view, PodView) else None
    if result.kind == ResultKind.OK and pod is not None:
        replica.pod_name, replica.pod_uid = pod.name, pod.uid
        replica.pod_ip, replica.pod_host_ip = pod.pod_ip, pod.host_ip
        replica.start_at = pod.start_time
        _move_on_result(
            ctx, role_name, replica, intent.row.label, fixed_message(REPLICA_ROWS, intent.row.label)
        )
        creation_accepted(ctx, pod.name)
        return
    if result.kind == ResultKind.EXISTS:
        _pod_exists(ctx, intent, role_name, replica, pod)
        return
    if result.kind == ResultKind.INVALID:
        replica.pod_reason = POD_REASON_CREATION_FAILED
        ctx.plan.events.append(Event(EventReason.POD_CREATION_FAILED, f"{intent.name}: {result.message}"))
        creation_refused(ctx, intent.name, result.message)
        _move_on_result(ctx, role_name, replica, "P1-rejected", result.message)
        next_pass_now(ctx)
        return
    if result.kind == ResultKind.REFUSED:
        creation_denied_for_now(ctx, intent.name, replica, result.message)
        return
    creation_failed(ctx, intent.name, result.message)


def _pod_exists(
    ctx: PassContext, intent: CreatePod, role_name: str, replica: ReplicaStatus, pod: PodView | None
) -> None:
    if pod is None:
        ctx.plan.requeue(0)  # gone again already: try once more
        return
    kind = _classify(ctx, replica, pod)
    if kind in (PodClass.ADOPTABLE, PodClass.CURRENT):
        replica.pod_name, replica.pod_uid = pod.name, pod.uid
        _move_on_result(
            ctx, role_name, replica, intent.row.label, fixed_message(REPLICA_ROWS, intent.row.label)
        )
    elif kind == PodClass.FOREIGN:
        _flag_name_conflict(ctx, replica, pod.name)
        _move_on_result(ctx, role_name, replica, "P1-rejected", _conflict_text(pod.name))
        next_pass_now(ctx)
    else:  # an earlier Pod of this replica: P0 on the next pass deletes it and waits
        ctx.plan.requeue(1.0)


def pod_deleted(ctx: PassContext, intent: DeletePod, result: ActionResult) -> None:
    """P9's delete came back: the replica moves along the row once it is accepted (or the Pod is gone);
    a failure is retried with backoff."""
    if result.kind == ResultKind.ERROR:
        transient(ctx, None, result.message)
        return
    if result.kind == ResultKind.OK and not intent.seen:
        ctx.plan.requeue(UNSEEN_DELETE_POLL)  # it exists and is going away: ask again until NotFound
        return
    role_name, replica = _replica_of(ctx, intent.role, intent.index)
    _move_on_result(ctx, role_name, replica, intent.row.label, _deletion_message(replica))
    if result.kind != ResultKind.OK:  # already gone: no deletion event will come
        next_pass_now(ctx)


# ----- the table ------------------------------------------------------------------------------------------

# The rows whose effects ask the API server for something: their intents carry them, and each takes
# the answer in its ``on_result``.
_CREATE_POD = RowRef(REPLICA_MACHINE.name, "P1")
_DELETE_POD = RowRef(REPLICA_MACHINE.name, "P9")

REPLICA_ROWS: dict[str, Row[ReplicaAt]] = {
    "S3": Row(message="Not finished when the TaskSet ended"),  # closed at the end (roles)
    "S1": Row(message=_STOPPED),
    "P0": Row(wait=_wait_for_earlier_pods),
    "P1-conflict": Row(effect=_pod_conflict, message=_conflict_message),
    "P1-adopt": Row(effect=_adopt_pod, message=_GOING_TO_START),
    "P1-hold": Row(wait=_hold),
    "P1": Row(effect=_create_pod, message=_GOING_TO_START, on_result=pod_created),
    "P1-rejected": Row(
        message=FromResult("the API server's reason for refusing the create, or the name conflict")
    ),
    "P10": Row(message=_pod_deleted_message),
    "S2": Row(message="Stop replica"),
    "P3": Row(message="Creation has be made,and pod appears at local"),
    "P2": Row(message="It's already timeout ,can't wait anymore"),
    "P3b": Row(wait=_wait_for_cache),
    "P5": Row(message=_exit_message),
    "P4": Row(message="Pod is running"),
    "P6": Row(message="Pod is assigned to a node"),
    "P11": Row(message=_pod_deleted_message),
    "P-wait": Row(wait=_report_wait),
    "P9-keep": Row(message=_final_message),  # cleanPodPolicy keeps the exited Pod
    "P9": Row(effect=_delete_pod, message=_deletion_requested, on_result=pod_deleted),
    "P12": Row(wait=_wait_for_deletion),
    "P13-retry": Row(effect=_schedule, message=_retry_message),
    "P13": Row(message=_final_message),
    "P14": Row(effect=_start_retry, message="TaskRole replica is going to retry"),
    "P14b": Row(wait=_wait_for_retry_delay),
    **replica_rows(ReplicaAt),  # suspension
    **start_deadline_rows(ReplicaAt),  # the start deadline
}
check_rows(REPLICA_MACHINE, REPLICA_ROWS, issuing=(_CREATE_POD, _DELETE_POD))

# Where each row goes, for the results that move the replica along the row their action was for.
_TARGET = {transition.label: transition.target for transition in REPLICA_MACHINE.transitions}


# ----- moving and recording -------------------------------------------------------------------------------


def _move_replica(
    ctx: PassContext, role_name: str, replica: ReplicaStatus, target: ReplicaPhase, message: str
) -> None:
    REPLICA_MACHINE.check(replica.phase, target)
    ctx.plan.moves.append(str(target))
    name = replica.pod_name or pod_name(ctx.ref.name, role_name, replica.index)
    ctx.plan.records.append(
        transition_record(
            ctx,
            QueryKey.REPLICA_TRANSITION,
            str(replica.phase),
            str(target),
            message,
            Role=role_name,
            PodName=name,
            ReplicaIndex=replica.index,
        )
    )
    replica.phase = target
    replica.phase_message = message
    replica.transition_time = ctx.stamp
    if target == ReplicaPhase.COMPLETED:
        ctx.plan.records.append(pod_history(ctx, replica, LOG_MSG_POD_COMPLETED))


def _move_on_result(
    ctx: PassContext, role_name: str, replica: ReplicaStatus, label: str, message: str
) -> None:
    """Move along the row ``label`` because an action's result says so."""
    target = _TARGET[label]
    assert target is not None, f"row {label} keeps the phase"
    _move_replica(ctx, role_name, replica, target, message)
