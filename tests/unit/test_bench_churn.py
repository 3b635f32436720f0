"""The benchmark's churn verdict: exactly the failed replicas retried, and those the chosen ones, a chosen
replica stopped by its TaskSet's end, or seen failing together with its TaskSet's outcome, aside."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.churn import churn_check, ending_passes
from bench.recorder import PodRecord, TaskSetRecord, exit_codes
from bench.report import exit_to_final_by_taskset
from bench.run import SCENARIOS, evidence_suspects, implicated, parse_args, pod_evidence


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
    churn_check(CHOSEN, pods, errors, {})
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


def log_line(**fields: Any) -> str:
    return json.dumps({"logger": "TaskSetController", "level": "info", **fields})


def reconciled(name: str, namespace: str = "ns") -> str:
    return log_line(msg="reconciled", namespace=namespace, name=name)


def ended(pod_name: str, namespace: str = "ns", phase: str = "TaskRoleReplicaAttemptDeletionPending") -> str:
    taskset = pod_name.split("-", maxsplit=1)[0]
    return log_line(
        msg="",
        QueryKey="ReplicaTransition",
        TaskSet=taskset,
        Namespace=namespace,
        PodName=pod_name,
        NextPhase=phase,
    )


def test_ending_passes_are_counted_per_taskset_in_its_namespace() -> None:
    lines = [
        reconciled("t"),
        ended("t-worker-1"),
        ended("u-worker-0"),  # another TaskSet's first pass, interleaved
        reconciled("u"),
        reconciled("t"),
        ended("t-ps-0"),
        ended("t-ps-0", phase="TaskRoleReplicaAttemptDeletionRequested"),
        ended("t-worker-1", namespace="other"),
        reconciled("t"),
        ended("t-worker-1"),
        reconciled("t"),
    ]
    assert ending_passes(lines, "ns") == {"t-worker-1": [1, 3], "u-worker-0": [0], "t-ps-0": [2]}


@pytest.mark.parametrize(
    ("ps_pass", "ok"),
    [
        pytest.param(4, True, id="the ps failure seen in the pass that saw the last worker succeed"),
        pytest.param(3, False, id="the ps failure seen a pass earlier, and not retried"),
    ],
)
def test_a_failure_seen_with_the_outcome_need_not_be_retried(ps_pass: int, ok: bool) -> None:
    pods = [pod("t-ps-0", exit_phase="Failed", exited=4.0), *workers_done(at=5.0)]
    ends = {
        "t-ps-0": [ps_pass],
        "t-worker-0": [4],
        "t-worker-1": [2, 4],
        "t-worker-2": [3],
        "t-worker-3": [4],
    }
    errors: list[str] = []
    verdict = churn_check(CHOSEN, pods, errors, ends)
    assert (not errors) == ok, errors
    assert ("t-ps-0" in verdict["failed_with_outcome_settled"]) == ok


def test_a_worker_failure_is_never_excused_by_the_outcome() -> None:
    pods = [pod("t-ps-0", exit_phase=""), *workers_done(at=5.0)[:2], *workers_done(at=5.0)[3:]]
    ends = {"t-worker-0": [4], "t-worker-1": [4], "t-worker-2": [3], "t-worker-3": [4]}
    errors: list[str] = []
    churn_check(CHOSEN, pods, errors, ends)
    assert errors


def test_exit_to_final_counts_from_the_last_exit_of_each_final_taskset() -> None:
    pods = [
        PodRecord("a-w-0", "1", "a", "w", 0, added=0.0, exited=5.0),
        PodRecord("a-w-1", "2", "a", "w", 0, added=0.0, exited=6.0),
        PodRecord("b-w-0", "3", "b", "w", 0, added=0.0, exited=4.0),
        PodRecord("c-w-0", "4", "c", "w", 0, added=0.0),
    ]
    tasksets = [
        TaskSetRecord("a", 0.0, final=9.0),  # 3 s after its last exit (6.0), not 4 s after its first
        TaskSetRecord("b", 0.0, final=6.5),
        TaskSetRecord("c", 0.0, final=20.0),  # no exit seen: not counted
        TaskSetRecord("d", 0.0),  # not final: not counted
    ]
    assert exit_to_final_by_taskset(tasksets, pods) == {"a": 3.0, "b": 2.5}
    assert exit_to_final_by_taskset([], pods) == {}


def test_the_evidence_covers_the_implicated_tasksets_of_a_failed_run_and_always_the_slowest() -> None:
    pods = [
        PodRecord("a-w-0", "1", "a", "w", 0, added=0.0, exited=5.0),
        PodRecord("b-w-0", "2", "b", "w", 0, added=0.0, exited=5.0),
    ]
    tasksets = [
        TaskSetRecord("a", 0.0, final=9.0, state="Succeeded"),  # the slowest: 4 s
        TaskSetRecord("b", 0.0, final=6.0, state="Failed"),
    ]
    assert evidence_suspects(tasksets, pods, {}, failed=True) == ["b", "a"]
    assert evidence_suspects(tasksets, pods, {}, failed=False) == ["a"]
    assert evidence_suspects(tasksets[1:], pods, {}, failed=True) == ["b"]  # slowest already named
    assert evidence_suspects([], pods, {}, failed=False) == []


@pytest.mark.parametrize(
    ("argv", "chosen"),
    [
        ([], SCENARIOS),
        (["--scenario", "all"], SCENARIOS),
        (["--scenario", "burst"], ("burst",)),
        (["--scenario", "raw,burst"], ("raw", "burst")),
    ],
)
def test_the_bench_runs_the_scenarios_named_in_the_order_given(
    argv: list[str], chosen: tuple[str, ...]
) -> None:
    assert parse_args(argv).scenario == chosen


def test_an_unknown_scenario_is_refused_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--scenario", "raw,bursts"])
    assert "'bursts'" in capsys.readouterr().err
