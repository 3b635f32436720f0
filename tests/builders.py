"""Fluent builders for test objects (JobSet's ``MakeJobSet(...).ReplicatedJob(...).Obj()`` style).

    TaskSetBuilder("psworker")
        .role("ps", command="sleep 3600")
        .role("worker", replicas=3, min_succeeded=2, max_failed=2,
              event_policy=[("RoleSucceeded", "TaskSetSucceeded")], retry=(True, 2, 10))
        .obj()

Every role gets the spec's common template (section 14.0) unless ``template=`` replaces it: restartPolicy
Never, terminationGracePeriodSeconds 1, one container ``c0`` running ``sh -c <command>`` in busybox.
``obj()`` returns a fresh deep copy, so a test may mutate it to build an invalid object.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from taskset.api.constants import API_VERSION, KIND

# (retry, maxRetryCount, delay) or the raw dict; None leaves retryPolicy out.
RetrySpec = tuple[bool, int, int] | dict[str, Any] | None
# (event, action) pairs or raw dicts; None leaves eventPolicy out, [] writes an empty list.
EventPolicySpec = Sequence[tuple[str, str]] | Sequence[dict[str, Any]] | None

DEFAULT_COMMAND = "exit 0"
DEFAULT_IMAGE = "busybox"


def pod_template(
    command: str = DEFAULT_COMMAND,
    *,
    container: str = "c0",
    image: str = DEFAULT_IMAGE,
    restart_policy: str | None = "Never",
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    **spec_fields: Any,
) -> dict[str, Any]:
    """The common template of spec 14.0; extra keyword arguments become PodSpec fields."""
    spec: dict[str, Any] = {
        "terminationGracePeriodSeconds": 1,
        "containers": [{"name": container, "image": image, "command": ["sh", "-c", command]}],
        **spec_fields,
    }
    if restart_policy is not None:
        spec["restartPolicy"] = restart_policy
    template: dict[str, Any] = {"spec": spec}
    metadata = {key: value for key, value in (("labels", labels), ("annotations", annotations)) if value}
    if metadata:
        template["metadata"] = metadata
    return template


def retry_policy(spec: RetrySpec) -> dict[str, Any] | None:
    if spec is None or isinstance(spec, dict):
        return spec
    retry, max_retry_count, delay = spec
    return {"retry": retry, "maxRetryCount": max_retry_count, "delay": delay}


class TaskSetBuilder:
    def __init__(self, name: str, namespace: str | None = None) -> None:
        metadata: dict[str, Any] = {"name": name}
        if namespace is not None:
            metadata["namespace"] = namespace
        self._obj: dict[str, Any] = {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": metadata,
            "spec": {},
        }

    # ----- metadata -------------------------------------------------------------------------------------
    def namespace(self, namespace: str) -> TaskSetBuilder:
        self._obj["metadata"]["namespace"] = namespace
        return self

    def uid(self, uid: str) -> TaskSetBuilder:
        self._obj["metadata"]["uid"] = uid
        return self

    def generation(self, generation: int) -> TaskSetBuilder:
        self._obj["metadata"]["generation"] = generation
        return self

    # ----- spec -----------------------------------------------------------------------------------------
    def retry(self, retry: bool = True, max_retry_count: int = 0, delay: int = 0) -> TaskSetBuilder:
        """TaskSet-level retry ("TS-retry k d" in the scenarios)."""
        self._obj["spec"]["retryPolicy"] = retry_policy((retry, max_retry_count, delay))
        return self

    def queue(self, queue: str) -> TaskSetBuilder:
        self._obj["spec"]["queue"] = queue
        return self

    def spec_field(self, name: str, value: Any) -> TaskSetBuilder:
        """Any spec field as given (``network``, ``framework``, ...), valid or not."""
        self._obj["spec"][name] = value
        return self

    def priority(self, priority: int) -> TaskSetBuilder:
        self._obj["spec"]["priority"] = priority
        return self

    def suspend(self, suspend: object = True) -> TaskSetBuilder:
        """``spec.suspend``; any value, for hostile input."""
        self._obj["spec"]["suspend"] = suspend
        return self

    def managed_by(self, manager: object) -> TaskSetBuilder:
        """``spec.managedBy``; any value, for hostile input."""
        self._obj["spec"]["managedBy"] = manager
        return self

    def no_roles(self) -> TaskSetBuilder:
        """An explicit ``roles: []`` (S26)."""
        self._obj["spec"]["roles"] = []
        return self

    def role(
        self,
        name: str,
        replicas: int | None = 1,
        *,
        command: str = DEFAULT_COMMAND,
        min_succeeded: int | None = None,
        max_failed: int | None = None,
        retry: RetrySpec = None,
        event_policy: EventPolicySpec = None,
        template: dict[str, Any] | None = None,
        **extra: Any,
    ) -> TaskSetBuilder:
        """Append a role. ``None`` leaves a field out; ``extra`` adds raw fields (for invalid objects)."""
        role: dict[str, Any] = {"name": name}
        if replicas is not None:
            role["replicas"] = replicas
        completion = {
            key: value
            for key, value in (("minSucceeded", min_succeeded), ("maxFailed", max_failed))
            if value is not None
        }
        if completion:
            role["completionPolicy"] = completion
        if retry is not None:
            role["retryPolicy"] = retry_policy(retry)
        if event_policy is not None:
            role["eventPolicy"] = [
                entry if isinstance(entry, dict) else {"event": entry[0], "action": entry[1]}
                for entry in event_policy
            ]
        role["template"] = template if template is not None else pod_template(command)
        role.update(extra)
        self._obj["spec"].setdefault("roles", []).append(role)
        return self

    # ----- status ---------------------------------------------------------------------------------------
    def status(self, status: dict[str, Any]) -> TaskSetBuilder:
        self._obj["status"] = status
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self._obj)
