"""The benchmark's churn verdict: exactly the failed replicas retried, and those the chosen ones, a chosen
replica stopped by its TaskSet's end aside."""

from __future__ import annotations

import pytest

from bench.recorder import PodRecord
from bench.run import churn_check


def pod(name: str, attempt: int = 0, exit_phase: str = "Succeeded") -> PodRecord:
    return PodRecord(name, f"{name}/{attempt}", "t", "r", attempt, added=0.0, exit_phase=exit_phase)


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
    ],
)
def test_churn_verdict(pods: list[PodRecord], ok: bool) -> None:
    errors: list[str] = []
    churn_check(CHOSEN, pods, errors)
    assert (not errors) == ok, errors
