"""The status budget: every supported TaskSet's status fits, and the compact shape loses nothing
the controller decides on."""

from __future__ import annotations

import copy
from dataclasses import asdict
from typing import Any

import pytest

from taskset.api import compact
from taskset.api import status as bounds
from taskset.api.compact import (
    DECISION_FIELDS,
    ROWS,
    STATUS_BUDGET,
    clip_bytes,
    json_bytes,
    not_fine,
    replica_counts,
    worst_case_bytes,
)
from taskset.api.constants import (
    MAX_RETRY_COUNT,
    MAX_ROLES,
    MAX_TOTAL_REPLICAS,
    POD_NAME_MAX_LENGTH,
    POD_REASON_NAME_CONFLICT,
    ConditionStatus,
    ConditionType,
    EventReason,
    FailureAction,
    ReplicaPhase,
)
from taskset.api.counted_eviction import COUNTED_EVICTION, COUNTED_EVICTION_BYTES, counted_eviction_key
from taskset.api.history import HISTORY_BYTES, HISTORY_MAX_ATTEMPTS, AttemptHistory, AttemptRecord
from taskset.api.node_loss import (
    NODE_RECOVERIES_BYTES,
    RECOVERIES_KEPT,
    NodeLossAction,
    NodeRecoveries,
    NodeRecovery,
)
from taskset.api.retry_effects import GANG_EFFECT_BYTES, MAX_AVOIDED_NODES, RetryEffect
from taskset.api.spec import ValidationFailure, parse_taskset
from taskset.api.status import (
    AttemptResult,
    FailureRecord,
    ReplicaStatus,
    RoleStatus,
    TaskSetStatus,
    TerminatedInfo,
)
from taskset.decide import waiting
from tests.builders import TaskSetBuilder

pytestmark = pytest.mark.unit

P = ReplicaPhase
T0 = "2026-01-01T00:00:00Z"
UID = "8b1a9953-c461-4b3c-8e5d-3b0f3c6a7e2b"
# The character the API server writes in six bytes (Go escapes it as \u003c): the worst text there is.
WORST = "<"


def worst_text(limit: int, seed: int) -> str:
    """``limit`` characters of six bytes each on the wire, distinct for each ``seed``."""
    return (f"{seed}:" + WORST * limit)[:limit]


def worst_replica(index: int, role: str) -> ReplicaStatus:
    """A replica with every field at its widest: an ending attempt (its Pod still there), retried to the
    bound, every text at its clip bound and distinct from every other replica's."""
    return ReplicaStatus(
        index=index,
        name=role,
        phase=P.ATTEMPT_DELETION_REQUESTED,
        phase_message=worst_text(bounds.MESSAGE_MAX, index),
        stopped=True,
        suspended=True,
        transition_time=T0,
        start_at=T0,
        finish_at=T0,
        total_retried_count=MAX_RETRY_COUNT + 1,
        pod_name=f"{role}-{index}",
        pod_reason=worst_text(bounds.REASON_MAX, index),
        pod_uid=UID,
        pod_ip="fd00:1234:5678:9abc:def0:1234:5678:9abc",
        pod_host_ip=worst_text(bounds.IDENTIFIER_MAX, index),
        container_name=worst_text(bounds.IDENTIFIER_MAX, index),
        container_id=worst_text(bounds.IDENTIFIER_MAX, index),
        terminated_info=TerminatedInfo(
            -(2**31),
            worst_text(bounds.EXIT_MESSAGE_MAX, index),
            -(2**31),
            worst_text(bounds.REASON_MAX, index),
        ),
    )


def worst_history() -> AttemptHistory:
    """The attempt history at its bound, every text of every entry long and of six-byte
    characters, every number at its widest."""
    records = tuple(
        AttemptRecord(
            attempt=MAX_RETRY_COUNT - n,
            start_at=T0,
            finish_at=T0,
            succeeded=False,
            reason=worst_text(bounds.MESSAGE_MAX, n),
            counted=False,
            replica=worst_text(999, n),
            exit_code=-(2**31),
            rule=worst_text(999, n),
            action=FailureAction.RESTART_TASKSET,
        )
        for n in reversed(range(HISTORY_MAX_ATTEMPTS))
    )
    return AttemptHistory(records, dropped=MAX_RETRY_COUNT)


def worst_recoveries() -> NodeRecoveries:
    """The node recoveries at their bound, every text long and of six-byte characters."""
    records = tuple(
        NodeRecovery(
            node=worst_text(999, n),
            replica=worst_text(999, n),
            pod=worst_text(999, n),
            pod_uid=worst_text(999, n),
            lost_at=worst_text(999, n),
            recovered_at=worst_text(999, n),
            action=NodeLossAction.OUT_OF_SERVICE,
        )
        for n in range(RECOVERIES_KEPT)
    )
    return NodeRecoveries(records, dropped=2**31)


def test_the_counted_eviction_at_its_widest_stays_within_its_bound() -> None:
    for uid in ("\u6c34" * 100, "\U0001f600" * 100, "x" * 100, f"{UID}@{T0}"):
        field = json_bytes({COUNTED_EVICTION: counted_eviction_key(uid)})
        assert field - 2 + 1 <= COUNTED_EVICTION_BYTES  # less the braces, plus a comma
    assert counted_eviction_key(f"{UID}@{T0}") == f"{UID}@{T0}", "a real key is kept whole"


def test_the_node_recoveries_at_their_widest_stay_within_their_bound() -> None:
    assert json_bytes({"nodeRecoveries": worst_recoveries().to_json()}) <= NODE_RECOVERIES_BYTES


def worst_gang_effect() -> RetryEffect:
    """The nodes every Pod of the next attempts avoids, at their bound, every text long and of six-byte
    characters (what a hand-edited status could hold)."""
    nodes = tuple(worst_text(999, n) for n in range(MAX_AVOIDED_NODES))
    return RetryEffect(MAX_RETRY_COUNT + 1, nodes, (), worst_text(9999, 7))


def test_the_gang_s_next_attempt_at_its_widest_stays_within_its_bound() -> None:
    assert json_bytes({"nextAttempt": worst_gang_effect().to_json()}) <= GANG_EFFECT_BYTES


def worst_status() -> TaskSetStatus:
    """The largest supported TaskSet (MAX_ROLES roles, MAX_TOTAL_REPLICAS replicas) at its widest."""
    per_role = MAX_TOTAL_REPLICAS // MAX_ROLES
    roles = []
    for r in range(MAX_ROLES):
        name = f"r{r}".ljust(POD_NAME_MAX_LENGTH - 10, "x")
        role = RoleStatus(name, [worst_replica(i, name) for i in range(per_role)], transition_time=T0)
        role.phase_message = role.state_message = worst_text(bounds.MESSAGE_MAX, r)
        roles.append(role)
    status = TaskSetStatus(
        phase_message=worst_text(bounds.MESSAGE_MAX, 1),
        state_message=worst_text(bounds.MESSAGE_MAX, 2),
        transition_time=T0,
        control_unit_uid=UID,
        spec_digest="sha256:" + "f" * 64,
        created_at=T0,
        start_at=T0,
        finish_at=T0,
        total_retried_count=MAX_RETRY_COUNT + 1,
        roles=roles,
        observed_generation=2**62,
        attempt_result=AttemptResult(
            False, worst_text(bounds.MESSAGE_MAX, 3), replica=(worst_text(999, 5), 9999)
        ),
        attempt_start_at=T0,
        attempt_history=worst_history(),
        node_recoveries=worst_recoveries(),
        counted_eviction="\u6c34" * 100,  # a stranger's Workload UID, at its widest once clipped
        next_attempt=worst_gang_effect(),
    )
    for kind in ConditionType:
        status.set_condition(kind, ConditionStatus.UNKNOWN, "R" * 1024, worst_text(bounds.MESSAGE_MAX, 4), T0)
    return status


def test_the_largest_supported_taskset_at_its_widest_fits_in_the_budget() -> None:
    bound = worst_case_bytes(
        bounds.MESSAGE_MAX,
        POD_NAME_MAX_LENGTH,
        1024,
        HISTORY_BYTES + NODE_RECOVERIES_BYTES + COUNTED_EVICTION_BYTES + GANG_EFFECT_BYTES,
    )
    status = worst_status()
    written = status.to_json()
    size = json_bytes(written)
    print(f"worst case: {size} bytes written, bound {sum(bound.values())} ({bound}), budget {STATUS_BUDGET}")
    assert ROWS in written["roleStatus"][0]
    assert size <= sum(bound.values()) <= STATUS_BUDGET
    assert sum(len(role[ROWS]["rows"]) for role in written["roleStatus"]) == MAX_TOTAL_REPLICAS
    # What the machines decide on survives even there: phases, retries, Pod UIDs, how the container ended.
    back = TaskSetStatus.from_json(written)
    assert back is not None
    for before, after in zip(status.roles, back.roles, strict=True):
        for old, new in zip(before.replicas, after.replicas, strict=True):
            assert (new.phase, new.total_retried_count, new.pod_uid, new.stopped, new.succeeded) == (
                old.phase,
                old.total_retried_count,
                old.pod_uid,
                old.stopped,
                old.succeeded,
            )


# ----- the compact shape's round trip -----------------------------------------------------------------------


def replica(phase: ReplicaPhase, **fields: Any) -> ReplicaStatus:
    base: dict[str, Any] = {"transition_time": T0}
    if phase not in (P.ATTEMPT_PENDING, P.ATTEMPT_RETRY_PENDING):
        base |= {"pod_name": "job-w-0", "pod_uid": UID, "pod_ip": "10.0.0.9", "pod_host_ip": "10.1.0.1"}
        base |= {"container_name": "main", "container_id": "containerd://" + "a" * 64, "start_at": T0}
    return ReplicaStatus(0, "w", phase=phase, **(base | fields))


SUCCESS = TerminatedInfo(0, "bye", 0, "Completed")
FAILURE = TerminatedInfo(3, "stack trace", 0, "Error")
WAITING_FOR_A_NODE = "Pod is unschedulable: 0/3 nodes are available"
# (the replica, whether it is not fine and so keeps its full record, what it is)
CASES = [
    pytest.param(*case[:2], id=case[2])
    for case in (
        (ReplicaStatus(0, "w", transition_time=T0), False, "waiting, never started"),
        (replica(P.ATTEMPT_CREATION_REQUESTED), False, "its Pod created"),
        (replica(P.ATTEMPT_RUNNING, phase_message="Pod is running"), False, "running"),
        (replica(P.ATTEMPT_PREPARING, phase_message=WAITING_FOR_A_NODE), True, "waiting for a node"),
        (ReplicaStatus(0, "w", phase_message="Held: by Kueue", transition_time=T0), True, "held"),
        (replica(P.COMPLETED, terminated_info=SUCCESS, finish_at=T0), False, "succeeded"),
        (replica(P.ATTEMPT_DELETION_REQUESTED, terminated_info=FAILURE), True, "failed, ending"),
        (replica(P.COMPLETED, terminated_info=FAILURE, phase_message="No retry"), True, "failed for good"),
        (ReplicaStatus(0, "w", P.ATTEMPT_RETRY_PENDING, total_retried_count=2), True, "retrying"),
        (
            ReplicaStatus(0, "w", P.COMPLETED, "stopped", True, transition_time=T0),
            False,
            "stopped by its role",
        ),
        (replica(P.ATTEMPT_DELETION_REQUESTED, suspended=True), False, "its Pod deleted by a suspension"),
        (
            replica(P.ATTEMPT_PENDING, pod_reason=POD_REASON_NAME_CONFLICT, pod_uid=None),
            True,
            "a name conflict",
        ),
    )
]


def decision(status: TaskSetStatus) -> list[tuple[Any, ...]]:
    fields = [f.name for f in ReplicaStatus.__dataclass_fields__.values()]
    names = {"phaseMessage": "phase_message", "transitionTime": "transition_time"}
    kept = [
        names.get(key, next(f for f in fields if f.replace("_", "").lower() == key.lower()))
        for key in DECISION_FIELDS
    ]
    return [
        (*(getattr(r, name) for name in kept), r.terminated_info is not None and r.terminated_info.exit_code)
        for role in status.roles
        for r in role.replicas
    ]


@pytest.mark.parametrize(("sample", "detailed"), CASES)
def test_a_compact_status_parses_back_to_what_the_machines_decide_on(
    sample: ReplicaStatus, detailed: bool
) -> None:
    replicas = []
    for index in range(3):
        one = copy.deepcopy(sample)
        one.index = index
        one.pod_name = f"job-w-{index}" if one.pod_name else ""
        replicas.append(one)
    status = TaskSetStatus(created_at=T0, roles=[RoleStatus("w", replicas, transition_time=T0)])
    full = status.full_json()
    written = compact.compact(full)
    back = TaskSetStatus.from_json(copy.deepcopy(written))
    assert back is not None
    assert decision(back) == decision(status)
    assert [r["index"] for r in written["roleStatus"][0]["replicaStatus"]] == ([0, 1, 2] if detailed else [])
    if detailed:  # its full record: everything, not only what the machines need
        assert [asdict(r) for r in back.roles[0].replicas] == [asdict(r) for r in replicas]
    assert compact.compact(back.full_json()) == written  # a pass over an unchanged world writes nothing
    assert written["roleStatus"][0]["replicaCounts"] == full["roleStatus"][0]["replicaCounts"]


def test_replicas_sharing_their_texts_share_one_entry() -> None:
    running = [replica(P.ATTEMPT_RUNNING, phase_message="Pod is running") for _ in range(1000)]
    for index, one in enumerate(running):
        one.index, one.pod_name = index, f"job-w-{index}"
    rows = compact.compact(TaskSetStatus(roles=[RoleStatus("w", running)]).full_json())["roleStatus"][0][ROWS]
    assert rows["podNamePrefix"] == "job-w-"
    assert rows["texts"] == [
        {"phaseMessage": "Pod is running", "podHostIP": "10.1.0.1", "containerName": "main"}
    ]
    assert rows["rows"][7] == f"Rp 0 1767225600 {UID} 0"


def test_texts_past_their_budget_read_as_stand_ins_that_keep_the_outcome() -> None:
    done = [
        replica(P.COMPLETED, phase_message=f"exit text {i} " + "x" * 500, terminated_info=SUCCESS)
        for i in range(2000)
    ]
    for index, one in enumerate(done):
        one.index = index
    written = compact.compact(TaskSetStatus(roles=[RoleStatus("w", done)]).full_json())
    texts = written["roleStatus"][0][ROWS]["texts"]
    assert json_bytes(texts) <= compact.TEXTS_BUDGET + 100
    assert texts[-1] == {"phaseMessage": compact.STAND_IN, "exitCode": 0}
    back = TaskSetStatus.from_json(written)
    assert back is not None
    assert all(r.succeeded for r in back.roles[0].replicas)


# ----- which shape ------------------------------------------------------------------------------------------


def test_a_status_that_fits_keeps_the_full_shape() -> None:
    """Small TaskSets keep today's shape, as do large ones whose replicas say little: 400 replicas
    each with a maximal termination message (a stranger's worst case) take about 400 KB."""
    done = [
        replica(P.COMPLETED, terminated_info=TerminatedInfo(0, "m" * bounds.EXIT_MESSAGE_MAX, 0, "Completed"))
        for _ in range(400)
    ]
    for index, one in enumerate(done):
        one.index = index
    for status in (
        TaskSetStatus(roles=[RoleStatus("w", done)]),
        TaskSetStatus(roles=[RoleStatus("w", done[:3])]),
    ):
        assert status.to_json() == status.full_json()


def test_a_status_over_the_budget_is_written_compact_and_under_it() -> None:
    running = [replica(P.ATTEMPT_RUNNING, phase_message="Pod is running") for _ in range(3000)]
    for index, one in enumerate(running):
        one.index = index
    status = TaskSetStatus(roles=[RoleStatus("w", running)])
    assert json_bytes(status.full_json()) > STATUS_BUDGET
    written = status.to_json()
    assert ROWS in written["roleStatus"][0]
    assert json_bytes(written) < STATUS_BUDGET // 4


def test_a_full_record_is_never_smaller_than_the_shortcut_assumes() -> None:
    assert json_bytes(ReplicaStatus(0, "").to_json()) >= compact.FULL_RECORD_MIN_BYTES


# ----- parts ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        pytest.param("short", 100, "short", id="a text that fits is kept"),
        pytest.param("a" * 100, 20, "a" * 15 + "...", id="ASCII is cut to the byte"),
        pytest.param("<" * 100, 20, "<" * 2 + "...", id="six-byte characters count six"),
        pytest.param("é" * 100, 20, "é" * 7 + "...", id="two-byte characters count two"),
    ],
)
def test_clip_bytes(text: str, limit: int, expected: str) -> None:
    assert clip_bytes(text, limit) == expected
    assert json_bytes(clip_bytes(text, limit)) <= limit


@pytest.mark.parametrize(
    ("sample", "bucket"),
    [
        pytest.param(ReplicaStatus(0, "w"), "waiting", id="pending"),
        pytest.param(replica(P.ATTEMPT_ASSIGNED), "waiting", id="assigned, not running yet"),
        pytest.param(replica(P.ATTEMPT_RUNNING), "running", id="running"),
        pytest.param(replica(P.ATTEMPT_DELETION_PENDING, terminated_info=FAILURE), "running", id="ending"),
        pytest.param(ReplicaStatus(0, "w", phase=P.ATTEMPT_RETRY_PENDING), "retrying", id="retry delay"),
        pytest.param(replica(P.COMPLETED, terminated_info=SUCCESS), "succeeded", id="succeeded"),
        pytest.param(replica(P.COMPLETED, terminated_info=FAILURE), "failed", id="failed"),
        pytest.param(ReplicaStatus(0, "w", phase=P.COMPLETED, stopped=True), "stopped", id="stopped"),
        pytest.param(
            replica(P.COMPLETED, terminated_info=SUCCESS, stopped=True), "succeeded", id="stopped, exit 0"
        ),
    ],
)
def test_replica_counts(sample: ReplicaStatus, bucket: str) -> None:
    counts = replica_counts([sample.to_json()])
    assert counts == {key: int(key == bucket) for key in compact.BUCKETS}


@pytest.mark.parametrize(
    "message",
    [
        "Pod is unschedulable: 0/4 nodes are available: 4 Insufficient cpu.",
        "container main waiting: ImagePullBackOff",
        "Held: waiting for Kueue to admit the Workload",
        "Creation has be made",
        "containers are fine",
    ],
)
def test_not_fine_knows_the_waits_of_the_decisions(message: str) -> None:
    """A Pending replica's record is kept in full exactly when the decisions' reading of its message
    (taskset.decide.waiting.wait_kind) says its Pod waits to be scheduled, on a container, or is held."""
    waits = waiting.wait_kind(message) in {
        EventReason.POD_UNSCHEDULABLE,
        EventReason.POD_CONTAINER_WAITING,
        EventReason.ROLE_HELD,
    }
    assert not_fine(replica(P.ATTEMPT_PREPARING, phase_message=message).to_json()) is waits


@pytest.mark.parametrize(
    ("roles", "fails"),
    [
        pytest.param([5000, 5000], False, id="10,000 replicas in two roles"),
        pytest.param([5000, 5001], True, id="10,001 replicas in two roles"),
    ],
)
def test_the_total_of_replicas_is_bounded(roles: list[int], fails: bool) -> None:
    builder = TaskSetBuilder("ts")
    for index, count in enumerate(roles):
        builder = builder.role(f"r{index}", replicas=count)
    result = parse_taskset(builder.obj())
    assert isinstance(result, ValidationFailure) == fails
    if isinstance(result, ValidationFailure):
        assert result.field == "spec.roles"
        assert result.message.startswith(f"spec.roles: the replicas of all roles must total at most {10_000}")


def test_a_compact_row_keeps_the_failure_action_and_the_uncounted_retries() -> None:
    """Both are decisions (the retry, the role's and the attempt's outcome)."""
    failed = replica(
        P.ATTEMPT_DELETION_REQUESTED,
        terminated_info=FAILURE,
        total_retried_count=7,
        uncounted_retries=99,
        failure=FailureRecord(
            "oom", FailureAction.FAIL_TASKSET, "container main terminated with reason OOMKilled"
        ),
    )
    status = TaskSetStatus(created_at=T0, roles=[RoleStatus("w", [failed], transition_time=T0)])
    written = compact.compact(status.full_json())
    assert written["roleStatus"][0][ROWS]["rows"][0].split(" ")[0] == "Qpt99"
    written["roleStatus"][0]["replicaStatus"] = []  # as when the detailed records' budget is spent
    back = TaskSetStatus.from_json(written)
    assert back is not None
    again = back.roles[0].replicas[0]
    assert (again.uncounted_retries, again.failure) == (99, failed.failure)
