"""The bench starts the daemon from compiled modules, as the image does (``compile_daemon``)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from bench.controller import DAEMON_PACKAGES, compile_daemon

ROOT = Path(__file__).resolve().parents[2]


def test_the_packages_compiled_are_the_ones_the_image_installs() -> None:
    """A package the Dockerfile adds and the bench leaves out would be compiled by the daemon at each
    start again, and the figure at start would creep back up unnoticed."""
    copied = re.findall(r"^COPY (\w+)/ \1/$", (ROOT / "Dockerfile").read_text(), flags=re.MULTILINE)
    packages = [name for name in copied if (ROOT / name / "__init__.py").is_file()]
    assert packages  # the pattern still reads the Dockerfile's lines
    assert sorted(DAEMON_PACKAGES) == sorted(packages)


def test_every_module_of_the_daemons_packages_is_compiled(tmp_path: Path) -> None:
    modules = []
    for package in DAEMON_PACKAGES:
        (tmp_path / package / "sub").mkdir(parents=True)
        for module in (tmp_path / package / "__init__.py", tmp_path / package / "sub" / "deep.py"):
            module.write_text("VALUE = 1\n")
            modules.append(module)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "left.py").write_text("VALUE = 1\n")

    compile_daemon(tmp_path)

    for module in modules:
        assert Path(importlib.util.cache_from_source(str(module))).is_file(), module
    assert not Path(importlib.util.cache_from_source(str(tmp_path / "tests" / "left.py"))).exists()


def test_a_module_that_does_not_compile_stops_the_bench(tmp_path: Path) -> None:
    for package in DAEMON_PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("VALUE = 1\n")
    (tmp_path / "taskset" / "broken.py").write_text("def (\n")

    with pytest.raises(RuntimeError, match=r"compiling .*taskset failed"):
        compile_daemon(tmp_path)
