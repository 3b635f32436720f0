"""The pass as data: the stages ``decide`` runs, in order, each with why it runs where it does.

Once the attempt's spec is known (scaled to what the status records, ``taskset.decide.elastic``), a
pass runs these stages one after the other over the same context. The machines move in one stage
(``run_taskset``, which syncs the roles and their replicas); the stages before it prepare what the
moves read, and the stages after it report and tidy up what the moves left. Each stage names the
stages it must follow (``after``): ``check_stages`` fails at import when the tuple breaks one, so a new
lifecycle feature adds its module, its rows and one ``Stage`` here with its reason, and the order it
relies on is written next to it rather than only in the code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from taskset.decide.after_attempt import settle_after_attempt
from taskset.decide.attempt import run_taskset
from taskset.decide.context import PassContext
from taskset.decide.deletions import report_terminating
from taskset.decide.elastic import remove_scaled_down_pods, report_scale, settle_scale
from taskset.decide.membership_generation import announce_scales, note_membership
from taskset.decide.node_recovery import report_node_loss, strip_notes
from taskset.decide.owned_sync import recheck_gates, update_owned
from taskset.decide.suspension import report_suspension, retire_stale
from taskset.decide.waiting import report_waiting


@dataclass(frozen=True)
class Stage:
    """One step of a pass: what it runs, the stages it must follow, and why it runs there."""

    name: str
    run: Callable[[PassContext], None]
    after: tuple[str, ...] = ()
    why: str = ""


STAGES: tuple[Stage, ...] = (
    Stage(
        "strip_node_loss_notes",
        strip_notes,
        why="the machines read their own words in a replica's phaseMessage: the notes of a lost node "
        "come off before anything reads them, and go back on in report_node_loss",
    ),
    Stage(
        "note_scaled_membership",
        note_membership,
        why="a scale taken with the attempt's spec changes the live membership: its generation must be "
        "known before the scale is announced and before the machines create the membership ConfigMap",
    ),
    Stage(
        "announce_scales",
        announce_scales,
        after=("note_scaled_membership",),
        why="each scale's event and lastScale name the membership generation that shows it",
    ),
    Stage(
        "run_taskset",
        run_taskset,
        after=("note_scaled_membership",),
        why="the machines move as far as the observed facts allow: the TaskSet, its roles, their "
        "replicas, and the owned objects an attempt that runs wants (created with this pass's membership)",
    ),
    Stage(
        "settle_scale",
        settle_scale,
        after=("run_taskset",),
        why="a scaled-down replica that completed in this pass's moves leaves the list, and an index "
        "waiting for it comes back, without waiting for a watch event",
    ),
    Stage(
        "remove_scaled_down_pods",
        remove_scaled_down_pods,
        after=("settle_scale",),
        why="a Pod at an index the settled list no longer holds has no replica to look after it",
    ),
    Stage(
        "note_moved_membership",
        note_membership,
        after=("run_taskset", "settle_scale"),
        why="the moves (a replica's retry, a new attempt, a settled scale) change the membership again: "
        "its generation must follow them before the ConfigMap is written",
    ),
    Stage(
        "update_owned",
        update_owned,
        after=("run_taskset", "note_moved_membership"),
        why="the owned objects that follow the TaskSet are written with what the pass made of it, once "
        "the machines compared them with the caches and the membership generation is final",
    ),
    Stage(
        "report_scale",
        report_scale,
        after=("run_taskset",),
        why="status.scale counts the role in the attempt's spec, which a new attempt sets in the moves",
    ),
    Stage(
        "recheck_gates",
        recheck_gates,
        after=("run_taskset", "settle_scale"),
        why="a gate asked before the replicas it waits for moved in this pass may open now; no watch "
        "event follows the controller's own status write, so the pass must see it",
    ),
    Stage(
        "report_waiting",
        report_waiting,
        after=("run_taskset", "settle_scale"),
        why="the Running condition names the replicas still waiting once this pass's moves are done",
    ),
    Stage(
        "report_node_loss",
        report_node_loss,
        after=("strip_node_loss_notes", "run_taskset", "settle_scale", "report_waiting"),
        why="the replicas waiting on a lost node are the status's after the moves; the Running condition "
        "names them over the waiting summary, so after it",
    ),
    Stage(
        "report_terminating",
        report_terminating,
        after=("run_taskset", "settle_scale"),
        why="the Pods stuck terminating are this TaskSet's as the status records them after the moves",
    ),
    Stage(
        "report_suspension",
        report_suspension,
        after=("run_taskset",),
        why="the Suspended condition follows spec.suspend, but a TaskSet that completed in the moves "
        "keeps the condition it had",
    ),
    Stage(
        "retire_stale",
        retire_stale,
        after=("run_taskset", "settle_scale"),
        why="an integration's stale object goes only once the moves left the attempt without a Pod",
    ),
    Stage(
        "settle_after_attempt",
        settle_after_attempt,
        after=("run_taskset",),
        why="what the integrations want done around the attempt's end reads the outcome the moves decided",
    ),
)


def check_stages(stages: Iterable[Stage]) -> None:
    """Fail when a pass's stages cannot run as listed: a stage or a name listed twice, or a stage before
    one it must follow (or following one that is not listed at all)."""
    seen: set[str] = set()
    for stage in stages:
        if stage.name in seen:
            raise ValueError(f"stage {stage.name} is listed twice")
        for earlier in stage.after:
            if earlier not in seen:
                raise ValueError(f"stage {stage.name} must follow {earlier}, which does not run before it")
        seen.add(stage.name)


check_stages(STAGES)
