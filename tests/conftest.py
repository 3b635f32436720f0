"""Marks each test by its folder under ``tests/``: ``unit`` -> ``unit``; ``integration`` -> ``integration``;
``chaos`` -> ``chaos`` and ``integration`` (the chaos suite needs the embedded control plane too, so
``-m integration`` keeps running it, and ``-m chaos`` selects the chaos suite alone).

The modules whose tests start an add-on (Kueue, CoreDNS, the coscheduling scheduler) run after all the
others, in their own order: on a fresh machine the add-ons build in the background while the session
runs (``tests/integration/addon_session.py``), and a test that needs one before it is built waits for
the build doing nothing else (one chaos test's setup waited 138 s). A module moves whole, so that its
module-scoped fixtures (a control plane of its own) start once."""

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


# The fixtures that start a built add-on; a module that starts one otherwise (the ``devcluster up``
# command, a fixture asked for by name) says so with ``pytest.mark.addons``.
ADDON_FIXTURES = frozenset({"kueue", "coscheduler", "coredns"})


def starts_addons(item: pytest.Item) -> bool:
    """Whether ``item`` starts an add-on: a test that needs the control plane and asks for an add-on's
    fixture or is marked ``addons`` (a unit test's parameter of the same name is none)."""
    if item.get_closest_marker("integration") is None:  # set by the folder, just before the ordering
        return False
    fixtures = set(getattr(item, "fixturenames", ()))
    return bool(fixtures & ADDON_FIXTURES) or item.get_closest_marker("addons") is not None


def addon_modules_last(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` with every module that has a test starting an add-on moved after the others; the order
    is otherwise kept."""
    later = {item.path for item in items if starts_addons(item)}
    return [item for item in items if item.path not in later] + [item for item in items if item.path in later]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for name in markers_for(Path(str(item.path))):
            item.add_marker(getattr(pytest.mark, name))
    items[:] = addon_modules_last(items)
