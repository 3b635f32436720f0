"""``docs/security.md`` cannot drift from the tree: every test file it cites as proof, and every source
file it points to, exists. A guarantee whose proving test was renamed or deleted would otherwise still
read as proved."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECURITY = ROOT / "docs" / "security.md"
# A backticked repository path of a Python file, e.g. `tests/integration/test_rbac.py`.
CITED_FILE = re.compile(r"`((?:tests|taskset)/[\w/.-]+\.py)`")


def cited(prefix: str) -> list[str]:
    """The backticked ``*.py`` paths under ``prefix`` that the threat model names, each once."""
    paths = CITED_FILE.findall(SECURITY.read_text())
    return sorted({path for path in paths if path.startswith(prefix)})


@pytest.mark.parametrize("path", cited("tests/"))
def test_every_test_file_the_threat_model_names_exists(path: str) -> None:
    assert (ROOT / path).is_file(), f"docs/security.md cites {path}, which does not exist"


@pytest.mark.parametrize("path", cited("taskset/"))
def test_every_source_file_the_threat_model_names_exists(path: str) -> None:
    assert (ROOT / path).is_file(), f"docs/security.md points to {path}, which does not exist"


def test_the_threat_model_cites_its_proofs() -> None:
    """The checks above read real citations: a parser that found none would pass them vacuously."""
    assert len(cited("tests/")) >= 10
    assert "tests/integration/test_namespace_isolation.py" in cited("tests/")


def test_the_design_and_the_readme_link_the_threat_model() -> None:
    assert "](security.md)" in (ROOT / "docs" / "design.md").read_text()
    assert "](docs/security.md)" in (ROOT / "README.md").read_text()
