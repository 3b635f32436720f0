"""Locating the core/v1 OpenAPI document of the pinned Kubernetes release, from which the role template's
schema is derived (``hack.crd.pod_template``).

The release is the one the control-plane build pins; its module is downloaded into
``$(go env GOMODCACHE)`` by that build.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KUBERNETES_VERSION_FILE = ROOT / "devcluster" / "go" / "kubernetes" / "VERSION"
OPENAPI_IN_MODULE = "api/openapi-spec/v3/api__v1_openapi.json"


def kubernetes_version() -> str:
    """The pinned release, from the control-plane build's wrapper module (``KUBERNETES_VERSION=v1.x.y``)."""
    return KUBERNETES_VERSION_FILE.read_text().strip().split("=", 1)[1]


def gomodcache() -> Path | None:
    if os.environ.get("GOMODCACHE"):
        return Path(os.environ["GOMODCACHE"])
    try:
        out = subprocess.run(
            ["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError):
        gopath = os.environ.get("GOPATH") or str(Path.home() / "go")
        return Path(gopath.split(os.pathsep)[0]) / "pkg" / "mod"
    return Path(out.stdout.strip()) if out.stdout.strip() else None


def openapi_path() -> Path | None:
    """Where the pinned release's core/v1 OpenAPI document is, or None when the module is not downloaded."""
    cache = gomodcache()
    if cache is None:
        return None
    path = cache / "k8s.io" / f"kubernetes@{kubernetes_version()}" / OPENAPI_IN_MODULE
    return path if path.is_file() else None
