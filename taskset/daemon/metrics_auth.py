"""Who may read ``/metrics``: a bearer token the API server authenticates and authorizes.

The scheme of controller-runtime's ``WithAuthenticationAndAuthorization`` filter and kube-rbac-proxy:

1. The request must carry ``Authorization: Bearer <token>``; without one the answer is 401 and no API
   request is made.
2. A ``TokenReview`` asks the API server who the token belongs to; an unknown, expired or revoked token
   is 401.
3. A ``SubjectAccessReview`` asks whether that user (with its groups, uid and extra) may ``get`` the
   non-resource URL ``/metrics``, which the ``taskset-metrics-reader`` ClusterRole grants; if not, 403.

Answers are cached for ``DECISION_TTL`` seconds per token (a hash of it, never the token itself), so a
scraper costs the API server two requests per token every ten seconds at most, and a revoked token or
binding stops working within that time, as with the API server's own delegated authentication
(``--authentication-token-webhook-cache-ttl``). The cache holds at most ``CACHE_SIZE`` tokens, so a client
sending a new token with every request cannot grow the process. A review that fails (the API server
unreachable, the controller not allowed to create reviews) is not cached: the scrape gets 503 and the
next one asks again.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from cachetools import TTLCache

from taskset.runtime.kube import KubeClient, KubeError

__all__ = [
    "CACHE_SIZE",
    "DECISION_TTL",
    "METRICS_PATH",
    "Decision",
    "DecisionCache",
    "MetricsAuthorizer",
    "bearer_token",
]

METRICS_PATH: Final = "/metrics"
DECISION_TTL: Final = 10.0  # seconds; the API server's default for delegated authn/authz caches
CACHE_SIZE: Final = 1024  # tokens remembered at once; the least recently used one goes first
REVIEW_TIMEOUT: Final = 5.0  # seconds per review request; a scrape times out after 10 s by default
_TOKEN_REVIEWS: Final = "/apis/authentication.k8s.io/v1/tokenreviews"
_ACCESS_REVIEWS: Final = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


@dataclass(frozen=True)
class Decision:
    """The answer for one token: 200 allowed, 401 unauthenticated, 403 forbidden, 503 review failed."""

    status: int
    reason: str  # for the response body and the log; never holds the token

    @property
    def allowed(self) -> bool:
        return self.status == 200


UNAUTHENTICATED: Final = Decision(401, "Unauthorized: a bearer token is required")


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header value; None when absent or malformed.

    The scheme is case-insensitive (RFC 9110, "Authentication Scheme"); the token is one word (RFC 6750
    ``b64token``), so anything with inner whitespace is refused rather than guessed at.
    """
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or any(ch.isspace() for ch in token):
        return None
    return token


class DecisionCache:
    """Decisions by token hash, each for ``ttl`` seconds, at most ``size`` of them; thread-safe."""

    def __init__(
        self,
        *,
        ttl: float = DECISION_TTL,
        size: int = CACHE_SIZE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._entries: TTLCache[bytes, Decision] = TTLCache(maxsize=size, ttl=ttl, timer=clock)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            self._entries.expire()
            return len(self._entries)

    def get(self, token: str) -> Decision | None:
        with self._lock:
            return self._entries.get(_key(token))

    def put(self, token: str, decision: Decision) -> None:
        """Remember ``decision``; a failed review (503) is never remembered, so the next scrape retries."""
        if decision.status == 503:
            return
        with self._lock:
            self._entries[_key(token)] = decision


def _key(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class MetricsAuthorizer:
    """Decides a request's ``Authorization`` header with TokenReview and SubjectAccessReview."""

    def __init__(
        self,
        client: KubeClient,
        *,
        cache: DecisionCache | None = None,
        on_error: Callable[[str], None] = lambda message: None,
    ) -> None:
        self._client = client
        self._cache = cache or DecisionCache()
        self._on_error = on_error

    def decide(self, authorization: str | None) -> Decision:
        token = bearer_token(authorization)
        if token is None:
            return UNAUTHENTICATED
        cached = self._cache.get(token)
        if cached is not None:
            return cached
        try:
            decision = self._review(token)
        except KubeError as err:
            self._on_error(f"cannot review a /metrics caller: {err}")
            decision = Decision(503, "Service Unavailable: cannot review the token now")
        self._cache.put(token, decision)
        return decision

    def _review(self, token: str) -> Decision:
        review = self._create(_TOKEN_REVIEWS, token_review(token), "tokenreviews")
        user = authenticated_user(review)
        if user is None:
            return Decision(401, "Unauthorized: the token was not accepted")
        access = self._create(_ACCESS_REVIEWS, access_review(user), "subjectaccessreviews")
        name = user.get("username", "")
        if access.get("status", {}).get("allowed") is True:
            return Decision(200, f"allowed for {name}")
        return Decision(403, f"Forbidden: {name} may not get {METRICS_PATH}")

    def _create(self, path: str, body: dict[str, Any], resource: str) -> dict[str, Any]:
        answer: dict[str, Any] = self._client.request(
            "POST", path, resource=resource, body=body, timeout=REVIEW_TIMEOUT
        ).body
        return answer


def token_review(token: str) -> dict[str, Any]:
    """A TokenReview for the API server's default audiences (those its ServiceAccount tokens carry)."""
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}}


def authenticated_user(review: dict[str, Any]) -> dict[str, Any] | None:
    """The ``status.user`` of an answered TokenReview, or None when the token was not authenticated."""
    status = review.get("status") or {}
    user = status.get("user")
    if status.get("authenticated") is not True or not isinstance(user, dict):
        return None
    return user


def access_review(user: dict[str, Any]) -> dict[str, Any]:
    """A SubjectAccessReview: may ``user`` (as TokenReview described it) get the ``/metrics`` URL?"""
    spec: dict[str, Any] = {
        "user": user.get("username", ""),
        "nonResourceAttributes": {"path": METRICS_PATH, "verb": "get"},
    }
    for field in ("uid", "groups", "extra"):
        if user.get(field):
            spec[field] = user[field]
    return {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec}
