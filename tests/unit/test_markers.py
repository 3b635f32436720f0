"""Every test is marked by its folder, so ``-m unit``, ``-m integration`` and ``-m chaos`` select exactly
the folders the Makefile's targets promise: ``-m chaos`` is the chaos suite alone, and ``-m integration``
is everything that needs the embedded control plane, the chaos suite included."""

from __future__ import annotations

import configparser
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pytest

from tests.conftest import TESTS, addon_modules_last, markers_for

pytestmark = pytest.mark.unit

ROOT = TESTS.parent
TEST_FILES = sorted(TESTS.rglob("test_*.py"))


def selected(marker: str) -> set[Path]:
    return {path for path in TEST_FILES if marker in markers_for(path)}


def under(folder: str) -> set[Path]:
    return {path for path in TEST_FILES if path.is_relative_to(TESTS / folder)}


def test_there_are_test_files_in_every_folder() -> None:
    assert under("unit") and under("integration") and under("chaos")


def test_every_test_file_is_in_a_marked_folder() -> None:
    assert {path for path in TEST_FILES if not markers_for(path)} == set()


@pytest.mark.parametrize(
    ("marker", "folders"),
    [
        pytest.param("unit", ("unit",), id="unit is the unit folder"),
        pytest.param("chaos", ("chaos",), id="chaos is the chaos folder alone"),
        pytest.param("integration", ("integration", "chaos"), id="integration includes the chaos suite"),
    ],
)
def test_a_marker_selects_exactly_its_folders(marker: str, folders: tuple[str, ...]) -> None:
    assert selected(marker) == set().union(*(under(folder) for folder in folders))


def test_a_path_outside_the_tests_folder_gets_no_marker() -> None:
    assert markers_for(ROOT / "taskset" / "unit" / "test_x.py") == ()
    assert markers_for(TESTS / "conftest.py") == ()


def test_every_marker_is_registered() -> None:
    """``--strict-markers`` refuses an unregistered marker, in ``-m`` too."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    declared = config["tool:pytest"]["markers"].splitlines()
    registered = {line.split(":")[0].strip() for line in declared if line}
    assert {"unit", "integration", "chaos"} <= registered
    assert "--strict-markers" in config["tool:pytest"]["addopts"]


def test_the_makefile_targets_select_by_marker() -> None:
    makefile = (ROOT / "Makefile").read_text()
    for target in ("unit", "integration", "chaos"):
        recipe = re.search(rf"^{target}:.*\n\t(.*)$", makefile, re.MULTILINE)
        assert recipe is not None, target
        assert f"-m pytest -m {target} " in recipe.group(1), recipe.group(1)


@dataclass
class Item:
    """What the ordering reads of a collected test."""

    path: Path
    fixturenames: tuple[str, ...] = ()
    marked: bool = False

    def get_closest_marker(self, name: str) -> object:
        marked = (self.marked and name == "addons") or name in markers_for(self.path)
        return object() if marked else None


def test_modules_that_start_an_add_on_run_last_whole_and_in_order() -> None:
    crd, network, rbac = (TESTS / "integration" / f"test_{name}.py" for name in ("crd", "network", "rbac"))
    up, unit = TESTS / "integration" / "test_devcluster_up.py", TESTS / "unit" / "test_config.py"
    items = [
        Item(network, ("cluster",)),  # a test of the module that needs no add-on moves with it
        Item(network, ("cluster", "coredns")),
        Item(crd, ("cluster",)),
        Item(up, marked=True),
        Item(rbac, ("cluster",)),
        Item(unit, ("kueue",)),  # a unit test's parameter named like the fixture starts nothing
    ]
    ordered = addon_modules_last(cast(list[pytest.Item], items))
    assert [(item.path, getattr(item, "fixturenames", ())) for item in ordered] == [
        (crd, ("cluster",)),
        (rbac, ("cluster",)),
        (unit, ("kueue",)),
        (network, ("cluster",)),
        (network, ("cluster", "coredns")),
        (up, ()),
    ]


def test_the_collected_session_puts_the_add_on_modules_last() -> None:
    """The hook as pytest runs it: ``test_network`` (CoreDNS) is collected after ``test_rbac``, which
    starts no add-on, although it comes first by name."""
    collected = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/integration/test_network.py",
            "tests/integration/test_rbac.py",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    modules = [line.split("::")[0] for line in collected.splitlines() if "::" in line]
    assert modules and modules == sorted(modules, key=lambda path: path.endswith("test_network.py"))
    assert modules[0].endswith("test_rbac.py") and modules[-1].endswith("test_network.py")
