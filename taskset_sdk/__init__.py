"""The TaskSet Python SDK: build TaskSets with typed builders, submit, watch, wait, read logs, delete.

It speaks to the Kubernetes API with the official ``kubernetes`` client and imports nothing of the
controller (``taskset``): install the project and use it from a notebook, a script, or a Pod.
"""

from taskset_sdk.builders import (
    Backoff,
    CompletionPolicy,
    DependsOn,
    EventPolicy,
    FailureRule,
    Framework,
    Gang,
    Network,
    RetryPolicy,
    Role,
    Scale,
    TaskSet,
    pod_template,
)
from taskset_sdk.client import Client
from taskset_sdk.errors import (
    LogsUnavailableError,
    TaskSetAlreadyExistsError,
    TaskSetApiError,
    TaskSetError,
    TaskSetInvalidError,
    TaskSetNotFoundError,
    WaitError,
    WaitFailedError,
    WaitTimeoutError,
)
from taskset_sdk.views import (
    AttemptView,
    Condition,
    EventView,
    LogTarget,
    PodView,
    ReplicaView,
    RoleView,
    ShardOwner,
    TaskSetView,
)

__all__ = [
    "AttemptView",
    "Backoff",
    "Client",
    "CompletionPolicy",
    "Condition",
    "DependsOn",
    "EventPolicy",
    "EventView",
    "FailureRule",
    "Framework",
    "Gang",
    "LogTarget",
    "LogsUnavailableError",
    "Network",
    "PodView",
    "ReplicaView",
    "RetryPolicy",
    "Role",
    "RoleView",
    "Scale",
    "ShardOwner",
    "TaskSet",
    "TaskSetAlreadyExistsError",
    "TaskSetApiError",
    "TaskSetError",
    "TaskSetInvalidError",
    "TaskSetNotFoundError",
    "TaskSetView",
    "WaitError",
    "WaitFailedError",
    "WaitTimeoutError",
    "pod_template",
]
