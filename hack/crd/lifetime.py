"""The TaskSet's lifetime: how long it and a replica's Pod may take (``activeDeadlineSeconds``,
``startDeadlineSeconds``, the latter also per role), what the finished TaskSet keeps of its Pods
(``cleanPodPolicy``) and when the finished TaskSet itself is deleted (``ttlSecondsAfterFinished``).
"""

from __future__ import annotations

from hack.crd.fields import Schema, seconds_bound
from taskset.api import constants as c

_START_DEADLINE = (
    "A replica whose Pod has not run this many seconds after its creation is replaced, alone, "
    "as a failure not counted against maxRetryCount (the Pod reason StartDeadlineExceeded)."
)


def properties() -> Schema:
    """The spec's lifetime fields, in the order the CRD lists them."""
    return {
        "activeDeadlineSeconds": seconds_bound(
            "The TaskSet fails with reason DeadlineExceeded, its Pods removed and no retry, "
            "once this many seconds passed since it was created (status.createdAt)."
        ),
        "startDeadlineSeconds": seconds_bound(
            _START_DEADLINE + " The default of every role that does not set its own. Absent: none."
        ),
        "cleanPodPolicy": {
            "type": "string",
            "enum": [str(p) for p in c.CleanPodPolicy],
            "description": "What the finished TaskSet keeps of its Pods. All (absent): "
            "none, as the spec does; Running: the exited ones, those still running are deleted; None: "
            "every Pod, running ones too, until the TaskSet is deleted.",
        },
        "ttlSecondsAfterFinished": seconds_bound(
            "The controller deletes the TaskSet, and with it everything it owns, this many "
            "seconds after it finished (status.finishAt); 0 deletes it at once. Absent: kept.",
            low=0,
        ),
    }


def role_start_deadline() -> Schema:
    """``roles[].startDeadlineSeconds``: the role's own start deadline, over the TaskSet's default."""
    return seconds_bound(_START_DEADLINE + " Absent: spec.startDeadlineSeconds.")
