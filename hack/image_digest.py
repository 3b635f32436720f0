"""The digest of what the controller image is built from: the ``Dockerfile`` and every file its ``COPY``
lines take from the build context, less what ``.dockerignore`` keeps out of it (``__pycache__``, ``*.pyc``).

``make image`` labels the image with it (``SOURCE_LABEL``), and ``tests/integration/test_image.py``
rebuilds an image whose label differs from the working tree's digest: the test must run the image of
the sources it tests, never an older build that happens to carry the same tag.

Usage: ``python hack/image_digest.py`` prints the digest (hex SHA-256).
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"
SOURCE_LABEL = "cn.pcl.openi.octopus.source-digest"
IGNORED_DIRS = frozenset({"__pycache__"})
IGNORED_SUFFIXES = frozenset({".pyc"})


def copied_sources(dockerfile: str) -> list[str]:
    """The context paths of the ``COPY`` lines; a ``COPY --from=<stage>`` copies from a stage instead."""
    sources: list[str] = []
    for line in dockerfile.splitlines():
        words = line.split()
        if len(words) >= 3 and words[0].upper() == "COPY" and not words[1].startswith("--"):
            sources += words[1:-1]
    return sources


def context_files(root: Path, sources: list[str]) -> list[Path]:
    """Every file those paths name, directories walked, in a stable order."""
    found: set[Path] = set()
    for source in sources:
        path = root / source
        candidates = sorted(path.rglob("*")) if path.is_dir() else [path]
        for candidate in candidates:
            relative = candidate.relative_to(root)
            if candidate.is_file() and not (
                IGNORED_DIRS & set(relative.parts) or candidate.suffix in IGNORED_SUFFIXES
            ):
                found.add(relative)
    return sorted(found)


def source_digest(root: Path = ROOT) -> str:
    """SHA-256 over the Dockerfile and the copied files: each file's path, then its content."""
    copied = context_files(root, copied_sources((root / "Dockerfile").read_text()))
    digest = hashlib.sha256()
    for relative in [Path("Dockerfile"), *copied]:
        digest.update(str(relative).encode() + b"\0")
        digest.update((root / relative).read_bytes() + b"\0")
    return digest.hexdigest()


if __name__ == "__main__":
    sys.stdout.write(source_digest() + "\n")
