"""How long a change of a TaskSet's Pods or ControlUnits waits before the TaskSet is reconciled.

A wave of such changes (a pass's creates or deletes being answered, a role's Pods being scheduled,
starting or exiting) is handled in one pass and one status write instead of one each, as the Kubernetes
Job controller batches its Pods' events (1 s there). A TaskSet's own changes are not batched.

The window grows with the TaskSet. A pass reads, decides and compares every replica, so it costs about
35 µs a replica here (70 ms at 2,000), and a role's Pods exit over tens of seconds: at a fixed 0.5 s a
2,000-replica TaskSet took some 60 passes in one lifecycle, most of them in the stream of its workers'
exits, and those passes were half the controller's CPU for it. So the window is 0.5 s up to 500
replicas, 1 ms a declared replica beyond (2 s at 2,000) and at most 5 s (a 10,000-replica TaskSet).

A TaskSet with fewer than 500 of its Pods in the cache waits as a small one does, whatever it declares:
its Pods are not there yet (the first creates being answered) or mostly gone (a job whose replicas ended
and were deleted), so a wave of its changes is small. The last steps of a large job's end (its last exits,
its last Pods gone, its ControlUnit gone) are thus seen within 0.5 s each, as a small job's are; counted
by the declared replicas alone, they waited the full window each and the end of a 2,000-replica
TaskSet took 4-5 s instead of 1-1.5. Pods a stranger plants with the TaskSet's annotation can only make
it wait the window its own spec gives. Its deadlines (creation timeouts, retry delays, start deadlines)
keep their own wake-ups, which no window delays.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from taskset.api.readers import as_count, as_items, get_path

POD_EVENT_BATCH: Final = 0.5  # seconds: the window of a small TaskSet
SMALL: Final = 500  # a TaskSet declaring, or holding in the cache, fewer Pods than this is small
BATCH_PER_REPLICA: Final = 0.001  # seconds a declared replica adds beyond that
POD_EVENT_BATCH_MAX: Final = 5.0


def pod_event_window(declared: int, cached: int) -> float:
    """Seconds a Pod's change waits for the rest of its wave, for a TaskSet that declares ``declared``
    replicas and has ``cached`` Pods in the cache."""
    if cached < SMALL:
        return POD_EVENT_BATCH
    return min(POD_EVENT_BATCH_MAX, max(POD_EVENT_BATCH, declared * BATCH_PER_REPLICA))


def declared_replicas(taskset: Mapping[str, Any] | None) -> int:
    """The replicas a cached TaskSet declares over its roles; 0 for one not cached or malformed (its
    changes then wait the shortest window, and its pass reports what is wrong with it)."""
    roles = as_items(get_path(taskset, "spec", "roles"))
    return sum(as_count(get_path(role, "replicas")) for role in roles)
