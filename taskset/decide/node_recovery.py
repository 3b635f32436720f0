"""Replicas on lost nodes: say so, and end the wait as ``spec.nodeLossPolicy`` says.

A replica never has two Pods at once, so a Pod on a node that stopped answering holds its replica: the
API server keeps it (deleted or not) until a kubelet confirms it stopped, and none will. Before, the
TaskSet went on saying ``Running`` and nothing named the node. Now, while a replica's Pod is on a lost
node (``taskset.observed.nodes``: Ready ``Unknown``, or tainted unreachable or out-of-service):

* the replica's phaseMessage ends with a note naming the node, since when it is lost and what happens
  next, and the Running condition starts with the lost nodes and every replica waiting on each;
* with ``Recover``, once the node has been unreachable ``graceSeconds`` and the Pod is being deleted
  (evicted by the taint-eviction controller, or deleted by anyone), the Pod is force-deleted (grace
  period 0, UID precondition) and the deletion is recorded in ``status.nodeRecoveries``; the replica
  machine then replaces the replica as after any deletion. ``OutOfService`` does the same once an
  operator tainted the node ``node.kubernetes.io/out-of-service`` (that taint is the operator's word
  that the node is off), without a grace.

A Pod on a node that answers is never force-deleted, whatever the policy: that is what keeps "never two
live Pods of a replica on reachable nodes" true.

The notes are the pass's report, not the machines' facts: the replica machine reads its own words in a
phaseMessage (a deleted Pod's name, a lost phase), so ``strip_notes`` takes the notes off before the
machines move and ``report_node_loss`` puts them back after. Every text is built from the observed
objects only (timestamps, not elapsed time), so a resync over an unchanged cluster writes nothing, and
the common pass, with no lost node and no note, reads no replica.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final

from taskset.api.constants import (
    ConditionReason,
    ConditionStatus,
    ConditionType,
    EventReason,
    State,
    TaskSetPhase,
)
from taskset.api.failures import FieldError
from taskset.api.node_loss import (
    FIELD,
    NodeLossAction,
    NodeLossPolicy,
    NodeRecovery,
    parse_node_loss_policy,
    with_recovery,
)
from taskset.api.spec import ParsedTaskSet
from taskset.api.status import ReplicaStatus, TaskSetStatus, clip, seconds_since
from taskset.decide.context import PassContext
from taskset.decide.plan import DeletePod, Event
from taskset.decide.upkeep import NODE_LOST_POD
from taskset.decide.waiting import NODE_LOST_PREFIX, WAITING_SUMMARY_MAX, waiting_summary
from taskset.observed.nodes import NodeView
from taskset.observed.views import PodView

# The note a replica's phaseMessage ends with, and the start of the Running condition's message.
NOTE_START: Final = " [NodeLost: "
NOTE_END: Final = "]"
CONDITION_PREFIX: Final = NODE_LOST_PREFIX
NAMED_PER_NODE: Final = 20  # replicas the condition names per node; the others are counted
NOTE_MAX: Final = 400  # characters of a replica's note


@dataclass(frozen=True)
class Stranded:
    """A replica whose current Pod is on a lost node."""

    position: int
    replica: ReplicaStatus
    pod: PodView
    node: NodeView


def policy_of(ctx: PassContext) -> NodeLossPolicy:
    """The live spec's policy, read on every pass, so that switching a running TaskSet to ``Recover``
    recovers the replicas already waiting. ``Wait`` when the live spec is not valid (the attempt goes
    on, and nothing is force-deleted on an unreadable word)."""
    if not isinstance(ctx.live, ParsedTaskSet):
        return NodeLossPolicy()
    try:
        return parse_node_loss_policy(ctx.live.spec.raw.get(FIELD))
    except FieldError:
        return NodeLossPolicy()


def strip_note(message: str) -> str:
    """``message`` without the note ``note`` added, if it has one."""
    at = message.rfind(NOTE_START)
    return message[:at] if at >= 0 and message.endswith(NOTE_END) else message


def strip_notes(ctx: PassContext) -> None:
    """Take the notes off the replicas' messages before the machines read them. The Running condition
    carries the prefix while any note is on, so a pass without it reads no replica."""
    running = ctx.status.condition(ConditionType.RUNNING)
    if running is None or not running.message.startswith(CONDITION_PREFIX):
        return
    for role in ctx.status.roles:
        for replica in role.replicas:
            if replica.phase_message.endswith(NOTE_END):
                replica.phase_message = strip_note(replica.phase_message)


def stranded(
    status: TaskSetStatus, pods: Mapping[str, PodView], nodes: Mapping[str, NodeView]
) -> list[Stranded]:
    """The replicas whose recorded Pod is on a lost node, in spec order."""
    found: list[Stranded] = []
    if not nodes:
        return found
    for position, role in enumerate(status.roles):
        for replica in role.replicas:
            pod = pods.get(replica.pod_name) if replica.pod_uid else None
            if pod is None or pod.uid != replica.pod_uid:
                continue
            node = nodes.get(pod.node_name)
            if node is not None and node.lost:
                found.append(Stranded(position, replica, pod, node))
    return found


def due_in(policy: NodeLossPolicy, node: NodeView, pod: PodView, now: datetime) -> float | None:
    """Seconds until ``pod`` may be force-deleted (0: now), or None while the policy waits for something
    no clock brings (``Wait``; the out-of-service taint; the Pod's deletion; a node without a time)."""
    if not pod.deleting:
        return None
    if policy.action == NodeLossAction.OUT_OF_SERVICE:
        return 0.0 if node.out_of_service else None
    if policy.action != NodeLossAction.RECOVER or not node.unreachable:
        return None
    lost_for = seconds_since(node.unreachable_since, now)
    if math.isinf(lost_for):
        return None  # no readable time: never force-delete on a guess
    return max(0.0, policy.grace_seconds - lost_for)


def next_step(policy: NodeLossPolicy, node: NodeView, pod: PodView) -> str:
    """What happens next to a replica waiting on ``node``, in the words of its note."""
    if policy.action == NodeLossAction.WAIT:
        return "nodeLossPolicy Wait: waiting until the node answers or the Pod is deleted by hand"
    if policy.action == NodeLossAction.OUT_OF_SERVICE and not node.out_of_service:
        return "nodeLossPolicy OutOfService: waiting for the node's node.kubernetes.io/out-of-service taint"
    if not pod.deleting:
        return f"nodeLossPolicy {policy.action}: waiting for the Pod's eviction (its unreachable toleration)"
    if policy.action == NodeLossAction.RECOVER:
        return f"nodeLossPolicy Recover: force-deleted {policy.grace_seconds} s after the node was lost"
    return "nodeLossPolicy OutOfService: force-deleted, the node is out of service"


def note(policy: NodeLossPolicy, item: Stranded) -> str:
    node = item.node
    since = f" since {node.unreachable_since}" if node.unreachable_since else ""
    state = "out of service" if node.out_of_service else f"unreachable{since}"
    text = f"Pod {item.pod.name} is on node {node.name}, {state}; {next_step(policy, node, item.pod)}"
    return NOTE_START + clip(text, NOTE_MAX) + NOTE_END


def condition_text(policy: NodeLossPolicy, items: Sequence[Stranded]) -> str:
    """The Running condition's message while replicas wait on lost nodes: each node with since when,
    and the replicas on it, in spec order."""
    by_node: dict[str, list[Stranded]] = {}
    for item in items:
        by_node.setdefault(item.node.name, []).append(item)
    parts = []
    for name, on_node in sorted(by_node.items()):
        node = on_node[0].node
        since = f" since {node.unreachable_since}" if node.unreachable_since else ""
        state = "out of service" if node.out_of_service else f"unreachable{since}"
        names = [f"{item.replica.name}-{item.replica.index}" for item in on_node]
        listed = ", ".join(names[:NAMED_PER_NODE])
        if len(names) > NAMED_PER_NODE:
            listed += f" and {len(names) - NAMED_PER_NODE} more"
        count = len(names)
        parts.append(f"node {name} {state}: {count} replica{'' if count == 1 else 's'} wait on it: {listed}")
    text = CONDITION_PREFIX + "; ".join(parts) + f" (nodeLossPolicy {policy.action})"
    return clip(text, WAITING_SUMMARY_MAX)


def report_node_loss(ctx: PassContext) -> None:
    """Note the replicas waiting on lost nodes, in their messages and the Running condition, with a
    Warning event when that report changes; force-delete the Pods the policy ends the wait of."""
    status = ctx.status
    running = status.condition(ConditionType.RUNNING)
    noted = running is not None and running.message.startswith(CONDITION_PREFIX)
    if not ctx.observed.nodes and not noted:
        return  # the common pass: no lost node, no note to take back
    completed = status.phase == TaskSetPhase.COMPLETED
    items = [] if completed else stranded(status, ctx.observed.pods, ctx.observed.nodes)
    if not items:
        if noted and running is not None:
            message = waiting_summary(status) or status.state_message
            status.set_condition(ConditionType.RUNNING, running.status, running.reason, message, ctx.stamp)
        return
    policy = policy_of(ctx)
    for item in items:
        _end_wait(ctx, policy, item)
    for item in items:
        item.replica.phase_message = strip_note(item.replica.phase_message) + note(policy, item)
    message = condition_text(policy, items)
    if running is None and status.state == State.RUNNING:
        kind, reason = ConditionStatus.TRUE, str(ConditionReason.RUNNING)
    elif running is None:
        kind, reason = ConditionStatus.FALSE, str(status.state)
    else:
        kind, reason = running.status, running.reason
    if running is None or running.message != message:
        ctx.plan.events.append(Event(EventReason.NODE_LOST, message))
    status.set_condition(ConditionType.RUNNING, kind, reason, message, ctx.stamp)


def _end_wait(ctx: PassContext, policy: NodeLossPolicy, item: Stranded) -> None:
    """Force-delete ``item``'s Pod if the policy says its wait is over, and record it once; else look
    again when it will be."""
    due = due_in(policy, item.node, item.pod, ctx.now)
    if due is None:
        return
    if due > 0:
        ctx.plan.requeue(due)
        return
    pod = item.pod
    if pod.uid in ctx.deleted:
        return
    ctx.deleted.add(pod.uid)
    ctx.plan.intents.append(
        DeletePod(
            pod.name,
            pod.uid,
            item.position,
            item.replica.index,
            advances=False,
            force=True,
            row=NODE_LOST_POD,
        )
    )
    record = NodeRecovery(
        node=item.node.name,
        replica=f"{item.replica.name}-{item.replica.index}",
        pod=pod.name,
        pod_uid=pod.uid,
        lost_at=item.node.unreachable_since,
        recovered_at=ctx.stamp,
        action=policy.action,
    )
    if not ctx.status.node_recoveries.recorded(pod.uid):
        ctx.plan.events.append(
            Event(
                EventReason.NODE_LOST_POD_DELETED,
                f"Pod {pod.name} of replica {record.replica} force-deleted: node {item.node.name} lost"
                + (f" since {record.lost_at}" if record.lost_at else ""),
            )
        )
    ctx.status.node_recoveries = with_recovery(ctx.status.node_recoveries, record)
