"""Regenerate the generated sections of ``docs/deployment.md`` from the code, so the guide cannot drift.

Usage: ``python hack/render_config_docs.py`` rewrites the file; ``--check`` only compares and exits 1 when
it is stale (``tests/unit/test_docs.py`` runs the same comparison).

Sections, each between ``<!-- BEGIN GENERATED: <name> -->`` and ``<!-- END GENERATED: <name> -->``:

* ``settings``: every flag, environment variable and config-file key with its default, from
  ``taskset.daemon.config.SETTINGS`` and the defaults of ``taskset.daemon.config.Config``;
* ``metrics``: the metrics table and its notes, copied from the docstring of ``taskset.daemon.metrics``.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

if not __package__:  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import taskset.daemon.metrics
from taskset.daemon.config import SETTINGS, Config
from taskset.daemon.values import show_default

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "deployment.md"
_SECTION_RE = r"(<!-- BEGIN GENERATED: {name} [^\n]*-->\n)(.*?)(<!-- END GENERATED: {name} -->)"


def _default(value: object) -> str:
    return f"`{show_default(value)}`"


def _flag(flag: str, metavar: str) -> str:
    """``--leader-elect[=BOOL]``: boolean flags work alone (``--leader-elect``) or with a value."""
    return f"{flag}[={metavar}]" if metavar == "BOOL" else f"{flag} {metavar}"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def settings_table() -> str:
    defaults = Config()
    rows = [
        "| Flag | Environment variable | Config file key | Default | Meaning |",
        "|---|---|---|---|---|",
        "| `--config PATH` | | | | YAML file with any of the keys below |",
    ]
    for s in SETTINGS:
        default = _default(getattr(defaults, s.field))
        rows.append(f"| `{_flag(s.flag, s.metavar)}` | `{s.env}` | `{s.key}` | {default} | {_cell(s.help)} |")
    return "\n".join(rows) + "\n"


def metrics_table() -> str:
    """The table of ``taskset.daemon.metrics`` and its numbered notes, as written in the module docstring."""
    doc = taskset.daemon.metrics.__doc__ or ""
    lines = doc.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| Name |"))
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    table = lines[start:end]
    notes: list[str] = []
    for line in lines[end:]:
        if re.match(r"^\d+\. ", line) or (notes and line.startswith("   ")):
            notes.append(line)
        elif notes and not line.strip():
            break
    # reStructuredText literals in the notes become Markdown code spans.
    text = "\n".join(table) + "\n\n" + "\n".join(notes).replace("``", "`") + "\n"
    return text


SECTIONS: dict[str, Callable[[], str]] = {"settings": settings_table, "metrics": metrics_table}


def render(text: str) -> str:
    for name, produce in SECTIONS.items():
        pattern = re.compile(_SECTION_RE.format(name=re.escape(name)), re.DOTALL)
        if not pattern.search(text):
            raise ValueError(f"{DOC}: no generated section '{name}'")
        body = produce()

        def replace(match: re.Match[str], body: str = body) -> str:
            return match.group(1) + body + match.group(3)

        text = pattern.sub(replace, text)
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale; write nothing")
    args = parser.parse_args(argv)
    current = DOC.read_text(encoding="utf-8")
    wanted = render(current)
    if args.check:
        if wanted != current:
            print(f"{DOC.relative_to(ROOT)} is stale: run python hack/render_config_docs.py", file=sys.stderr)
            return 1
        return 0
    if wanted != current:
        DOC.write_text(wanted, encoding="utf-8")
        print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
