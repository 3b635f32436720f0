"""``bench.offline_pass`` runs as its README section says: one TaskSet's Pods created, then moved to
Running and to Succeeded a step at a time, each step a pass of the real Reconciler."""

from __future__ import annotations

import math

import pytest

from bench.offline_pass import STEP, main

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
