"""The benchmark's derived figures, from hand-made samples."""

from __future__ import annotations

import pytest

from bench.report import cores_between

SAMPLES = [(0.0, 10.0, 1), (1.0, 10.5, 1), (2.0, 11.5, 1), (3.0, 12.5, 1), (4.0, 12.5, 1)]


@pytest.mark.parametrize(
    ("span", "cores"),
    [
        ((1.0, 3.0), 1.0),  # a core's worth of CPU seconds each second
        ((0.0, 4.0), 0.62),  # idle at both ends
        ((0.5, 3.5), 1.0),  # only the samples inside the span count
        ((3.0, 4.0), 0.0),
        ((1.5, 1.9), None),  # no two samples inside
        ((2.0,), None),  # one Pod: no window
    ],
)
def test_cores_while_creating_come_from_the_samples_inside_the_window(
    span: tuple[float, ...], cores: float | None
) -> None:
    assert cores_between(SAMPLES, span) == cores
