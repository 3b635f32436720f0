"""The benchmark's churn verdict: exactly the failed replicas retried, and those the chosen ones, a chosen
replica stopped by its TaskSet's end aside."""

from __future__ import annotations

from typing import Any

import pytest

from bench.recorder import PodRecord, TaskSetRecord, exit_codes
from bench.run import churn_check, implicated, pod_evidence


def pod(name: str, attempt: int = 0, exit_phase: str = "Succeeded", exited: float = 5.0) -> PodRecord:
    role = name.split("-")[1]
    return PodRecord(
        name, f"{name}/{attempt}", "t", role, attempt, added=0.0, exited=exited, exit_phase=exit_phase
    )


def workers_done(at: float = 5.0) -> list[PodRecord]:
    """Workers 0, 2, 3 succeeded at ``at``; worker 1 failed and its retry succeeded at ``at``."""
    return [
        pod("t-worker-0", exited=at),
        pod("t-worker-1", exit_phase="Failed", exited=at - 1),
        pod("t-worker-1", 1, exited=at),
        pod("t-worker-2", exited=at),
        pod("t-worker-3", exited=at),
    ]


CHOSEN = frozenset({"t-ps-0", "t-worker-1"})


@pytest.mark.parametrize(
    ("pods", "ok"),
    [
        pytest.param(
            [
                pod("t-ps-0", exit_phase="Failed"),
                pod("t-ps-0", 1),
                pod("t-worker-0"),
                pod("t-worker-1", exit_phase="Failed"),
                pod("t-worker-1", 1),
            ],
            True,
            id="every chosen replica failed once and was retried once",
        ),
        pytest.param(
            [
                pod("t-ps-0", exit_phase=""),
                pod("t-worker-0"),
                pod("t-worker-1", exit_phase="Failed"),
                pod("t-worker-1", 1),
            ],
            True,
            id="a chosen ps stopped by the TaskSet's end before it could fail",
        ),
        pytest.param(
            [
                pod("t-ps-0", exit_phase="Failed"),
                pod("t-worker-0"),
                pod("t-worker-1", exit_phase="Failed"),
                pod("t-worker-1", 1),
            ],
            False,
            id="a failed replica not retried",
        ),
        pytest.param(
            [
                pod("t-ps-0", exit_phase=""),
                pod("t-worker-0"),
                pod("t-worker-0", 1),
                pod("t-worker-1", exit_phase="Failed"),
                pod("t-worker-1", 1),
            ],
            False,
            id="a replica retried that never failed",
        ),
        pytest.param(
            [pod("t-ps-0", exit_phase=""), pod("t-worker-0"), pod("t-worker-1")],
            False,
            id="a chosen worker that succeeded: the failure was not injected",
        ),
        pytest.param(
            [
                pod("t-ps-0", exit_phase="Failed"),
                pod("t-ps-0", 1, exit_phase="Failed"),
                pod("t-ps-0", 2),
                pod("t-worker-0"),
                pod("t-worker-1", exit_phase="Failed"),
                pod("t-worker-1", 1),
            ],
            False,
            id="a replica retried twice",
        ),
        pytest.param(
            [pod("t-ps-0", exit_phase="Failed", exited=6.0), *workers_done(at=5.0)],
            True,
            id="a chosen ps that failed after every worker had succeeded, stopped by the TaskSet's end",
        ),
        pytest.param(
            [pod("t-ps-0", exit_phase="Failed", exited=4.0), *workers_done(at=5.0)],
            False,
            id="a chosen ps that failed while the workers still ran, not retried",
        ),
    ],
)
def test_churn_verdict(pods: list[PodRecord], ok: bool) -> None:
    errors: list[str] = []
    churn_check(CHOSEN, pods, errors)
    assert (not errors) == ok, errors


def test_a_failed_run_is_explained_by_its_wrong_tasksets_and_the_replicas_the_verdict_names() -> None:
    pods = [
        PodRecord("a-ps-0", "1", "a", "ps", 0, added=0.0),
        PodRecord("b-ps-0", "2", "b", "ps", 0, added=0.0),
        PodRecord("c-ps-0", "3", "c", "ps", 0, added=0.0),
    ]
    tasksets = [
        TaskSetRecord("a", 0.0, state="Succeeded"),
        TaskSetRecord("b", 0.0, state="Failed"),
        TaskSetRecord("c", 0.0, state="Succeeded"),
    ]
    verdict = {"failed_but_not_retried": ["c-ps-0"], "stopped_before_failing": ["a-ps-0"]}
    assert implicated(tasksets, pods, verdict) == ["b", "c"]
    assert implicated(tasksets, pods, {}) == ["b"]


def test_pod_evidence_gives_times_from_the_scenario_start() -> None:
    record = PodRecord("a-ps-0", "1", "a", "ps", 0, added=10.0, running=11.5, exited=None)
    evidence = pod_evidence(record, origin=10.0)
    assert (evidence["added"], evidence["running"], evidence["exited"]) == (0.0, 1.5, None)
    assert evidence["name"] == "a-ps-0"


@pytest.mark.parametrize(
    ("status", "codes"),
    [
        ({"containerStatuses": [{"state": {"terminated": {"exitCode": 1}}}]}, (1,)),
        (
            {"containerStatuses": [{"state": {"running": {}}}, {"state": {"terminated": {"exitCode": 0}}}]},
            (0,),
        ),
        ({"phase": "Failed"}, ()),
    ],
)
def test_exit_codes_are_those_of_the_terminated_containers(
    status: dict[str, Any], codes: tuple[int, ...]
) -> None:
    assert exit_codes(status) == codes
