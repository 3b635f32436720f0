"""The leader election settings: names, defaults, durations, and the timing rules (exit 2 when broken)."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.daemon.config import Config, ConfigError, load_config

pytestmark = pytest.mark.unit

FILE = "/etc/taskset/config.yaml"


def _load(argv: list[str], env: dict[str, str] | None = None, file: str | None = None) -> Config:
    def read(path: str) -> str:
        if file is None or path != FILE:
            raise FileNotFoundError(2, "No such file or directory", path)
        return file

    return load_config(argv, env or {}, read)


def test_defaults_are_client_go_timings_and_off_for_local_runs() -> None:
    config = _load([])
    assert config.leader_elect is False
    assert (
        config.leader_elect_lease_duration,
        config.leader_elect_renew_deadline,
        config.leader_elect_retry_period,
    ) == (15.0, 10.0, 2.0)
    assert (config.leader_elect_namespace, config.leader_elect_id) == ("", "taskset-controller")


@pytest.mark.parametrize(
    ("argv", "env", "file", "want"),
    [
        pytest.param(["--leader-elect"], {}, None, {"leader_elect": True}, id="bare flag turns it on"),
        pytest.param(
            [],
            {"TASKSET_LEADER_ELECT": "true", "TASKSET_LEADER_ELECT_ID": "my-lock"},
            None,
            {"leader_elect": True, "leader_elect_id": "my-lock"},
            id="environment",
        ),
        pytest.param(
            ["--config", FILE],
            {},
            "leaderElect: true\nleaderElectLeaseDurationSec: 30\nleaderElectRenewDeadlineSec: 20\n"
            "leaderElectRetryPeriodSec: 4\nleaderElectNamespace: ops\nleaderElectID: lock\n",
            {
                "leader_elect": True,
                "leader_elect_lease_duration": 30.0,
                "leader_elect_renew_deadline": 20.0,
                "leader_elect_retry_period": 4.0,
                "leader_elect_namespace": "ops",
                "leader_elect_id": "lock",
            },
            id="file keys",
        ),
        pytest.param(
            [
                "--leader-elect",
                "--leader-elect-lease-duration=4",
                "--leader-elect-renew-deadline=3s",
                "--leader-elect-retry-period=500ms",
            ],
            {},
            None,
            {
                "leader_elect_lease_duration": 4.0,
                "leader_elect_renew_deadline": 3.0,
                "leader_elect_retry_period": 0.5,
            },
            id="seconds or Go durations",
        ),
        pytest.param(
            ["--leader-elect-lease-duration=1m30s"],
            {},
            None,
            {"leader_elect_lease_duration": 90.0},
            id="compound duration",
        ),
    ],
)
def test_leader_election_settings(argv: list[str], env: dict[str, str], file: str | None, want: Any) -> None:
    config = _load(argv, env, file)
    assert {key: getattr(config, key) for key in want} == want


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ["--leader-elect-lease-duration=soon"],
            "invalid value 'soon' for --leader-elect-lease-duration (flag): must be a number of seconds "
            "or a duration such as 15s, 1m or 500ms",
            id="not a duration",
        ),
        pytest.param(
            ["--leader-elect-retry-period=0"],
            "invalid value '0' for --leader-elect-retry-period (flag): must be greater than zero",
            id="zero",
        ),
        pytest.param(
            ["--leader-elect-retry-period=2x"],
            "invalid value '2x' for --leader-elect-retry-period (flag): must be a number of seconds "
            "or a duration such as 15s, 1m or 500ms",
            id="unknown unit",
        ),
        pytest.param(
            ["--leader-elect-id=Not_A_Name"],
            "invalid value 'Not_A_Name' for --leader-elect-id (flag): must be an object name "
            "(a DNS-1123 subdomain, e.g. taskset-controller)",
            id="lease name",
        ),
        pytest.param(
            ["--leader-elect", "--leader-elect-lease-duration=10"],
            "invalid leader election timings: the lease duration (10 s) must be greater than the renew "
            "deadline (10 s)",
            id="lease not above renew deadline",
        ),
        pytest.param(
            ["--leader-elect", "--leader-elect-renew-deadline=2"],
            "invalid leader election timings: the renew deadline (2 s) must be greater than 1.2 x the "
            "retry period (2 s)",
            id="renew deadline not above 1.2 x retry",
        ),
    ],
)
def test_errors(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        _load(argv)
    assert str(raised.value) == message


def test_timings_are_only_checked_when_leader_election_is_on() -> None:
    assert _load(["--leader-elect-lease-duration=10"]).leader_elect_lease_duration == 10.0
