"""The dependency locks in ``requirements/`` against what they lock: ``setup.cfg``'s ranges and
``pyproject.toml``'s build backend.

``make lock`` writes the locks with uv; ``make setup``, CI and the image install only from them, with
``pip install --require-hashes``. A lock that lags ``setup.cfg`` would install an environment the
project never declared (a dependency missing, or one pinned outside its new range) while every install
step still succeeds, so ``make setup`` ends with this check and ``tests/unit/test_lock_check.py`` runs it
on the committed files. It holds that:

- every entry of every lock is one exact version (``==``) with the hashes of its files;
- each lock pins every requirement ``setup.cfg`` names for its use (``runtime.txt``: install_requires;
  ``dev.txt``: and the dev extra; ``bench.txt``: and the bench extra) at a version inside its range;
- no lock keeps a direct dependency ``setup.cfg`` no longer names (uv marks those ``via`` the project);
- each lock keeps the pins of the one below it (a dev venv runs the versions the image ships);
- ``build.txt`` pins pip and every requirement of ``pyproject.toml``'s ``[build-system]`` in range.

Usage: ``python -m hack.lock_check`` (from the repository's root) prints what disagrees and exits 1,
or exits 0 in silence.
"""

from __future__ import annotations

import configparser
import sys
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

ROOT = Path(__file__).resolve().parent.parent
LOCK_DIR = ROOT / "requirements"
# Each lock of setup.cfg's dependencies, the extras it adds to install_requires, and the lock whose pins
# it keeps (it was resolved with that one as a constraint).
SETUP_LOCKS: dict[str, tuple[tuple[str, ...], str | None]] = {
    "runtime.txt": ((), None),
    "dev.txt": (("dev",), "runtime.txt"),
    "bench.txt": (("dev", "bench"), "dev.txt"),
}
BUILD_LOCK = "build.txt"
# How uv names the project in a lock's ``via`` annotations: an entry so marked is a direct dependency.
PROJECT_VIA = "(setup.cfg)"
REFRESH = "run `make lock` and commit requirements/ (README.md, The two commands)"


class LockError(ValueError):
    """A lock that is not a list of hash-pinned exact versions."""


@dataclass(frozen=True)
class Pin:
    """One entry of a lock: ``name==version ; marker`` with its hashes and what pulled it in."""

    name: str  # canonical (PEP 503)
    version: Version
    marker: str
    hashes: tuple[str, ...]
    via: tuple[str, ...]

    @property
    def direct(self) -> bool:
        return any(source.endswith(PROJECT_VIA) for source in self.via)


def parse_lock(text: str, source: str = "lock") -> list[Pin]:
    """The entries of a lock as ``uv pip compile --generate-hashes`` (or pip-compile) writes it:
    continuation lines joined, ``--hash`` options collected, the ``# via`` comment under each kept."""
    entries: list[tuple[str, list[str]]] = []  # (requirement with options, via lines)
    pending = ""
    in_via = False
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("#"):
            comment = line.lstrip("#").strip()
            if comment.startswith("via"):
                in_via = True
                comment = comment.removeprefix("via").strip()
            if in_via and comment and entries:
                entries[-1][1].append(comment)
            continue
        in_via = False
        if not line:
            continue
        if line.startswith("-") and not pending:
            raise LockError(f"{source}:{number}: option {line.split()[0]} outside an entry")
        pending += line.removesuffix("\\") + " "
        if not line.endswith("\\"):
            entries.append((pending.strip(), []))
            pending = ""
    if pending:
        raise LockError(f"{source}: the last entry ends with a line continuation")
    return [_pin(requirement, via, source) for requirement, via in entries]


def _pin(line: str, via: list[str], source: str) -> Pin:
    words = line.split()
    hashes = tuple(word.removeprefix("--hash=") for word in words if word.startswith("--hash="))
    others = [word for word in words if word.startswith("-") and not word.startswith("--hash=")]
    if others:
        raise LockError(f"{source}: {words[0]}: only --hash options belong to an entry, not {others}")
    text = " ".join(word for word in words if not word.startswith("--hash="))
    try:
        requirement = Requirement(text)
    except InvalidRequirement as error:
        raise LockError(f"{source}: {text!r} is not a requirement: {error}") from None
    specifiers = list(requirement.specifier)
    if len(specifiers) != 1 or specifiers[0].operator != "==" or "*" in specifiers[0].version:
        raise LockError(f"{source}: {requirement.name} is not pinned to one version ({text!r})")
    if not hashes:
        raise LockError(
            f"{source}: {requirement.name} has no --hash (pip install --require-hashes refuses it)"
        )
    try:
        version = Version(specifiers[0].version)
    except InvalidVersion:  # pragma: no cover - packaging rejected it in Requirement already
        raise LockError(f"{source}: {requirement.name} pins an invalid version") from None
    marker = str(requirement.marker) if requirement.marker is not None else ""
    return Pin(canonicalize_name(requirement.name), version, marker, hashes, tuple(via))


def declared(setup_cfg: str, extras: Iterable[str]) -> list[Requirement]:
    """What ``setup.cfg`` requires: install_requires and the named extras (``%(test)s`` expanded)."""
    config = configparser.ConfigParser()
    config.read_string(setup_cfg)
    blocks = [config.get("options", "install_requires", fallback="")]
    for extra in extras:
        if not config.has_option("options.extras_require", extra):
            raise LockError(f"setup.cfg has no extra {extra!r}")
        blocks.append(config.get("options.extras_require", extra))
    requirements: list[Requirement] = []
    for line in (line.strip() for block in blocks for line in block.splitlines()):
        try:
            requirements += [Requirement(line)] if line else []
        except InvalidRequirement as error:
            raise LockError(f"setup.cfg: {line!r} is not a requirement: {error}") from None
    return requirements


def build_requires(pyproject: str) -> list[Requirement]:
    """The requirements of ``pyproject.toml``'s ``[build-system]``."""
    requires = tomllib.loads(pyproject).get("build-system", {}).get("requires", [])
    return [Requirement(line) for line in requires]


def _unmet(lock: str, pins: Sequence[Pin], requirements: Iterable[Requirement]) -> list[str]:
    """Each requirement that the lock does not pin inside its range."""
    by_name: dict[str, list[Pin]] = {}
    for pin in pins:
        by_name.setdefault(pin.name, []).append(pin)
    problems: list[str] = []
    for requirement in requirements:
        found = by_name.get(canonicalize_name(requirement.name), [])
        if not found:
            problems.append(f"{lock}: {requirement} is not locked")
        problems += [
            f"{lock}: {pin.name}=={pin.version} is outside {requirement}"
            for pin in found
            if not requirement.specifier.contains(pin.version, prereleases=True)
        ]
    return problems


def problems(setup_cfg: str, pyproject: str, locks: Mapping[str, str]) -> list[str]:
    """Everything in which the locks (file name -> text) disagree with setup.cfg and pyproject.toml."""
    found: list[str] = []
    parsed: dict[str, list[Pin]] = {}
    for name in [*SETUP_LOCKS, BUILD_LOCK]:
        if name not in locks:
            found.append(f"requirements/{name} is missing")
            continue
        try:
            parsed[name] = parse_lock(locks[name], f"requirements/{name}")
        except LockError as error:
            found.append(str(error))
    for name, (extras, below) in SETUP_LOCKS.items():
        if name not in parsed:
            continue
        pins = parsed[name]
        try:
            requirements = declared(setup_cfg, extras)
        except (LockError, configparser.Error) as error:
            found.append(str(error))
            continue
        found += _unmet(name, pins, requirements)
        named = {canonicalize_name(requirement.name) for requirement in requirements}
        found += [
            f"{name}: {pin.name} is locked as a direct dependency, but setup.cfg does not name it"
            for pin in pins
            if pin.direct and pin.name not in named
        ]
        if below is not None and below in parsed:
            kept = {(pin.name, pin.version, pin.marker) for pin in pins}
            found += [
                f"{name}: {pin.name}=={pin.version} of {below} is not kept"
                for pin in parsed[below]
                if (pin.name, pin.version, pin.marker) not in kept
            ]
    if BUILD_LOCK in parsed:
        try:
            backend = build_requires(pyproject)
        except (tomllib.TOMLDecodeError, InvalidRequirement) as error:
            return [*found, f"pyproject.toml: {error}"]
        found += _unmet(BUILD_LOCK, parsed[BUILD_LOCK], [Requirement("pip"), *backend])
    return found


def main(root: Path = ROOT) -> int:
    locks = {path.name: path.read_text() for path in sorted((root / "requirements").glob("*.txt"))}
    found = problems((root / "setup.cfg").read_text(), (root / "pyproject.toml").read_text(), locks)
    for problem in found:
        print(f"lock check: {problem}", file=sys.stderr)
    if found:
        print(f"lock check: the locks do not match setup.cfg/pyproject.toml: {REFRESH}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
