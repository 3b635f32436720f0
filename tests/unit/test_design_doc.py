"""``docs/design.md`` cannot drift from the tree: it names every top-level directory and every room of
``taskset/`` (those that exist and those the layering test declares), and points to its companions."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.test_layering import TASKSET_LAYERS

ROOT = Path(__file__).resolve().parents[2]
DESIGN = ROOT / "docs" / "design.md"
# Local clutter that is never committed (see .gitignore).
NOT_OURS = {"__pycache__", "build"}


def top_level_directories() -> list[str]:
    return sorted(
        path.name
        for path in ROOT.iterdir()
        if path.is_dir()
        and not path.name.startswith(".")
        and path.name not in NOT_OURS
        and not path.name.endswith(".egg-info")
    )


def taskset_rooms() -> list[str]:
    existing = {path.name for path in (ROOT / "taskset").iterdir() if (path / "__init__.py").exists()}
    return sorted(existing | set(TASKSET_LAYERS))


@pytest.fixture(scope="module")
def design() -> str:
    return DESIGN.read_text()


def test_the_design_names_every_top_level_directory(design: str) -> None:
    assert [name for name in top_level_directories() if f"`{name}/`" not in design] == []


def test_the_design_names_every_room_of_taskset(design: str) -> None:
    assert [room for room in taskset_rooms() if f"`taskset/{room}/`" not in design] == []


@pytest.mark.parametrize("companion", ["glossary.md", "state-machines.md"])
def test_the_design_points_to_its_companions(design: str, companion: str) -> None:
    assert f"]({companion})" in design
    assert (ROOT / "docs" / companion).exists()


def test_the_lists_are_not_empty() -> None:
    """The checks above read a real tree: the packages and rooms they walk exist."""
    assert {"taskset", "informers", "workqueue", "statemachine", "clock", "cmd", "tests"} <= set(
        top_level_directories()
    )
    assert {"api", "decide", "runtime", "daemon"} <= set(taskset_rooms())


def room_tables(design: str) -> dict[str, list[str]]:
    """Section 3's module tables: for each room's heading (**`taskset/<room>/`**), the modules its table
    names, in order."""
    section = design[design.index("## 3. ") : design.index("## 4. ")]
    tables: dict[str, list[str]] = {}
    room = None
    for line in section.splitlines():
        if line.startswith("**`taskset/") and line.endswith("/`**"):
            room = line.removeprefix("**`taskset/").removesuffix("/`**")
            tables[room] = []
        elif room is not None and line.startswith("| `") and line.split("|")[1].strip().endswith(".py`"):
            tables[room].append(line.split("|")[1].strip().strip("`"))
    return tables


def test_each_rooms_table_names_every_module_of_the_room_once(design: str) -> None:
    tables = room_tables(design)
    on_disk = {
        room: sorted(
            path.name for path in (ROOT / "taskset" / room).glob("*.py") if path.name != "__init__.py"
        )
        for room in TASKSET_LAYERS
    }
    assert sorted(tables) == sorted(TASKSET_LAYERS)
    assert {room: sorted(names) for room, names in tables.items()} == on_disk
    assert all(len(names) == len(set(names)) for names in tables.values())


def test_the_room_tables_are_read_from_the_design() -> None:
    """The reader sees a module missing from a table, and one named that does not exist."""
    text = "## 3. x\n**`taskset/api/`**\n\n| module | holds |\n|---|---|\n| `spec.py` | the spec |\n## 4. y\n"
    assert room_tables(text) == {"api": ["spec.py"]}
