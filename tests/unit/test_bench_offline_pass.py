"""``bench.offline_pass`` runs as its README section says: one TaskSet's Pods created, then moved to
Running and to Succeeded a step at a time, each step a pass of the real Reconciler."""

from __future__ import annotations

import math

import pytest

from bench.offline_pass import STEP, main, small, small_life, straight_line

pytestmark = pytest.mark.unit


def test_it_drives_one_taskset_through_its_pods_lives(capsys: pytest.CaptureFixture[str]) -> None:
    replicas = STEP * 2 + 5
    driver = main(replicas)
    assert driver.passes == 2 + 2 * math.ceil(replicas / STEP)
    created = [name for call, name in driver.client.calls if call == "create"]
    assert sorted(created) == sorted(["c-job-0", *driver.names])  # its ControlUnit, and each Pod once
    replicas_now = driver.client.live["status"]["roleStatus"][0]["replicaStatus"]
    assert {r["phase"] for r in replicas_now} != {"TaskRoleReplicaAttemptPending"}
    assert any(r["terminatedInfo"] for r in replicas_now)  # the Succeeded Pods were captured
    out = capsys.readouterr().out
    assert out.startswith(f"{driver.passes} passes of {replicas} replicas: ")
    assert out.rstrip().endswith("ms a pass")


def test_a_small_taskset_lives_as_bursts_waves_bring_its_passes() -> None:
    driver = small_life(4)
    assert driver.passes == 6
    calls = driver.client.calls
    workers = [f"job-worker-{i}" for i in range(4)]
    assert sorted(name for call, name in calls if call == "create") == sorted(
        ["c-job-0", "job-ps-0", *workers]
    )
    # the workers' ends written, their Pods deleted, and the attempt ended by deleting its ControlUnit
    assert {name for call, name in calls if call == "delete"} == {*workers, "c-job-0"}
    roles = {role["name"]: role for role in driver.client.live["status"]["roleStatus"]}
    assert {r["phase"] for r in roles["worker"]["replicaStatus"]} == {"TaskRoleReplicaCompleted"}


def test_small_prints_a_pass_at_each_size_and_the_line_through_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    per_pass = small(sizes=(1, 3), replicas=8)
    assert sorted(per_pass) == [2, 4] and all(ms > 0 for ms in per_pass.values())
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("2 replicas: 24 passes, ") and lines[1].startswith("4 replicas: 12 passes, ")
    assert lines[2].startswith("a pass: ") and lines[2].endswith(" ms a replica")


def test_the_line_is_the_least_squares_one() -> None:
    assert straight_line({5: 1.0, 10: 1.5, 20: 2.5}) == pytest.approx((0.5, 0.1))
    assert straight_line({1: 2.0, 3: 2.0}) == pytest.approx((2.0, 0.0))
