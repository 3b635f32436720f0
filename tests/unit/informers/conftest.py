"""Fixtures of the informers unit tests: fake time, a fake API server, a recording logger, fixed jitter."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from clock import FakeClock
from informers.testing import FakeSource, RecordingLogger

# Every jittered value is base * 1.5 with this "random" number: backoffs 1.2 s, 2.4 s, 4.8 s, ...
FIXED_RANDOM = 0.5


class FixedRandom(random.Random):
    def random(self) -> float:
        return FIXED_RANDOM


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def source(clock: FakeClock) -> Iterator[FakeSource]:
    fake = FakeSource(clock=clock)
    yield fake
    fake.end_watches()


@pytest.fixture
def logger() -> RecordingLogger:
    return RecordingLogger()


@pytest.fixture
def rng() -> random.Random:
    return FixedRandom()
