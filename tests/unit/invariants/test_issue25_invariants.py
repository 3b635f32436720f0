"""The chaos suite's checks of failure rules, backoff, deadlines and TTL, on hand-made histories:
each catches the violation it exists for and passes the run that keeps the promise."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chaos.invariants import (
    Lifetime,
    Outcome,
    TaskSetRecord,
    nothing_after_the_end,
    retries_as_matched,
    within_retry_limits,
)
from tests.chaos.timing import (
    DEADLINE_PASS_SLACK,
    deadline_respected,
    delays_respected,
    retry_waits,
    shortest_delay,
    timed_waits,
    ttl_respected,
)

START = 1_800_000_000.0  # an epoch second: the record's times are whole seconds
STAMP = "2027-01-15T08:00:00Z"  # START as the status writes it


def stamp(offset: int) -> str:
    return f"2027-01-15T08:{offset // 60:02d}:{offset % 60:02d}Z"


def replica(total: int = 0, uncounted: int = 0, action: str | None = None) -> dict[str, Any]:
    failure = None if action is None else {"rule": "x", "action": action, "message": "m"}
    return {"index": 0, "totalRetriedCount": total, "uncountedRetries": uncounted, "failure": failure}


def status(*replicas: dict[str, Any], retried: int = 0, **extra: Any) -> dict[str, Any]:
    return {
        "totalRetriedCount": retried,
        "roleStatus": [{"name": "r", "replicaStatus": list(replicas)}],
        **extra,
    }


# (replica before, replica after: totalRetriedCount, uncountedRetries and the matched action; violations)
RETRY_STEPS = [
    ((0, 0, "RetryNotCounted"), (1, 1), 0, "a platform failure retried without counting"),
    ((0, 0, "RetryNotCounted"), (1, 0), 1, "a platform failure counted against maxRetryCount"),
    ((1, 1, "RetryCounted"), (2, 1), 0, "a counted failure counted"),
    ((1, 1, "RetryCounted"), (2, 2), 1, "a counted failure retried for free"),
    ((0, 0, "FailTaskSet"), (1, 0), 1, "a FailTaskSet failure retried"),
    ((0, 0, "FailRole"), (1, 0), 1, "a FailRole failure retried"),
    ((2, 2), (2, 1), 1, "uncounted retries go back"),
    ((2, 2), (2, 3), 1, "more uncounted than in all"),
    ((99, 99, "RetryNotCounted"), (100, 99), 0, "past the cap a platform failure counts"),
    ((0, 0, "RetryNotCounted"), (2, 1), 0, "two retries between statuses: not judged"),
    ((0, 0), (1, 0), 0, "no rule recorded (the Pod vanished unseen): not judged"),
]


@pytest.mark.parametrize(
    ("before", "after", "violations"), [pytest.param(b, a, v, id=what) for b, a, v, what in RETRY_STEPS]
)
def test_retries_as_matched(before: tuple[Any, ...], after: tuple[Any, ...], violations: int) -> None:
    statuses = [status(replica(*before)), status(replica(*after))]
    assert len(retries_as_matched("ts", statuses).violations) == violations


def test_a_taskset_retry_starts_the_replicas_afresh() -> None:
    statuses = [status(replica(3, 2, "FailTaskSet")), status(replica(0, 0), retried=1)]
    assert retries_as_matched("ts", statuses).violations == []


def record(*statuses: dict[str, Any], **spec: Any) -> TaskSetRecord:
    return TaskSetRecord("ts", "uid-ts", spec=spec, statuses=list(statuses))


ROLE_RETRY_1 = [{"name": "r", "retryPolicy": {"retry": True, "maxRetryCount": 1}}]


@pytest.mark.parametrize(
    ("taskset", "violations"),
    [
        pytest.param(record(status(replica(1, 0)), roles=ROLE_RETRY_1), 0, id="one counted retry of one"),
        pytest.param(record(status(replica(2, 0)), roles=ROLE_RETRY_1), 1, id="two counted retries of one"),
        pytest.param(record(status(replica(5, 4)), roles=ROLE_RETRY_1), 0, id="uncounted retries are free"),
        pytest.param(
            record(status(replica(1, 0)), roles=[{"name": "r", "retryPolicy": {"maxRetryCount": 3}}]),
            1,
            id="maxRetryCount without retry: true allows none",
        ),
        pytest.param(
            record(status(replica(), retried=2), roles=[{"name": "r"}], retryPolicy={"retry": True}),
            1,
            id="a TaskSet retry beyond its policy",
        ),
    ],
)
def test_within_retry_limits(taskset: TaskSetRecord, violations: int) -> None:
    assert len(within_retry_limits(taskset).violations) == violations


def pod(
    born: int,
    *,
    attempt: int = 0,
    taskset_attempt: int = 0,
    created: float | None = None,
    finished: float | None = None,
    failed: bool = True,
    died: int | None = None,
    born_exact: bool = True,
) -> Lifetime:
    return Lifetime(
        kind="Pod",
        name=f"ts-r-0-{taskset_attempt}-{attempt}",
        uid=f"pod-{taskset_attempt}-{attempt}-{born}",
        taskset_uid="uid-ts",
        role="r",
        index=0,
        taskset_attempt=str(taskset_attempt),
        replica_attempt=str(attempt),
        born=born,
        died=died,
        born_exact=born_exact,
        created=created,
        finished=finished,
        failed=failed,
    )


@pytest.mark.parametrize(
    ("born", "exact", "violations", "unverifiable"),
    [
        pytest.param(5, True, 0, 0, id="a Pod of the run"),
        pytest.param(11, True, 1, 0, id="a Pod created after the final status"),
        pytest.param(11, False, 0, 1, id="seen only by a relist after the end: not a verdict"),
    ],
)
def test_nothing_after_the_end(born: int, exact: bool, violations: int, unverifiable: int) -> None:
    ended = record(status(state="Failed"))
    ended.ended = 10
    verdict = nothing_after_the_end([pod(born, born_exact=exact)], {"uid-ts": ended})
    assert (len(verdict.violations), len(verdict.unverifiable)) == (violations, unverifiable)


BACKOFF = {"retry": True, "maxRetryCount": 5, "backoff": {"initialDelay": 2, "factor": 3, "maxDelay": 10}}


@pytest.mark.parametrize(
    ("policy", "retries", "delay"),
    [
        pytest.param(None, 3, 0, id="no policy: at once"),
        pytest.param({"retry": True, "delay": 7}, 4, 7, id="the fixed delay keeps its meaning"),
        pytest.param(BACKOFF, 0, 2, id="the initial delay"),
        pytest.param(BACKOFF, 1, 6, id="times the factor"),
        pytest.param(BACKOFF, 2, 10, id="capped at maxDelay"),
        pytest.param({"backoff": {"initialDelay": 5}}, 40, 5 * 2**40, id="factor 2 by default, no small cap"),
    ],
)
def test_shortest_delay(policy: dict[str, Any] | None, retries: int, delay: int) -> None:
    assert shortest_delay(policy, retries) == min(delay, 366 * 24 * 3600)


def chain(*waits: int) -> list[Lifetime]:
    """A replica's attempts, each failing after 1 s, with these waits before the next attempt."""
    pods, start = [], START
    for attempt, wait in enumerate(waits):
        pods.append(pod(attempt + 1, attempt=attempt, created=start, finished=start + 1))
        start += 1 + wait
    return [*pods, pod(len(waits) + 1, attempt=len(waits), created=start)]


def backoff_record() -> dict[str, TaskSetRecord]:
    return {"uid-ts": record(roles=[{"name": "r", "retryPolicy": BACKOFF}], retryPolicy={"delay": 4})}


@pytest.mark.parametrize(
    ("pods", "violations"),
    [
        pytest.param(chain(2, 6), 0, id="2 then 6 seconds between a replica's attempts"),
        pytest.param(chain(1), 1, id="a replica retried 1 s after its failure, the delay being 2 s"),
        pytest.param(chain(2, 2), 1, id="the second wait too short: the backoff forgotten by a restart"),
        pytest.param(
            [
                pod(1, attempt=0, created=START, finished=START + 1, failed=False),
                pod(2, attempt=1, created=START + 1),
            ],
            0,
            id="no failed exit: the Pod did not end the attempt, nothing to judge",
        ),
        pytest.param(
            [pod(1, created=START, finished=START + 1), pod(2, taskset_attempt=1, created=START + 5)],
            0,
            id="the TaskSet's fixed delay of 4 s between attempts",
        ),
        pytest.param(
            [pod(1, created=START, finished=START + 1), pod(2, taskset_attempt=1, created=START + 3)],
            1,
            id="a TaskSet attempt 2 s after the failure",
        ),
    ],
)
def test_delays_respected(pods: list[Lifetime], violations: int) -> None:
    assert len(delays_respected(retry_waits(pods, backoff_record())).violations) == violations


def test_timed_waits_leave_out_waits_without_delay() -> None:
    pods = [pod(1, created=START, finished=START + 1), pod(2, attempt=1, created=START + 3)]
    records = {"uid-ts": record(roles=[{"name": "r", "retryPolicy": {"retry": True, "maxRetryCount": 1}}])}
    assert len(retry_waits(pods, records)) == 1
    assert timed_waits(retry_waits(pods, records)) == []


def deadline_record(*statuses: dict[str, Any]) -> dict[str, TaskSetRecord]:
    return {"uid-ts": record(status(createdAt=STAMP), *statuses, activeDeadlineSeconds=10)}


FAILED_BY_DEADLINE = [{"type": "Failed", "status": "True", "reason": "DeadlineExceeded"}]


@pytest.mark.parametrize(
    ("pods", "statuses", "violations"),
    [
        pytest.param([pod(1, created=START + 9, died=5)], [], 0, id="a Pod created before the deadline"),
        pytest.param(
            [pod(1, created=START + 10 + DEADLINE_PASS_SLACK, died=5)], [], 0, id="within a pass of it"
        ),
        pytest.param(
            [pod(1, created=START + 11 + DEADLINE_PASS_SLACK, died=5)], [], 1, id="created after the deadline"
        ),
        pytest.param(
            [pod(1, created=START, died=5)],
            [status(state="Failed", finishAt=stamp(10), conditions=FAILED_BY_DEADLINE)],
            0,
            id="failed by the deadline when it passed, Pods gone",
        ),
        pytest.param(
            [pod(1, created=START, died=5)],
            [status(state="Failed", finishAt=stamp(8), conditions=FAILED_BY_DEADLINE)],
            1,
            id="failed by the deadline before it passed",
        ),
        pytest.param(
            [pod(1, created=START)],
            [status(state="Failed", finishAt=stamp(12), conditions=FAILED_BY_DEADLINE)],
            1,
            id="a Pod left after the deadline failed the TaskSet",
        ),
    ],
)
def test_deadline_respected(pods: list[Lifetime], statuses: list[dict[str, Any]], violations: int) -> None:
    assert len(deadline_respected(pods, deadline_record(*statuses)).violations) == violations


@pytest.mark.parametrize(
    ("last", "seen", "pods", "violations"),
    [
        pytest.param(
            status(state="Succeeded", finishAt=STAMP), START + 3.2, [], 0, id="deleted after the TTL"
        ),
        pytest.param(
            status(state="Succeeded", finishAt=STAMP), START + 2.5, [], 1, id="deleted before the TTL"
        ),
        pytest.param(status(state="Running"), START + 9, [], 1, id="deleted before it finished"),
        pytest.param(
            status(state="Failed", finishAt=STAMP),
            START + 4,
            [pod(1, created=START)],
            1,
            id="a Pod left behind",
        ),
    ],
)
def test_ttl_respected(last: dict[str, Any], seen: float, pods: list[Lifetime], violations: int) -> None:
    deleted = record(last, ttlSecondsAfterFinished=3)
    deleted.deleted, deleted.deleted_seen = 20, seen
    assert len(ttl_respected(pods, {"uid-ts": deleted}).violations) == violations
    kept = record(last, ttlSecondsAfterFinished=3)
    assert ttl_respected(pods, {"uid-ts": kept}).violations == []


@pytest.mark.parametrize(
    ("expected", "admitted"),
    [
        pytest.param(Outcome("Failed", 0, (("r", 0, 2, 1),), "DeadlineExceeded"), True, id="all fields"),
        pytest.param(Outcome("Failed", 0, None, "DeadlineExceeded"), True, id="replica counts left open"),
        pytest.param(Outcome("Failed", 0, (("r", 0, 2, 1),)), True, id="reason left open"),
        pytest.param(
            Outcome("Failed", 0, (("r", 0, 2, 0),)), False, id="a retry not counted, expected counted"
        ),
        pytest.param(Outcome("Failed", 0, None, "Failed"), False, id="another reason"),
        pytest.param(Outcome("Failed", 1, None), False, id="another TaskSet retry count"),
    ],
)
def test_outcome_admits(expected: Outcome, admitted: bool) -> None:
    actual = Outcome.of(status(replica(2, 1), state="Failed", conditions=FAILED_BY_DEADLINE))
    assert expected.admits(actual) is admitted
