"""The controller's process: its configuration, logging, endpoints, leadership and start.

Before any library is imported, the standard-library modules they import and the daemon never uses are
left unimported until something uses them (``unused_modules``): this ``__init__`` runs first whichever
way the daemon is started.
"""

from taskset.daemon.unused_modules import defer_unused

defer_unused()
