"""The add-ons' Go builds overlapped with the test session (``devcluster/build.py``'s ``ADDONS``: Kueue,
CoreDNS, the coscheduling scheduler, about 14 minutes of building on a fresh machine).

``make test`` builds only the control plane before the session; when the session has collected any
integration or chaos test and an add-on is not built, it starts ``python -m devcluster build --part
add-ons`` at the lowest CPU priority, and stops it when the session ends. A fixture that starts an
add-on builds it the usual way (``devcluster.build.build``): it waits on the component's lock while the
background build holds it and then finds it built, or builds it itself if the background one failed, so
a failure is reported by the test that needed the add-on, never hidden.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from devcluster import build
from hack.background import BackgroundJob

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "build" / "addon-build.log"  # build/ is ignored by git
BUILD = pytest.StashKey[BackgroundJob]()
NEEDING = frozenset({"integration", "chaos"})  # the test folders whose fixtures start add-ons


def should_start(folders: set[str], missing: bool, collect_only: bool) -> bool:
    """Whether a session builds the add-ons in the background: it runs tests of a folder whose
    fixtures start them, and some add-on is not built yet."""
    return bool(folders & NEEDING) and missing and not collect_only


def start(session: pytest.Session) -> None:
    """Start the add-ons' build in the background if this session may need one that is missing."""
    folders = {part for item in session.items for part in Path(str(item.path)).parts}
    missing = any(not build.is_built(component) for component in build.ADDONS)
    if should_start(folders, missing, bool(session.config.option.collectonly)):
        command = [sys.executable, "-m", "devcluster", "build", "--part", "add-ons"]
        session.config.stash[BUILD] = BackgroundJob(command, ROOT, LOG, "the add-ons' build")


def stop(session: pytest.Session) -> None:
    """A build still running when the session ends is ended with it; the next one starts over."""
    job = session.config.stash.get(BUILD, None)
    if job is not None:
        job.stop()
