"""``docs/state-machines.md`` is generated from the machine tables, so its diagrams cannot drift: the
committed file must equal what ``hack/render_machines.py`` produces today."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from statemachine import render_mermaid
from taskset.decide import ROWS
from taskset.decide.machines import MACHINES

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[4]
SCRIPT = ROOT / "hack" / "render_machines.py"
DOC = ROOT / "docs" / "state-machines.md"


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("render_machines", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("render_machines", module)
    spec.loader.exec_module(module)
    return module


def test_the_committed_document_is_the_generators_output(generator: ModuleType) -> None:
    assert DOC.read_text() == generator.render(), "stale docs: run python hack/render_machines.py"


def test_the_document_holds_one_diagram_per_machine_drawn_from_its_table() -> None:
    text = DOC.read_text()
    assert text.count("```mermaid\n") == len(MACHINES) == 3
    for machine in MACHINES:
        assert f"```mermaid\n{render_mermaid(machine)}```" in text


def test_the_document_lists_every_row_of_every_table() -> None:
    text = DOC.read_text()
    for machine in MACHINES:
        for row in machine.transitions:
            sources = ", ".join(f"`{source}`" for source in row.sources)
            assert f"| {row.label} | {sources} |" in text, (machine.name, row.label)


def test_the_document_shows_what_each_row_does_and_the_message_it_writes() -> None:
    """From the row tables: an effect's (or wait's) docstring, a fixed message's text, a computed one's
    docstring, so "what does T3 do, what does it write" is answered in the document."""
    lines = {line.split(" | ")[0]: line for line in DOC.read_text().splitlines() if line.startswith("| ")}
    for machine in MACHINES:
        for label, row in ROWS[machine.name].items():
            line = lines[f"| {label}"]
            for function in (row.effect, row.wait, row.message if callable(row.message) else None):
                if function is not None:
                    assert (function.__doc__ or "").split(".")[0].split("\n")[0] in line, (label, line)
            if isinstance(row.message, str):
                assert f'"{row.message}"' in line, (label, line)


def test_check_mode_passes_on_the_committed_file_and_fails_on_a_stale_one(
    generator: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert generator.main(["--check"]) == 0
    stale = tmp_path / "state-machines.md"
    stale.write_text("# old\n")
    monkeypatch.setattr(generator, "OUTPUT", stale)
    monkeypatch.setattr(generator, "ROOT", tmp_path)
    assert generator.main(["--check"]) == 1
    assert generator.main([]) == 0
    assert stale.read_text() == generator.render()
    assert generator.main(["--check"]) == 0
