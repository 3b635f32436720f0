"""The raw reference makes what the controller makes (the strangers bench): the same Pods, byte for byte but
for the label key the controller selects by, and the same headless Service, selecting the raw Pods."""

from __future__ import annotations

import json

import pytest

from bench.scenarios import RAW_LABEL, raw_copies, taskset
from taskset.api.constants import LABEL_TASKSET
from taskset.integrations.peer_env import ENV_ROLE_HOSTS

pytestmark = pytest.mark.unit

UNIT = {"metadata": {"name": "raw-unit", "uid": "0" * 36}}


def test_every_replica_gets_its_pod_with_the_peer_lists_and_a_hostname() -> None:
    pods, owned = raw_copies([taskset("large", 3, ps=False)], "bench-raw", UNIT)
    assert [pod["metadata"]["name"] for pod in pods] == ["large-worker-0", "large-worker-1", "large-worker-2"]
    assert {pod["spec"]["hostname"] for pod in pods} == {"large-worker-0", "large-worker-1", "large-worker-2"}
    env = {var["name"] for var in pods[0]["spec"]["containers"][0]["env"]}
    assert ENV_ROLE_HOSTS.format(role="WORKER") in env
    assert [plural for plural, _ in owned] == ["services"]


def test_nothing_carries_the_label_the_controller_selects_by() -> None:
    pods, owned = raw_copies([taskset("burst-0000", 4), taskset("burst-0001", 4)], "bench-raw", UNIT)
    assert len(pods) == 10 and len(owned) == 2
    for obj in [*pods, *(service for _, service in owned)]:
        assert LABEL_TASKSET not in obj["metadata"]["labels"] and RAW_LABEL in obj["metadata"]["labels"]
    for _, service in owned:
        assert service["spec"]["selector"] == {RAW_LABEL: service["metadata"]["name"]}


def test_a_raw_pod_is_as_large_as_the_controllers() -> None:
    """Same bytes but for the label key's length: the API server stores and sends as much."""
    pods, _ = raw_copies([taskset("large", 400, ps=False)], "bench-raw", UNIT)
    size = len(json.dumps(pods[0]))
    assert size > 15_000  # 400 peers' DNS names: what made the controller's Pods heavy
