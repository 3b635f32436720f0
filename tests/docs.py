"""Tables the tests read back from the documentation, so the docs and the behaviour cannot drift."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEPLOYMENT_DOC = ROOT / "docs" / "deployment.md"

Rule = tuple[
    str, tuple[str, ...], frozenset[str]
]  # resource as `kubectl auth can-i --list` names it, names, verbs


def documented_rbac_rules(doc: Path = DEPLOYMENT_DOC) -> set[Rule]:
    """The RBAC table of docs/deployment.md (after its ``<!-- rbac-table`` marker)."""
    lines = doc.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("<!-- rbac-table"))
    rules: set[Rule] = set()
    for line in lines[start + 3 :]:  # the marker, the header, the separator
        if not line.startswith("|"):
            break
        resource, names, verbs = (cell.strip().strip("`") for cell in line.strip("|").split("|")[:3])
        rules.add(
            (
                resource,
                tuple(n.strip("` ") for n in names.split(",") if n.strip()),
                frozenset(v.strip() for v in verbs.split(",")),
            )
        )
    return rules
