"""The status of a 1,000-replica TaskSet stays well under etcd's 1.5 MiB request limit."""

from __future__ import annotations

import orjson

from taskset.api.constants import ReplicaPhase
from taskset.api.status import ReplicaStatus, RoleStatus, TaskSetStatus, TerminatedInfo

ETCD_REQUEST_LIMIT = 1_572_864  # bytes: etcd's default --max-request-bytes
WELL_UNDER = ETCD_REQUEST_LIMIT // 2


def big_status(replicas: int) -> TaskSetStatus:
    """Every replica fully populated, with realistic lengths: the worst case of a finished role."""
    rows = [
        ReplicaStatus(
            index=i,
            name="worker",
            phase=ReplicaPhase.COMPLETED,
            phase_message="PodPhase:Succeeded ,PodMessage: ,PodReason: ",
            transition_time="2026-01-01T00:00:00Z",
            start_at="2026-01-01T00:00:00Z",
            finish_at="2026-01-01T00:00:00Z",
            total_retried_count=3,
            pod_name=f"a-thirty-character-taskset-nm-worker-{i}",
            pod_uid="8b1a9953-c461-4b3c-8e5d-3b0f3c6a7e2b",
            pod_ip="10.244.123.234",
            pod_host_ip="10.0.123.234",
            container_name="tensorflow",
            container_id="containerd://" + "f" * 64,
            terminated_info=TerminatedInfo(0, "", 0, "Completed"),
        )
        for i in range(replicas)
    ]
    status = TaskSetStatus(roles=[RoleStatus("worker", rows)])
    return status


def test_a_1000_replica_status_is_well_under_the_etcd_limit() -> None:
    size = len(orjson.dumps(big_status(1000).to_json()))
    print(f"status of a 1000-replica TaskSet: {size} bytes")
    assert size < WELL_UNDER
