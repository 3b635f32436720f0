"""The policies of spec 6 and 7 as pure functions: role completion (6.1, S14), event policy (6.2),
attempt outcome (6.3, W-8) and the retry decisions (7.1, 7.2), with O's exact texts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import RoleEvent, RolePhase, State, TaskSetAction
from taskset.api.spec import (
    DEFAULT_EVENT_POLICIES,
    IMPLICIT_FAILURE_POLICY,
    EventPolicy,
    ParsedTaskSet,
    RetryPolicy,
    Role,
    parse_taskset,
)
from taskset.api.status import ReplicaStatus, RoleStatus, TerminatedInfo
from taskset.decide.policies import (
    Outcome,
    attempt_outcome,
    replica_may_retry,
    retry_due,
    role_completion,
    role_verdict,
    taskset_retry_decision,
)
from tests.builders import EventPolicySpec, TaskSetBuilder

pytestmark = pytest.mark.unit


def role(
    replicas: int = 1,
    *,
    min_succeeded: int | None = None,
    max_failed: int | None = None,
    events: EventPolicySpec = None,
    retry: tuple[bool, int, int] | None = None,
    name: str = "r",
) -> Role:
    """A role as the controller sees it: parsed, so the D4 and event-policy defaults apply."""
    obj = (
        TaskSetBuilder("job")
        .role(
            name,
            replicas,
            min_succeeded=min_succeeded,
            max_failed=max_failed,
            event_policy=events,
            retry=retry,
        )
        .obj()
    )
    parsed = parse_taskset(obj)
    assert isinstance(parsed, ParsedTaskSet), parsed
    return parsed.spec.roles[0]


def done(exit_code: int | None, *, stopped: bool = False) -> ReplicaStatus:
    """A replica in TaskRoleReplicaCompleted; ``exit_code`` None means no termination info."""
    info = None if exit_code is None else TerminatedInfo(exit_code)
    return ReplicaStatus(index=0, name="r", phase=P.COMPLETED, terminated_info=info, stopped=stopped)


def at(phase: P, exit_code: int | None = None) -> ReplicaStatus:
    info = None if exit_code is None else TerminatedInfo(exit_code)
    return ReplicaStatus(index=0, name="r", phase=phase, terminated_info=info)


MIN_SUCCEEDED = "Completion policy MinSucceeded satisfied,succeeded count:{}"
MAX_FAILED = "Completion policy MaxFailed  satisfied,faild count:{}"
NEITHER = (
    "All replicas completed but neither MinSucceeded nor MaxFailed was reached, "
    "succeeded count:{}, failed count:{}"
)

# ----- 6.1 role completion -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Completion:
    role: Role
    replicas: tuple[ReplicaStatus, ...]
    expected: Outcome | None


def completion(role_: Role, replicas: list[ReplicaStatus], expected: Outcome | None, sentence: str) -> Any:
    return pytest.param(Completion(role_, tuple(replicas), expected), id=sentence)


COMPLETIONS = [
    completion(
        role(2, min_succeeded=1, max_failed=1),
        [done(0), done(1)],
        Outcome(True, MIN_SUCCEEDED.format(1)),
        "S14 success is checked before failure",
    ),
    completion(
        role(2, min_succeeded=2, max_failed=2),
        [done(1), done(1)],
        Outcome(False, MAX_FAILED.format(2)),
        "S14 two failures reach maxFailed 2",
    ),
    completion(
        role(2, min_succeeded=1, max_failed=2),
        [done(1), at(P.ATTEMPT_RUNNING)],
        None,
        "S14 one failure and one running replica is not complete",
    ),
    completion(
        role(3, min_succeeded=3, max_failed=2),
        [done(0), done(0), done(1)],
        Outcome(False, NEITHER.format(2, 1)),
        "S14 rule 3 all replicas done with neither threshold met fails the role",
    ),
    completion(
        role(2),
        [done(0), at(P.ATTEMPT_RUNNING)],
        None,
        "D4 without a policy every replica must succeed",
    ),
    completion(
        role(2),
        [done(0), done(0)],
        Outcome(True, MIN_SUCCEEDED.format(2)),
        "D4 without a policy all successes satisfy minSucceeded = replicas",
    ),
    completion(
        role(2),
        [done(1), at(P.ATTEMPT_RUNNING)],
        Outcome(False, MAX_FAILED.format(1)),
        "D4 without a policy one final failure fails the role",
    ),
    completion(
        role(3, min_succeeded=1, max_failed=3),
        [done(None), done(None, stopped=True), at(P.ATTEMPT_RUNNING)],
        None,
        "completed replicas without exit info count as failed but below maxFailed",
    ),
    completion(
        role(2, min_succeeded=2, max_failed=2),
        [done(None), done(3, stopped=True)],
        Outcome(False, MAX_FAILED.format(2)),
        "a vanished replica and a stopped replica both count as failed",
    ),
    completion(
        role(2, min_succeeded=1, max_failed=1),
        [done(0, stopped=True), at(P.ATTEMPT_RUNNING)],
        Outcome(True, MIN_SUCCEEDED.format(1)),
        "a stopped replica that exited 0 counts as succeeded",
    ),
    completion(
        role(2, min_succeeded=1, max_failed=1),
        [at(P.ATTEMPT_RETRY_PENDING, 1), at(P.ATTEMPT_COMPLETED, 1)],
        None,
        "replicas between attempts count as neither succeeded nor failed",
    ),
    completion(
        role(2, min_succeeded=1, max_failed=1),
        [at(P.ATTEMPT_DELETION_REQUESTED, 0), at(P.ATTEMPT_DELETION_PENDING, 0)],
        None,
        "a captured exit 0 counts only once the replica is completed",
    ),
    completion(
        role(3, min_succeeded=2, max_failed=3),
        [done(0), done(1), at(P.ATTEMPT_PENDING)],
        None,
        "rule 3 waits while some replica is not completed",
    ),
    completion(
        role(4, min_succeeded=2, max_failed=2),
        [done(0), done(1), done(1), done(0)],
        Outcome(True, MIN_SUCCEEDED.format(2)),
        "enough successes and enough failures at once complete the role as Succeeded",
    ),
]


@pytest.mark.parametrize("case", COMPLETIONS)
def test_s14_role_completion_checks_success_before_failure(case: Completion) -> None:
    assert role_completion(case.role, case.replicas) == case.expected


# ----- 6.2 event policy ----------------------------------------------------------------------------------

RF, RS, RC = "RoleFailed", "RoleSucceeded", "RoleCompleted"
TF, TS, TC, NO = "TaskSetFailed", "TaskSetSucceeded", "TaskSetCompleted", "NoAction"


@pytest.mark.parametrize(
    ("events", "effective"),
    [
        pytest.param(None, DEFAULT_EVENT_POLICIES, id="an absent list takes the default"),
        pytest.param([], DEFAULT_EVENT_POLICIES, id="an empty list takes the default"),
        pytest.param(
            [(RS, TS)],
            (EventPolicy(RoleEvent.ROLE_SUCCEEDED, TaskSetAction.TASKSET_SUCCEEDED), IMPLICIT_FAILURE_POLICY),
            id="a list without RoleFailed or RoleCompleted gets RoleFailed to TaskSetFailed appended",
        ),
        pytest.param(
            [(RC, NO)],
            (EventPolicy(RoleEvent.ROLE_COMPLETED, TaskSetAction.NO_ACTION),),
            id="a RoleCompleted entry suppresses the implicit failure rule",
        ),
        pytest.param(
            [(RS, NO), (RF, NO)],
            (
                EventPolicy(RoleEvent.ROLE_SUCCEEDED, TaskSetAction.NO_ACTION),
                EventPolicy(RoleEvent.ROLE_FAILED, TaskSetAction.NO_ACTION),
            ),
            id="an explicit RoleFailed entry suppresses the implicit failure rule",
        ),
    ],
)
def test_effective_event_policies(events: EventPolicySpec, effective: tuple[EventPolicy, ...]) -> None:
    assert role(events=events).effective_event_policies == effective


def test_the_default_and_implicit_policies_are_the_specs() -> None:
    assert (
        EventPolicy(RoleEvent.ROLE_FAILED, TaskSetAction.TASKSET_FAILED),
        EventPolicy(RoleEvent.ROLE_SUCCEEDED, TaskSetAction.NO_ACTION),
    ) == DEFAULT_EVENT_POLICIES
    assert EventPolicy(RoleEvent.ROLE_FAILED, TaskSetAction.TASKSET_FAILED) == IMPLICIT_FAILURE_POLICY


def completed(state: State, name: str = "r", phase: RolePhase = RolePhase.COMPLETED) -> RoleStatus:
    return RoleStatus(name=name, replicas=[], phase=phase, state=state)


@pytest.mark.parametrize(
    ("events", "state", "verdict"),
    [
        pytest.param(None, State.FAILED, False, id="default a failed role fails the TaskSet"),
        pytest.param(None, State.SUCCEEDED, None, id="default a succeeded role triggers nothing"),
        pytest.param([], State.FAILED, False, id="an empty list behaves as the default"),
        pytest.param([(RS, TS)], State.SUCCEEDED, True, id="S09 RoleSucceeded to TaskSetSucceeded"),
        pytest.param([(RS, TS)], State.FAILED, False, id="S11 the implicit failure rule fires"),
        pytest.param([(RS, NO)], State.FAILED, False, id="S11 the implicit rule follows a NoAction list"),
        pytest.param([(RS, NO)], State.SUCCEEDED, None, id="NoAction alone triggers nothing"),
        pytest.param([(RC, NO)], State.FAILED, None, id="S10 RoleCompleted suppresses the implicit rule"),
        pytest.param([(RC, TS)], State.FAILED, True, id="RoleCompleted matches a failed role"),
        pytest.param([(RC, TS)], State.SUCCEEDED, True, id="RoleCompleted matches a succeeded role"),
        pytest.param([(RC, TC)], State.SUCCEEDED, True, id="W-8 TaskSetCompleted carries a success"),
        pytest.param([(RC, TC)], State.FAILED, False, id="W-8 TaskSetCompleted carries a failure"),
        pytest.param([(RS, TC)], State.SUCCEEDED, True, id="W-8 RoleSucceeded to TaskSetCompleted succeeds"),
        pytest.param([(RF, TC)], State.FAILED, False, id="W-8 RoleFailed to TaskSetCompleted fails"),
        pytest.param([(RF, NO)], State.FAILED, None, id="an explicit RoleFailed NoAction keeps going"),
        pytest.param([(RF, TS)], State.FAILED, True, id="RoleFailed may even succeed the TaskSet"),
        pytest.param([(RS, TF)], State.SUCCEEDED, False, id="S13 a sentinel role fails the TaskSet"),
        pytest.param([(RS, TF)], State.FAILED, False, id="S13 the sentinel's failure fails too"),
        pytest.param(
            [(RC, NO), (RF, TS)],
            State.FAILED,
            True,
            id="S12 NoAction falls through to the next matching entry",
        ),
        pytest.param(
            [(RS, NO), (RS, TF)],
            State.SUCCEEDED,
            False,
            id="S12 NoAction falls through to a later entry of the same event",
        ),
        pytest.param([(RF, TS), (RC, TF)], State.FAILED, True, id="S12 the first matching entry wins"),
        pytest.param([(RC, TF), (RF, TS)], State.FAILED, False, id="S12 entry order decides"),
        pytest.param(None, State.RUNNING, None, id="a role that is not decided matches nothing"),
        pytest.param([(RC, TS)], State.WAITING, None, id="RoleCompleted needs a decided outcome"),
    ],
)
def test_role_verdict(events: EventPolicySpec, state: State, verdict: bool | None) -> None:
    assert role_verdict(role(events=events), completed(state)) is verdict


# ----- 6.3 attempt outcome ---------------------------------------------------------------------------------

SUCCEEDED_BY = "TaskSet completed beacause taskrole({}) is succeeded "
FAILED_BY = "TaskSet completed beacause taskrole({}) is failed"
ALL_SUCCEEDED = "TaskSet succeeded beacause all taskrole are succeeded"
SOME_FAILED = "TaskSet failed beacause all taskrole are completed,but some TaskRole are failed"


@dataclass(frozen=True)
class Attempt:
    roles: tuple[Role, ...]
    statuses: tuple[RoleStatus, ...]
    expected: Outcome | None


def attempt(pairs: list[tuple[Role, RoleStatus]], expected: Outcome | None, sentence: str) -> Any:
    return pytest.param(
        Attempt(tuple(r for r, _ in pairs), tuple(s for _, s in pairs), expected),
        id=sentence,
    )


def named(name: str, events: EventPolicySpec = None) -> Role:
    return role(name=name, events=events)


ATTEMPTS = [
    attempt([], Outcome(True, ALL_SUCCEEDED), "S26 zero roles succeed at once"),
    attempt(
        [
            (named("a"), completed(State.FAILED, "a")),
            (named("b", [(RS, TS)]), completed(State.SUCCEEDED, "b")),
        ],
        Outcome(False, FAILED_BY.format("a")),
        "the first role in spec order decides a failure",
    ),
    attempt(
        [
            (named("b", [(RS, TS)]), completed(State.SUCCEEDED, "b")),
            (named("a"), completed(State.FAILED, "a")),
        ],
        Outcome(True, SUCCEEDED_BY.format("b")),
        "the first role in spec order decides a success",
    ),
    attempt(
        [(named("a"), completed(State.SUCCEEDED, "a")), (named("b"), completed(State.FAILED, "b"))],
        Outcome(False, FAILED_BY.format("b")),
        "a role that triggers nothing lets a later role decide",
    ),
    attempt(
        [(named("a"), completed(State.SUCCEEDED, "a")), (named("b"), completed(State.SUCCEEDED, "b"))],
        Outcome(True, ALL_SUCCEEDED),
        "all roles completed and succeeded without a trigger succeeds",
    ),
    attempt(
        [
            (named("a"), completed(State.SUCCEEDED, "a")),
            (named("b", [(RC, NO)]), completed(State.FAILED, "b")),
        ],
        Outcome(False, SOME_FAILED),
        "all roles completed with a failure and no trigger fails",
    ),
    attempt(
        [
            (named("a"), completed(State.SUCCEEDED, "a")),
            (named("b"), completed(State.RUNNING, "b", RolePhase.RUNNING)),
        ],
        None,
        "a running role keeps the attempt going",
    ),
    attempt(
        [
            (named("a"), completed(State.FAILED, "a", RolePhase.CLEANING_PENDING)),
            (named("b"), completed(State.RUNNING, "b", RolePhase.RUNNING)),
        ],
        None,
        "a role still cleaning up is not considered although its outcome is decided",
    ),
    attempt(
        [(named("a", [(RC, TC)]), completed(State.SUCCEEDED, "a"))],
        Outcome(True, SUCCEEDED_BY.format("a")),
        "W-8 TaskSetCompleted ends the attempt with the role's success",
    ),
    attempt(
        [(named("a", [(RC, TC)]), completed(State.FAILED, "a"))],
        Outcome(False, FAILED_BY.format("a")),
        "W-8 TaskSetCompleted ends the attempt with the role's failure",
    ),
    attempt(
        [
            (named("canary", [(RS, TF)]), completed(State.SUCCEEDED, "canary")),
            (named("main"), completed(State.RUNNING, "main", RolePhase.RUNNING)),
        ],
        Outcome(False, FAILED_BY.format("canary")),
        "S13 a sentinel role fails the attempt while others run",
    ),
    attempt(
        [
            (named("ps"), completed(State.RUNNING, "ps", RolePhase.RUNNING)),
            (named("worker", [(RS, TS)]), completed(State.SUCCEEDED, "worker")),
        ],
        Outcome(True, SUCCEEDED_BY.format("worker")),
        "the ps-worker example succeeds by its workers while ps runs",
    ),
]


@pytest.mark.parametrize("case", ATTEMPTS)
def test_attempt_outcome(case: Attempt) -> None:
    assert attempt_outcome(case.roles, case.statuses) == case.expected


# ----- 7 retry decisions --------------------------------------------------------------------------------

ALLOWED = "Policy.Retry is true,and current retry time is smaller than MaxRetryCount"


@pytest.mark.parametrize(
    ("policy", "retried", "expected"),
    [
        pytest.param(
            RetryPolicy(False, 3, 0), 0, (False, "Retry is forbidden"), id="S17 retry false forbids"
        ),
        pytest.param(RetryPolicy(True, 0, 0), 0, (False, "Can't retry anymore"), id="S18 maxRetryCount 0"),
        pytest.param(RetryPolicy(True, 2, 5), 0, (True, ALLOWED), id="the first retry is allowed"),
        pytest.param(RetryPolicy(True, 2, 5), 1, (True, ALLOWED), id="the last retry is allowed"),
        pytest.param(RetryPolicy(True, 2, 5), 2, (False, "Can't retry anymore"), id="the limit is reached"),
        pytest.param(RetryPolicy(), 0, (False, "Retry is forbidden"), id="no policy forbids"),
    ],
)
def test_taskset_retry_decision(policy: RetryPolicy, retried: int, expected: tuple[bool, str]) -> None:
    assert taskset_retry_decision(policy, retried) == expected
    assert policy.allows_retry(retried) is expected[0]


def failed_replica(retried: int = 0, *, exit_code: int | None = 1, stopped: bool = False) -> ReplicaStatus:
    info = None if exit_code is None else TerminatedInfo(exit_code)
    return ReplicaStatus(
        index=0,
        name="r",
        phase=P.ATTEMPT_DELETION_REQUESTED,
        terminated_info=info,
        stopped=stopped,
        total_retried_count=retried,
    )


@pytest.mark.parametrize(
    ("policy", "replica", "deleting", "allowed"),
    [
        pytest.param(
            RetryPolicy(True, 1, 0), failed_replica(), False, True, id="a failed attempt with retries left"
        ),
        pytest.param(
            RetryPolicy(True, 1, 0),
            failed_replica(exit_code=None),
            False,
            True,
            id="an attempt without exit info counts as failed and retries",
        ),
        pytest.param(RetryPolicy(True, 1, 0), failed_replica(1), False, False, id="the retries are used up"),
        pytest.param(RetryPolicy(False, 5, 0), failed_replica(), False, False, id="retry false"),
        pytest.param(
            RetryPolicy(True, 1, 0),
            failed_replica(exit_code=0),
            False,
            False,
            id="a succeeded attempt never retries",
        ),
        pytest.param(
            RetryPolicy(True, 1, 0),
            failed_replica(stopped=True),
            False,
            False,
            id="a stopped replica never retries",
        ),
        pytest.param(
            RetryPolicy(True, 1, 0),
            failed_replica(),
            True,
            False,
            id="W-10 no retry while the TaskSet is being deleted",
        ),
    ],
)
def test_replica_may_retry(
    policy: RetryPolicy, replica: ReplicaStatus, deleting: bool, allowed: bool
) -> None:
    assert replica_may_retry(policy, replica, taskset_deleting=deleting) is allowed


def test_the_role_retry_policy_is_parsed_from_the_spec() -> None:
    assert role(retry=(True, 2, 10)).retry_policy == RetryPolicy(True, 2, 10)
    assert role().retry_policy == RetryPolicy(False, 0, 0)


@pytest.mark.parametrize(
    ("delay", "waited", "due"),
    [
        pytest.param(0, -0.9, True, id="delay 0 is due at once, even before the rounded-up stamp"),
        pytest.param(0, 0.0, True, id="delay 0 at the stamp"),
        pytest.param(30, -0.5, False, id="a positive delay just after the transition"),
        pytest.param(30, 29.9, False, id="a positive delay not yet over"),
        pytest.param(30, 30.0, True, id="a positive delay just over"),
    ],
)
def test_retry_due(delay: int, waited: float, due: bool) -> None:
    assert retry_due(delay, waited) is due
