"""Pods that will not go away, and Pods left behind.

Two things a TaskSet used to be silent about. A Pod held in ``Terminating`` (by a finalizer nobody
removes, or a node that never confirms) blocks its replica's next attempt and the attempt's end, and
the TaskSet stayed ``Running`` for half an hour saying nothing: the replica's phaseMessage names the
finalizers at once (``taskset.decide.replicas``), and once a Pod is still there
``Settings.stuck_terminating_after`` seconds past its deletion time, the ``PodsStuckTerminating``
condition names it and a Warning event says so. And a ControlUnit deleted with orphan propagation
leaves its Pods running, ownerless: when the TaskSet is completed, a Pod whose UID the status recorded
for a replica is deleted (UID precondition), since nothing else will ever end it.

Which Pods are this TaskSet's is decided by UIDs only the controller writes or the API server assigns:
the Pod UIDs in the status and the recorded ControlUnit's UID as the Pod's controlling owner. Annotations
(the ``TSUID`` a stranger can copy) narrow nothing here, so a stranger's Pod is never named or deleted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from taskset.api.constants import ConditionStatus, ConditionType, EventReason
from taskset.api.status import TaskSetStatus, clip, seconds_since
from taskset.decide.context import PassContext
from taskset.decide.plan import DeletePod, Event
from taskset.decide.upkeep import ORPHANED_POD
from taskset.decide.waiting import WAITING_SUMMARY_MAX, WAITING_SUMMARY_NAMED
from taskset.observed.views import PodView

# The PodsStuckTerminating condition's reasons: Pods are stuck, and none is any more.
STUCK = "StuckTerminating"
RELEASED = "Released"
RELEASED_MESSAGE = "No Pod of this TaskSet is stuck terminating"


def recorded_uids(status: TaskSetStatus) -> dict[str, tuple[int, int]]:
    """The Pod UIDs the status recorded, to (role position, replica index)."""
    return {
        replica.pod_uid: (position, replica.index)
        for position, role in enumerate(status.roles)
        for replica in role.replicas
        if replica.pod_uid
    }


def terminating_pods(ctx: PassContext) -> list[PodView]:
    """This TaskSet's Pods that are being deleted, by name: recorded in its status, or controlled by
    its recorded ControlUnit. The common pass, where no Pod is being deleted, reads no replica."""
    deleting = [pod for pod in ctx.observed.pods.values() if pod.deleting]
    if not deleting:
        return []
    recorded = recorded_uids(ctx.status)
    unit = ctx.status.control_unit_uid
    ours = [pod for pod in deleting if pod.uid in recorded or (unit and pod.controller_uid == unit)]
    return sorted(ours, key=lambda pod: pod.name)


def stuck_message(pods: Sequence[PodView], after: float) -> str:
    """The PodsStuckTerminating condition's message: how many, for how long at least, and the first
    few by name with what holds them. No elapsed time: a resync over the same Pods writes nothing."""
    count = len(pods)
    entries = [f"{pod.name} ({_holders(pod)})" for pod in pods[:WAITING_SUMMARY_NAMED]]
    text = (
        f"{count} Pod{'' if count == 1 else 's'} still terminating {after:g} s after "
        f"{'its' if count == 1 else 'their'} deletion: " + "; ".join(entries)
    )
    if count > WAITING_SUMMARY_NAMED:
        text += f"; and {count - WAITING_SUMMARY_NAMED} more"
    return clip(text, WAITING_SUMMARY_MAX)


def _holders(pod: PodView) -> str:
    if pod.finalizers:
        return "held by finalizers: " + ", ".join(pod.finalizers)
    return "no finalizer: its node has not confirmed that it stopped"


def report_terminating(ctx: PassContext) -> None:
    """Set the PodsStuckTerminating condition while a Pod of this TaskSet is still there
    ``stuck_terminating_after`` seconds past its deletion time (which already includes its grace
    period), with a Warning event each time the set of stuck Pods changes; set it False once none is.
    Look again when the next terminating Pod would pass that bound."""
    after = ctx.settings.stuck_terminating_after
    stuck: list[PodView] = []
    for pod in terminating_pods(ctx):
        waited = seconds_since(pod.deletion_timestamp, ctx.now)
        if math.isinf(waited):
            continue  # no readable deletion time (the API server always writes one): nothing to count
        if waited >= after:
            stuck.append(pod)
        else:
            ctx.plan.requeue(after - waited)
    status = ctx.status
    condition = status.condition(ConditionType.PODS_STUCK_TERMINATING)
    if stuck:
        message = stuck_message(stuck, after)
        if condition is None or condition.status != ConditionStatus.TRUE or condition.message != message:
            ctx.plan.events.append(Event(EventReason.POD_STUCK_TERMINATING, message))
        status.set_condition(
            ConditionType.PODS_STUCK_TERMINATING, ConditionStatus.TRUE, STUCK, message, ctx.stamp
        )
    elif condition is not None and condition.status == ConditionStatus.TRUE:
        status.set_condition(
            ConditionType.PODS_STUCK_TERMINATING, ConditionStatus.FALSE, RELEASED, RELEASED_MESSAGE, ctx.stamp
        )


def remove_orphaned_pods(ctx: PassContext) -> None:
    """A completed TaskSet has no running Pod: the attempt's end waits until its ControlUnit is gone,
    and the ControlUnit's foreground deletion until its Pods are. A Pod whose UID the status recorded
    that is still there *without a controlling owner* was orphaned (its ControlUnit deleted with orphan
    propagation, which strips the owner reference from the Pod and would leave it running for ever):
    delete it, UID precondition, once (a Pod already being deleted is only waited for).

    A Pod that still names a controller is no orphan, and not ours to delete: the ControlUnit a
    ``cleanPodPolicy`` keeps (``taskset.decide.cleanup``), or one deleted in the background (``kubectl
    delete`` without ``--cascade``), whose Pods the garbage collector takes a moment later; or the
    Pod cache is only behind the ControlUnit cache, showing a Pod the foreground deletion already took.
    Deleting those said "orphan propagation" when nobody had orphaned anything."""
    if not ctx.observed.pods:
        return
    recorded = recorded_uids(ctx.status)
    for pod in sorted(ctx.observed.pods.values(), key=lambda pod: pod.name):
        found = recorded.get(pod.uid)
        if found is None or pod.controller_uid or pod.deleting or pod.uid in ctx.deleted:
            continue
        ctx.deleted.add(pod.uid)
        position, index = found
        ctx.plan.intents.append(
            DeletePod(pod.name, pod.uid, position, index, advances=False, row=ORPHANED_POD)
        )
        ctx.plan.events.append(Event(EventReason.ORPHANED_POD_DELETED, orphan_message(pod.name)))


def orphan_message(name: str) -> str:
    """The event of a Pod deleted because it outlived its TaskSet's attempt."""
    return (
        f"Pod {name} was left running after its ControlUnit was deleted without its Pods "
        "(orphan propagation): deleting it"
    )
