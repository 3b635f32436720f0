"""Typed builders for TaskSets: write a job in Python and get the exact object the API server expects.

    ts = TaskSet("mnist").role(
        Role("worker", replicas=4, template=pod_template("trainer:1", ["python", "train.py"]))
        .completion(min_succeeded=4, max_failed=1)
        .retry(max_retry_count=2, delay=10)
        .on("RoleSucceeded", "TaskSetSucceeded")
    ).retry(max_retry_count=1)
    client.create(ts)

Every builder method returns the builder, so calls chain; ``to_dict()`` gives a fresh plain dict each
time. Only what was set is written: the controller's defaults (docs/user-manual.md) apply to the rest.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from taskset_sdk.constants import API_VERSION, KIND, ROLE_EVENTS, TASKSET_ACTIONS

__all__ = ["CompletionPolicy", "EventPolicy", "RetryPolicy", "Role", "TaskSet", "pod_template"]


@dataclass(frozen=True)
class RetryPolicy:
    """Retry a failed replica (on a role) or a failed attempt (on the TaskSet), ``delay`` seconds later."""

    max_retry_count: int = 0
    delay: int = 0
    retry: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {"retry": self.retry, "maxRetryCount": self.max_retry_count, "delay": self.delay}


@dataclass(frozen=True)
class CompletionPolicy:
    """When a role is decided: ``min_succeeded`` replicas succeeded, or ``max_failed`` failed."""

    min_succeeded: int | None = None
    max_failed: int | None = None

    def to_dict(self) -> dict[str, Any]:
        fields = (("minSucceeded", self.min_succeeded), ("maxFailed", self.max_failed))
        return {key: value for key, value in fields if value is not None}


@dataclass(frozen=True)
class EventPolicy:
    """What a role's outcome (``RoleFailed``/``RoleSucceeded``/``RoleCompleted``) does to the TaskSet."""

    event: str
    action: str

    def __post_init__(self) -> None:
        # Caught here, with the choices, rather than as a 422 after a round trip.
        if self.event not in ROLE_EVENTS:
            raise ValueError(f"event {self.event!r} is not one of {', '.join(ROLE_EVENTS)}")
        if self.action not in TASKSET_ACTIONS:
            raise ValueError(f"action {self.action!r} is not one of {', '.join(TASKSET_ACTIONS)}")

    def to_dict(self) -> dict[str, Any]:
        return {"event": self.event, "action": self.action}


def pod_template(
    image: str,
    command: Sequence[str] | None = None,
    *,
    container: str = "main",
    env: Mapping[str, str] | None = None,
    resources: Mapping[str, Any] | None = None,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    **spec_fields: Any,
) -> dict[str, Any]:
    """A one-container Pod template (the first container decides a replica's outcome). Extra keyword
    arguments are PodSpec fields as the API spells them, e.g. ``nodeSelector={...}``."""
    main: dict[str, Any] = {"name": container, "image": image}
    if command is not None:
        main["command"] = list(command)
    if env:
        main["env"] = [{"name": key, "value": value} for key, value in env.items()]
    if resources:
        main["resources"] = copy.deepcopy(dict(resources))
    template: dict[str, Any] = {"spec": {"restartPolicy": "Never", "containers": [main], **spec_fields}}
    metadata = {
        key: dict(value) for key, value in (("labels", labels), ("annotations", annotations)) if value
    }
    if metadata:
        template["metadata"] = metadata
    return template


@dataclass
class Role:
    """One role: ``replicas`` Pods from ``template``, with its policies."""

    name: str
    replicas: int
    template: Mapping[str, Any]
    completion_policy: CompletionPolicy | None = None
    retry_policy: RetryPolicy | None = None
    event_policy: list[EventPolicy] = field(default_factory=list)

    def completion(self, *, min_succeeded: int | None = None, max_failed: int | None = None) -> Role:
        self.completion_policy = CompletionPolicy(min_succeeded, max_failed)
        return self

    def retry(self, *, max_retry_count: int, delay: int = 0) -> Role:
        self.retry_policy = RetryPolicy(max_retry_count, delay)
        return self

    def on(self, event: str, action: str) -> Role:
        """Add an event policy entry; without any, a failed role fails the TaskSet."""
        self.event_policy.append(EventPolicy(event, action))
        return self

    def to_dict(self) -> dict[str, Any]:
        role: dict[str, Any] = {
            "name": self.name,
            "replicas": self.replicas,
            "template": copy.deepcopy(dict(self.template)),
        }
        if self.completion_policy is not None:
            role["completionPolicy"] = self.completion_policy.to_dict()
        if self.retry_policy is not None:
            role["retryPolicy"] = self.retry_policy.to_dict()
        if self.event_policy:
            role["eventPolicy"] = [entry.to_dict() for entry in self.event_policy]
        return role


@dataclass
class TaskSet:
    """A TaskSet: roles in order (the order of the status and of the event policies), a TaskSet-level
    retry policy, and metadata. ``namespace`` None means the client's namespace."""

    name: str
    roles: list[Role] = field(default_factory=list)
    retry_policy: RetryPolicy | None = None
    namespace: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)

    def role(self, role: Role) -> TaskSet:
        self.roles.append(role)
        return self

    def retry(self, *, max_retry_count: int, delay: int = 0) -> TaskSet:
        self.retry_policy = RetryPolicy(max_retry_count, delay)
        return self

    def to_dict(self) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": self.name}
        for key, value in (
            ("namespace", self.namespace),
            ("labels", self.labels),
            ("annotations", self.annotations),
        ):
            if value:
                metadata[key] = copy.deepcopy(value)
        spec: dict[str, Any] = {"roles": [role.to_dict() for role in self.roles]}
        if self.retry_policy is not None:
            spec["retryPolicy"] = self.retry_policy.to_dict()
        return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": spec}
