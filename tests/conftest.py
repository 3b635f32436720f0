"""Marks each test by its folder under ``tests/``: ``unit`` -> ``unit``; ``integration`` -> ``integration``;
``chaos`` -> ``chaos`` and ``integration`` (the chaos suite needs the embedded control plane too, so
``-m integration`` keeps running it, and ``-m chaos`` selects the chaos suite alone)."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

FOLDER_MARKERS: dict[str, tuple[str, ...]] = {
    "unit": ("unit",),
    "integration": ("integration",),
    "chaos": ("chaos", "integration"),
}


def markers_for(path: Path) -> tuple[str, ...]:
    """The markers of a test collected from ``path``: those of the first folder below ``tests/``."""
    try:
        relative = path.resolve().relative_to(TESTS)
    except ValueError:
        return ()
    return FOLDER_MARKERS.get(relative.parts[0], ()) if len(relative.parts) > 1 else ()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for name in markers_for(Path(str(item.path))):
            item.add_marker(getattr(pytest.mark, name))
