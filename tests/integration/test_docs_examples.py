"""Every complete TaskSet in the user manual is accepted by the API server (server-side dry run), so the
examples readers copy cannot rot. (The seeds' own examples are applied for real by test_crd.)"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from devcluster import Cluster
from taskset.api import constants as c

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
MANUAL = ROOT / "docs" / "user-manual.md"


def manual_tasksets() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for block in re.findall(r"```yaml\n(.*?)```", MANUAL.read_text(), re.DOTALL):
        for document in yaml.safe_load_all(block):
            if isinstance(document, dict) and document.get("kind") == c.KIND:
                found.append((document["metadata"]["name"], document))
    return found


EXAMPLES = manual_tasksets()


def test_the_manual_has_complete_examples() -> None:
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize(
    "document", [e[1] for e in EXAMPLES], ids=[f"{i}-{e[0]}" for i, e in enumerate(EXAMPLES)]
)
def test_a_manual_example_is_accepted(
    cluster: Cluster, crd_installed: None, namespace: str, document: dict[str, Any]
) -> None:
    done = cluster.kubectl(
        "create", "--dry-run=server", "-n", namespace, "-f", "-", input=yaml.safe_dump(document), check=False
    )
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr, done.stderr
