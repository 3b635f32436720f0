"""The image's source digest (hack/image_digest.py) changes exactly when the build context the Dockerfile
copies changes: tests/integration/test_image.py rebuilds the image on a change, and only then."""

from __future__ import annotations

from pathlib import Path

import pytest

from hack.image_digest import ROOT, copied_sources, source_digest

DOCKERFILE = """FROM base AS builder
COPY pyproject.toml README.md ./
COPY pkg/ pkg/
FROM base
COPY --from=builder /opt/app /opt/app
"""


def test_the_copied_sources_are_the_context_paths_of_copy_lines() -> None:
    assert copied_sources(DOCKERFILE) == ["pyproject.toml", "README.md", "pkg/"]


def test_the_repository_dockerfile_copies_the_controller_package() -> None:
    sources = copied_sources((ROOT / "Dockerfile").read_text())
    assert {"taskset/", "manifests/crd/", "pyproject.toml"} <= set(sources)


@pytest.fixture
def context(tmp_path: Path) -> Path:
    (tmp_path / "Dockerfile").write_text(DOCKERFILE)
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    (tmp_path / "README.md").write_text("# app\n")
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "sub" / "module.py").write_text("X = 1\n")
    return tmp_path


CHANGES = [
    pytest.param("pkg/sub/module.py", "X = 2\n", True, id="a copied module"),
    pytest.param("pkg/sub/new.py", "Y = 1\n", True, id="a new file in a copied folder"),
    pytest.param("Dockerfile", DOCKERFILE + "USER 1\n", True, id="the Dockerfile"),
    pytest.param("README.md", "# app 2\n", True, id="a copied file"),
    pytest.param("tests/test_x.py", "", False, id="a file the Dockerfile does not copy"),
    pytest.param("pkg/sub/__pycache__/module.cpython-311.pyc", "x", False, id="bytecode (.dockerignore)"),
    pytest.param("pkg/stale.pyc", "x", False, id="a stray .pyc"),
]


@pytest.mark.parametrize(("path", "content", "changes"), CHANGES)
def test_the_digest_changes_with_the_build_context_only(
    context: Path, path: str, content: str, changes: bool
) -> None:
    before = source_digest(context)
    (context / path).parent.mkdir(parents=True, exist_ok=True)
    (context / path).write_text(content)
    assert (source_digest(context) != before) is changes
