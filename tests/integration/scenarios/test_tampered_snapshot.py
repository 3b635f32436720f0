"""Tampering with the snapshot: someone with ConfigMap write edits the attempt's ControlUnit snapshot while a
replica waits for its retry. The controller never creates a Pod from the edited snapshot, does not let
the TaskSet succeed through it, and says so in the status and a Warning event, naming the ControlUnit."""

from __future__ import annotations

from typing import Any

import orjson

from taskset.api.constants import LABEL_TASKSET
from tests.builders import TaskSetBuilder
from tests.integration.harness import ObjectLog, PodFacts, Recorder, TaskSets, eventually, exits
from tests.integration.scenarios.steps import RETRY_PENDING, replica_phase

EVIL_IMAGE = "evil.example.com/miner:latest"
RETRY_DELAY = 10  # seconds: the window in which the snapshot is edited


def the_attack(pod: PodFacts) -> Any:
    """The template exits 1; a Pod built from the edited snapshot (it carries EVIL) would exit 0."""
    return exits(0 if pod.env.get("EVIL") else 1)


def edited(snapshot: str) -> str:
    """Another image, a workload that succeeds, and an injected label: what the issue's attacker did."""
    spec = orjson.loads(snapshot)
    template = spec["roles"][0]["template"]
    template.setdefault("metadata", {}).setdefault("labels", {})["injected"] = "yes"
    container = template["spec"]["containers"][0]
    container["image"] = EVIL_IMAGE
    container["env"] = [*container.get("env", []), {"name": "EVIL", "value": "1"}]
    return orjson.dumps(spec).decode()


def from_the_edit(pod: dict[str, Any]) -> bool:
    labels = pod["metadata"].get("labels") or {}
    containers = pod["spec"].get("containers") or []
    return labels.get("injected") == "yes" or any(c.get("image") == EVIL_IMAGE for c in containers)


def test_an_edited_control_unit_snapshot_is_never_used_and_the_taskset_names_it(
    ts: TaskSets, recorder: Recorder, pods: ObjectLog, namespace: str
) -> None:
    recorder.script = the_attack
    ts.create(TaskSetBuilder("victim").role("r", 1, retry=(True, 2, RETRY_DELAY)).obj())
    eventually(lambda: replica_phase(ts.status("victim"), "r", 0) == RETRY_PENDING, 60, "retry delay")
    unit = ts.configmap("c-victim-0")
    assert unit is not None
    digest = ts.status("victim")["attemptSpecDigest"]  # the CRD keeps the field (not pruned)
    assert digest.startswith("sha256:")

    patch = {"data": {"spec.json": edited(unit["data"]["spec.json"])}}
    ts.core.patch_namespaced_config_map("c-victim-0", namespace, patch)

    status = ts.final("victim")
    message = "ControlUnit c-victim-0's spec snapshot was changed by someone else; it is not used"
    assert status["state"] == "Failed"
    assert status["stateMessage"] == message
    [condition] = [c for c in status["conditions"] if c["type"] == "ControlUnitTampered"]
    assert (condition["status"], condition["message"]) == ("True", message)
    eventually(lambda: ("ControlUnitTampered", message) in ts.events("victim"), 30, "the Warning event")
    assert [reason for reason, _ in ts.events("victim")].count("ControlUnitTampered") == 1
    assert not [v.name for v in pods.versions() if from_the_edit(v.obj)]
    assert len({v.uid for v in pods.versions()}) == 1  # no retry Pod at all: the attempt ended
    eventually(lambda: ts.pods("victim") == [], 60, "the attempt's Pods gone")
    assert ts.core.list_namespaced_pod(namespace, label_selector=f"{LABEL_TASKSET}=victim").items == []
