"""The churn scenario's verdict: exactly the replicas whose first attempt failed were retried, each
once, and those are the chosen ones.

Two exceptions, both the event policy at work rather than a lost retry. A chosen replica whose first Pod
was deleted without exiting was stopped by its TaskSet's end before its planned failure. And a failure
the controller first saw together with its TaskSet's outcome (every worker succeeded) ends with the
TaskSet instead of being retried: under full load kwok's timers stretch (a ps planned to fail 2.5 s
before the workers end was seen failing 1 s before them), so the order the scenario plans is not the
order the controller sees. Which pass saw what comes from the controller's log; the recorder's times
alone cannot tell a slow controller from a late failure.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from bench.recorder import PodRecord
from bench.scenarios import WORKERS_PER_TASKSET
from taskset.api.constants import ReplicaPhase

SUSPECT_LISTS = (
    "retried_but_not_failed",
    "failed_but_not_retried",
    "chosen_but_neither_failed_nor_stopped",
)


def ending_passes(lines: Iterable[str], namespace: str) -> dict[str, list[int]]:
    """For each Pod name: the passes of its TaskSet (counted per TaskSet) in which the controller saw one
    of its attempts end (the replica moved to DeletionPending), in order. One TaskSet is reconciled by
    one worker at a time, so its records between two of its "reconciled" lines belong to one pass."""
    passes: dict[str, int] = defaultdict(int)
    ends: dict[str, list[int]] = defaultdict(list)
    for line in lines:
        if namespace not in line:
            continue
        record = json.loads(line)
        if record.get("msg") == "reconciled" and record.get("namespace") == namespace:
            passes[record["name"]] += 1
        elif (
            record.get("QueryKey") == "ReplicaTransition"
            and record.get("Namespace") == namespace
            and record.get("NextPhase") == ReplicaPhase.ATTEMPT_DELETION_PENDING
        ):
            ends[record["PodName"]].append(passes[record["TaskSet"]])
    return dict(ends)


def churn_check(
    chosen: frozenset[str], pods: list[PodRecord], errors: list[str], ends: dict[str, list[int]]
) -> dict[str, Any]:
    """The verdict (see the module's docstring); ``ends`` is ``ending_passes`` of the scenario."""
    first = {p.name: p for p in pods if p.replica_attempt == 0}
    failed = {name for name, p in first.items() if p.exit_phase == "Failed"}
    stopped = {name for name in chosen if name in first and not first[name].exit_phase}
    settled = {
        name
        for name in failed
        if _failed_after_settled(first[name], pods) or _seen_with_outcome(first[name], ends)
    }
    retried = {p.name for p in pods if p.replica_attempt >= 1}
    # A settled failure may still be retried: the outcome and the failure can land in the same pass.
    if retried - failed or failed - settled - retried or any(p.replica_attempt > 1 for p in pods):
        errors.append("the retried replicas are not exactly the failed ones, each once")
    if failed - chosen or chosen - failed - stopped:
        errors.append("the failed replicas are not the chosen ones (stopped ones aside)")
    return {
        "chosen_replicas": len(chosen),
        "failed_as_chosen": len(failed & chosen),
        "stopped_before_failing": sorted(stopped)[:20],
        "failed_with_outcome_settled": sorted(settled)[:20],
        "replicas_retried": len(retried),
        "retried_but_not_failed": sorted(retried - failed)[:20],
        "failed_but_not_retried": sorted(failed - retried)[:20],
        "chosen_but_neither_failed_nor_stopped": sorted(chosen - failed - stopped)[:20],
    }


def _seen_with_outcome(pod: PodRecord, ends: dict[str, list[int]]) -> bool:
    """Whether the controller first saw ``pod``'s end no earlier than the last end of every worker of its
    TaskSet: the pass that saw the failure also settled the outcome."""
    own = ends.get(pod.name)
    last = [w[-1] for i in range(WORKERS_PER_TASKSET) if (w := ends.get(f"{pod.taskset}-worker-{i}"))]
    if pod.role == "worker" or not own or len(last) < WORKERS_PER_TASKSET:
        return False
    return own[0] >= max(last)


def _failed_after_settled(pod: PodRecord, pods: list[PodRecord]) -> bool:
    """Whether ``pod`` exited after every worker of its TaskSet had succeeded (its outcome settled)."""
    workers = [
        p for p in pods if p.taskset == pod.taskset and p.role == "worker" and p.exit_phase == "Succeeded"
    ]
    exits = [p.exited for p in workers if p.exited is not None]
    return (
        pod.role != "worker"
        and len(exits) == WORKERS_PER_TASKSET
        and pod.exited is not None
        and max(exits) <= pod.exited
    )
