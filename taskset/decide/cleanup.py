"""What a finished TaskSet keeps of its Pods: ``spec.cleanPodPolicy`` (Kubeflow's name).

The spec keeps none: a replica's Pod is deleted as soon as it exited (P9), and the attempt's end deletes
its ControlUnit, whose foreground deletion takes every Pod left (T10). That is ``All``, the default.
``Running`` and ``None`` keep Pods for the user (``kubectl logs``, a debugger's ``exec``):

* during the run, an exited Pod whose replica's outcome is final stays (row ``P9-keep``); a replica that
  is retried still deletes its Pod, since the next attempt's Pod takes its name (D1);
* at the end of the attempt that ends the TaskSet, the ControlUnit stays as the owner of the kept Pods
  (rows ``T10`` and ``T12b`` step aside), so deleting the TaskSet, or its ``ttlSecondsAfterFinished``,
  still takes everything; an attempt followed by a TaskSet retry deletes it as before;
* once the TaskSet is completed, ``Running`` deletes the Pods of that ControlUnit that have not exited
  (Pending ones too), by UID; ``None`` keeps them running. ``activeDeadlineSeconds`` bounds the run, so a
  TaskSet that ended by it deletes them under ``None`` too.

The policy is read from the live spec on every pass, as the TTL is: changing it on a finished TaskSet
applies it (``All`` then deletes the kept ControlUnit, and with it every Pod).
"""

from __future__ import annotations

from taskset.api.constants import CleanPodPolicy
from taskset.api.spec import ParsedTaskSet
from taskset.decide.context import PassContext
from taskset.decide.deadlines import ended_by_deadline
from taskset.decide.deletions import recorded_uids
from taskset.decide.plan import DeletePod
from taskset.decide.upkeep import UNFINISHED_POD


def clean_pod_policy(ctx: PassContext) -> CleanPodPolicy:
    """The live spec's policy, else the attempt's; ``All`` for a TaskSet with neither."""
    if isinstance(ctx.live, ParsedTaskSet):
        return ctx.live.spec.clean_pod_policy
    return ctx.plan.spec.clean_pod_policy if ctx.plan.spec is not None else CleanPodPolicy.ALL


def keeps_pods(ctx: PassContext) -> bool:
    """Whether finished Pods stay: ``None`` or ``Running``, and the TaskSet is not being deleted. Every
    replica asks it; with a valid live spec the answer holds for the whole pass and is worked out once
    (a 2,000-replica pass asked it 2,000 times: 0.7% of the controller's CPU in the ``large`` bench)."""
    if ctx.keeps_pods is not None:
        return ctx.keeps_pods
    keeps = clean_pod_policy(ctx) != CleanPodPolicy.ALL and not ctx.ref.deleting
    if isinstance(ctx.live, ParsedTaskSet):  # else the attempt's spec decides, which the pass may set
        ctx.keeps_pods = keeps
    return keeps


def kept_unit(ctx: PassContext) -> str | None:
    """The UID of the ControlUnit a completed TaskSet keeps as its Pods' owner, or None."""
    return ctx.status.control_unit_uid if keeps_pods(ctx) else None


def clean_finished(ctx: PassContext) -> None:
    """A completed TaskSet under ``Running`` (or ``None`` after its deadline): delete, once and by UID,
    each Pod of the kept ControlUnit that has not exited."""
    unit = kept_unit(ctx)
    policy = clean_pod_policy(ctx)
    if unit is None or (policy == CleanPodPolicy.NONE and not ended_by_deadline(ctx.status.attempt_result)):
        return
    recorded = recorded_uids(ctx.status)
    for pod in sorted(ctx.observed.pods.values(), key=lambda pod: pod.name):
        if pod.controller_uid != unit or pod.terminal or pod.deleting or pod.uid in ctx.deleted:
            continue
        ctx.deleted.add(pod.uid)
        position, index = recorded.get(pod.uid, (0, 0))  # read only by a delete that advances a replica
        ctx.plan.intents.append(
            DeletePod(pod.name, pod.uid, position, index, advances=False, row=UNFINISHED_POD)
        )
