"""The simulated kubelet's last step (``devcluster.terminator``): each terminating Pod is deleted once,
by UID, and one whose delete failed is tried again."""

from __future__ import annotations

import ssl
from typing import Any

import pytest

from devcluster.terminator import Terminator


class Recording(Terminator):
    """A terminator whose deletes get the given HTTP statuses (then 200) and are recorded."""

    def __init__(self, *answers: int) -> None:
        super().__init__("https://127.0.0.1:1", ssl.create_default_context())
        self.answers = list(answers)
        self.deleted: list[tuple[str, dict[str, Any]]] = []

    def _delete(self, path: str, options: dict[str, Any]) -> int:
        self.deleted.append((path, options))
        return self.answers.pop(0) if self.answers else 200


def pod(uid: str = "u1", *, terminating: bool = True, finalizers: list[str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "p", "namespace": "ns", "uid": uid}
    if terminating:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    if finalizers:
        meta["finalizers"] = finalizers
    return {"metadata": meta}


def test_a_terminating_pod_is_deleted_at_once_by_uid() -> None:
    terminator = Recording()
    terminator.finish(pod())
    assert terminator.deleted == [
        ("/api/v1/namespaces/ns/pods/p", {"gracePeriodSeconds": 0, "preconditions": {"uid": "u1"}})
    ]


@pytest.mark.parametrize(
    "first",
    [pod(terminating=False), pod(finalizers=["example.com/hold"])],
    ids=["not terminating", "held by a finalizer"],
)
def test_a_pod_that_is_not_ready_to_go_is_left_alone(first: dict[str, Any]) -> None:
    terminator = Recording()
    terminator.finish(first)
    assert terminator.deleted == []


@pytest.mark.parametrize("status", [200, 404, 409])
def test_each_pod_is_deleted_once_whatever_updates_follow(status: int) -> None:
    terminator = Recording(status)
    terminator.finish(pod())
    terminator.finish(pod())  # a later update of the same terminating Pod
    terminator.finish(pod("u2"))  # its successor under the same name
    assert [options["preconditions"]["uid"] for _, options in terminator.deleted] == ["u1", "u2"]


def test_a_failed_delete_is_raised_and_tried_again() -> None:
    terminator = Recording(500)
    with pytest.raises(OSError, match="HTTP 500"):
        terminator.finish(pod())
    terminator.finish(pod())
    assert len(terminator.deleted) == 2
