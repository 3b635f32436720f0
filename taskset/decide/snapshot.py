"""Whether this attempt may use its ControlUnit's spec snapshot (W-18).

The snapshot lives in a ConfigMap, which anyone with ConfigMap write in the namespace may edit; the
Pods the controller creates are built from it. So the controller records the snapshot's digest where
only it writes (``status.attemptSpecDigest``) and uses a snapshot only while its digest matches:

- the pass that decides the ControlUnit's manifest (T3) records the digest of that manifest's snapshot,
  before the create goes out, so a create whose response is lost is still verified;
- a ControlUnit the status holds no digest for (adopted after a lost status write, W-1, or left by a
  controller that recorded none) is trusted only if its snapshot is byte for byte what this controller
  builds from the live spec; then its digest is recorded. Anything else cannot be told apart from an
  edit, so it is *unverifiable*: the status records ``UNVERIFIED`` so the verdict sticks;
- a snapshot whose digest differs from the recorded one was *changed* by someone else.

A refused snapshot is never used, and the live spec does not stand in for it (the attempt started
with another spec, W-18): the attempt has no usable spec, so the TaskSet machine ends it (T6) with the
refusal as its reason, and fails or retries it per its policy. The refusal is reported once: a Warning
event and the ``ControlUnitTampered`` condition, both naming the ControlUnit; a pass that finds the
condition already saying so stays quiet. T14 clears the digest with the ControlUnit's UID.

The ConfigMap cache keeps a snapshot's digest, not its text (a bounded cache), so the verdict
never waits for the text: it is the digest's. Only a snapshot to be *used* (trusted, its text not yet
known) needs the text; then the pass decides nothing and asks the reconciler for it
(``Plan.snapshot_wanted``), which fetches it once per ControlUnit and decides again. So a ControlUnit is
never judged changed, nor adopted or passed over, for want of its data. An adopted snapshot needs no
text: its digest is that of the snapshot the live spec builds, so it is that text.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from taskset.api.constants import ConditionStatus, ConditionType, EventReason
from taskset.api.spec import ParsedTaskSet, TaskSetSpec
from taskset.decide.context import PassContext
from taskset.decide.plan import Event
from taskset.objects.controlunit import parse_snapshot, snapshot_of
from taskset.observed.slim import snapshot_digest
from taskset.observed.views import ControlUnitView

# Recorded for a snapshot that could not be verified: no digest equals it, so it is never trusted.
UNVERIFIED: Final = "unverified"
_CONDITION_REASON: Final = "SpecSnapshotRefused"


class Verdict(StrEnum):
    TRUSTED = "trusted"  # its digest is the recorded one
    ADOPTED = "adopted"  # no digest recorded; it is what this controller builds from the live spec
    CHANGED = "changed"  # its digest is not the recorded one
    UNVERIFIABLE = "unverifiable"  # no digest recorded (or UNVERIFIED), and not what the live spec builds


def check_snapshot(digest: str, recorded: str | None, expected: str | None) -> Verdict:
    """The verdict on a ControlUnit's snapshot by its ``digest``, given the ``recorded`` digest and the
    snapshot this controller would build from the live spec now (``expected``; None when the live spec
    is illegal)."""
    if recorded == UNVERIFIED:
        return Verdict.UNVERIFIABLE
    if recorded is not None:
        return Verdict.TRUSTED if digest == recorded else Verdict.CHANGED
    if expected is not None and digest == snapshot_digest(expected):
        return Verdict.ADOPTED
    return Verdict.UNVERIFIABLE


def refusal_message(unit: str, verdict: Verdict) -> str:
    """What the TaskSet says about a refused snapshot, naming the ControlUnit."""
    if verdict == Verdict.CHANGED:
        return f"ControlUnit {unit}'s spec snapshot was changed by someone else; it is not used"
    return (
        f"ControlUnit {unit}'s spec snapshot cannot be verified: the status records no digest for it "
        "and it differs from the TaskSet's spec; it is not used"
    )


def attempt_spec(ctx: PassContext, verified_by_uid: str | None) -> TaskSetSpec | None:
    """The spec this attempt runs with: the ControlUnit's snapshot when there is one and it checks out
    (W-18), else the live spec; None when the snapshot is refused or nothing is usable, or when its text
    is still to be fetched (``Plan.snapshot_wanted`` says so, and the pass stops there).

    ``verified_by_uid`` is the TaskSet UID a ControlUnit must be controlled by for its snapshot to count
    (None: no ControlUnit of this attempt is in sight)."""
    live = ctx.live.spec if isinstance(ctx.live, ParsedTaskSet) else None
    unit = ctx.observed.control_unit
    if unit is None or verified_by_uid is None or unit.controller_uid != verified_by_uid:
        return live
    if ctx.status.control_unit_uid not in (None, unit.uid):
        return live  # a leftover going away, not this attempt's: the recorded digest is not about it
    # Only a ControlUnit without a recorded digest is compared with what the live spec builds, so only
    # then is that built (a JSON encoding of the whole spec, on every pass otherwise).
    unrecorded = ctx.status.spec_digest is None
    expected = snapshot_of(live.raw) if live is not None and unrecorded else None
    verdict = check_snapshot(unit.spec_digest, ctx.status.spec_digest, expected)
    if verdict == Verdict.ADOPTED:
        ctx.status.spec_digest = unit.spec_digest
        text = expected  # the same bytes as the ControlUnit's: their digests are equal
    elif verdict != Verdict.TRUSTED:
        _refuse(ctx, unit, verdict)
        return None
    elif not unit.snapshot_known:
        ctx.plan.snapshot_wanted = unit.uid
        return None
    else:
        text = unit.spec_snapshot
    if text:
        checks = ctx.settings.framework.spec_checks()
        ref = ctx.ref
        snapshot = parse_snapshot(text, ref.name, ref.namespace, ref.uid, checks)
        if snapshot is not None:
            return snapshot
    return live


def _refuse(ctx: PassContext, unit: ControlUnitView, verdict: Verdict) -> None:
    """Remember the refusal for the attempt's outcome, and report it unless the status already does."""
    message = refusal_message(unit.name, verdict)
    ctx.snapshot_refused = message
    status = ctx.status
    if verdict == Verdict.UNVERIFIABLE:
        status.spec_digest = UNVERIFIED
    reported = status.condition(ConditionType.CONTROL_UNIT_TAMPERED)
    if reported is not None and reported.status == ConditionStatus.TRUE and reported.message == message:
        return
    kind, true = ConditionType.CONTROL_UNIT_TAMPERED, ConditionStatus.TRUE
    status.set_condition(kind, true, _CONDITION_REASON, message, ctx.stamp)
    ctx.plan.events.append(Event(EventReason.CONTROL_UNIT_TAMPERED, message))
