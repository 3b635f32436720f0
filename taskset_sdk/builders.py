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
The whole spec can be built: the newer fields are keyword arguments of ``TaskSet`` and ``Role``, typed
by the small classes below, and a word that is none of the field's choices is refused at once:

    TaskSet(
        "pt",
        framework=Framework("pytorch", nproc_per_node="1"),   # spec.framework, spec.frameworkOptions
        network=Network(subdomain="peers"),                   # spec.network
        gang=Gang("coscheduling", min_available=3),           # spec.gang
        clean_pod_policy="Running",                           # keep the exited Pods for their logs
        active_deadline_seconds=3600, ttl_seconds_after_finished=600, start_deadline_seconds=300,
        suspend=True, managed_by="kueue.x-k8s.io/multikueue", scale=Scale("worker", 4),
    ).fail_on(FailureRule("FailTaskSet", name="oom", terminated_reasons=["OOMKilled"])).role(
        Role("worker", 4, template, min_replicas=1, max_replicas=8)
        .after("master", until="Running")                     # roles[].dependsOn
        .fail_on(FailureRule("FailRole", exit_codes=["64-78"]))
        .retry(max_retry_count=3, backoff=Backoff(5, factor=2, max_delay=300))
    )
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from taskset_sdk.constants import (
    API_VERSION,
    CLEAN_POD_POLICIES,
    CONDITION_STATUSES,
    DEPENDS_ON_UNTIL,
    EXIT_CODE_OPERATORS,
    FAILURE_ACTIONS,
    FRAMEWORKS,
    GANG_SCHEDULERS,
    KIND,
    NODE_LOSS_ACTIONS,
    ROLE_EVENTS,
    TASKSET_ACTIONS,
)

__all__ = [
    "Backoff",
    "CompletionPolicy",
    "DependsOn",
    "EventPolicy",
    "FailureRule",
    "Framework",
    "Gang",
    "Network",
    "RetryPolicy",
    "Role",
    "Scale",
    "TaskSet",
    "pod_template",
]


def _choice(field_name: str, value: str | None, choices: Sequence[str]) -> None:
    """Refuse a word the CRD would refuse, here and with the choices, rather than as a 422 later."""
    if value is not None and value not in choices:
        raise ValueError(f"{field_name} {value!r} is not one of {', '.join(choices)}")


def _set(**fields: Any) -> dict[str, Any]:
    """The fields that were set (not None), deep-copied, under their API names."""
    return {key: copy.deepcopy(value) for key, value in fields.items() if value is not None}


@dataclass(frozen=True)
class Backoff:
    """Retry n + 1 waits ``initial_delay * factor^n`` seconds, at most ``max_delay``, lengthened by up
    to ``jitter_percent`` percent (``retryPolicy.backoff``, user manual 2.10)."""

    initial_delay: int
    factor: int | None = None
    max_delay: int | None = None
    jitter_percent: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return _set(
            initialDelay=self.initial_delay,
            factor=self.factor,
            maxDelay=self.max_delay,
            jitterPercent=self.jitter_percent,
        )


@dataclass(frozen=True)
class RetryPolicy:
    """Retry a failed replica (on a role) or a failed attempt (on the TaskSet), ``delay`` seconds later,
    or after a growing ``backoff`` instead."""

    max_retry_count: int = 0
    delay: int = 0
    retry: bool = True
    backoff: Backoff | None = None
    # The TaskSet's only: preemptions of its Pods it survives (None: any number).
    max_preemptions: int | None = None

    def to_dict(self) -> dict[str, Any]:
        policy: dict[str, Any] = {"retry": self.retry, "maxRetryCount": self.max_retry_count}
        policy["delay"] = self.delay
        policy |= {"backoff": self.backoff.to_dict()} if self.backoff else {}
        return policy | _set(maxPreemptions=self.max_preemptions)


@dataclass(frozen=True)
class CompletionPolicy:
    """When a role is decided: ``min_succeeded`` replicas succeeded, or ``max_failed`` failed; each a
    count or a percentage of the role's replicas such as ``"50%"`` (rounded up)."""

    min_succeeded: int | str | None = None
    max_failed: int | str | None = None

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


@dataclass(frozen=True)
class FailureRule:
    """How a failed replica attempt is handled when it matches (``failureRules``, user manual 2.10):
    its main container's (or ``container``'s) exit code is ``In`` (or ``NotIn``) ``exit_codes`` (codes
    or ranges such as ``"64-78"``), its terminated reason, its Pod's reason, or a Pod condition
    (``{"DisruptionTarget": "True"}``). A rule without ``name`` is named by its place. What it changes in
    the replica's next Pods: ``avoid_failed_nodes``, and after an OOMKilled container its memory times
    ``memory_factor`` up to ``memory_ceiling`` (both or neither; user manual, platform failures)."""

    action: str
    name: str | None = None
    exit_codes: Sequence[int | str] = ()
    operator: str = "In"
    container: str | None = None
    terminated_reasons: Sequence[str] = ()
    pod_reasons: Sequence[str] = ()
    pod_conditions: Mapping[str, str] = field(default_factory=dict)
    avoid_failed_nodes: bool = False
    memory_factor: float | None = None
    memory_ceiling: str | None = None

    def __post_init__(self) -> None:
        _choice("failure rule action", self.action, FAILURE_ACTIONS)
        if (self.memory_factor is None) != (self.memory_ceiling is None):
            raise ValueError("memory_factor and memory_ceiling go together")
        _choice("exit code operator", self.operator, EXIT_CODE_OPERATORS)
        for status in self.pod_conditions.values():
            _choice("Pod condition status", status, CONDITION_STATUSES)

    def to_dict(self) -> dict[str, Any]:
        codes = (
            _set(containerName=self.container, operator=self.operator, values=list(self.exit_codes))
            if self.exit_codes
            else None
        )
        conditions = [{"type": kind, "status": status} for kind, status in self.pod_conditions.items()]
        memory = (
            None
            if self.memory_factor is None
            else {"factor": self.memory_factor, "ceiling": self.memory_ceiling}
        )
        next_attempt = _set(avoidFailedNodes=self.avoid_failed_nodes or None, memory=memory)
        return _set(
            name=self.name,
            action=self.action,
            onExitCodes=codes,
            onTerminatedReasons=list(self.terminated_reasons) or None,
            onPodReasons=list(self.pod_reasons) or None,
            onPodConditions=conditions or None,
            nextAttempt=next_attempt or None,
        )


@dataclass(frozen=True)
class DependsOn:
    """Hold a role's Pods until ``min_replicas`` (default all) of ``role``'s replicas are ``until``
    (``roles[].dependsOn``, user manual 2.9)."""

    role: str
    until: str = "Running"
    min_replicas: int | None = None

    def __post_init__(self) -> None:
        _choice("dependsOn until", self.until, DEPENDS_ON_UNTIL)

    def to_dict(self) -> dict[str, Any]:
        return _set(role=self.role, until=self.until, minReplicas=self.min_replicas)


@dataclass(frozen=True)
class Framework:
    """A framework preset (``spec.framework`` and ``spec.frameworkOptions``, user manual 2.8)."""

    name: str
    master_role: str | None = None
    port: int | None = None
    nproc_per_node: str | None = None  # auto, cpu, gpu or a number
    slots_per_worker: int | None = None

    def __post_init__(self) -> None:
        _choice("framework", self.name, FRAMEWORKS)

    def options(self) -> dict[str, Any]:
        return _set(
            masterRole=self.master_role,
            port=self.port,
            nprocPerNode=self.nproc_per_node,
            slotsPerWorker=self.slots_per_worker,
        )


@dataclass(frozen=True)
class Network:
    """The replicas' DNS names (``spec.network``, user manual 2.7); unset fields keep the defaults
    (names on, the subdomain the TaskSet's name)."""

    enable_dns_hostnames: bool | None = None
    subdomain: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return _set(enableDNSHostnames=self.enable_dns_hostnames, subdomain=self.subdomain)


@dataclass(frozen=True)
class Gang:
    """Gang scheduling (``spec.gang``, user manual 9.4)."""

    scheduler: str
    min_available: int | None = None
    schedule_timeout_seconds: int | None = None  # coscheduling
    queue: str | None = None  # volcano

    def __post_init__(self) -> None:
        _choice("gang scheduler", self.scheduler, GANG_SCHEDULERS)

    def to_dict(self) -> dict[str, Any]:
        return _set(
            scheduler=self.scheduler,
            minAvailable=self.min_available,
            scheduleTimeoutSeconds=self.schedule_timeout_seconds,
            queue=self.queue,
        )


@dataclass(frozen=True)
class Scale:
    """The role ``kubectl scale`` and an HPA drive, and its count (``spec.scale``, user manual 2.12)."""

    role: str
    replicas: int

    def to_dict(self) -> dict[str, Any]:
        return {"role": self.role, "replicas": self.replicas}


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
    """One role: ``replicas`` Pods from ``template``, with its policies; ``min_replicas`` and
    ``max_replicas`` make it elastic (user manual 2.12)."""

    name: str
    replicas: int
    template: Mapping[str, Any]
    completion_policy: CompletionPolicy | None = None
    retry_policy: RetryPolicy | None = None
    event_policy: list[EventPolicy] = field(default_factory=list)
    depends_on: list[DependsOn] = field(default_factory=list)
    failure_rules: list[FailureRule] = field(default_factory=list)
    min_replicas: int | None = None
    max_replicas: int | None = None
    start_deadline_seconds: int | None = None

    def completion(
        self, *, min_succeeded: int | str | None = None, max_failed: int | str | None = None
    ) -> Role:
        self.completion_policy = CompletionPolicy(min_succeeded, max_failed)
        return self

    def retry(self, *, max_retry_count: int, delay: int = 0, backoff: Backoff | None = None) -> Role:
        self.retry_policy = RetryPolicy(max_retry_count, delay, backoff=backoff)
        return self

    def after(self, role: str, *, until: str = "Running", min_replicas: int | None = None) -> Role:
        """Hold this role's Pods until ``role`` has reached ``until`` (a ``dependsOn`` entry)."""
        self.depends_on.append(DependsOn(role, until, min_replicas))
        return self

    def fail_on(self, rule: FailureRule) -> Role:
        """Add a failure rule; the first that matches a failed attempt decides."""
        self.failure_rules.append(rule)
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
        if self.depends_on:
            role["dependsOn"] = [entry.to_dict() for entry in self.depends_on]
        if self.failure_rules:
            role["failureRules"] = [rule.to_dict() for rule in self.failure_rules]
        return role | _set(
            minReplicas=self.min_replicas,
            maxReplicas=self.max_replicas,
            startDeadlineSeconds=self.start_deadline_seconds,
        )


@dataclass
class TaskSet:
    """A TaskSet: roles in order (the order of the status and of the event policies), a TaskSet-level
    retry policy, metadata, and the spec's other fields (user manual 2.6 to 2.12 and 9), each written
    only when set. ``namespace`` None means the client's namespace."""

    name: str
    roles: list[Role] = field(default_factory=list)
    retry_policy: RetryPolicy | None = None
    namespace: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    failure_rules: list[FailureRule] = field(default_factory=list)
    framework: Framework | None = None
    network: Network | None = None
    gang: Gang | None = None
    scale: Scale | None = None
    clean_pod_policy: str | None = None  # None, Running or All (the default)
    active_deadline_seconds: int | None = None
    start_deadline_seconds: int | None = None
    ttl_seconds_after_finished: int | None = None
    suspend: bool | None = None
    managed_by: str | None = None
    queue: str | None = None  # reserved: accepted and kept, ignored by the controller
    priority: int | None = None  # the Kueue Workload's priority under --kueue
    node_loss: str | None = None  # spec.nodeLossPolicy.action: Wait (the default), Recover or OutOfService
    node_loss_grace_seconds: int | None = None  # Recover: how long a node is unreachable first

    def __post_init__(self) -> None:
        _choice("cleanPodPolicy", self.clean_pod_policy, CLEAN_POD_POLICIES)
        _choice("nodeLossPolicy.action", self.node_loss, NODE_LOSS_ACTIONS)

    def role(self, role: Role) -> TaskSet:
        self.roles.append(role)
        return self

    def retry(
        self,
        *,
        max_retry_count: int,
        delay: int = 0,
        backoff: Backoff | None = None,
        max_preemptions: int | None = None,
    ) -> TaskSet:
        """``max_preemptions``: fail the TaskSet at the preemption past it (see the user manual)."""
        self.retry_policy = RetryPolicy(
            max_retry_count, delay, backoff=backoff, max_preemptions=max_preemptions
        )
        return self

    def fail_on(self, rule: FailureRule) -> TaskSet:
        """Add a TaskSet-level failure rule, tried after the failed replica's role's own."""
        self.failure_rules.append(rule)
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
        _choice("cleanPodPolicy", self.clean_pod_policy, CLEAN_POD_POLICIES)
        spec: dict[str, Any] = {"roles": [role.to_dict() for role in self.roles]}
        if self.retry_policy is not None:
            spec["retryPolicy"] = self.retry_policy.to_dict()
        spec |= _set(
            failureRules=[rule.to_dict() for rule in self.failure_rules] or None,
            framework=self.framework.name if self.framework else None,
            frameworkOptions=(self.framework.options() or None) if self.framework else None,
            network=self.network.to_dict() if self.network else None,
            gang=self.gang.to_dict() if self.gang else None,
            scale=self.scale.to_dict() if self.scale else None,
            cleanPodPolicy=self.clean_pod_policy,
            activeDeadlineSeconds=self.active_deadline_seconds,
            startDeadlineSeconds=self.start_deadline_seconds,
            ttlSecondsAfterFinished=self.ttl_seconds_after_finished,
            suspend=self.suspend,
            managedBy=self.managed_by,
            queue=self.queue,
            priority=self.priority,
            nodeLossPolicy=_set(action=self.node_loss, graceSeconds=self.node_loss_grace_seconds) or None,
        )
        return {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": spec}
