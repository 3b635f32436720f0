"""The chaos suite's invariant checks, on hand-made histories: each must catch what it exists for (a check
that cannot fail proves nothing), and must not guess where the record is inexact."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chaos.invariants import (
    Lifetime,
    Outcome,
    attempts_recorded_once,
    monotone_status,
    one_attempt_at_a_time,
    one_pod_per_replica,
    same_outcomes,
)


def pod(
    uid: str, born: int, died: int | None, *, attempt: str = "0", index: int = 0, **extra: Any
) -> Lifetime:
    return Lifetime(
        kind="Pod",
        name=f"ts-r-{index}",
        uid=uid,
        taskset_uid="ts",
        role="r",
        index=index,
        taskset_attempt=attempt,
        born=born,
        died=died,
        **extra,
    )


def unit(uid: str, born: int, died: int | None) -> Lifetime:
    return Lifetime(kind="ConfigMap", name=f"c-ts-{uid}", uid=uid, taskset_uid="ts", born=born, died=died)


@pytest.mark.parametrize(
    ("pods", "violations", "unverifiable"),
    [
        pytest.param([pod("a", 1, 5), pod("b", 6, None)], 0, 0, id="a replica's Pods one after the other"),
        pytest.param([pod("a", 1, 6), pod("b", 6, 9)], 0, 0, id="deleted at the revision the next appears"),
        pytest.param([pod("a", 1, 7), pod("b", 6, None)], 1, 0, id="the next Pod before the last was gone"),
        pytest.param([pod("a", 1, None), pod("b", 6, None)], 1, 0, id="two Pods never deleted"),
        pytest.param([pod("a", 1, 5), pod("b", 2, 3, index=1)], 0, 0, id="two replicas overlap freely"),
        pytest.param(
            [pod("a", 1, 7, died_exact=False), pod("b", 6, None)], 0, 1, id="an inexact end is not a verdict"
        ),
    ],
)
def test_one_pod_per_replica(pods: list[Lifetime], violations: int, unverifiable: int) -> None:
    verdict = one_pod_per_replica(pods)
    assert (len(verdict.violations), len(verdict.unverifiable)) == (violations, unverifiable)


@pytest.mark.parametrize(
    ("pods", "units", "violations"),
    [
        pytest.param(
            [pod("a", 1, 5), pod("b", 2, 6, index=1), pod("c", 7, None, attempt="1")],
            [unit("u0", 1, 6), unit("u1", 7, None)],
            0,
            id="attempt 1 starts after every Pod and the ControlUnit of attempt 0 are gone",
        ),
        pytest.param(
            [pod("a", 1, 5), pod("b", 2, 8, index=1), pod("c", 7, None, attempt="1")],
            [],
            1,
            id="a Pod of attempt 0 outlives the start of attempt 1",
        ),
        pytest.param([], [unit("u0", 1, 8), unit("u1", 7, None)], 1, id="two ControlUnits alive at once"),
    ],
)
def test_one_attempt_at_a_time(pods: list[Lifetime], units: list[Lifetime], violations: int) -> None:
    assert len(one_attempt_at_a_time(pods, units).violations) == violations


def status(
    retried: int = 0, state: str = "Waiting", finish: str | None = None, replica: int = 0
) -> dict[str, Any]:
    return {
        "state": state,
        "totalRetriedCount": retried,
        "finishAt": finish,
        "roleStatus": [{"name": "r", "replicaStatus": [{"index": 0, "totalRetriedCount": replica}]}],
    }


@pytest.mark.parametrize(
    ("statuses", "violations"),
    [
        pytest.param(
            [status(), status(replica=1), status(1), status(1, "Succeeded", "t1")], 0, id="a normal run"
        ),
        pytest.param([status(1), status(0)], 1, id="the TaskSet retry count goes back"),
        pytest.param([status(replica=2), status(replica=1)], 1, id="a replica retry count goes back"),
        pytest.param([status(0, replica=2), status(1, replica=0)], 0, id="a TaskSet retry resets replicas"),
        pytest.param([status(finish="t1"), status(finish="t2")], 1, id="finishAt set twice"),
        pytest.param([status(state="Failed"), status(state="Running")], 1, id="a final state left"),
    ],
)
def test_monotone_status(statuses: list[dict[str, Any]], violations: int) -> None:
    assert len(monotone_status("ts", statuses).violations) == violations


def listing(
    *attempts: int, dropped: int = 0, state: str = "Running", retried: int = 0, reason: str = "x"
) -> dict[str, Any]:
    entries = [{"attempt": n, "outcome": "Failed", "reason": reason} for n in attempts]
    return {
        "state": state,
        "totalRetriedCount": retried,
        "attemptHistory": {"attempts": entries, "dropped": dropped},
    }


@pytest.mark.parametrize(
    ("statuses", "violations"),
    [
        pytest.param(
            [
                listing(),
                listing(0, retried=1),
                listing(0, 1, retried=2),
                listing(0, 1, 2, state="Failed", retried=2),
            ],
            0,
            id="a run retried twice",
        ),
        pytest.param([{}, listing(0, state="Succeeded")], 0, id="a status of before the history"),
        pytest.param(
            [
                listing(*range(10), retried=10),
                listing(*range(1, 11), dropped=1, state="Succeeded", retried=10),
            ],
            0,
            id="the oldest dropped past the bound",
        ),
        pytest.param([listing(0), listing(0, 0)], 1, id="an attempt listed twice"),
        pytest.param([listing(1, 0)], 1, id="attempts out of order"),
        pytest.param([listing(0), listing(0, reason="y")], 1, id="a record rewritten"),
        pytest.param([listing(0, 1), listing(1)], 1, id="a record lost without being counted"),
        pytest.param([listing(0, 2, state="Failed", retried=2)], 1, id="a finished run missing an attempt"),
        pytest.param([listing(0, state="Failed", retried=1)], 1, id="a finished run missing its last"),
    ],
)
def test_attempts_recorded_once(statuses: list[dict[str, Any]], violations: int) -> None:
    assert len(attempts_recorded_once("ts", statuses).violations) == violations


def test_same_outcomes_names_each_difference() -> None:
    expected = {"a": Outcome("Succeeded", 0, (("r", 0, 1),)), "b": Outcome("Failed", 0, ())}
    actual = {"a": Outcome("Succeeded", 0, (("r", 0, 2),)), "b": Outcome("Failed", 0, ())}
    assert [line.split(":")[0] for line in same_outcomes(expected, actual)] == ["a"]
    assert same_outcomes(expected, expected) == []
