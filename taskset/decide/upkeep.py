"""What a pass asks of the API server beside its machines' moves, as rows no machine declares.

A machine's row that asks for something (create the ControlUnit, delete a replica's Pod) takes the
answer in its own ``Row.on_result``. A pass also tidies up and serves the integrations outside any
row: Pods and ControlUnits that are no replica's or attempt's any more, the objects an integration
wants, the finished TaskSet's own delete. Each of these is an *upkeep row* here, named once, so its
intents carry it (``RowRef``) like a machine row's and its result has one declared owner: the upkeep
table (``taskset.decide.UPKEEP_ROWS``) gives each its ``on_result``. No machine moves on their answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from taskset.decide.context import Row
from taskset.decide.plan import RowRef

UPKEEP: Final = "upkeep"

# A Pod under a replica's name that is not the replica's own: an earlier attempt's, or a duplicate.
STRAY_POD: Final = RowRef(UPKEEP, "stray-pod")
# A Pod the status recorded that outlived its attempt's ControlUnit (orphan propagation).
ORPHANED_POD: Final = RowRef(UPKEEP, "orphaned-pod")
# A Pod of the ControlUnit a completed TaskSet keeps that has not exited, deleted by cleanPodPolicy.
UNFINISHED_POD: Final = RowRef(UPKEEP, "unfinished-pod")
# A Pod at an index a scaled-down role no longer lists.
SCALED_DOWN_POD: Final = RowRef(UPKEEP, "scaled-down-pod")
# A ControlUnit of this TaskSet other than the one it keeps, once it completed.
STRAY_UNIT: Final = RowRef(UPKEEP, "stray-unit")
# An object an integration wants while the attempt runs, absent from the caches.
OWNED_OBJECT: Final = RowRef(UPKEEP, "owned-object")
# An object of this controller's left by an earlier TaskSet object of the same name, in the way of a create.
LEFT_BEHIND_OBJECT: Final = RowRef(UPKEEP, "left-behind-object")
# Declared fields of an owned object written back: the data of one that follows the TaskSet (the live
# membership), or a field someone else changed (a Service's selector, a PodGroup's minMember).
OWNED_DATA: Final = RowRef(UPKEEP, "owned-data")
# An object an integration wants made anew once the attempt has no Pod left (an evicted Workload).
STALE_OBJECT: Final = RowRef(UPKEEP, "stale-object")
# The status an integration asks for its object once the attempt's outcome is known (Workload Finished).
ATTEMPT_END_STATUS: Final = RowRef(UPKEEP, "attempt-end-status")
# An integration's object of an earlier attempt, which the running attempt no longer needs.
EARLIER_ATTEMPT_OBJECT: Final = RowRef(UPKEEP, "earlier-attempt-object")
# A replica's Pod on a lost node, force-deleted as spec.nodeLossPolicy says (taskset.decide.node_recovery).
NODE_LOST_POD: Final = RowRef(UPKEEP, "node-lost-pod")
# The finished TaskSet itself, once its ttlSecondsAfterFinished passed.
EXPIRED_TASKSET: Final = RowRef(UPKEEP, "expired-taskset")

UPKEEP_LABELS: Final = frozenset(
    ref.label
    for ref in (
        STRAY_POD,
        ORPHANED_POD,
        UNFINISHED_POD,
        SCALED_DOWN_POD,
        STRAY_UNIT,
        OWNED_OBJECT,
        LEFT_BEHIND_OBJECT,
        OWNED_DATA,
        STALE_OBJECT,
        ATTEMPT_END_STATUS,
        EARLIER_ATTEMPT_OBJECT,
        EXPIRED_TASKSET,
        NODE_LOST_POD,
    )
)


def check_upkeep(rows: Mapping[str, Row[Any]]) -> None:
    """Fail at import when the upkeep table and the rows named here disagree: every upkeep row has
    exactly one entry, and it folds its result (``on_result``) and nothing else, since no machine
    chooses it."""
    if set(rows) != UPKEEP_LABELS:
        missing, unknown = sorted(UPKEEP_LABELS - set(rows)), sorted(set(rows) - UPKEEP_LABELS)
        raise ValueError(f"upkeep rows: missing {missing}, not declared {unknown}")
    for label, row in rows.items():
        if row.on_result is None or row.effect or row.message or row.wait:
            raise ValueError(f"upkeep row {label} must fold its result and do nothing else")
