"""``PodViews``: one view per version of a Pod, a new one when the Pod changes, and no memory of Pods
that have no stored version."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.runtime.pod_views import PodViews

pytestmark = pytest.mark.unit


def pod(rv: str, phase: str, uid: str = "u-1") -> dict[str, Any]:
    return {"metadata": {"name": "t-w-0", "uid": uid, "resourceVersion": rv}, "status": {"phase": phase}}


def test_a_version_is_viewed_once() -> None:
    views = PodViews()
    first = views.of(pod("1", "Pending"))
    assert views.of(pod("1", "Pending")) is first


@pytest.mark.parametrize(
    ("later", "phase"),
    [
        (pod("2", "Running"), "Running"),  # the Pod changed: its resourceVersion did
        (pod("1", "Failed", uid="u-2"), "Failed"),  # another Pod of the same name
        (pod("", "Succeeded"), "Succeeded"),  # not a stored version: never memoised
    ],
)
def test_another_version_gets_its_own_view(later: dict[str, Any], phase: str) -> None:
    views = PodViews()
    views.of(pod("1", "Pending"))
    assert views.of(later).phase == phase


def test_the_views_are_bounded() -> None:
    views = PodViews(size=2)
    first = views.of(pod("1", "Pending"))
    views.of(pod("2", "Pending"))
    views.of(pod("3", "Pending"))
    assert views.of(pod("1", "Pending")) is not first  # the least recently used went first
