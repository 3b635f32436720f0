"""The benchmark report: a histogram scraped from the controller, the throughput ratios, the log's errors."""

from __future__ import annotations

from bench.controller import Samples, error_lines
from bench.report import add_ratios, histogram, paired_cell


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
