"""Every kwok stage that patches a Pod's status names the Pod's UID in the patch, so that a patch kwok
retries after the Pod was replaced by one of the same name is refused (see ``stages.yaml``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

STAGES = Path(__file__).resolve().parents[2] / "devcluster" / "stages" / "stages.yaml"


def pod_stages() -> list[dict[str, Any]]:
    return [s for s in yaml.safe_load_all(STAGES.read_text()) if s["spec"]["resourceRef"]["kind"] == "Pod"]


def test_the_pod_stages_are_there() -> None:
    names = {s["metadata"]["name"] for s in pod_stages()}
    assert {"pod-start", "pod-hold", "pod-exit", "pod-unknown"} <= names


def test_no_pod_stage_patches_status_without_the_pods_uid() -> None:
    for stage in pod_stages():
        following = stage["spec"]["next"]
        assert "statusTemplate" not in following, stage["metadata"]["name"]
        for patch in following.get("patches", ()):
            assert patch["subresource"] == "status" and patch["type"] == "strategic"
            first = patch["template"].splitlines()[:2]
            assert first == ["metadata:", "  uid: {{ .metadata.uid | Quote }}"], stage["metadata"]["name"]
