"""Pod annotations understood by the kwok stages in ``stages/stages.yaml`` (simulated containers)."""

from __future__ import annotations

from typing import Final

PREFIX: Final = "sim.octopus.openi.pcl.cn/"
START_AFTER: Final = PREFIX + "start-after"  # Go duration before the pod turns Running
HOLD: Final = PREFIX + "hold"  # present: assigned (IPs set) but kept Pending until it is removed
DURATION: Final = PREFIX + "duration"  # Go duration the pod runs before it terminates
EXIT_CODE: Final = PREFIX + "exit-code"  # exit code of its containers; 0 -> Succeeded, else Failed
REASON: Final = PREFIX + "reason"  # terminated reason instead of Completed/Error (e.g. OOMKilled)
MESSAGE: Final = PREFIX + "message"  # termination message of the containers
POD_REASON: Final = PREFIX + "pod-reason"  # Pod-level status.reason at the end (e.g. DeadlineExceeded)
PHASE: Final = PREFIX + "phase"  # "Unknown": the Running pod turns phase Unknown (node lost)


def container_exit_code(container: str) -> str:
    """The annotation that gives one container of a multi-container pod its own exit code."""
    return f"{EXIT_CODE}.{container}"


def attempt_exit_code(taskset_attempt: int, index: int, replica_attempt: int) -> str:
    """The annotation that gives one attempt of one replica its own exit code, set in the template: the
    Pod of replica ``index`` in that TaskSet attempt and replica attempt reads it, its successors do not."""
    return f"{EXIT_CODE}.t{taskset_attempt}.r{index}.a{replica_attempt}"


def outcome(duration: float | None = None, exit_code: int = 0, **extra: str) -> dict[str, str]:
    """Annotations for a pod that runs ``duration`` seconds and exits with ``exit_code``."""
    result = dict(extra)
    if duration is not None:
        result[DURATION] = f"{int(duration * 1000)}ms"
        result[EXIT_CODE] = str(exit_code)
    return result
