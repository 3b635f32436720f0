"""docs/deployment.md is up to date with the code: its generated tables (every setting, every metric)
are what hack/render_config_docs.py produces now, and every setting is documented."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from taskset.daemon.config import SETTINGS

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "deployment.md"


def _load_renderer() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "render_config_docs", ROOT / "hack" / "render_config_docs.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("render_config_docs", module)
    spec.loader.exec_module(module)
    return module


renderer = _load_renderer()


def test_the_generated_sections_are_up_to_date() -> None:
    """Regenerate with `python hack/render_config_docs.py` (or `make docs`) after changing a setting."""
    text = DOC.read_text()
    assert renderer.render(text) == text, "stale docs/deployment.md: run python hack/render_config_docs.py"


def test_every_flag_env_var_and_file_key_is_in_the_guide() -> None:
    text = DOC.read_text()
    for setting in SETTINGS:
        assert f"`{setting.flag}" in text
        assert f"`{setting.env}`" in text
        assert f"`{setting.key}`" in text


def test_every_metric_family_of_the_code_is_in_the_guide() -> None:
    from prometheus_client import CollectorRegistry  # noqa: PLC0415

    from taskset.daemon.metrics import ControllerMetrics  # noqa: PLC0415

    registry = CollectorRegistry()
    metrics = ControllerMetrics(registry=registry)
    metrics.set_leader("taskset-controller", True)  # the leader series exist only with leader election
    text = DOC.read_text()
    for family in registry.collect():
        assert f"`{family.name.removesuffix('_total')}" in text, family.name


def test_a_missing_section_is_an_error() -> None:
    with pytest.raises(ValueError, match="no generated section 'settings'"):
        renderer.render("# nothing generated here\n")


def test_check_mode_reports_a_stale_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stale = tmp_path / "deployment.md"
    stale.write_text(DOC.read_text().replace("`--workers N`", "`--workers COUNT`"))
    monkeypatch.setattr(renderer, "DOC", stale)
    monkeypatch.setattr(renderer, "ROOT", tmp_path)
    assert renderer.main(["--check"]) == 1
    assert renderer.main([]) == 0
    assert stale.read_text() == DOC.read_text()
