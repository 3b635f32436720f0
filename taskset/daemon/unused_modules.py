"""Standard-library modules the daemon's libraries import and the daemon never uses: each one is loaded
the first time something uses it, not when the library is imported.

``asyncio``: structlog imports it, at the top of its ``stdlib`` and ``_native`` modules, for its
asynchronous logger methods (``ainfo`` and the like). The daemon logs from threads and never calls them,
yet ``asyncio`` and the event-loop modules it brings cost every controller process about 2 MiB before it
reads a single object (``python -m bench.idle``). ``defer`` puts a stand-in under the module's name in
``sys.modules`` before the library is imported; the library's ``import`` then binds the stand-in, and the
first attribute anyone asks of it imports the real module and answers from it, as every later one does.
Code in the same process that does use the module gets the real one, at the cost it always paid.

``taskset.daemon``'s ``__init__`` defers them, so every way of starting the daemon (the console script,
``python -m taskset.daemon.main``, ``cmd/taskset-controller``) does so before any library is imported;
``tests/unit/taskset/daemon/test_unused_modules.py`` proves it in a fresh interpreter.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from types import ModuleType
from typing import Any, Final

UNUSED: Final = ("asyncio",)
_LOCK: Final = threading.Lock()  # two threads asking a stand-in at once import the module once


class _StandIn(ModuleType):
    """What ``import name`` binds until the module is used: any attribute is the real module's."""

    def __getattr__(self, attr: str) -> Any:  # called only for what the stand-in itself lacks
        return getattr(_real(self), attr)


def _real(stand_in: _StandIn) -> ModuleType:
    with _LOCK:
        if sys.modules.get(stand_in.__name__) is stand_in:
            del sys.modules[stand_in.__name__]
    return importlib.import_module(stand_in.__name__)


def defer(name: str) -> bool:
    """Leave ``name`` unimported until used; False when it is imported already (nothing to save) or not
    installed (its importers fail as they would have)."""
    if name in sys.modules or importlib.util.find_spec(name) is None:
        return False
    sys.modules[name] = _StandIn(name)
    return True


def defer_unused() -> None:
    for name in UNUSED:
        defer(name)
