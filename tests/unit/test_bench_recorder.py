"""The bench's recorder counts every watch event of each Pod: what the controller's Pod watch carries."""

from __future__ import annotations

from typing import Any, cast

from bench.kube import Api
from bench.recorder import Recorder


def pod(uid: str, phase: str) -> dict[str, Any]:
    return {"metadata": {"name": f"p-{uid}", "uid": uid, "labels": {}}, "status": {"phase": phase}}


def test_each_event_of_a_pod_is_counted_for_that_pod() -> None:
    recorder = Recorder(cast(Api, None), "ns")
    for kind, phase in [("ADDED", "Pending"), ("MODIFIED", "Pending"), ("MODIFIED", "Running")]:
        recorder._on_pod_event(kind, pod("1", phase), 1.0)
    recorder._on_pod_event("MODIFIED", pod("1", "Succeeded"), 2.0)
    recorder._on_pod_event("DELETED", pod("1", "Succeeded"), 3.0)
    recorder._on_pod_event("ADDED", pod("2", "Pending"), 3.0)
    first, second = recorder.pods["1"], recorder.pods["2"]
    assert (first.events, second.events) == (5, 1)
    assert (first.running, first.exited, first.deleted) == (1.0, 2.0, 3.0)
