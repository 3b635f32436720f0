"""The dependency locks (requirements/, hack/lock_check.py) hold every dependency setup.cfg names, inside
its range, hash-pinned: the committed locks pass, and each way setup.cfg, pyproject.toml or a lock can
drift apart is reported, naming the lock and the package."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from hack.lock_check import REFRESH, LockError, main, parse_lock, problems

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
LOCK_DIR = ROOT / "requirements"
LOCK_NAMES = ("runtime.txt", "dev.txt", "bench.txt", "build.txt")
HASH = "--hash=sha256:" + "0" * 64


def committed() -> tuple[str, str, dict[str, str]]:
    locks = {name: (LOCK_DIR / name).read_text() for name in LOCK_NAMES}
    return (ROOT / "setup.cfg").read_text(), (ROOT / "pyproject.toml").read_text(), locks


def test_the_committed_locks_match_setup_cfg_and_the_build_backend() -> None:
    assert problems(*committed()) == []


def test_the_committed_locks_pin_what_setup_cfg_names() -> None:
    """Not vacuous: the locks hold the runtime, dev and bench dependencies and the build backend."""
    _, _, locks = committed()
    names = {name: {pin.name for pin in parse_lock(text)} for name, text in locks.items()}
    assert {"kubernetes", "cryptography", "pyyaml"} <= names["runtime.txt"]
    assert {"kubernetes", "pytest", "mypy", "ruff", "types-pyyaml"} <= names["dev.txt"]
    assert {"pytest", "matplotlib", "py-spy"} <= names["bench.txt"]
    assert {"pip", "setuptools", "wheel"} <= names["build.txt"]
    assert "pytest" not in names["runtime.txt"]  # the image gets no test tools


def replaced(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


# setup.cfg or pyproject.toml changed without `make lock`: what the check says.
DECLARATION_DRIFT = [
    pytest.param(
        "setup.cfg",
        "    structlog>=24\n",
        "    structlog>=24\n    tenacity>=8\n",
        [
            "runtime.txt: tenacity>=8 is not locked",
            "dev.txt: tenacity>=8 is not locked",
            "bench.txt: tenacity>=8 is not locked",
        ],
        id="install_requires gains a dependency",
    ),
    pytest.param(
        "setup.cfg",
        "    types-cachetools\n",
        "    types-cachetools\n    types-requests\n",
        ["dev.txt: types-requests is not locked", "bench.txt: types-requests is not locked"],
        id="the dev extra gains a dependency: the runtime lock is not concerned",
    ),
    pytest.param(
        "setup.cfg",
        "    pytest>=8\n",
        "    pytest>=8\n    freezegun\n",
        ["dev.txt: freezegun is not locked", "bench.txt: freezegun is not locked"],
        id="the test extra, which dev takes in, gains a dependency",
    ),
    pytest.param(
        "setup.cfg",
        "    py-spy>=0.4\n",
        "    py-spy>=0.4\n    seaborn\n",
        ["bench.txt: seaborn is not locked"],
        id="the bench extra gains a dependency",
    ),
    pytest.param(
        "setup.cfg",
        "kubernetes>=37,<38",
        "kubernetes>=38,<39",
        [
            f"{lock}: kubernetes==37.0.2 is outside kubernetes<39,>=38"
            for lock in ("runtime.txt", "dev.txt", "bench.txt")
        ],
        id="a range moves past the pinned version",
    ),
    pytest.param(
        "setup.cfg",
        "    structlog>=24\n",
        "",
        [
            f"{lock}: structlog is locked as a direct dependency, but setup.cfg does not name it"
            for lock in ("runtime.txt", "dev.txt", "bench.txt")
        ],
        id="a dependency leaves setup.cfg but stays locked",
    ),
    pytest.param(
        "pyproject.toml",
        '"setuptools>=68"',
        '"setuptools>=68", "setuptools-scm>=8"',
        ["build.txt: setuptools-scm>=8 is not locked"],
        id="the build backend gains a requirement",
    ),
]


@pytest.mark.parametrize(("changed", "old", "new", "expected"), DECLARATION_DRIFT)
def test_a_declaration_the_locks_lag_is_reported(
    changed: str, old: str, new: str, expected: list[str]
) -> None:
    setup_cfg, pyproject, locks = committed()
    if changed == "setup.cfg":
        setup_cfg = replaced(setup_cfg, old, new)
    else:
        pyproject = replaced(pyproject, old, new)
    assert problems(setup_cfg, pyproject, locks) == expected


def drop_entry(text: str, name: str) -> str:
    """The lock without the entry of ``name`` (its line, hashes and via comment)."""
    lines = text.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{name}=="))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith(" "))
    return "".join(lines[:start] + lines[end:])


# A lock edited by hand or left behind: what the check says.
LOCK_DRIFT = [
    pytest.param(
        "runtime.txt",
        lambda text: drop_entry(text, "cryptography"),
        ["runtime.txt: cryptography>=42 is not locked"],
        id="a direct dependency missing from the runtime lock",
    ),
    pytest.param(
        "dev.txt",
        lambda text: replaced(text, "pyyaml==6.0.4", "pyyaml==6.0.3"),
        [
            "dev.txt: pyyaml==6.0.4 of runtime.txt is not kept",
            "bench.txt: pyyaml==6.0.3 of dev.txt is not kept",
        ],
        id="the dev lock strays from the runtime pins",
    ),
    pytest.param(
        "bench.txt",
        lambda text: drop_entry(text, "ruff"),
        ["bench.txt: ruff>=0.6 is not locked", "bench.txt: ruff==0.17.6 of dev.txt is not kept"],
        id="the bench lock lost a dev pin",
    ),
    pytest.param(
        "build.txt",
        lambda text: drop_entry(text, "pip"),
        ["build.txt: pip is not locked"],
        id="the build lock lost pip",
    ),
    pytest.param(
        "runtime.txt",
        lambda text: replaced(text, "orjson==3.13.0", "orjson>=3.13.0"),
        ["requirements/runtime.txt: orjson is not pinned to one version ('orjson>=3.13.0')"],
        id="a range instead of a pin",
    ),
    pytest.param(
        "dev.txt",
        lambda text: text + "tenacity==9.0.0\n",
        ["requirements/dev.txt: tenacity has no --hash (pip install --require-hashes refuses it)"],
        id="a pin without hashes",
    ),
    pytest.param(
        "bench.txt",
        lambda text: None,
        ["requirements/bench.txt is missing"],
        id="a lock file missing",
    ),
]


@pytest.mark.parametrize(("lock", "edit", "expected"), LOCK_DRIFT)
def test_a_lock_that_drifted_is_reported(lock: str, edit: object, expected: list[str]) -> None:
    setup_cfg, pyproject, locks = committed()
    assert callable(edit)
    text = edit(locks[lock])
    if text is None:
        del locks[lock]
    else:
        locks[lock] = text
    assert problems(setup_cfg, pyproject, locks) == expected


def test_bad_setup_cfg_input_is_a_clear_error_not_a_crash() -> None:
    setup_cfg, pyproject, locks = committed()
    broken = replaced(setup_cfg, "    structlog>=24\n", "    structlog>>24\n")
    found = problems(broken, pyproject, locks)
    assert found and all(line.startswith("setup.cfg: 'structlog>>24' is not a requirement") for line in found)


PARSED = f"""# This file was autogenerated by uv via the following command:
#    make lock
cffi==2.1.1 ; platform_python_implementation != 'PyPy' \\
    {HASH} \\
    {HASH}
    # via cryptography
Cryptography==50.0.2 \\
    {HASH}
    # via
    #   -c requirements/runtime.txt
    #   taskset-controller (setup.cfg)
numpy==2.4.6 ; python_full_version < '3.12' \\
    {HASH}
"""


def test_the_parser_reads_pins_markers_hashes_and_what_pulled_them_in() -> None:
    pins = parse_lock(PARSED)
    assert [(pin.name, str(pin.version), pin.marker, len(pin.hashes)) for pin in pins] == [
        ("cffi", "2.1.1", 'platform_python_implementation != "PyPy"', 2),
        ("cryptography", "50.0.2", "", 1),
        ("numpy", "2.4.6", 'python_full_version < "3.12"', 1),
    ]
    assert [pin.via for pin in pins] == [
        ("cryptography",),
        ("-c requirements/runtime.txt", "taskset-controller (setup.cfg)"),
        (),
    ]
    assert [pin.direct for pin in pins] == [False, True, False]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            f"--index-url https://example.invalid\nsix==1.17.0 {HASH}\n",
            "outside an entry",
            id="a stray option",
        ),
        pytest.param(f"six==1.17.0 --no-binary {HASH}\n", "only --hash options", id="an option on an entry"),
        pytest.param(f"six==1.17.0 \\\n    {HASH} \\\n", "line continuation", id="a dangling continuation"),
        pytest.param(f"six===1.17 ! {HASH}\n", "is not a requirement", id="not a requirement"),
    ],
)
def test_a_malformed_lock_is_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(LockError, match=message):
        parse_lock(text)


def test_the_command_fails_naming_the_refresh_when_setup_cfg_gains_a_dependency(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("setup.cfg", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(LOCK_DIR, tmp_path / "requirements")
    assert main(tmp_path) == 0
    setup_cfg = tmp_path / "setup.cfg"
    setup_cfg.write_text(
        replaced(setup_cfg.read_text(), "    orjson>=3.10\n", "    orjson>=3.10\n    tenacity>=8\n")
    )
    assert main(tmp_path) == 1
    err = capsys.readouterr().err
    assert "runtime.txt: tenacity>=8 is not locked" in err and REFRESH in err
