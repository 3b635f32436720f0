"""The benchmark report: a histogram scraped from the controller, the throughput ratios, the log's errors,
and the creation windows' CPU accounting, all from hand-made samples."""

from __future__ import annotations

from typing import Any

import pytest

from bench.controller import ALL_CORES, Samples, error_lines
from bench.report import (
    add_cpu,
    add_ratios,
    against_fixed_work,
    cores_between,
    cpu_table,
    creation_window,
    histogram,
    paired_cell,
    window_table,
)


def samples(buckets: dict[str, float], count: float, total: float) -> Samples:
    found: Samples = {("q_bucket", (("le", le), ("name", "taskset"))): value for le, value in buckets.items()}
    found[("q_count", (("name", "taskset"),))] = count
    found[("q_sum", (("name", "taskset"),))] = total
    return found


def test_mean_and_share_over_one_second() -> None:
    summary = histogram(samples({"0.1": 5, "1.0": 8, "10.0": 10, "+Inf": 10}, 10, 7.5), "q")
    assert summary == {"count": 10, "mean": 0.75, "share_over_1s": 0.2}


def test_no_observations_give_no_mean() -> None:
    summary = histogram(samples({"1.0": 0, "+Inf": 0}, 0, 0), "q")
    assert summary == {"count": 0, "mean": None, "share_over_1s": None}


def test_error_lines_are_the_error_and_critical_records_of_the_log() -> None:
    lines = [
        '{"level":"info","msg":"reconciled"}',
        '{"level": "error", "msg": "Failed to syncTaskSet"}',
        '{"level":"critical","msg":"panic"}',
        '{"level":"warning","msg":"event not recorded"}',
    ]
    assert error_lines(lines) == lines[1:3]


def rates(**by_scenario: float) -> dict[str, object]:
    return {
        "scenarios": {name.replace("_", "-"): {"pod_creation_rate": r} for name, r in by_scenario.items()}
    }


def test_a_target_scenario_is_measured_against_its_own_raw_run_and_the_run_wide_ones() -> None:
    results = rates(
        raw_unlimited=200.0, raw_qps50=50.0, raw_before_burst=150.0, burst=120.0, raw_before_large=250.0
    )
    add_ratios(results)
    scenarios = results["scenarios"]
    assert isinstance(scenarios, dict)
    assert scenarios["burst"]["throughput_ratio"] == {"raw-unlimited": 0.6, "raw-qps50": 2.4, "paired": 0.8}
    assert "throughput_ratio" not in scenarios["raw-before-large"]  # large did not run: nothing to pair


def test_a_scenario_without_a_raw_run_before_it_has_only_the_run_wide_ratios() -> None:
    results = rates(raw_unlimited=200.0, steady=25.0)
    add_ratios(results)
    scenarios = results["scenarios"]
    assert isinstance(scenarios, dict)
    assert scenarios["steady"]["throughput_ratio"] == {"raw-unlimited": 0.125}


def test_repeated_pairs_give_the_median_ratio_and_each_one_in_order() -> None:
    results = rates(raw_unlimited=200.0, raw_before_large=150.0, large=150.0)
    results["repeats"] = {
        "large": [
            {"raw": {"pod_creation_rate": 100.0}, "scenario": {"pod_creation_rate": 80.0}},
            {"raw": {"pod_creation_rate": 200.0}, "scenario": {"pod_creation_rate": 180.0}},
        ]
    }
    add_ratios(results)
    scenarios = results["scenarios"]
    assert isinstance(scenarios, dict)
    ratios = scenarios["large"]["throughput_ratio"]
    assert ratios["paired_each"] == [1.0, 0.8, 0.9]
    assert ratios["paired"] == 0.9
    assert ratios["raw-unlimited"] == 0.75  # the first pair's row, against the run-wide reference
    assert paired_cell(ratios) == "0.9 (median of 3: 0.8 to 1)"
    assert paired_cell({"paired": 0.64}) == "0.64"


CONTROLLER_CPU = [(float(t), {"controller": cpu}) for t, cpu in enumerate([10.0, 10.5, 11.5, 12.5, 12.5])]


@pytest.mark.parametrize(
    ("span", "cores"),
    [
        ((1.0, 3.0), 1.0),  # a core's worth of CPU seconds each second
        ((0.0, 4.0), 0.625),  # idle at both ends
        ((0.5, 3.5), 1.0),  # only the samples inside the span count
        ((3.0, 4.0), 0.0),
        ((1.5, 1.9), None),  # no two samples inside
        ((2.0,), None),  # one Pod: no window
    ],
)
def test_cores_come_from_the_samples_inside_the_window(span: tuple[float, ...], cores: float | None) -> None:
    found = cores_between(CONTROLLER_CPU, span)
    assert (found and found["controller"]) == cores


def test_a_creation_window_spreads_each_process_s_cpu_over_its_pods() -> None:
    samples = [  # both cores busy throughout, a quarter of it the controller's
        (float(t), {ALL_CORES: 100.0 + 2 * t, "controller": 5.0 + 0.5 * t, "etcd": 1.0}) for t in range(4)
    ]
    window = creation_window([0.0, 1.0, 1.5, 3.0, 2.0], samples)  # 5 Pods in 3 s
    assert window == {
        "seconds": 3.0,
        "machine_busy_cores": 2.0,
        "machine_cpu_ms_per_pod": 1500.0,  # 6 busy seconds for the 4 Pods after the first
        "controller_cores": 0.5,
        "cpu_ms_per_pod_by_process": {"controller": 375.0, "etcd": 0.0},
    }


def test_a_single_pod_has_no_creation_window() -> None:
    window = creation_window([1.0], [(0.0, {ALL_CORES: 0.0}), (2.0, {ALL_CORES: 2.0})])
    assert window["machine_cpu_ms_per_pod"] is None
    assert window["cpu_ms_per_pod_by_process"] == {}


def test_the_window_table_sets_each_scenario_beside_its_paired_reference() -> None:
    def scenario(ms: float | None) -> dict[str, object]:
        window = {"seconds": 10.0, "machine_busy_cores": 2.0, "machine_cpu_ms_per_pod": ms}
        return {"creation_window": {**window, "cpu_ms_per_pod_by_process": {"controller": 4.0, "etcd": 1.5}}}

    rows = window_table(
        {"raw-before-burst": scenario(16.0), "burst": scenario(25.0), "steady": scenario(None), "cache": {}}
    ).splitlines()
    assert (
        rows[3] == "| scenario | seconds | busy cores | all | controller | etcd | paired raw's all ÷ this |"
    )
    assert rows[5:] == [
        "| raw-before-burst | 10 | 2 | 16 | 4 | 1.5 | - |",
        "| burst | 10 | 2 | 25 | 4 | 1.5 | 0.64 |",
        "| steady | 10 | 2 | - | 4 | 1.5 | - |",
    ]
    assert window_table({"cache": {}}) == ""


# Two runs of the same tree an hour apart on this machine (burst, CPU seconds by process): every process
# took about half as long again in the slower one, and the controller's share of the fixed work did not move.
FAST = {"controller": 6.5, "kube-apiserver": 34.2, "kube-scheduler": 2.0, "kwok": 5.1, "etcd": 4.3}
SLOW = {"controller": 10.4, "kube-apiserver": 52.4, "kube-scheduler": 3.6, "kwok": 7.7, "etcd": 7.1}


def test_the_controller_s_cpu_is_read_against_the_work_it_cannot_change() -> None:
    assert against_fixed_work(FAST) == round(6.5 / 7.1, 3)
    assert against_fixed_work(SLOW) == round(10.4 / 11.3, 3)
    assert abs(against_fixed_work(FAST) - against_fixed_work(SLOW)) < 0.02  # type: ignore[operator]
    assert SLOW["controller"] / FAST["controller"] > 1.5  # the raw figure moved by half


@pytest.mark.parametrize(
    "used",
    [
        pytest.param({"kube-scheduler": 2.0, "kwok": 5.1}, id="no controller"),
        pytest.param({"controller": 6.5}, id="no fixed work measured"),
        pytest.param({"controller": 6.5, "kube-scheduler": 0.0, "kwok": 0.0}, id="none done"),
    ],
)
def test_without_both_sides_there_is_no_figure(used: dict[str, float]) -> None:
    assert against_fixed_work(used) is None


def test_the_cpu_table_has_the_figure_for_each_scenario() -> None:
    scenarios = {"burst": {"cpu_seconds_by_process": FAST, "pods_created": 1000}}
    lines = cpu_table(scenarios).splitlines()
    assert lines[2].endswith("| controller ÷ (scheduler + kwok) |")
    assert lines[4] == "| burst | 6.5 | 4.3 | 34.2 | 2 | 5.1 | 0.915 |"


def test_a_scenario_s_result_gets_its_cpu_and_the_figure_against_the_fixed_work() -> None:
    result: dict[str, Any] = {"controller": {"cpu_seconds": 6.4}}
    add_cpu(result, {"cpu_seconds_by_process": FAST, "controller_cpu_by_thread": {"worker": 3.0}})
    assert result["cpu_seconds_by_process"] == FAST
    assert result["controller_cpu_by_thread"] == {"worker": 3.0}
    assert result["controller"] == {"cpu_seconds": 6.4, "cpu_against_fixed_work": 0.915}
