"""A TaskSet retry that learns from the failure: every Pod of the next attempts avoids the nodes the
failed attempt failed on.

A failure rule's ``nextAttempt.avoidFailedNodes`` keeps a replica's next Pods off the nodes its attempts
failed on (``taskset.decide.next_attempt``). When the failure ends the attempt instead (``RestartTaskSet``;
``FailRole``, or a replica out of retries, whose role then fails the attempt) and the TaskSet's retry
policy starts a new one, every replica starts afresh and what it learned would be lost with it. Yet a
node that failed one member of a gang is as bad for any other: the next attempt places every replica
anew, and any of them may land there. So when a TaskSet retry follows (the ``T13-retry`` move, while the
failed attempt's replicas are still in the status), the nodes its replicas learned to avoid join
``status.nextAttempt.avoidNodes``, which every Pod of every later attempt avoids, every role's.

Bounded like a replica's list: the latest ``MAX_AVOIDED_NODES`` nodes, so that a gang that failed on
many nodes of a small cluster is still placeable once the oldest failures are forgotten (a gang needs
room for all its replicas at once, more than a replica does), and the status stays small. Latest means:
the nodes avoided before, then this attempt's, in role and index order with the replica that ended the
attempt last, so the node that ended it is always kept; a node failed on again moves last.

Learned once per attempt: ``afterAttempt`` is the failed attempt's number, so a pass run again over a
status that holds it (a lost status write, a restarted controller) changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from taskset.api.retry_effects import EFFECT_REASON_MAX, MAX_AVOIDED_NODES, RetryEffect
from taskset.api.status import TaskSetStatus


def latest_once(nodes: Iterable[str]) -> tuple[str, ...]:
    """``nodes`` in order, each once, at the place it was last named."""
    kept = list(dict.fromkeys(reversed(list(nodes))))
    return tuple(reversed(kept))


def attempt_nodes(status: TaskSetStatus) -> tuple[str, ...]:
    """The nodes the attempt ``status`` holds taught its replicas to avoid; the ending replica's last."""
    result = status.attempt_result
    ending = None if result is None else result.replica
    others: list[str] = []
    last: list[str] = []
    for role in status.roles:
        for replica in role.replicas:
            if replica.next_attempt is not None:
                into = last if (replica.name, replica.index) == ending else others
                into.extend(replica.next_attempt.avoid_nodes)
    return latest_once((*others, *last))


def gang_effect(status: TaskSetStatus) -> RetryEffect | None:
    """What the next attempts avoid once the attempt ``status`` holds failed and a TaskSet retry follows:
    the nodes avoided before and this attempt's, the latest ``MAX_AVOIDED_NODES``."""
    current = status.next_attempt
    attempt = status.attempt_id
    if current is not None and current.after_attempt >= attempt:
        return current  # this attempt was learned from already
    failed = attempt_nodes(status)
    if not failed:
        return current
    before = () if current is None else current.avoid_nodes
    nodes = latest_once((*before, *failed))[-MAX_AVOIDED_NODES:]
    where = ("node " if len(failed) == 1 else "nodes ") + ", ".join(failed)
    reason = f"attempt {attempt} failed on {where}: every Pod avoids {', '.join(nodes)}"
    return RetryEffect(attempt, nodes, (), reason[:EFFECT_REASON_MAX])


def learn_gang(status: TaskSetStatus) -> None:
    """Keep in ``status.nextAttempt`` what the next attempts avoid (called as the retry move is made)."""
    status.next_attempt = gang_effect(status)
