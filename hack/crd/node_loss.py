"""``spec.nodeLossPolicy`` and ``status.nodeRecoveries`` (``taskset.api.node_loss``): what the controller
does for a replica whose Pod is on a node that stopped answering, and the Pods it force-deleted."""

from __future__ import annotations

from hack.crd.fields import Schema, kept_last, string, time
from taskset.api import node_loss as n


def properties() -> Schema:
    """The spec's ``nodeLossPolicy``."""
    return {
        n.FIELD: {
            "type": "object",
            "description": "What happens to a replica whose Pod is on a lost node (its Ready condition "
            "Unknown, or tainted node.kubernetes.io/unreachable), which no kubelet will confirm stopped. "
            "Absent: Wait.",
            "properties": {
                "action": {
                    "type": "string",
                    "enum": [str(a) for a in n.NodeLossAction],
                    "description": "Wait (default): the replica waits until the node answers or its Pod "
                    "is deleted by hand; the Running condition and the replica's message name the node. "
                    "Recover: once the node has been unreachable graceSeconds and the Pod is being "
                    "deleted (evicted), the controller force-deletes it and replaces the replica. "
                    "OutOfService: the same once the node is tainted node.kubernetes.io/out-of-service.",
                },
                "graceSeconds": {
                    "type": "integer",
                    "format": "int64",
                    "minimum": n.MIN_GRACE_SECONDS,
                    "maximum": n.MAX_GRACE_SECONDS,
                    "description": "Recover: how long the node must have been unreachable before its "
                    f"Pods are force-deleted. Absent: {n.DEFAULT_GRACE_SECONDS}.",
                },
            },
        }
    }


def status_properties() -> Schema:
    """The status's ``nodeRecoveries``."""
    return {
        n.STATUS_FIELD: kept_last(
            f"The last {n.RECOVERIES_KEPT} Pods force-deleted because their node was lost, oldest first, "
            "and how many older ones are no longer listed.",
            "recoveries",
            n.RECOVERIES_KEPT,
            _entry(),
        )
    }


def _entry() -> Schema:
    return {
        "type": "object",
        "properties": {
            "node": {**string(), "description": "The lost node."},
            "replica": {**string(), "description": "<role>-<index> of the replica whose Pod it was."},
            "pod": string(),
            "podUID": string(),
            "lostAt": {**time(nullable=True), "description": "Since when the node was unreachable."},
            "recoveredAt": {**time(nullable=True), "description": "When the Pod was force-deleted."},
            "action": {"type": "string", "enum": [str(a) for a in n.NodeLossAction]},
        },
    }
