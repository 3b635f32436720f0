"""Static checks of the Dockerfile, fast and without a container engine (tests/integration/test_image.py
builds and runs the image): the final stage runs as a numeric non-root user, its entry point is the
console script, it installs no build tools, and nothing is fetched with ADD from a URL."""

from __future__ import annotations

import configparser
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
# Compilers, build systems and the package managers that would bring them in.
BUILD_TOOLS = re.compile(
    r"\b(apt-get|apt|apk|yum|dnf|microdnf|gcc|g\+\+|cc|clang|make|cmake|build-essential|"
    r"pip\s+install|pip\s+wheel|python\s+-m\s+build)\b"
)


@dataclass
class Stage:
    base: str
    name: str
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def args(self, instruction: str) -> list[str]:
        return [value for name, value in self.instructions if name == instruction]


def parse(text: str) -> list[Stage]:
    """Instructions per stage, continuation lines joined and comments dropped."""
    logical: list[str] = []
    current = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not current and (not line or line.startswith("#")):
            continue
        if line.startswith("#"):
            continue
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        logical.append(" ".join((current + line).split()))
        current = ""
    stages: list[Stage] = []
    for line in logical:
        instruction, _, value = line.partition(" ")
        instruction = instruction.upper()
        if instruction == "FROM":
            parts = value.split()
            name = parts[2] if len(parts) >= 3 and parts[1].upper() == "AS" else ""
            stages.append(Stage(parts[0], name))
        elif stages:
            stages[-1].instructions.append((instruction, value.strip()))
    return stages


STAGES = parse(DOCKERFILE.read_text())
FINAL = STAGES[-1]


def test_it_is_a_multi_stage_build_on_a_slim_python_base() -> None:
    assert len(STAGES) >= 2
    assert STAGES[0].name == "builder"
    text = DOCKERFILE.read_text()
    default_base = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", text, re.MULTILINE)
    assert default_base is not None and re.fullmatch(r"python:3\.11-slim(-\w+)?", default_base.group(1))
    assert FINAL.base == "${PYTHON_IMAGE}"


def test_the_final_stage_runs_as_a_numeric_non_root_user() -> None:
    users = FINAL.args("USER")
    assert users, "no USER in the final stage: it would run as root"
    user, _, group = users[-1].partition(":")
    assert user.isdigit() and int(user) != 0, users[-1]
    assert not group or (group.isdigit() and int(group) != 0)


def test_the_user_is_the_one_the_deployment_runs_as() -> None:
    deployment = yaml.safe_load((ROOT / "manifests" / "base" / "deployment.yaml").read_text())
    context = deployment["spec"]["template"]["spec"]["securityContext"]
    assert FINAL.args("USER")[-1] == f"{context['runAsUser']}:{context['runAsGroup']}"


def test_the_entry_point_is_the_console_script() -> None:
    entrypoints = FINAL.args("ENTRYPOINT")
    assert len(entrypoints) == 1
    assert json.loads(entrypoints[0]) == ["taskset-controller"]  # exec form: signals reach the process
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    scripts = setup["options.entry_points"]["console_scripts"]
    assert "taskset-controller = taskset.daemon.main:main" in scripts
    assert not FINAL.args("CMD")


def test_no_build_tools_in_the_final_stage() -> None:
    for command in FINAL.args("RUN"):
        assert not BUILD_TOOLS.search(command), command
    # It gets the application only as the builder's finished environment.
    copies = FINAL.args("COPY")
    assert copies and all(c.startswith("--from=builder ") for c in copies), copies


def test_nothing_is_added_from_a_url() -> None:
    for stage in STAGES:
        for source in stage.args("ADD"):
            assert not re.search(r"(https?|ftp|git)://|git@", source), source
        for command in stage.args("RUN"):
            assert not re.search(r"\b(curl|wget)\b", command), command


def test_the_image_carries_the_crd_it_registers() -> None:
    builder = STAGES[0]
    assert any(c.split()[0] == "manifests/crd/" for c in builder.args("COPY"))
    assert any("CRD_MANIFEST.is_file()" in command for command in builder.args("RUN"))


def builder_pip_commands(verb: str) -> list[str]:
    """The builder's pip commands of one verb (install, wheel), each ``&&`` step on its own."""
    steps = [step.strip() for command in STAGES[0].args("RUN") for step in command.split("&&")]
    return [step for step in steps if re.search(rf"\bpip\b.*\s{verb}\s", step)]


def test_the_builder_installs_dependencies_only_from_the_hashed_locks() -> None:
    """No step resolves setup.cfg's ranges: each install is a lock with --require-hashes (wheels only) or
    the project's own wheel without dependencies; the build backend is the locked one."""
    installs = builder_pip_commands("install")
    locks = [re.search(r"-r (requirements/\S+)", step) for step in installs]
    assert {match.group(1) for match in locks if match} == {
        "requirements/build.txt",
        "requirements/runtime.txt",
    }
    for step, lock in zip(installs, locks, strict=True):
        if lock:
            assert "--require-hashes" in step and "--only-binary=:all:" in step, step
        else:
            assert "--no-deps" in step and "/wheels/" in step, step
    wheels = builder_pip_commands("wheel")
    assert wheels and all("--no-deps" in step and "--no-build-isolation" in step for step in wheels), wheels
    assert any(
        re.search(r"\bpip\b.*\scheck\b", step) for c in STAGES[0].args("RUN") for step in c.split("&&")
    )


def test_the_locks_the_builder_copies_are_in_the_context_before_the_sources() -> None:
    """The locks are copied (and installed) before the sources, so a source change keeps that layer."""
    copies = [c.split()[:-1] for c in STAGES[0].args("COPY")]
    sources = [source for copy in copies for source in copy]
    locks = [source for source in sources if source.startswith("requirements/")]
    assert locks and all((ROOT / lock).is_file() for lock in locks)
    assert max(sources.index(lock) for lock in locks) < sources.index("taskset/")
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert "requirements" not in ignored


def test_the_build_context_leaves_out_local_state() -> None:
    ignored = set((ROOT / ".dockerignore").read_text().split())
    assert {".git", ".venv", "tests"} <= ignored


def test_the_parser_sees_through_continuations_and_comments() -> None:
    stages = parse("FROM a AS b\n# c\nRUN x \\\n  # inner\n  && y\nFROM c\nUSER 1:2\n")
    assert [(s.base, s.name) for s in stages] == [("a", "b"), ("c", "")]
    assert stages[0].args("RUN") == ["x && y"]
