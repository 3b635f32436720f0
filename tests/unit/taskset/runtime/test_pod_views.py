"""``PodViews``: one view per version of a Pod, a new one when the Pod changes, one kept per Pod and none
once the Pod left the cache, and no memory of Pods that have no stored version."""

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


def test_one_view_is_kept_per_pod_and_none_once_it_left_the_cache() -> None:
    views = PodViews()
    for rv, phase in (("1", "Pending"), ("2", "Running"), ("3", "Succeeded")):
        views.of(pod(rv, phase))
    views.of(pod("1", "Running", uid="u-2"))
    assert len(views) == 2
    latest = views.of(pod("3", "Succeeded"))
    assert views.of(pod("3", "Succeeded")) is latest

    views.forget(pod("3", "Succeeded"))

    assert len(views) == 1
    assert views.of(pod("3", "Succeeded")) is not latest  # made again if asked after all


@pytest.mark.parametrize(
    "stranger",
    [{}, {"metadata": None}, {"metadata": "x"}, {"metadata": {}}, {"metadata": {"uid": ""}}],
)
def test_forgetting_a_pod_without_a_uid_changes_nothing(stranger: dict[str, Any]) -> None:
    views = PodViews()
    kept = views.of(pod("1", "Pending"))
    views.forget(stranger)
    assert views.of(pod("1", "Pending")) is kept


def test_the_views_are_bounded_even_when_never_forgotten() -> None:
    views = PodViews(size=2)
    first = views.of(pod("1", "Pending"))
    views.of(pod("1", "Pending", uid="u-2"))
    assert len(views) == 2
    views.of(pod("1", "Pending", uid="u-3"))  # the bound reached: every view goes, this one stays
    assert len(views) == 1
    assert views.of(pod("1", "Pending")) is not first
