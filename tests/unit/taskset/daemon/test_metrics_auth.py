"""Who may read /metrics, the pure parts: the Authorization header, the reviews sent,
the decisions cached. The reviews themselves are answered by the real API server in
``tests/integration/test_rbac.py``."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.daemon.metrics_auth import (
    CACHE_SIZE,
    DECISION_TTL,
    UNAUTHENTICATED,
    Decision,
    DecisionCache,
    MetricsAuthorizer,
    access_review,
    authenticated_user,
    bearer_token,
)
from taskset.runtime.kube import KubeError, Response

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("header", "token"),
    [
        pytest.param("Bearer abc.def-123", "abc.def-123", id="a bearer token"),
        pytest.param("bearer abc", "abc", id="the scheme is case-insensitive"),
        pytest.param("  Bearer   abc  ", "abc", id="surrounding blanks"),
        pytest.param(None, None, id="no header"),
        pytest.param("", None, id="empty"),
        pytest.param("Bearer", None, id="no token"),
        pytest.param("Bearer ", None, id="a blank token"),
        pytest.param("Basic dXNlcjpwYXNz", None, id="another scheme"),
        pytest.param("Bearer abc def", None, id="two words"),
        pytest.param("Bearerabc", None, id="no space after the scheme"),
    ],
)
def test_the_bearer_token_of_an_authorization_header(header: str | None, token: str | None) -> None:
    assert bearer_token(header) == token


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


ALLOWED = Decision(200, "allowed for system:serviceaccount:monitoring:prometheus")
FORBIDDEN = Decision(403, "Forbidden")


@pytest.mark.parametrize(
    ("decision", "elapsed", "remembered"),
    [
        pytest.param(ALLOWED, DECISION_TTL - 0.1, True, id="an allowed token within the TTL"),
        pytest.param(ALLOWED, DECISION_TTL, False, id="an allowed token after the TTL is asked again"),
        pytest.param(FORBIDDEN, 1.0, True, id="a refusal is remembered too"),
        pytest.param(UNAUTHENTICATED, 1.0, True, id="an unknown token is remembered too"),
        pytest.param(Decision(503, "review failed"), 0.0, False, id="a failed review is never remembered"),
    ],
)
def test_decisions_are_remembered_for_a_while(decision: Decision, elapsed: float, remembered: bool) -> None:
    clock = Clock()
    cache = DecisionCache(clock=clock)
    cache.put("token", decision)
    clock.now += elapsed
    assert cache.get("token") == (decision if remembered else None)
    assert cache.get("another token") is None


def test_the_cache_is_bounded_and_keeps_no_token() -> None:
    cache = DecisionCache(size=3, clock=Clock())
    for index in range(10):
        cache.put(f"token-{index}", ALLOWED)
    assert len(cache) == 3
    assert cache.get("token-9") == ALLOWED
    assert cache.get("token-0") is None
    assert not any("token" in repr(key) for key in cache._entries)  # sha256 digests only
    assert CACHE_SIZE >= 100  # room for every scraper of a cluster


@pytest.mark.parametrize(
    ("review", "user"),
    [
        pytest.param(
            {"status": {"authenticated": True, "user": {"username": "u"}}}, {"username": "u"}, id="accepted"
        ),
        pytest.param({"status": {"authenticated": False, "error": "expired"}}, None, id="refused"),
        pytest.param({"status": {"authenticated": True}}, None, id="accepted without a user: refused"),
        pytest.param({}, None, id="no status"),
    ],
)
def test_the_user_of_a_token_review(review: dict[str, Any], user: dict[str, Any] | None) -> None:
    assert authenticated_user(review) == user


def test_the_access_review_asks_for_get_on_the_metrics_url_as_the_whole_user() -> None:
    user = {
        "username": "system:serviceaccount:monitoring:prometheus",
        "uid": "1234",
        "groups": ["system:serviceaccounts", "system:authenticated"],
        "extra": {"authentication.kubernetes.io/pod-name": ["prometheus-0"]},
    }
    assert access_review(user)["spec"] == {
        "user": "system:serviceaccount:monitoring:prometheus",
        "uid": "1234",
        "groups": ["system:serviceaccounts", "system:authenticated"],
        "extra": {"authentication.kubernetes.io/pod-name": ["prometheus-0"]},
        "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
    }
    assert access_review({"username": "alice"})["spec"] == {
        "user": "alice",
        "nonResourceAttributes": {"path": "/metrics", "verb": "get"},
    }


class Reviews:
    """Answers reviews as the API server would, counting them (a stand-in for ``KubeClient.request``)."""

    def __init__(self, *, authenticated: bool = True, allowed: bool = True, fail: bool = False) -> None:
        self.authenticated, self.allowed, self.fail = authenticated, allowed, fail
        self.sent: list[str] = []

    def request(self, method: str, path: str, *, resource: str, body: Any, timeout: float) -> Response:
        self.sent.append(resource)
        if self.fail:
            raise KubeError(403, "Forbidden", "cannot create tokenreviews")
        if resource == "tokenreviews":
            user = {"username": "system:serviceaccount:ns:sa"}
            return Response(201, {"status": {"authenticated": self.authenticated, "user": user}})
        return Response(201, {"status": {"allowed": self.allowed}})


@pytest.mark.parametrize(
    ("reviews", "header", "status", "sent"),
    [
        pytest.param(Reviews(), None, 401, [], id="no token: refused without asking"),
        pytest.param(Reviews(), "Basic x", 401, [], id="not a bearer token: refused without asking"),
        pytest.param(Reviews(authenticated=False), "Bearer t", 401, ["tokenreviews"], id="unknown token"),
        pytest.param(
            Reviews(allowed=False), "Bearer t", 403, ["tokenreviews", "subjectaccessreviews"], id="no role"
        ),
        pytest.param(Reviews(), "Bearer t", 200, ["tokenreviews", "subjectaccessreviews"], id="allowed"),
        pytest.param(Reviews(fail=True), "Bearer t", 503, ["tokenreviews"], id="a review that fails"),
    ],
)
def test_a_header_is_decided_by_token_review_then_access_review(
    reviews: Reviews, header: str | None, status: int, sent: list[str]
) -> None:
    errors: list[str] = []
    cache = DecisionCache(clock=Clock())
    authorizer = MetricsAuthorizer(reviews, cache=cache, on_error=errors.append)
    assert authorizer.decide(header).status == status
    assert reviews.sent == sent
    assert len(errors) == (1 if status == 503 else 0)
    again = authorizer.decide(header)  # within the TTL: from the cache, except after a failure
    assert again.status == status
    assert reviews.sent == (sent * 2 if status == 503 else sent)
