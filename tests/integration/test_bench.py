"""``python -m bench`` end to end at small scale, so that the benchmark cannot break unnoticed
between full runs: its own control plane, the controller as a separate process, the raw references, the
burst scenario twice (each after its own raw reference) and churn, each judged correct by the bench's
own verdict. Only counts are asserted, never speed: figures belong to the benchmark's report, not to a
test."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH_TIMEOUT = 900.0  # seconds; the three scenarios take about two minutes on this 2-core machine

pytestmark = [pytest.mark.integration, pytest.mark.timeout(BENCH_TIMEOUT + 60)]


def bench(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python -m bench`` at small scale, its results in ``tmp_path``; it must exit 0."""
    run = subprocess.run(
        [sys.executable, "-m", "bench", *args, "--scale", "small", "--no-readme", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=BENCH_TIMEOUT,
        check=False,
    )
    assert run.returncode == 0, f"{run.stdout[-4000:]}\n{run.stderr[-4000:]}"
    return run


def test_the_benchmark_runs_and_judges_every_scenario_correct(tmp_path: Path) -> None:
    run = bench(tmp_path, "--scenario", "raw,burst,churn", "--repeat", "2")
    assert "correctness: all OK" in run.stdout
    results = json.loads((tmp_path / "bench-small-seed1.json").read_text())
    scenarios = results["scenarios"]
    assert set(scenarios) == {"raw-unlimited", "raw-qps50", "raw-before-burst", "burst", "churn"}
    assert all(s["correctness"]["ok"] for s in scenarios.values())
    raw_pods = [scenarios[n]["pods_created"] for n in ("raw-unlimited", "raw-qps50", "raw-before-burst")]
    assert raw_pods == [400, 400, 200]  # burst's own reference: as many Pods as burst creates
    burst, churn = scenarios["burst"], scenarios["churn"]
    assert (burst["tasksets"], burst["pods_created"]) == (40, 200)
    assert burst["final_states"] == {"Succeeded": 40}
    assert burst["status_writes"]["by_result"] == {"success": burst["status_writes"]["total"]}
    assert burst["throughput_ratio"]["raw-unlimited"] > 0
    for window in (burst["creation_window"], scenarios["raw-before-burst"]["creation_window"]):
        assert window["machine_cpu_ms_per_pod"] > 0 and window["machine_busy_cores"] > 0
    # --repeat 2: burst ran twice, each time after its own raw reference, and both runs were correct.
    [pair] = results["repeats"]["burst"]
    assert (pair["raw"]["pods_created"], pair["scenario"]["pods_created"]) == (200, 200)
    assert pair["raw"]["correctness"]["ok"] and pair["scenario"]["correctness"]["ok"]
    assert pair["scenario"]["final_states"] == {"Succeeded": 40}
    assert len(burst["throughput_ratio"]["paired_each"]) == 2
    logs = [run["evidence"]["controller_log"] for run in (burst, pair["scenario"])]
    assert logs == ["evidence-burst-seed1-controller.log", "evidence-burst-2-seed1-controller.log"]
    assert all((tmp_path / log).is_file() for log in logs)  # the second round's did not overwrite the first's
    assert "churn" not in results["repeats"]  # only the throughput targets repeat
    # Churn: a seeded 20% of the replicas fail once, so more Pods than replicas, and all still succeed.
    assert churn["pods_created"] > 200
    assert churn["final_states"] == {"Succeeded": 40}
    assert results["controller"]["exit_code"] == 0


def test_the_strangers_scenario_reports_the_controller_s_rss_with_against_without_them(
    tmp_path: Path,
) -> None:
    """The ``strangers`` bench figure: a stranger's labelled 1 MB ConfigMaps and 250 KB-annotated Pods in the
    controller's caches, and its RSS after a burst with them against the same burst before them. Only
    that the figure is there and both bursts are correct is asserted; the figure is the report's."""
    run = bench(tmp_path, "--scenario", "strangers")
    scenarios = json.loads((tmp_path / "bench-small-seed1.json").read_text())["scenarios"]
    assert set(scenarios) == {"strangers-without", "strangers-with", "strangers"}
    for name in ("strangers-without", "strangers-with"):
        assert scenarios[name]["final_states"] == {"Succeeded": 40}, name
    record = scenarios["strangers"]
    assert record["correctness"]["ok"], record["correctness"]
    ctl = record["controller"]
    assert ctl["rss_mib_without"] > 0 and ctl["rss_ratio_with_to_without"] > 0
    assert "Memory with strangers" in run.stdout
