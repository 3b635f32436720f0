"""The CRD generator stays readable: ``hack/gen_crd.py`` assembles, each block of the schema is a module of
``hack/crd/`` named in the package's docstring, and no function of either is longer than a reader can hold
at once (the status schema had grown to 166 lines in one function before it was split by block).

That the generated CRD equals the committed one is ``tests/unit/taskset/api/test_api_crd.py``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import hack.crd

ROOT = Path(__file__).resolve().parents[2]
ENTRY = ROOT / "hack" / "gen_crd.py"
PACKAGE = ROOT / "hack" / "crd"
# A schema block past this many lines mixes several fields' concerns: give them a function each.
FUNCTION_LINES_MAX = 60


def generator_files() -> list[Path]:
    return [ENTRY, *sorted(PACKAGE.glob("*.py"))]


def long_functions(source: str, limit: int = FUNCTION_LINES_MAX) -> dict[str, int]:
    """Every function (nested ones included) longer than ``limit`` lines, by name, with its length from
    its ``def`` line to its last line."""
    return {
        node.name: length
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (length := (node.end_lineno or node.lineno) - node.lineno + 1) > limit
    }


def _function_of(lines: int) -> str:
    """The source of a function ``lines`` lines long."""
    body = "".join(f"    x{n} = {n}\n" for n in range(lines - 2))
    return f"def f() -> int:\n{body}    return 0\n"


def test_the_length_check_counts_a_function_from_def_to_its_last_line() -> None:
    assert long_functions(_function_of(FUNCTION_LINES_MAX)) == {}
    assert long_functions(_function_of(FUNCTION_LINES_MAX + 1)) == {"f": FUNCTION_LINES_MAX + 1}
    inner = "".join(f"    {line}\n" for line in _function_of(70).splitlines())
    nested = f"def outer() -> None:\n{inner}"
    assert long_functions(nested) == {"outer": 71, "f": 70}


def test_no_generator_function_is_longer_than_a_reader_can_hold() -> None:
    long = {
        f"{path.relative_to(ROOT)}:{name}": lines
        for path in generator_files()
        for name, lines in long_functions(path.read_text()).items()
    }
    assert long == {}


def test_every_block_module_is_named_in_the_package_docstring() -> None:
    named = set(re.findall(r"``(\w+)``", hack.crd.__doc__ or ""))
    modules = {path.stem for path in PACKAGE.glob("*.py")} - {"__init__"}
    assert modules - named == set(), "describe each module of hack/crd/ in hack/crd/__init__.py"
