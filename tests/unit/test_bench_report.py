"""The benchmark report's summary of a histogram scraped from the controller."""

from __future__ import annotations

from bench.controller import Samples, error_lines
from bench.report import histogram


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
