"""``spec.queue`` and ``spec.priority``: reserved for queueing, accepted and preserved; with Kueue admission
on (``--kueue``), the priority is that of the TaskSet's Kueue Workload.
"""

from __future__ import annotations

from hack.crd.fields import Schema
from taskset.api import constants as c


def properties() -> Schema:
    return {
        "queue": {
            "type": "string",
            "pattern": c.QUEUE_PATTERN,
            "description": "Reserved: accepted and preserved, ignored by the controller.",
        },
        "priority": {
            "type": "integer",
            "description": "Reserved: accepted and preserved; with --kueue, the priority of the "
            "TaskSet's Kueue Workload (a higher one may preempt a lower).",
        },
    }
