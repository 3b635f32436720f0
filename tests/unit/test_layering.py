"""The package layering of DESIGN.md, checked on the source: cmd -> taskset -> (informers, workqueue,
statemachine) -> clock, and the kubernetes package only behind the two adapters."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ("taskset", "informers", "workqueue", "statemachine", "clock", "devcluster")
# Only the adapters speak to the kubernetes package; everything else uses plain dicts (DESIGN 2).
KUBERNETES_ADAPTERS = {"informers/kube.py", "taskset/kube.py", "devcluster/cluster.py"}


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            found.add(path.relative_to(ROOT).parts[0])  # relative: its own package
    return found


def modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


@pytest.mark.parametrize(
    ("package", "may_import"),
    [
        pytest.param("clock", set(), id="clock depends on nothing of ours"),
        pytest.param("statemachine", {"statemachine"}, id="statemachine depends on nothing of ours"),
        pytest.param(
            "workqueue", {"workqueue", "clock"}, id="workqueue knows nothing of Kubernetes or TaskSets"
        ),
        pytest.param("informers", {"informers", "clock"}, id="informers know nothing of TaskSets"),
        pytest.param(
            "taskset",
            {"taskset", "informers", "workqueue", "statemachine", "clock"},
            id="taskset never imports the dev cluster",
        ),
        pytest.param("devcluster", {"devcluster"}, id="the dev cluster does not depend on the controller"),
    ],
)
def test_a_package_imports_only_the_layers_below_it(package: str, may_import: set[str]) -> None:
    offending = {
        str(path.relative_to(ROOT)): sorted((imports(path) & set(PROJECT)) - may_import)
        for path in modules(package)
    }
    assert {path: names for path, names in offending.items() if names} == {}


def test_only_the_adapters_import_the_kubernetes_package() -> None:
    users = {
        str(path.relative_to(ROOT))
        for package in PROJECT
        for path in modules(package)
        if "kubernetes" in imports(path)
    }
    assert users == KUBERNETES_ADAPTERS


def test_cmd_is_not_an_importable_package() -> None:
    """An importable top-level ``cmd`` would shadow the standard library's ``cmd`` (which pdb imports)."""
    assert not (ROOT / "cmd" / "__init__.py").exists()
    assert (ROOT / "cmd" / "taskset-controller").exists()
