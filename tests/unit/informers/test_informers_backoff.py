"""The reflector's backoff: 0.8 s doubling to a 30 s cap, jittered up to 2x, reset after 2 quiet minutes."""

from __future__ import annotations

import random

import pytest

from clock import FakeClock
from informers import BackoffSettings, ExponentialBackoff

pytestmark = [pytest.mark.unit, pytest.mark.timeout(10)]


@pytest.mark.parametrize(
    ("gaps", "delays"),
    [
        pytest.param(
            [0, 0, 0, 0, 0, 0, 0, 0],
            [1.2, 2.4, 4.8, 9.6, 19.2, 38.4, 45.0, 45.0],
            id="back-to-back failures double the delay up to the 30 s cap (jitter 1.5x here)",
        ),
        pytest.param(
            [0, 60, 120, 0],
            [1.2, 2.4, 4.8, 9.6],
            id="gaps of up to two minutes keep the delay growing",
        ),
        pytest.param(
            [0, 0, 121, 0],
            [1.2, 2.4, 1.2, 2.4],
            id="more than two quiet minutes start over from 0.8 s",
        ),
    ],
)
def test_delays(clock: FakeClock, rng: random.Random, gaps: list[float], delays: list[float]) -> None:
    backoff = ExponentialBackoff(settings=BackoffSettings(), clock=clock, rng=rng)
    observed = []
    for gap in gaps:
        clock.step(gap)
        observed.append(backoff.next_delay())
    assert observed == pytest.approx(delays)


def test_jitter_stays_within_one_to_two_times_the_base(clock: FakeClock) -> None:
    backoff = ExponentialBackoff(settings=BackoffSettings(), clock=clock, rng=random.Random(7))
    bases = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0, 30.0]
    for base in bases:
        assert base <= backoff.next_delay() < 2 * base


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"initial": 0}, id="a zero initial delay"),
        pytest.param({"initial": 5, "cap": 1}, id="a cap below the initial delay"),
        pytest.param({"factor": 0.5}, id="a shrinking factor"),
        pytest.param({"jitter": -1}, id="negative jitter"),
    ],
)
def test_settings_reject_nonsense(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="backoff needs"):
        BackoffSettings(**kwargs)
