"""What the SDK raises. Every error names the TaskSet (``namespace/name``) and the cause; a refusal from
the API server carries its message unchanged, since it names the offending field better than we could."""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "LogsUnavailableError",
    "TaskSetAlreadyExistsError",
    "TaskSetApiError",
    "TaskSetError",
    "TaskSetInvalidError",
    "TaskSetNotFoundError",
    "WaitError",
    "WaitFailedError",
    "WaitTimeoutError",
]


class TaskSetError(Exception):
    """Base class: ``namespace`` and ``name`` of the TaskSet, and the cause in words."""

    def __init__(self, namespace: str, name: str, cause: str) -> None:
        super().__init__(f"TaskSet {namespace}/{name}: {cause}")
        self.namespace = namespace
        self.name = name
        self.cause = cause


class TaskSetApiError(TaskSetError):
    """The API server refused a request; ``status`` is its HTTP code, the cause its own message."""

    def __init__(self, namespace: str, name: str, cause: str, status: int) -> None:
        super().__init__(namespace, name, cause)
        self.status = status


class TaskSetNotFoundError(TaskSetApiError):
    """No TaskSet (or, for logs, no Pod) of that name."""


class TaskSetAlreadyExistsError(TaskSetApiError):
    """A create found the name taken."""


class TaskSetInvalidError(TaskSetApiError):
    """The API server's validation refused the TaskSet (422); the cause is its message as it is."""


class WaitError(TaskSetError):
    """``wait`` did not see what it waited for; ``last`` is the last TaskSetView seen, if any."""

    def __init__(self, namespace: str, name: str, cause: str, last: Any) -> None:
        super().__init__(namespace, name, cause)
        self.last = last


class WaitTimeoutError(WaitError):
    """``wait`` ran out of time."""


class WaitFailedError(WaitError):
    """What ``wait`` waited for can no longer happen: the TaskSet ended otherwise, or was deleted."""


class LogsUnavailableError(TaskSetError):
    """The replica's log cannot be read: no such replica or attempt, or the node did not serve it."""


_BY_STATUS: dict[int, type[TaskSetApiError]] = {
    404: TaskSetNotFoundError,
    409: TaskSetAlreadyExistsError,
    422: TaskSetInvalidError,
}


def from_api_exception(namespace: str, name: str, err: Any) -> TaskSetApiError:
    """The SDK's error for a ``kubernetes.client.ApiException``: the API server's Status message as it
    is (the body's ``message``), else the HTTP reason."""
    status = int(getattr(err, "status", 0) or 0)
    cause = api_message(err)
    return _BY_STATUS.get(status, TaskSetApiError)(namespace, name, cause, status)


def api_message(err: Any) -> str:
    """The ``message`` of a Kubernetes Status body, else ``<status> <reason>``."""
    body = getattr(err, "body", None)
    try:
        message = json.loads(body)["message"] if body else ""
    except (ValueError, KeyError, TypeError):
        message = ""
    if isinstance(message, str) and message:
        return message
    return f"{getattr(err, 'status', '?')} {getattr(err, 'reason', '') or 'error'}".strip()
