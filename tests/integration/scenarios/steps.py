"""Plain helpers the scenario files share: the commands and replica phases they name, the spec's
"fails-first" workload, and a replica's phase read from a status that may not list it yet."""

from __future__ import annotations

from typing import Any, Protocol

from tests.builders import TaskSetBuilder
from tests.integration.harness import FINAL_TIMEOUT, Outcome, PodFacts, Script, exits, replica

FOREVER = "sleep 3600"  # "runs until deleted" (spec 14.0)

PENDING = "TaskRoleReplicaAttemptPending"
PREPARING = "TaskRoleReplicaAttemptPreparing"
ASSIGNED = "TaskRoleReplicaAttemptAssigned"
RUNNING = "TaskRoleReplicaAttemptRunning"
RETRY_PENDING = "TaskRoleReplicaAttemptRetryPending"
REPLICA_COMPLETED = "TaskRoleReplicaCompleted"


def fails_first(pod: PodFacts, after: float = 0.0) -> Outcome:
    """spec 14.0 "fails-first": exit 1 on the first replica attempt of the first TaskSet attempt only."""
    return exits(1 if (pod.taskset_attempt, pod.replica_attempt) == (0, 0) else 0, after=after)


def replica_phase(status: dict[str, Any], role: str, index: int) -> str:
    """The replica's phase, or "" while the status does not list it yet."""
    try:
        return str(replica(status, role, index).get("phase", ""))
    except (KeyError, IndexError):
        return ""


class Run(Protocol):
    """The ``run`` fixture (conftest.py): create the TaskSet, script its Pods, wait until it is completed."""

    def __call__(
        self, taskset: TaskSetBuilder, script: Script | None = None, timeout: float = FINAL_TIMEOUT
    ) -> dict[str, Any]: ...
