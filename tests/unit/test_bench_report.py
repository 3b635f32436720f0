"""The benchmark's derived figures, from hand-made samples."""

from __future__ import annotations

import pytest

from bench.controller import ALL_CORES
from bench.report import cores_between, creation_window, window_table

SAMPLES = [(float(t), {"controller": cpu}) for t, cpu in enumerate([10.0, 10.5, 11.5, 12.5, 12.5])]


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
    found = cores_between(SAMPLES, span)
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
