"""The printer columns of ``kubectl get tasksets``: the state and progress by default, the attempt's
phase, times, replica counts, message, suspension and Kueue's queue and priority with ``-o wide``."""

from __future__ import annotations

from hack.crd.fields import Schema


def printer_columns() -> list[Schema]:
    def column(name: str, kind: str, path: str, description: str, wide: bool = False) -> Schema:
        col = {"name": name, "type": kind, "jsonPath": path, "description": description}
        return {**col, "priority": 1} if wide else col

    return [
        column("State", "string", ".status.state", "Waiting, Running, Succeeded or Failed"),
        column("Roles", "string", ".status.summary.roles", "Completed roles / roles"),
        column("Replicas", "string", ".status.summary.replicas", "Completed replicas / replicas"),
        column("Retries", "integer", ".status.totalRetriedCount", "TaskSet retries started"),
        column("Age", "date", ".metadata.creationTimestamp", "Time since creation"),
        column("Phase", "string", ".status.phase", "Attempt phase", wide=True),
        column("Started", "date", ".status.startAt", "First time the TaskSet ran", wide=True),
        column("Finished", "date", ".status.finishAt", "Time the TaskSet completed", wide=True),
        column("Waiting", "integer", ".status.summary.waiting", "Replicas waiting for a Pod", wide=True),
        column("Running", "integer", ".status.summary.running", "Replicas running", wide=True),
        column("Succeeded", "integer", ".status.summary.succeeded", "Replicas succeeded", wide=True),
        column("Failed", "integer", ".status.summary.failed", "Replicas failed", wide=True),
        column("Retrying", "integer", ".status.summary.retrying", "Replicas waiting to retry", wide=True),
        column("Stopped", "integer", ".status.summary.stopped", "Replicas stopped by an end", wide=True),
        column("Message", "string", ".status.stateMessage", "Why the state is what it is", wide=True),
        column("Suspended", "boolean", ".spec.suspend", "spec.suspend", wide=True),
        column(
            "Queue", "string", r".metadata.labels.kueue\.x-k8s\.io/queue-name", "Kueue's queue", wide=True
        ),
        column("Priority", "integer", ".spec.priority", "the Kueue Workload's priority", wide=True),
    ]
