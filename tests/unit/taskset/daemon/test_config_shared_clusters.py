"""The flags of shared clusters: --gang-scheduling and --kueue, and the integrations they turn on."""

from __future__ import annotations

import pytest

from taskset.daemon.config import ConfigError, load_config
from taskset.daemon.wiring import integrations_of
from taskset.integrations import BUILT_IN

pytestmark = pytest.mark.unit


def no_file(path: str) -> str:
    raise AssertionError(f"no file is read: {path}")


@pytest.mark.parametrize(
    ("argv", "env", "schedulers", "kueue"),
    [
        pytest.param([], {}, (), False, id="off by default"),
        pytest.param(
            ["--gang-scheduling=volcano, coscheduling,volcano"],
            {},
            ("volcano", "coscheduling"),
            False,
            id="each once",
        ),
        pytest.param(["--kueue"], {}, (), True, id="--kueue alone"),
        pytest.param(
            [],
            {"TASKSET_GANG_SCHEDULING": "coscheduling", "TASKSET_KUEUE": "true"},
            ("coscheduling",),
            True,
            id="from the environment",
        ),
    ],
)
def test_the_flags_choose_the_integrations(
    argv: list[str], env: dict[str, str], schedulers: tuple[str, ...], kueue: bool
) -> None:
    config = load_config(argv, env, no_file)
    assert (config.gang_scheduling, config.kueue) == (schedulers, kueue)
    names = [integration.name for integration in integrations_of(config)]
    extra = [*sorted(schedulers, key=("coscheduling", "volcano").index), *(["kueue"] if kueue else [])]
    assert names == [*(i.name for i in BUILT_IN), *extra]


def test_an_unknown_gang_scheduler_stops_startup_naming_the_flag() -> None:
    with pytest.raises(ConfigError) as refused:
        load_config(["--gang-scheduling=slurm"], {}, no_file)
    assert str(refused.value) == (
        "invalid value 'slurm' for --gang-scheduling (flag): "
        "must be a comma-separated list of coscheduling, volcano"
    )
