"""The TaskSet status as typed, mutable working copies, and its exact wire shape (spec 2.5).

A reconcile parses the recorded status once, lets the pure machines edit a private copy, and serializes
it back with every key present (O's Go types had no ``omitempty``). Parsing tolerates anything a user or
an older controller may have stored: unknown phases fall back to the initial one and wrong types to
defaults, so a damaged status never crashes the controller.

Controller-made timestamps are rounded **up** to the second (``stamp``): the wire format has second
precision, and rounding up means a delay measured from a stored ``transitionTime`` is never cut short.

Content bounds. Every string that others write and nobody checks (a container's termination
message, a Pod's message and reasons, the runtime's container ID, an API server's refusal) is clipped,
visibly, to the lengths below when the status is serialized, whatever path brought it in: 400 replicas
that each ended with a 4 KiB termination message once made a status of 1.27 MB that etcd refused for
good. The bounds are in characters (Python ``str``); a character is at most 4 bytes of UTF-8, or 6 when
JSON escapes it. With them a replica's entry takes about 1 KB with a maximal termination message, and at
most about 2.5 KB of ASCII (8 KB of 4-byte characters) with every field at its bound. So 400 such replicas
fit well under etcd's 1.5 MiB, but a TaskSet with thousands of replicas needs the compact status of the
largest TaskSets on top: these bounds limit what content costs, not how many replicas there are.
The user manual lists them ("Bounded texts", docs/user-manual.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from taskset.api import compact, copies
from taskset.api.compact import BUCKETS, COUNTS, expand, replica_counts, shape, unchanged_by_role
from taskset.api.constants import (
    ConditionStatus,
    ConditionType,
    FailureAction,
    ReplicaPhase,
    RolePhase,
    State,
    TaskSetPhase,
)
from taskset.api.counted_eviction import COUNTED_EVICTION, counted_eviction_json
from taskset.api.elastic_status import MembershipStatus, ScaleRecord, ScaleStatus
from taskset.api.history import AttemptHistory, ended_by_from_json, ended_by_json
from taskset.api.node_loss import STATUS_FIELD, NodeRecoveries
from taskset.api.readers import as_count, as_enum, as_items, as_mapping, as_opt_count, as_opt_text, as_text
from taskset.api.retry_effects import RetryEffect

Json = dict[str, Any]

# ----- content bounds, in characters ------------------------------------------------------------
# terminatedInfo.exitMessage: the kubelet allows 4 KiB per container; the first lines say what happened.
EXIT_MESSAGE_MAX = 256
# podReason, terminatedInfo.reason: Kubernetes reasons are one CamelCase word (Evicted, OOMKilled).
REASON_MAX = 128
# containerID: a runtime's ID is under 100 (the API server checks the IPs and container names itself).
IDENTIFIER_MAX = 256
# One outside text quoted inside a message of ours (a Pod's message, an API server's refusal): small
# enough that our words around it (the retry decision after it, for one) always fit in MESSAGE_MAX.
QUOTED_MAX = 512
# Every message field (phaseMessage, stateMessage, a condition's message, attemptResult.reason): a quoted
# text and the controller's own words; the CRD would refuse a condition message over 32 KiB.
MESSAGE_MAX = 1024
CLIPPED = "..."  # ends a clipped text, so that a reader knows there was more


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, visibly (it then ends with ``CLIPPED``)."""
    return text if len(text) <= limit else text[: limit - len(CLIPPED)] + CLIPPED


def stamp(moment: datetime) -> str:
    """RFC 3339 UTC with second precision, rounded up."""
    seconds = math.ceil(moment.timestamp())
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


parse_time = compact.parse_time  # a stored timestamp, read where the decisions have always found it


def seconds_since(value: str | None, now: datetime) -> float:
    """Seconds from a stored timestamp to ``now``; a missing timestamp counts as 'long ago'."""
    moment = parse_time(value)
    return math.inf if moment is None else (now - moment).total_seconds()


@dataclass(frozen=True)
class TerminatedInfo:
    """How the replica's last Pod ended; never changed once made, so a pass's copy shares it."""

    exit_code: int
    exit_message: str = ""
    signal: int = 0
    reason: str = ""

    def to_json(self) -> Json:
        return {
            "exitCode": self.exit_code,
            "exitMessage": clip(self.exit_message, EXIT_MESSAGE_MAX),
            "signal": self.signal,
            "reason": clip(self.reason, REASON_MAX),
        }

    @classmethod
    def from_json(cls, raw: object) -> TerminatedInfo | None:
        if not isinstance(raw, dict) or not isinstance(raw.get("exitCode"), int):
            return None
        return cls(
            exit_code=raw["exitCode"],
            exit_message=as_text(raw.get("exitMessage")),
            signal=raw["signal"] if isinstance(raw.get("signal"), int) else 0,
            reason=as_text(raw.get("reason")),
        )


@dataclass(frozen=True)
class FailureRecord:
    """Which failure rule matched the replica's failed attempt, its action and why. Kept
    until the replica's next attempt starts; the event of the same reason says it for good. Immutable,
    as ``TerminatedInfo``."""

    rule: str
    action: FailureAction
    message: str

    def to_json(self) -> Json:
        return {
            "rule": clip(self.rule, REASON_MAX),
            "action": str(self.action),
            "message": clip(self.message, QUOTED_MAX),
        }

    @classmethod
    def from_json(cls, raw: object) -> FailureRecord | None:
        if not isinstance(raw, dict) or raw.get("action") not in tuple(FailureAction):
            return None
        return cls(as_text(raw.get("rule")), FailureAction(raw["action"]), as_text(raw.get("message")))


@dataclass
class ReplicaStatus:
    index: int
    name: str  # the role's name, as O writes it
    phase: ReplicaPhase = ReplicaPhase.ATTEMPT_PENDING
    phase_message: str = ""
    stopped: bool = False
    # The replica's Pod is going away because the TaskSet was suspended, so its end is neither
    # a failure nor a retry; the replica goes back to AttemptPending once the Pod is gone.
    suspended: bool = False
    transition_time: str | None = None
    start_at: str | None = None
    finish_at: str | None = None
    total_retried_count: int = 0
    pod_name: str = ""
    pod_reason: str = ""
    pod_uid: str | None = None
    pod_ip: str = ""
    pod_host_ip: str = ""
    container_name: str = ""
    container_id: str = ""
    terminated_info: TerminatedInfo | None = None
    # Retries started that did not count against maxRetryCount (included in
    # total_retried_count), and the failure rule that matched the current attempt's failure.
    uncounted_retries: int = 0
    failure: FailureRecord | None = None
    next_retry_at: str | None = None  # when the pending retry is due (read by people, not decisions)
    # What its failures change in its next Pods (taskset.api.retry_effects); kept across its attempts.
    next_attempt: RetryEffect | None = None

    def copy(self) -> ReplicaStatus:
        """A private copy for a pass, sharing its records (immutable)."""
        return copies.shallow(self)

    @property
    def counted_retries(self) -> int:
        """The retries the role's maxRetryCount limits."""
        return max(0, self.total_retried_count - self.uncounted_retries)

    @property
    def succeeded(self) -> bool:
        """The replica's outcome rule (spec 2.5.3): only a captured exit code 0 is a success."""
        return self.terminated_info is not None and self.terminated_info.exit_code == 0

    def clear_pod(self) -> None:
        """Forget everything about the previous attempt's Pod (P14; R also clears podReason)."""
        self.pod_name = ""
        self.pod_reason = ""
        self.pod_uid = None
        self.pod_ip = ""
        self.pod_host_ip = ""
        self.container_name = ""
        self.container_id = ""
        self.start_at = None
        self.finish_at = None
        self.terminated_info = None
        self.failure = None
        self.next_retry_at = None

    def to_json(self) -> Json:
        wire = self._wire()
        if self.suspended:  # written only while true: a 10,000-replica status pays nothing for it
            wire["suspended"] = True
        if self.next_attempt is not None:  # likewise, only once a failure rule changed the next attempt
            wire["nextAttempt"] = self.next_attempt.to_json()
        return wire

    def _wire(self) -> Json:
        # Stored one by one as a new object's attributes: the dict that holds them (its ``__dict__``)
        # holds its keys in the table every written replica shares (``taskset.api.shared_keys``).
        held: Any = object.__new__(_ReplicaKeys)
        held.index = self.index
        held.name = self.name
        held.phase = self.phase._value_  # the member's own string: str() would make a copy per record
        held.phaseMessage = clip(self.phase_message, MESSAGE_MAX)
        held.stopped = self.stopped
        held.transitionTime = self.transition_time
        held.startAt = self.start_at
        held.finishAt = self.finish_at
        held.totalRetriedCount = self.total_retried_count
        held.podName = self.pod_name
        held.podReason = clip(self.pod_reason, REASON_MAX)
        held.podUID = self.pod_uid
        held.podIP = self.pod_ip
        held.podHostIP = self.pod_host_ip
        held.containerName = self.container_name
        held.containerID = clip(self.container_id, IDENTIFIER_MAX)
        held.terminatedInfo = None if self.terminated_info is None else self.terminated_info.to_json()
        held.uncountedRetries = self.uncounted_retries
        held.failure = None if self.failure is None else self.failure.to_json()
        held.nextRetryAt = self.next_retry_at
        wire: Json = held.__dict__
        return wire

    @classmethod
    def from_json(cls, raw: Json, index: int, role: str) -> ReplicaStatus:
        return cls(
            index=index,
            name=role,
            phase=as_enum(ReplicaPhase, raw.get("phase"), ReplicaPhase.ATTEMPT_PENDING),
            phase_message=as_text(raw.get("phaseMessage")),
            stopped=raw.get("stopped") is True,
            suspended=raw.get("suspended") is True,
            transition_time=as_opt_text(raw.get("transitionTime")),
            start_at=as_opt_text(raw.get("startAt")),
            finish_at=as_opt_text(raw.get("finishAt")),
            total_retried_count=as_count(raw.get("totalRetriedCount")),
            pod_name=as_text(raw.get("podName")),
            pod_reason=as_text(raw.get("podReason")),
            pod_uid=as_opt_text(raw.get("podUID")),
            pod_ip=as_text(raw.get("podIP")),
            pod_host_ip=as_text(raw.get("podHostIP")),
            container_name=as_text(raw.get("containerName")),
            container_id=as_text(raw.get("containerID")),
            terminated_info=TerminatedInfo.from_json(raw.get("terminatedInfo")),
            uncounted_retries=as_count(raw.get("uncountedRetries")),
            failure=FailureRecord.from_json(raw.get("failure")),
            next_retry_at=as_opt_text(raw.get("nextRetryAt")),
            next_attempt=RetryEffect.from_json(raw.get("nextAttempt")),
        )


class _ReplicaKeys:
    """The table of a written replica's keys, in ``ReplicaStatus._wire``'s order (its every record sets
    all of them, in that order: the table is the first record's)."""


@dataclass
class RoleStatus:
    name: str
    replicas: list[ReplicaStatus]
    phase: RolePhase = RolePhase.WAITING
    phase_message: str = ""
    transition_time: str | None = None
    state: State = State.WAITING
    state_message: str = ""
    # The replicas this attempt runs the role with (None: as its spec snapshot says), and the
    # last scale: (from, to, when).
    target_replicas: int | None = None
    last_scale: ScaleRecord | None = None

    @classmethod
    def fresh(cls, name: str, replicas: int, now: str) -> RoleStatus:
        return cls(
            name=name,
            replicas=[ReplicaStatus(index=i, name=name, transition_time=now) for i in range(replicas)],
            transition_time=now,
        )

    def copy(self) -> RoleStatus:
        fresh = copies.with_records_copied(self, but="replicas")
        fresh.replicas = [replica.copy() for replica in self.replicas]
        return fresh

    def to_json(self, replicas: list[Json] | None = None, counts: Json | None = None) -> Json:
        """``replicas``, ``counts``: the replicas' records and their counts, when the caller has them."""
        if replicas is None:
            replicas = [replica.to_json() for replica in self.replicas]
        return {
            "name": self.name,
            "phase": str(self.phase),
            "phaseMessage": clip(self.phase_message, MESSAGE_MAX),
            "transitionTime": self.transition_time,
            "state": str(self.state),
            "stateMessage": clip(self.state_message, MESSAGE_MAX),
            COUNTS: replica_counts(replicas) if counts is None else counts,
            "replicaStatus": replicas,
            **({} if self.target_replicas is None else {"targetReplicas": self.target_replicas}),
            **({} if self.last_scale is None else {"lastScale": self.last_scale.to_json()}),
        }

    @classmethod
    def from_json(
        cls, raw: Json, kept: RoleStatus | None = None, same: tuple[list[Json], RoleStatus] | None = None
    ) -> RoleStatus:
        """The role's status; a replica entry that is None (``compact.expand``'s unchanged rows) is
        ``kept``'s replica of that index, shared: recorded statuses are never changed, passes copy.
        ``same``: the full records of this role in the version before, and their parse; a record that
        is the one at its place there is that parse's replica (``compact.same_records_by_role``)."""
        name = as_text(raw.get("name"))
        entries = [
            r for r in as_items(raw.get("replicaStatus")) if isinstance(r, dict) or (r is None and kept)
        ]
        earlier, parsed = same if same is not None else ([], None)
        reusable = 0 if parsed is None else min(len(earlier), len(parsed.replicas))
        replicas = [
            parsed.replicas[index]  # type: ignore[union-attr]
            if index < reusable and item is earlier[index]
            else ReplicaStatus.from_json(item, index, name)
            if item is not None
            else _kept(kept, index)
            for index, item in enumerate(entries)
        ]
        return cls(
            name=name,
            replicas=replicas,
            **_lifecycle(raw, RolePhase, RolePhase.WAITING),
            target_replicas=as_opt_count(raw.get("targetReplicas")),
            last_scale=ScaleRecord.from_json(raw.get("lastScale")),
        )


@dataclass
class Condition:
    type: ConditionType
    status: ConditionStatus
    reason: str
    message: str
    last_transition_time: str | None
    observed_generation: int

    def to_json(self) -> Json:
        return {
            "type": str(self.type),
            "status": str(self.status),
            "reason": self.reason,
            "message": clip(self.message, MESSAGE_MAX),
            "lastTransitionTime": self.last_transition_time,
            "observedGeneration": self.observed_generation,
        }

    @classmethod
    def from_json(cls, raw: Json) -> Condition | None:
        kind_name = raw.get("type")
        if not isinstance(kind_name, str) or kind_name not in ConditionType.__members__.values():
            return None
        kind = ConditionType(kind_name)
        return cls(
            type=kind,
            status=as_enum(ConditionStatus, raw.get("status"), ConditionStatus.UNKNOWN),
            reason=as_text(raw.get("reason")),
            message=as_text(raw.get("message")),
            last_transition_time=as_opt_text(raw.get("lastTransitionTime")),
            observed_generation=as_count(raw.get("observedGeneration")),
        )


@dataclass
class AttemptResult:
    """The current attempt's outcome as its policies decided it (R only): the attempt's spec lives in
    its ControlUnit, which is gone by the time the TaskSet completes, so the decision is kept here."""

    succeeded: bool
    reason: str
    final: bool = False  # no TaskSet retry may follow (a FailTaskSet rule, a deadline)
    # The replica (role, index) whose failure ended a failed attempt, for its history entry.
    replica: tuple[str, int] | None = None

    def to_json(self) -> Json:
        wire: Json = {
            "succeeded": self.succeeded,
            "reason": clip(self.reason, MESSAGE_MAX),
            "final": self.final,
        }
        if (
            self.replica is not None
        ):  # written only when known: the attempt results of before keep their shape
            wire["replica"] = ended_by_json(self.replica)
        return wire

    @classmethod
    def from_json(cls, raw: object) -> AttemptResult | None:
        if not isinstance(raw, dict) or not isinstance(raw.get("succeeded"), bool):
            return None
        ended_by = ended_by_from_json(raw.get("replica"))
        return cls(raw["succeeded"], as_text(raw.get("reason")), raw.get("final") is True, ended_by)


@dataclass
class TaskSetStatus:
    phase: TaskSetPhase = TaskSetPhase.VALIDATION
    phase_message: str = ""
    transition_time: str | None = None
    state: State = State.WAITING
    state_message: str = ""
    control_unit_uid: str | None = None
    # The digest of this attempt's ControlUnit snapshot, as the controller wrote it: the
    # ControlUnit is writable by anyone with ConfigMap rights, the status only by the controller.
    spec_digest: str | None = None
    created_at: str | None = None
    start_at: str | None = None
    finish_at: str | None = None
    total_retried_count: int = 0
    preempt_count: int = 0
    roles: list[RoleStatus] = field(default_factory=list)
    observed_generation: int = 0
    conditions: list[Condition] = field(default_factory=list)
    attempt_result: AttemptResult | None = None
    next_retry_at: str | None = None  # when the pending TaskSet retry is due
    scale: ScaleStatus | None = None  # the role spec.scale names, for /scale
    membership: MembershipStatus | None = None  # the live membership's generation
    # When the current attempt began (it entered AttemptPending), and the past attempts.
    attempt_start_at: str | None = None
    attempt_history: AttemptHistory = field(default_factory=AttemptHistory)
    # The Pods force-deleted because their node was lost (taskset.api.node_loss); on the wire only once
    # there is one, so a status that never met a lost node is as before.
    node_recoveries: NodeRecoveries = field(default_factory=NodeRecoveries)
    # The last Kueue eviction by preemption ``preempt_count`` counts (taskset.api.counted_eviction).
    counted_eviction: str | None = None
    # What a failed attempt's failures changed in the next attempts' Pods (taskset.decide.gang_avoidance).
    next_attempt: RetryEffect | None = None

    @property
    def attempt_id(self) -> int:
        return self.total_retried_count

    def role(self, name: str) -> RoleStatus | None:
        return next((role for role in self.roles if role.name == name), None)

    def condition(self, kind: ConditionType) -> Condition | None:
        return next((c for c in self.conditions if c.type == kind), None)

    def set_condition(
        self, kind: ConditionType, status: ConditionStatus, reason: str, message: str, now: str
    ) -> None:
        """Upsert one condition; ``lastTransitionTime`` moves only when ``status`` changes."""
        existing = self.condition(kind)
        if existing is None:
            self.conditions.append(Condition(kind, status, reason, message, now, self.observed_generation))
            return
        if existing.status != status:
            existing.last_transition_time = now
        existing.status = status
        existing.reason = reason
        existing.message = message
        existing.observed_generation = self.observed_generation

    def summary(self, roles: list[Json] | None = None) -> Json:
        """Progress for ``kubectl get ts`` printer columns, which can only show values, not add them up
        (``roles``: the roles' JSON with their counts, when the caller has it already)."""
        if roles is None:
            roles = [role.to_json() for role in self.roles]
        replicas = [replica for role in self.roles for replica in role.replicas]
        done_roles = sum(1 for role in self.roles if role.phase == RolePhase.COMPLETED)
        finished = sum(1 for r in replicas if r.phase == ReplicaPhase.COMPLETED)
        totals = {bucket: sum(role[COUNTS][bucket] for role in roles) for bucket in BUCKETS}
        return {
            "roles": f"{done_roles}/{len(self.roles)}",
            "replicas": f"{finished}/{len(replicas)}",
            **totals,
        }

    def to_json(self) -> Json:
        """The status to write: today's full shape when it fits in the status budget, else the compact
        one (``taskset.api.compact``)."""
        return shape(self.full_json())

    def full_json(self, roles: list[Json] | None = None) -> Json:
        """The full shape (spec 2.5), whatever its size (``roles``: the roles' JSON, when the caller has
        it)."""
        if roles is None:
            roles = [role.to_json() for role in self.roles]
        return {
            "phase": str(self.phase),
            "phaseMessage": clip(self.phase_message, MESSAGE_MAX),
            "transitionTime": self.transition_time,
            "state": str(self.state),
            "stateMessage": clip(self.state_message, MESSAGE_MAX),
            "controlUnitUID": self.control_unit_uid,
            "attemptSpecDigest": self.spec_digest,
            "createdAt": self.created_at,
            "startAt": self.start_at,
            "finishAt": self.finish_at,
            "totalRetriedCount": self.total_retried_count,
            "preemptCount": self.preempt_count,
            "roleStatus": roles,
            "observedGeneration": self.observed_generation,
            "attemptResult": None if self.attempt_result is None else self.attempt_result.to_json(),
            "nextRetryAt": self.next_retry_at,
            "attemptStartAt": self.attempt_start_at,
            "attemptHistory": self.attempt_history.to_json(),
            "conditions": [condition.to_json() for condition in self.conditions],
            "summary": self.summary(roles),
            **({} if self.scale is None else {"scale": self.scale.to_json()}),
            **({} if self.membership is None else {"membership": self.membership.to_json()}),
            **({STATUS_FIELD: self.node_recoveries.to_json()} if self.node_recoveries else {}),
            **counted_eviction_json(self.counted_eviction),
            **({} if self.next_attempt is None else {"nextAttempt": self.next_attempt.to_json()}),
        }

    def copy(self) -> TaskSetStatus:
        """A private copy for a pass to change: every record and list anew, the immutable leaves
        (strings, numbers, enums, tuples) shared. A JSON round trip cost a pass of 400 replicas 2.9 ms,
        on every event (the bench's strangers). ``test_status_copy`` proves no mutable part is shared, so a
        field added later cannot be forgotten here unnoticed."""
        fresh = copies.with_records_copied(self)
        fresh.roles = [role.copy() for role in self.roles]
        fresh.conditions = [copies.shallow(condition) for condition in self.conditions]
        return fresh

    @classmethod
    def from_json(
        cls, raw: object, previous: tuple[object, TaskSetStatus | None] | None = None
    ) -> TaskSetStatus | None:
        """The recorded status, in either shape, or None when nothing usable is stored (the TaskSet is
        new). ``previous``, the version before and its parse, lends the replicas whose compact rows did
        not change (``compact.unchanged_rows``): the result equals a parse without it."""
        if not isinstance(raw, dict) or not isinstance(raw.get("phase"), str):
            return None
        lent = {role.name: role for role in previous[1].roles} if previous and previous[1] else {}
        before = previous[0] if previous and previous[1] else None
        unchanged = unchanged_by_role(raw, before, {name: len(role.replicas) for name, role in lent.items()})
        same = {
            name: (records, lent[name])
            for name, records in compact.same_records_by_role(raw, before).items()
            if name in lent
        }
        raw = expand(raw, unchanged)
        return cls(
            **_lifecycle(raw, TaskSetPhase, TaskSetPhase.VALIDATION),
            control_unit_uid=as_opt_text(raw.get("controlUnitUID")),
            spec_digest=as_opt_text(raw.get("attemptSpecDigest")),
            created_at=as_opt_text(raw.get("createdAt")),
            start_at=as_opt_text(raw.get("startAt")),
            finish_at=as_opt_text(raw.get("finishAt")),
            total_retried_count=as_count(raw.get("totalRetriedCount")),
            preempt_count=as_count(raw.get("preemptCount")),
            roles=[
                RoleStatus.from_json(
                    r,
                    lent.get(name) if (name := as_text(r.get("name"))) in unchanged else None,
                    same.get(name),
                )
                for r in as_items(raw.get("roleStatus"))
                if isinstance(r, dict)
            ],
            observed_generation=as_count(raw.get("observedGeneration")),
            # The attempt's outcome and the ended attempts before it, read together.
            attempt_result=AttemptResult.from_json(raw.get("attemptResult")),
            attempt_history=AttemptHistory.from_json(raw.get("attemptHistory")),
            next_retry_at=as_opt_text(raw.get("nextRetryAt")),
            attempt_start_at=as_opt_text(raw.get("attemptStartAt")),
            scale=ScaleStatus.from_json(raw.get("scale")),
            membership=MembershipStatus.from_json(raw.get("membership")),
            node_recoveries=NodeRecoveries.from_json(raw.get(STATUS_FIELD)),
            counted_eviction=as_opt_text(raw.get(COUNTED_EVICTION)) or None,
            next_attempt=RetryEffect.from_json(raw.get("nextAttempt")),
            conditions=[
                c
                for c in (Condition.from_json(as_mapping(r)) for r in as_items(raw.get("conditions")))
                if c is not None
            ],
        )


def _lifecycle(raw: Json, kind: type[StrEnum], default: StrEnum) -> dict[str, Any]:
    """The fields a role's status and the TaskSet's both have: the phase, its message and time, and the
    state and its message."""
    return {
        "phase": as_enum(kind, raw.get("phase"), default),
        "phase_message": as_text(raw.get("phaseMessage")),
        "transition_time": as_opt_text(raw.get("transitionTime")),
        "state": as_enum(State, raw.get("state"), State.WAITING),
        "state_message": as_text(raw.get("stateMessage")),
    }


def _kept(role: RoleStatus | None, index: int) -> ReplicaStatus:
    """The replica ``index`` of ``role``, which ``compact.unchanged_by_role`` checked it has."""
    assert role is not None
    return role.replicas[index]
