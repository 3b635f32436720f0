"""Marks each test by its folder: ``unit`` -> ``unit``; ``integration`` and ``chaos`` -> ``integration``."""

from __future__ import annotations

from pathlib import Path

import pytest

_MARKERS = {
    "unit": pytest.mark.unit,
    "integration": pytest.mark.integration,
    "chaos": pytest.mark.integration,
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = Path(str(item.path)).parts
        for folder, marker in _MARKERS.items():
            if folder in parts:
                item.add_marker(marker)
