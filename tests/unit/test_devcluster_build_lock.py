"""Two builders of one component at once (the session's background build of the add-ons and a fixture
that needs one now) build it once: the second waits on the component's lock and finds it built. And the
session starts that background build only when it may need it (tests/integration/addon_session.py)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from devcluster import build
from tests.integration.addon_session import should_start

pytestmark = pytest.mark.unit

FAKE = build.Component("fake", {"fake": "example.com/fake"})


def test_concurrent_builders_of_one_component_build_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(build.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(build.Component, "version", property(lambda self: "v1"))
    calls: list[str] = []

    def slow_build(component: build.Component, target: Path) -> None:
        calls.append(threading.current_thread().name)
        time.sleep(0.3)  # long enough for the other builder to reach the lock meanwhile
        target.mkdir()
        (target / build.DONE_MARKER).write_text("0s\n")

    monkeypatch.setattr(build, "_build_into", slow_build)
    results: list[Path] = []
    threads = [
        threading.Thread(target=lambda: results.append(build.build(FAKE)), name=f"builder-{i}")
        for i in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(calls) == 1
    assert results == [tmp_path / "fake-v1"] * 2
    assert build.is_built(FAKE)


@pytest.mark.parametrize(
    ("folders", "missing", "collect_only", "started"),
    [
        pytest.param({"tests", "chaos"}, True, False, True, id="chaos tests and an add-on missing"),
        pytest.param(
            {"tests", "integration"}, True, False, True, id="integration tests and an add-on missing"
        ),
        pytest.param({"tests", "integration"}, False, False, False, id="every add-on built"),
        pytest.param({"tests", "unit"}, True, False, False, id="only unit tests"),
        pytest.param({"tests", "chaos"}, True, True, False, id="only listing the tests"),
    ],
)
def test_the_session_builds_the_add_ons_only_when_it_may_need_one(
    folders: set[str], missing: bool, collect_only: bool, started: bool
) -> None:
    assert should_start(folders, missing, collect_only) is started
