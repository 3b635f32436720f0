"""Why a replica waits, in words a user reads.

A Pod that was created and observed but never starts has no timeout (spec S53: it waits, since a
scheduler or a node may yet come). So the waiting must at least be visible: the replica's
phaseMessage says why, a Warning event says it once, and the Running condition names the waiting
replicas. Every text is derived from the observed Pods alone, never from the clock, so a resync over
an unchanged cluster writes nothing.

The text functions are pure; ``report_waiting`` puts the summary into the TaskSet's Running condition
at the end of a pass. The replica's own wait row (P-wait) lives with the replica machine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from taskset.api.constants import (
    WAIT_CONTAINER_PREFIX,
    WAIT_HELD_PREFIX,
    WAIT_UNSCHEDULABLE_PREFIX,
    ConditionReason,
    ConditionStatus,
    ConditionType,
    EventReason,
    ReplicaPhase,
    State,
    TaskSetPhase,
)
from taskset.api.status import ReplicaStatus, TaskSetStatus, clip
from taskset.decide.context import PassContext
from taskset.decide.plan import Event
from taskset.observed.views import PodView

# Bounds: the scheduler's message grows with the cluster's variety of nodes, and a status or an event
# is no place for kilobytes of it (the CRD allows 32 KiB per condition message). Both are within the
# status's own bound on a message (MESSAGE_MAX, taskset.api.status), so that never clips them again.
WAIT_MESSAGE_MAX = 512  # characters of one replica's reason: its phaseMessage and its event
WAITING_SUMMARY_MAX = 1024  # characters of the Running condition's message
WAITING_SUMMARY_NAMED = 3  # replicas the condition names; the others are counted
# Characters per named replica: three of them, the count and the "and N more" fit the bound above.
WAITING_ENTRY_MAX = 300

_UNSCHEDULABLE = WAIT_UNSCHEDULABLE_PREFIX
_CONTAINER_WAITING = re.compile(rf"^{WAIT_CONTAINER_PREFIX}\S* waiting: ")
_WAITING_SUMMARY = re.compile(r"^\d+ replicas? waiting: ")
# Replica phases whose Pod is Pending: the only ones a Pod can be stuck in without a transition.
WAITING_PHASES = (ReplicaPhase.ATTEMPT_PREPARING, ReplicaPhase.ATTEMPT_ASSIGNED)
# The start of the phaseMessage of a replica whose Pod an integration holds back (taskset.decide.owned_sync).
HELD_PREFIX = WAIT_HELD_PREFIX
# The start of the phaseMessage of a replica whose Pod create admission denies for now (a quota, a
# missing service account: kube.TRANSIENT_DENIALS); the create is retried with backoff.
CREATE_REFUSED_PREFIX = "Waiting to create Pod "
# The phaseMessage of a replica whose Pod is held in Terminating by finalizers, and
# of one whose Pod someone else deleted (P10, P11); group 1 is the Pod's name.
_TERMINATING = re.compile(r"^Pod (\S+) is terminating, held by finalizers: ")
_DELETED = re.compile(r"^Pod (\S+) (?:was deleted$|is terminating, held by finalizers: )")


@dataclass(frozen=True)
class PodWait:
    """Why a Pending Pod does not start: the event's reason and the replica's phaseMessage."""

    reason: EventReason
    message: str


def pod_wait(pod: PodView) -> PodWait | None:
    """Why ``pod`` will not start by itself, if its status says so: the scheduler found no node for it,
    or one of its containers waits for something other than its normal start (an image that cannot
    be pulled, a missing ConfigMap or Secret, ...)."""
    if pod.unschedulable_message:
        text = _UNSCHEDULABLE + pod.unschedulable_message
        return PodWait(EventReason.POD_UNSCHEDULABLE, clip(text, WAIT_MESSAGE_MAX))
    if pod.waiting is not None:
        waiting = pod.waiting
        text = f"{WAIT_CONTAINER_PREFIX}{waiting.container} waiting: {waiting.reason}"
        if waiting.message:
            text += f": {waiting.message}"
        return PodWait(EventReason.POD_CONTAINER_WAITING, clip(text, WAIT_MESSAGE_MAX))
    return None


def create_refused_message(name: str, refusal: str) -> str:
    """A replica's phaseMessage while admission denies its Pod for now: the API server's own words, and
    that the controller keeps trying (the denial clears up without a change to the TaskSet)."""
    return clip(f"{CREATE_REFUSED_PREFIX}{name}, retrying with backoff: {refusal}", WAIT_MESSAGE_MAX)


def terminating_message(pod: PodView) -> str | None:
    """A replica's phaseMessage while its Pod is held in Terminating by finalizers, naming them (a
    Pod being deleted without any will be gone within its grace period): None if it is not held."""
    if not pod.deleting or not pod.finalizers:
        return None
    text = f"Pod {pod.name} is terminating, held by finalizers: {', '.join(pod.finalizers)}"
    return clip(text, WAIT_MESSAGE_MAX)


def deleted_pod(message: str) -> str | None:
    """The Pod a replica's phaseMessage says was deleted by someone else, or is held terminating (the
    words of P10, P11 and ``terminating_message``); None if it says neither."""
    found = _DELETED.match(message)
    return found.group(1) if found else None


def wait_kind(message: str) -> EventReason | None:
    """Which wait a replica's phaseMessage reports, if it reports one (the inverse of ``pod_wait``,
    ``create_refused_message`` and ``terminating_message``)."""
    if message.startswith(_UNSCHEDULABLE):
        return EventReason.POD_UNSCHEDULABLE
    if _CONTAINER_WAITING.match(message):
        return EventReason.POD_CONTAINER_WAITING
    if message.startswith(HELD_PREFIX):
        return EventReason.ROLE_HELD
    if message.startswith(CREATE_REFUSED_PREFIX):
        return EventReason.POD_CREATION_FAILED
    if _TERMINATING.match(message):
        return EventReason.POD_STUCK_TERMINATING
    return None


def _waits(phase: str, message: str) -> bool:
    """Whether a replica's status says it waits: its Pending Pod does not start, it is held, admission
    denies its Pod for now, or its Pod is held in Terminating."""
    if phase == ReplicaPhase.ATTEMPT_PENDING:
        return message.startswith((HELD_PREFIX, CREATE_REFUSED_PREFIX))
    if phase == ReplicaPhase.ATTEMPT_DELETION_REQUESTED:
        return _TERMINATING.match(message) is not None
    return phase in WAITING_PHASES and wait_kind(message) is not None


def waiting_summary(status: TaskSetStatus) -> str:
    """The replicas whose Pods wait or are held (per their phaseMessage), in spec order: "2 replicas
    waiting: r-0: Pod is unschedulable: ...; r-1: ...", naming the first few and counting the rest,
    bounded."""
    waiting = [
        clip(f"{role.name}-{replica.index}: {replica.phase_message}", WAITING_ENTRY_MAX)
        for role in status.roles
        for replica in role.replicas
        if _waits(replica.phase, replica.phase_message)
    ]
    if not waiting:
        return ""
    count = len(waiting)
    text = f"{count} replica{'' if count == 1 else 's'} waiting: " + "; ".join(
        waiting[:WAITING_SUMMARY_NAMED]
    )
    if count > WAITING_SUMMARY_NAMED:
        text += f"; and {count - WAITING_SUMMARY_NAMED} more"
    return clip(text, WAITING_SUMMARY_MAX)


# The Running condition's message starts so while replicas wait on a lost node (decide.node_recovery).
NODE_LOST_PREFIX: Final = "NodeLost: "


def report_waiting(ctx: PassContext) -> None:
    """The Running condition names the waiting replicas while the attempt is Preparing or Running, and
    goes back to the state message once none waits.

    Departs from spec 2.5.1 (conditions "carry no information of their own" and are added when first
    True) because a TaskSet must never hang silently: a TaskSet that never ran gets a
    ``Running`` condition that is False with reason ``Waiting`` and says why. Status and reason still
    restate ``state``, so ``kubectl wait --for=condition=Running`` is unaffected, and the
    lastTransitionTime moves only with the status, as before."""
    status = ctx.status
    if status.phase == TaskSetPhase.COMPLETED:
        return  # the final condition messages are the completion reason (6.3)
    noted = status.condition(ConditionType.RUNNING)
    if noted is not None and noted.message.startswith(NODE_LOST_PREFIX):
        return  # report_node_loss owns it: it names the lost nodes over the summary, and takes it back
    active = status.phase in (TaskSetPhase.ATTEMPT_PREPARING, TaskSetPhase.ATTEMPT_RUNNING)
    summary = waiting_summary(status) if active else ""
    condition = status.condition(ConditionType.RUNNING)
    if summary:
        running = status.state == State.RUNNING
        if condition is not None:
            kind, reason = condition.status, condition.reason
        elif running:
            kind, reason = ConditionStatus.TRUE, str(ConditionReason.RUNNING)
        else:
            kind, reason = ConditionStatus.FALSE, str(status.state)
        status.set_condition(ConditionType.RUNNING, kind, reason, summary, ctx.stamp)
    elif condition is not None and _WAITING_SUMMARY.match(condition.message):
        status.set_condition(
            ConditionType.RUNNING, condition.status, condition.reason, status.state_message, ctx.stamp
        )


# ----- creates the API server refuses ---------------------------------------------------------------------

# The PodCreationRefused condition's reasons: refused for good, and created again since.
CREATION_REFUSED = "Refused"
CREATION_ACCEPTED = "Created"


def creation_denied_for_now(ctx: PassContext, name: str, replica: ReplicaStatus, refusal: str) -> None:
    """Admission denies the Pod for now (a quota, a missing service account): the replica stays where
    it is and says why in its phaseMessage (so in the Running condition too), a Warning event says it
    once per distinct refusal for the whole TaskSet (not once per Pod: a full quota refuses each of a
    thousand Pods, naming it), and the create is retried with backoff."""
    message = create_refused_message(name, refusal)
    if replica.phase_message != message and not creation_failure_said(ctx, name, message):
        ctx.plan.events.append(
            Event(EventReason.POD_CREATION_FAILED, clip(f"{name}: {refusal}", WAIT_MESSAGE_MAX))
        )
    replica.phase_message = message
    ctx.plan.backoff = True


def creation_failed(ctx: PassContext, name: str, error: str) -> None:
    """A Pod create failed in a way retried with backoff (an API server error, a webhook down): a
    Warning event says it once per pass for every Pod failing alike, so a pass that creates a thousand
    Pods against a failing API server sends one event, not a thousand."""
    ctx.plan.backoff = True
    if not creation_failure_said(ctx, name, f"{name}: {error}"):
        ctx.plan.events.append(Event(EventReason.POD_CREATION_FAILED, f"{name}: {error}"))


def creation_failure_said(ctx: PassContext, name: str, text: str) -> bool:
    """Whether ``text``, a failure of Pod ``name``'s create, was already said for the TaskSet, for this
    or another Pod: the texts compare with each one's Pod name taken out. What is said is remembered
    for the pass, beginning with the refusals the status records (each replica's phaseMessage was
    written with its event, so a refusal said once is not said again on the retries)."""
    said = ctx.failures_said
    if said is None:
        said = ctx.failures_said = set()
        for role in ctx.status.roles:
            for other in role.replicas:
                waiting = _refused_pod(other.phase_message)
                if waiting is not None:
                    said.add(other.phase_message.replace(waiting, _POD))
    key = text.replace(name, _POD)
    if key in said:
        return True
    said.add(key)
    return False


# A Pod's name in a failure's text, taken out (no Pod name holds a NUL).
_POD = "\0"
_REFUSED = re.compile(rf"^{re.escape(CREATE_REFUSED_PREFIX)}(\S+), retrying with backoff: ")


def _refused_pod(message: str) -> str | None:
    """The Pod a replica's phaseMessage says admission refuses for now (``create_refused_message``)."""
    found = _REFUSED.match(message)
    return found.group(1) if found else None


def creation_refused(ctx: PassContext, name: str, refusal: str) -> None:
    """The API server refused the Pod for good (PodSecurity admission, an invalid Pod, a policy): the
    PodCreationRefused condition names it with the API server's words, where ``kubectl describe``
    shows it first; the replica's own message and the Warning event say it too."""
    ctx.status.set_condition(
        ConditionType.POD_CREATION_REFUSED,
        ConditionStatus.TRUE,
        CREATION_REFUSED,
        f"Pod {name}: {refusal}",
        ctx.stamp,
    )


def creation_accepted(ctx: PassContext, name: str) -> None:
    """A Pod was created: a PodCreationRefused condition that said otherwise is over."""
    condition = ctx.status.condition(ConditionType.POD_CREATION_REFUSED)
    if condition is not None and condition.status == ConditionStatus.TRUE:
        ctx.status.set_condition(
            ConditionType.POD_CREATION_REFUSED,
            ConditionStatus.FALSE,
            CREATION_ACCEPTED,
            f"Pod {name} was created",
            ctx.stamp,
        )
