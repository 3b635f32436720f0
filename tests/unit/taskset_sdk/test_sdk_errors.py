"""Errors name the TaskSet and carry the API server's own message."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest

from taskset_sdk.errors import (
    TaskSetAlreadyExistsError,
    TaskSetApiError,
    TaskSetInvalidError,
    TaskSetNotFoundError,
    from_api_exception,
)


@dataclass
class Refusal:
    """The attributes of ``kubernetes.client.ApiException`` the SDK reads."""

    status: int
    reason: str
    body: str | None


def status_body(message: str) -> str:
    return json.dumps({"kind": "Status", "status": "Failure", "message": message})


@pytest.mark.parametrize(
    ("refusal", "kind", "text"),
    [
        pytest.param(
            Refusal(
                422, "Unprocessable Entity", status_body('TaskSet.octopus.openi.pcl.cn "t" is invalid: x')
            ),
            TaskSetInvalidError,
            'TaskSet ns/t: TaskSet.octopus.openi.pcl.cn "t" is invalid: x',
            id="validation: the message as it is",
        ),
        pytest.param(
            Refusal(404, "Not Found", status_body('tasksets "t" not found')),
            TaskSetNotFoundError,
            'TaskSet ns/t: tasksets "t" not found',
            id="not found",
        ),
        pytest.param(
            Refusal(409, "Conflict", status_body('tasksets "t" already exists')),
            TaskSetAlreadyExistsError,
            'TaskSet ns/t: tasksets "t" already exists',
            id="conflict",
        ),
        pytest.param(
            Refusal(503, "Service Unavailable", "<html>proxy</html>"),
            TaskSetApiError,
            "TaskSet ns/t: 503 Service Unavailable",
            id="no Status body: the HTTP reason",
        ),
    ],
)
def test_an_api_refusal_becomes_an_error_naming_the_taskset(
    refusal: Refusal, kind: type[TaskSetApiError], text: str
) -> None:
    error = from_api_exception("ns", "t", refusal)
    assert type(error) is kind
    assert str(error) == text
    assert (error.namespace, error.name, error.status) == ("ns", "t", refusal.status)
