"""Every fenced block a reader sees in README.md and docs/*.md, each with the claim written just before
it (``<!-- runs: KIND ARGS; why -->``) naming how a test runs that very text. The inventory test
(tests/unit/test_doc_blocks.py) fails on a block no runner claims; each runner parametrizes over
``claimed(KIND)``, so a block edited, added or moved is run as it now reads."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = (ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")))

# A file rendered whole by a script, with a test that the committed text equals a fresh rendering:
# its blocks are that script's output, so they carry no claims of their own.
GENERATED = {"docs/state-machines.md": "tests/unit/taskset/decide/test_docs.py"}

# How each kind of claim is run, and by which module (which must call ``claimed(KIND)``).
RUNNERS = {
    "dry-run": "tests/integration/test_docs_examples.py",  # every document, server-side dry run
    "fragment": "tests/integration/test_docs_examples.py",  # merged at ARG into a minimal TaskSet
    "status": "tests/integration/test_docs_examples.py",  # a status written through /status, dry run
    "delete-options": "tests/integration/test_docs_examples.py",  # the body of a real DELETE
    "pod-env": "tests/integration/test_docs_examples.py",  # the variables it reads are in the Pod
    "sh": "tests/integration/test_docs_examples.py",  # each line run against the cluster
    "promql": "tests/integration/test_docs_examples.py",  # every metric named is exported
    "log-shape": "tests/integration/test_docs_examples.py",  # the keys of a real log record
    "config-file": "tests/integration/test_docs_examples.py",  # the daemon starts with it as --config
    "membership": "tests/integration/test_docs_examples.py",  # the keys of a real membership.json
    "session": "tests/integration/test_sdk.py",  # the Python session executed as written
    "make": "tests/unit/test_doc_blocks.py",  # `make -n` finds every target
    "kueue-config": "tests/unit/test_doc_blocks.py",  # the configuration devcluster's Kueue runs with
    "devcluster-up": "tests/integration/test_devcluster_up.py",  # the `up` lines, as a user types them
    "feature-gates": "tests/integration/test_devcluster_up.py",  # an `up` with gates, a cluster of its own
    "not-run": "tests/unit/test_doc_blocks.py",  # listed by name there, with the reason in the claim
}

MARKER = re.compile(r"^\s*<!-- runs: (?P<kind>[a-z-]+)(?P<args>[^;]*?)(?:;\s*(?P<reason>.*?))?\s*-->\s*$")
FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>\S*)\s*$")


@dataclass(frozen=True)
class Block:
    path: str  # relative to the repository root
    line: int  # of the opening fence, 1-based
    lang: str
    text: str  # dedented to the fence
    kind: str | None  # None: no claim before it
    args: tuple[str, ...]
    reason: str

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def documents(self) -> list[Any]:
        """The YAML (or JSON) documents, with a line that is only ``...`` (the docs' "and the rest of
        this mapping") left out."""
        text = "".join(line for line in self.text.splitlines(keepends=True) if line.strip() != "...")
        return [d for d in yaml.safe_load_all(text) if d is not None]

    def commands(self) -> list[str]:
        """The shell commands: continuation lines joined, comments and blank lines left out."""
        joined = re.sub(r"\\\n\s*", "", self.text)
        lines = (re.sub(r"(^|\s)#.*$", "", line).strip() for line in joined.splitlines())
        return [line for line in lines if line]


def blocks_of(path: Path) -> list[Block]:
    lines = path.read_text().splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        indent = len(opened["indent"])
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
        claim = MARKER.match(lines[i - 1]) if i else None
        found.append(
            Block(
                path=str(path.relative_to(ROOT)),
                line=i + 1,
                lang=opened["lang"],
                text="".join(line[indent:] + "\n" for line in lines[i + 1 : end]),
                kind=claim["kind"] if claim else None,
                args=tuple(claim["args"].split()) if claim else (),
                reason=(claim["reason"] or "") if claim else "",
            )
        )
        i = end + 1
    return found


def blocks() -> list[Block]:
    return [b for doc in DOCS if str(doc.relative_to(ROOT)) not in GENERATED for b in blocks_of(doc)]


def claimed(kind: str) -> list[Block]:
    assert kind in RUNNERS, kind
    return [b for b in blocks() if b.kind == kind]


def params(kind: str) -> dict[str, Any]:
    """``pytest.mark.parametrize`` arguments over the blocks of one kind, each named by file:line."""
    found = claimed(kind)
    return {"argvalues": found, "ids": [b.where for b in found]}
