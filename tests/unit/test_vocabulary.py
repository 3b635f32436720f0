"""Every identifier the code cites (a spec departure ``W-11``, a decision ``D1``, a scenario ``S57``, a
machine row ``P14b``, a section ``spec 5.3.1``, an ``issue 8``) has an entry in ``docs/glossary.md``, so
that a reader of the repository can resolve it without the spec, which lives outside it.

Only comments and string literals (docstrings included) are read, through the tokenizer: a Python name
that happens to look like a row label (a test's constant for ``spec.roles[0]``) is not a citation. The
replacement fields of f-strings are dropped for the same reason."""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from statemachine import Machine
from taskset.decide.machines import MACHINES

ROOT = Path(__file__).resolve().parents[2]
GLOSSARY = ROOT / "docs" / "glossary.md"
# The production packages, then the code around them; tests cite the same vocabulary.
SCANNED = (
    "taskset",
    "informers",
    "workqueue",
    "statemachine",
    "clock",
    "devcluster",
    "bench",
    "hack",
    "tests",
)

# One entry of the glossary: an anchor, then the identifier in bold.
ENTRY = re.compile(r'<a id="[^"]+"></a>\*\*([^*]+)\*\*')

_NOT_BEFORE = r"(?<![\w-])"
_NOT_AFTER = r"(?![\w-])"
_SECTION_NUMBER = r"(\d{1,2}(?:\.\d){0,2})(?!\.?\d)"


def _section(number: str) -> str:
    return f"§{number}"


# Each pattern finds one kind of identifier; its first group, passed through the function, is the
# glossary's spelling of it.
PATTERNS: tuple[tuple[str, re.Pattern[str], Callable[[str], str]], ...] = (
    ("departure", re.compile(_NOT_BEFORE + r"(W-\d{1,2}[a-e]?)" + _NOT_AFTER), str),
    ("decision", re.compile(_NOT_BEFORE + r"(D\d)" + _NOT_AFTER), str),
    ("scenario", re.compile(_NOT_BEFORE + r"(S\d{2})[a-z]?" + _NOT_AFTER), str),
    (
        "row",
        re.compile(_NOT_BEFORE + r"([TPR]\d{1,2}[a-z]?(?:-[A-Za-z]+)?|[TPR]-wait|S[12])" + _NOT_AFTER),
        str,
    ),
    ("section", re.compile(r"\b(?:[Ss]pec|[Ss]ections?)\s+(?:section\s+)?§?" + _SECTION_NUMBER), _section),
    ("section", re.compile(r"§" + _SECTION_NUMBER), _section),
    (
        "section",
        re.compile(r"\((\d{1,2}\.[1-9](?:\.[1-9])?)\)"),
        _section,
    ),  # a bare "(6.3)"; "(6.0)" is a time
    ("check", re.compile(r"\b[Cc]hecks? (\d(?:\.\d)?)(?!\.?\d)"), lambda n: f"check {n}"),
    ("issue", re.compile(r"\b[Ii]ssues? #?(\d+)\b"), lambda n: f"issue {n}"),
)

_FSTRING_FIELD = re.compile(r"\{[^{}]*\}")


def glossary_entries(text: str) -> set[str]:
    return {match.strip() for match in ENTRY.findall(text)}


def prose(path: Path) -> Iterator[tuple[int, str]]:
    """The comments and string literals of a Python file, with their line numbers."""
    for token in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
        elif token.type == tokenize.STRING:
            prefix = token.string[: token.string.index(token.string[-1])].lower()
            text = _FSTRING_FIELD.sub("", token.string) if "f" in prefix else token.string
            yield token.start[0], text


def cited(text: str) -> set[str]:
    found: set[str] = set()
    for _, pattern, spell in PATTERNS:
        found |= {spell(match.group(1)) for match in pattern.finditer(text)}
    return found


def citations(folders: tuple[str, ...] = SCANNED) -> dict[str, set[str]]:
    """Each identifier cited in ``folders``, with the places (``path:line``) that cite it."""
    places: dict[str, set[str]] = {}
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for line, text in prose(path):
                for name in cited(text):
                    places.setdefault(name, set()).add(f"{path.relative_to(ROOT)}:{line}")
    return places


@pytest.fixture(scope="module")
def entries() -> set[str]:
    return glossary_entries(GLOSSARY.read_text())


def test_every_identifier_the_code_cites_has_a_glossary_entry(entries: set[str]) -> None:
    missing = {name: sorted(places)[:3] for name, places in citations().items() if name not in entries}
    assert missing == {}, "add these to docs/glossary.md"


@pytest.mark.parametrize("machine", MACHINES, ids=lambda machine: f"the {machine.name} machine")
def test_every_row_label_of_a_machine_has_a_glossary_entry(
    machine: Machine[Any, Any], entries: set[str]
) -> None:
    labels = {transition.label for transition in machine.transitions}
    assert labels - entries == set()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("# see spec 5.3.1 and W-11 (D1)", {"§5.3.1", "W-11", "D1"}, id="a comment citing three"),
        pytest.param(
            '"""rows P14b, T3-adopt, P-wait and S2"""', {"P14b", "T3-adopt", "P-wait", "S2"}, id="rows"
        ),
        pytest.param("# S30b is a variant of S30", {"S30"}, id="a scenario variant resolves to its scenario"),
        pytest.param("# spec section 2.4, check 2.2; issue 8", {"§2.4", "check 2.2", "issue 8"}, id="checks"),
        pytest.param("# the outcome (6.3), not the queue.ShutDown of (3.13)", {"§6.3"}, id="bare numbers"),
        pytest.param("# urllib3 2.3, 0.82-0.84x, R2D2-W, SP1", set(), id="versions and words are not cited"),
        pytest.param("# the spec's 60 s; a time of (6.0) s", set(), id="durations are not sections"),
    ],
)
def test_the_patterns_find_citations_and_nothing_else(text: str, expected: set[str]) -> None:
    assert cited(text) == expected


def test_a_deleted_entry_is_reported(entries: set[str]) -> None:
    """The check is not vacuous: without the entry for W-11 (cited all over), W-11 is missing."""
    text = GLOSSARY.read_text()
    anchor = '<a id="w-11"></a>**W-11**'
    assert anchor in text
    cut = glossary_entries(text.replace(anchor, ""))
    assert "W-11" in entries and "W-11" not in cut
    assert "W-11" in citations(("taskset",))


def test_the_production_packages_cite_the_vocabulary() -> None:
    """The scan reads the production packages at all: they cite rows, departures and sections."""
    names = set(citations(("taskset", "informers", "workqueue", "statemachine", "clock")))
    assert {"P0", "T14", "W-11", "D1", "§5.3.1", "issue 8"} <= names
