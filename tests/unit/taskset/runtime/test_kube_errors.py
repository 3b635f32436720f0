"""Which API errors a create gives up on (``KubeError.invalid``) and which it retries: spec 8.7 and W-14."""

from __future__ import annotations

import pytest

from taskset.runtime.kube import KubeError

pytestmark = pytest.mark.unit

SA_NOT_FOUND = (
    'pods "job-r-0" is forbidden: error looking up service account ns/default: serviceaccount "default" '
    "not found"
)


@pytest.mark.parametrize(
    ("code", "reason", "message", "invalid"),
    [
        pytest.param(422, "Invalid", 'Pod "x" is invalid: spec.containers[0].name', True, id="422 invalid"),
        pytest.param(400, "BadRequest", "the object could not be decoded", True, id="400 bad request"),
        pytest.param(
            403, "Forbidden", 'admission webhook "policy" denied the request', True, id="403 webhook denial"
        ),
        pytest.param(
            403, "Forbidden", 'pods "x" is forbidden: exceeded quota: pods', False, id="403 quota: retried"
        ),
        pytest.param(403, "Forbidden", SA_NOT_FOUND, False, id="403 service account not there yet: retried"),
        pytest.param(429, "TooManyRequests", "rate limited", False, id="429"),
        pytest.param(500, "InternalError", "etcdserver: request timed out", False, id="500"),
        pytest.param(0, "", "connection refused", False, id="no answer"),
        pytest.param(409, "AlreadyExists", 'pods "x" already exists', False, id="409 exists"),
    ],
)
def test_a_create_gives_up_only_on_errors_that_a_retry_cannot_mend(
    code: int, reason: str, message: str, invalid: bool
) -> None:
    assert KubeError(code, reason, message).invalid is invalid


@pytest.mark.parametrize(
    ("code", "reason", "message", "too_large"),
    [
        pytest.param(500, "", "etcdserver: request is too large", True, id="etcd's limit, reported as a 500"),
        pytest.param(
            413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728", True, id="413"
        ),
        pytest.param(500, "InternalError", "etcdserver: request timed out", False, id="another 500"),
        pytest.param(422, "Invalid", 'TaskSet "x" is invalid: status.conditions', False, id="422"),
    ],
)
def test_a_write_over_a_size_limit_is_told_apart(
    code: int, reason: str, message: str, too_large: bool
) -> None:
    assert KubeError(code, reason, message).too_large is too_large
