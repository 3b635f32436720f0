"""The package layering of docs/design.md, checked on the source: cmd -> taskset -> (informers, workqueue,
statemachine) -> clock, and the kubernetes package only behind the two adapters. Inside ``taskset`` the
rooms stack the same way (``TASKSET_LAYERS``), integrations never import each other, no module
imports itself back through a circle, and no two rooms hold a module of the same name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECT = ("taskset", "informers", "workqueue", "statemachine", "clock", "devcluster", "taskset_sdk")
# Only the adapters speak to the kubernetes package; everything else uses plain dicts (DESIGN 2). The
# controller only for its credential loaders (the requests go through informers/rest.py).
KUBERNETES_ADAPTERS = {"informers/kubeconfig.py", "devcluster/cluster.py"}
# The SDK is a client of its own: it reaches the API only through these two modules.
SDK_KUBERNETES_MODULES = {"taskset_sdk/client.py", "taskset_sdk/connection.py"}


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


def dotted_imports(path: Path) -> set[str]:
    """Every module ``path`` imports, fully dotted (``from a.b import c`` gives ``a.b`` and ``a.b.c``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}
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
        pytest.param(
            "taskset_sdk", {"taskset_sdk"}, id="the SDK is a client: it imports nothing of the controller"
        ),
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
    assert users == KUBERNETES_ADAPTERS | SDK_KUBERNETES_MODULES


def test_cmd_is_not_an_importable_package() -> None:
    """An importable top-level ``cmd`` would shadow the standard library's ``cmd`` (which pdb imports)."""
    assert not (ROOT / "cmd" / "__init__.py").exists()
    assert (ROOT / "cmd" / "taskset-controller").exists()


# The rooms of ``taskset``, lowest first: a room imports only rooms at or below its own. The observed world
# (the caches' transforms, the views a pass reads, the creation proof) is read through the API's shapes;
# integrations sit above what they observe and the objects they build with, and below the decisions that
# ask them; the runtime carries decisions out; the daemon wires the runtime into a process.
TASKSET_LAYERS: tuple[str, ...] = (
    "api",
    "observed",
    "objects",
    "integrations",
    "decide",
    "runtime",
    "daemon",
)
# What every integration may share: the seam's own types. The registry (the package's __init__) names
# them all, by design, and no integration imports it.
INTEGRATION_SEAM = "taskset.integrations.base"


def taskset_room(dotted: str) -> str | None:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "taskset" and parts[1] in TASKSET_LAYERS else None


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_every_taskset_module_lives_in_a_room() -> None:
    loose = [
        str(path.relative_to(ROOT))
        for path in modules("taskset")
        if taskset_room(module_name(path)) is None and path.name != "__init__.py"
    ]
    assert loose == []


@pytest.mark.parametrize("room", TASKSET_LAYERS)
def test_a_taskset_room_imports_only_the_rooms_below_it(room: str) -> None:
    allowed = set(TASKSET_LAYERS[: TASKSET_LAYERS.index(room) + 1])
    offending = {
        str(path.relative_to(ROOT)): sorted(
            name for name in dotted_imports(path) if (taskset_room(name) or room) not in allowed
        )
        for path in sorted((ROOT / "taskset" / room).rglob("*.py"))
    }
    assert {path: names for path, names in offending.items() if names} == {}


def test_no_two_taskset_rooms_hold_a_module_of_the_same_name() -> None:
    """A module's name says its concept: ``owned.py`` in two rooms would be two concepts under one name,
    and a reader who knows one would guess wrong about the other. A package's ``__init__.py`` is its face,
    not a concept."""
    rooms_by_name: dict[str, list[str]] = {}
    for path in modules("taskset"):
        if path.name != "__init__.py":
            rooms_by_name.setdefault(path.name, []).append(str(path.parent.relative_to(ROOT)))
    assert {name: rooms for name, rooms in rooms_by_name.items() if len(rooms) > 1} == {}
    assert len(rooms_by_name) > len(TASKSET_LAYERS)  # the walk read the rooms' modules


def _shared_or_own(name: str, own: str) -> bool:
    """Whether ``name`` (a dotted import) is the seam's shared module, one of its names, or ``own``."""
    return any(name == ok or name.startswith(f"{ok}.") for ok in (INTEGRATION_SEAM, own))


def test_integrations_never_import_each_other() -> None:
    """Each integration sees the seam (``base``) and the rooms below it, never another integration: one
    can be removed, or a new one added, without reading the others (the registry alone names them all)."""
    folder = ROOT / "taskset" / "integrations"
    offending = {
        path.name: sorted(
            name
            for name in dotted_imports(path)
            if name.startswith("taskset.integrations.") and not _shared_or_own(name, module_name(path))
        )
        for path in sorted(folder.glob("*.py"))
        if path.name != "__init__.py"
    }
    assert {name: found for name, found in offending.items() if found} == {}


# What an integration implements (taskset.integrations.base): the capabilities' methods, and the class
# switches the runner sorts them by. Only the runner (taskset.integrations.framework) asks them.
CAPABILITY_METHODS = frozenset(
    {"check", "owned_objects", "decorate_pod", "gate", "admission", "after_attempt"}
)
CAPABILITY_SWITCHES = frozenset({"kinds", "reads", "updates_owned"})
THE_RUNNER = "taskset/integrations/framework.py"
PRODUCTION = ("taskset", "bench", "hack", "cmd", "taskset_sdk", "devcluster")


def _receiver(node: ast.Attribute) -> str:
    """The last name of what an attribute is read from: ``framework`` in ``ctx.settings.framework.gate``."""
    value = node.value
    return value.attr if isinstance(value, ast.Attribute) else value.id if isinstance(value, ast.Name) else ""


def capability_calls(source: str) -> list[str]:
    """Every place ``source`` asks an integration directly: a capability's method called on anything
    but a ``Framework`` (named ``framework`` or ``*_FRAMEWORK``) or a state machine's own ``check``
    (``*_MACHINE``), or a capability switch read."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name, receiver = node.func.attr, _receiver(node.func)
            runner = receiver == "framework" or receiver.endswith("_FRAMEWORK")
            machine = name == "check" and receiver.endswith("_MACHINE")
            if name in CAPABILITY_METHODS and not runner and not machine:
                found.append(f"{node.lineno}: {ast.unparse(node.func)}")
        elif isinstance(node, ast.Attribute) and node.attr in CAPABILITY_SWITCHES:
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_only_the_runner_asks_an_integration() -> None:
    """One answer to "when is my capability asked?": the runner's methods, each of which says when in a
    pass it runs. Decisions, the runtime and the bench go through a ``Framework``."""
    offending = {
        str(path.relative_to(ROOT)): found
        for package in PRODUCTION
        for path in modules(package)
        if str(path.relative_to(ROOT)) != THE_RUNNER and (found := capability_calls(path.read_text()))
    }
    assert offending == {}


@pytest.mark.parametrize(
    ("source", "found"),
    [
        pytest.param("ctx.settings.framework.gate(a, r, o, s, x)", False, id="through the runner"),
        pytest.param("BUILT_IN_FRAMEWORK.admission(a, o)", False, id="through a named runner"),
        pytest.param("TASKSET_MACHINE.check(rows)", False, id="a state machine's own check"),
        pytest.param("integration.gate(a, r, o, s)", True, id="a gate asked directly"),
        pytest.param("[i.admission(a, o) for i in integrations]", True, id="an admission asked in a loop"),
        pytest.param("kueue.check(spec)", True, id="a spec check asked directly"),
        pytest.param("x = integration.kinds", True, id="a capability switch read"),
    ],
)
def test_the_single_caller_rule_sees_a_direct_call(source: str, found: bool) -> None:
    assert bool(capability_calls(source)) is found


def test_the_taskset_package_has_no_import_cycles() -> None:
    names = {module_name(path): path for path in modules("taskset")}
    graph = {
        name: {other for other in dotted_imports(path) if other in names and other != name}
        for name, path in names.items()
    }
    cycles: list[list[str]] = []

    def visit(node: str, trail: list[str], done: set[str]) -> None:
        if node in trail:
            cycles.append([*trail[trail.index(node) :], node])
            return
        if node in done:
            return
        for other in sorted(graph[node]):
            visit(other, [*trail, node], done)
        done.add(node)

    done: set[str] = set()
    for name in sorted(graph):
        visit(name, [], done)
    assert cycles == []


# A module past this many lines has grown several concepts: split it (decide.py did at 1,346).
MODULE_LINES_MAX = 600


def test_no_taskset_module_is_longer_than_a_reader_can_hold() -> None:
    long = {
        str(path.relative_to(ROOT)): lines
        for path in modules("taskset")
        if (lines := len(path.read_text().splitlines())) > MODULE_LINES_MAX
    }
    assert long == {}
