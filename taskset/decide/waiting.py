"""Why a replica waits (issue 8), in words a user reads.

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

from taskset.api.constants import ConditionReason, ConditionStatus, ConditionType, EventReason, State
from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import TaskSetPhase as T
from taskset.api.status import TaskSetStatus, clip
from taskset.api.views import PodView
from taskset.decide.passes import PassContext

# Bounds: the scheduler's message grows with the cluster's variety of nodes, and a status or an event
# is no place for kilobytes of it (the CRD allows 32 KiB per condition message). Both are within the
# status's own bound on a message (MESSAGE_MAX, taskset.api.status), so that never clips them again.
WAIT_MESSAGE_MAX = 512  # characters of one replica's reason: its phaseMessage and its event
WAITING_SUMMARY_MAX = 1024  # characters of the Running condition's message
WAITING_SUMMARY_NAMED = 3  # replicas the condition names; the others are counted
# Characters per named replica: three of them, the count and the "and N more" fit the bound above.
WAITING_ENTRY_MAX = 300

_UNSCHEDULABLE = "Pod is unschedulable: "
_CONTAINER_WAITING = re.compile(r"^container \S* waiting: ")
_WAITING_SUMMARY = re.compile(r"^\d+ replicas? waiting: ")
# Replica phases whose Pod is Pending: the only ones a Pod can be stuck in without a transition.
WAITING_PHASES = (P.ATTEMPT_PREPARING, P.ATTEMPT_ASSIGNED)
# The start of the phaseMessage of a replica whose Pod an integration holds back (taskset.decide.owned).
HELD_PREFIX = "Held: "


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
        text = f"container {waiting.container} waiting: {waiting.reason}"
        if waiting.message:
            text += f": {waiting.message}"
        return PodWait(EventReason.POD_CONTAINER_WAITING, clip(text, WAIT_MESSAGE_MAX))
    return None


def wait_kind(message: str) -> EventReason | None:
    """Which wait a replica's phaseMessage reports, if it reports one (the inverse of ``pod_wait``)."""
    if message.startswith(_UNSCHEDULABLE):
        return EventReason.POD_UNSCHEDULABLE
    if _CONTAINER_WAITING.match(message):
        return EventReason.POD_CONTAINER_WAITING
    if message.startswith(HELD_PREFIX):
        return EventReason.ROLE_HELD
    return None


def _waits(phase: str, message: str) -> bool:
    """Whether a replica's status says it waits: its Pending Pod does not start, or it is held."""
    if phase == P.ATTEMPT_PENDING:
        return message.startswith(HELD_PREFIX)
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


def report_waiting(ctx: PassContext) -> None:
    """The Running condition names the waiting replicas while the attempt is Preparing or Running, and
    goes back to the state message once none waits.

    Departs from spec 2.5.1 (conditions "carry no information of their own" and are added when first
    True) because issue 8 asks that a TaskSet never hang silently: a TaskSet that never ran gets a
    ``Running`` condition that is False with reason ``Waiting`` and says why. Status and reason still
    restate ``state``, so ``kubectl wait --for=condition=Running`` is unaffected, and the
    lastTransitionTime moves only with the status, as before."""
    status = ctx.status
    if status.phase == T.COMPLETED:
        return  # the final condition messages are the completion reason (6.3)
    active = status.phase in (T.ATTEMPT_PREPARING, T.ATTEMPT_RUNNING)
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
