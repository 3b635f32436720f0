"""``spec.gang`` (``taskset.integrations.gang``): opt in to gang scheduling, all or nothing, by one of the
schedulers the controller serves."""

from __future__ import annotations

from hack.crd.fields import Schema
from taskset.api import constants as c
from taskset.integrations.gang import SCHEDULERS


def properties() -> Schema:
    return {
        "gang": {
            "type": "object",
            "description": "Gang scheduling: the attempt's Pods are placed all at once or not at all, by the "
            "scheduler named (the controller must serve it: --gang-scheduling). The Pods' schedulerName "
            "stays the template's.",
            "required": ["scheduler"],
            "properties": {
                "scheduler": {
                    "type": "string",
                    "enum": list(SCHEDULERS),
                    "description": "coscheduling: scheduler-plugins' PodGroup (scheduling.x-k8s.io); "
                    "volcano: Volcano's PodGroup (scheduling.volcano.sh).",
                },
                "minAvailable": {
                    "type": "integer",
                    "format": "int32",
                    "minimum": 1,
                    "maximum": c.MAX_TOTAL_REPLICAS,
                    "description": "How many Pods must be placed at once. Absent: all of them (the sum of "
                    "the roles' replicas); at most that sum.",
                },
                "scheduleTimeoutSeconds": {
                    "type": "integer",
                    "format": "int32",
                    "minimum": 1,
                    "description": "coscheduling: how long the gang may wait to be placed before it is "
                    "retried.",
                },
                "queue": {
                    "type": "string",
                    "maxLength": c.DNS1123_LABEL_MAX_LENGTH,
                    "pattern": c.DNS1123_LABEL_PATTERN,
                    "description": "volcano: the Volcano queue of the PodGroup.",
                },
            },
        }
    }
