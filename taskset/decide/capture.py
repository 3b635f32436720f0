"""What a replica's status keeps of its Pod (spec 5.3.3), and the PodHistory log record of an attempt
(spec 10.2): the bookkeeping the replica machine's rows share."""

from __future__ import annotations

from typing import Any

from taskset.api.constants import LOG_MSG_POD_ASSIGNED, QueryKey
from taskset.api.status import ReplicaStatus, TerminatedInfo, parse_time
from taskset.decide.context import PassContext
from taskset.decide.plan import LogRecord
from taskset.observed.views import PodView


def capture_pod(ctx: PassContext, replica: ReplicaStatus, pod: PodView) -> None:
    """Refresh the Pod-derived fields on every pass the Pod is observed (spec 5.3.3, R's SHOULD)."""
    replica.pod_uid = replica.pod_uid or pod.uid
    replica.pod_name = pod.name
    replica.pod_reason = pod.reason or replica.pod_reason
    replica.start_at = replica.start_at or pod.start_time
    was_assigned = bool(replica.pod_ip or replica.pod_host_ip)
    if pod.pod_ip and pod.pod_ip != replica.pod_ip:
        replica.pod_ip = pod.pod_ip
    if pod.host_ip and pod.host_ip != replica.pod_host_ip:
        replica.pod_host_ip = pod.host_ip
    if not was_assigned and (replica.pod_ip or replica.pod_host_ip):
        ctx.plan.records.append(pod_history(ctx, replica, LOG_MSG_POD_ASSIGNED))
    replica.container_name = replica.container_name or pod.container_name
    replica.container_id = replica.container_id or pod.container_id
    if replica.terminated_info is None and pod.terminated is not None:
        done = pod.terminated
        replica.terminated_info = TerminatedInfo(done.exit_code, done.message, done.signal, done.reason)
        replica.finish_at = done.finished_at or ctx.stamp


def pod_history(ctx: PassContext, replica: ReplicaStatus, msg: str) -> LogRecord:
    fields: dict[str, Any] = {
        "QueryKey": str(QueryKey.POD_HISTORY),
        "TaskSet": ctx.ref.name,
        "Namespace": ctx.ref.namespace,
        "Role": replica.name,
        "AttemptID": replica.total_retried_count,
        "TaskSetAttemptID": ctx.status.attempt_id,
        "ReplicaIndex": replica.index,
        "PodName": replica.pod_name,
        "PodReason": replica.pod_reason,
        "PodIP": replica.pod_ip,
        "PodHostIP": replica.pod_host_ip,
        "ContainerName": replica.container_name,
        "ContainerID": replica.container_id,
        "Phase": str(replica.phase),
        "PhaseMessage": replica.phase_message,
        "TransitionTime": replica.transition_time or "",
        "Stopped": replica.stopped,
    }
    for key, value in (("StartAt", replica.start_at), ("FinishAt", replica.finish_at)):
        moment = _epoch(value)
        if moment is not None:
            fields[key] = moment
    if replica.terminated_info is not None:
        info = replica.terminated_info
        fields |= {
            "ContainerExitCode": info.exit_code,
            "ContainerExitMessage": info.exit_message,
            "ContainerExitSignal": info.signal,
            "ContainerExitReason": info.reason,
        }
    return LogRecord(msg, fields)


def _epoch(value: str | None) -> float | None:
    moment = parse_time(value)
    return None if moment is None else moment.timestamp()
