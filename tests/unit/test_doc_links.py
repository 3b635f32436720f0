"""Every relative link in the repository's Markdown resolves inside the repository, anchors included: a
user who clones it has nothing else."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def markdown_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return [ROOT / name for name in listed if (ROOT / name).is_file()]


def anchors(path: Path) -> set[str]:
    """GitHub's heading anchors (lower case, punctuation dropped, spaces to dashes) and explicit ids."""
    text = path.read_text()
    found = set(re.findall(r'<a id="([^"]+)"', text))
    for heading in re.findall(r"^#+ (.+)$", text, re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        found.add(slug)
    return found


def broken_links(path: Path) -> list[str]:
    broken = []
    for target in LINK.findall(path.read_text()):
        if re.match(r"^[a-z]+:", target):
            continue  # https:, mailto: - outside by nature
        file_part, _, anchor = target.partition("#")
        resolved = (path.parent / file_part).resolve() if file_part else path
        outside = not resolved.is_relative_to(ROOT) or not resolved.exists()
        if outside or (anchor and resolved.suffix == ".md" and anchor not in anchors(resolved)):
            broken.append(target)
    return broken


def test_there_are_documents_to_check() -> None:
    assert ROOT / "README.md" in markdown_files()


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_resolves_inside_the_repository(path: Path) -> None:
    assert broken_links(path) == []


def test_the_user_manual_cites_no_file_outside_the_repository() -> None:
    assert "../shared" not in (ROOT / "docs" / "user-manual.md").read_text()
