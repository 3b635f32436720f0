"""What the integrations want of a running attempt: the objects it owns, and the gates on its roles' Pods.

While an attempt runs (its ControlUnit is ours and seen), each pass asks the integrations which
objects they want (``Framework.wanted_objects``) and compares them with what the caches show, by kind
and name: an absent one is created (its add event brings the next pass), and one that another owner
controls is never taken over. Until each is there and ours (only while a stranger's holds the name, for
an object that does not ``hold`` the Pods), and while an integration's gate or admission holds them, a
role's Pods are not created: its replicas stay in AttemptPending (row P1-hold), their phaseMessage says why
(``HELD_PREFIX``), the Running condition names them, and one event per role says so when the reason
changes. The objects go away with their owner (the TaskSet, or the attempt's ControlUnit), so no row
deletes them. An object the API server refuses to create ends the attempt (a Failed outcome that names
the object and the refusal), since the same request can never succeed; so does a create that finds a
stranger's object under the name that the caches cannot show (it lacks the TaskSet label).

Every object that is there and ours is kept as declared (``keep_declared``): the digest of each field
its kind declares (``ObjectKind.declared``) that the integration's body holds is compared with the one
its cache kept, and a field someone else changed is patched back (``UpdateOwned``, guarded by the UID,
with an ``OwnedObjectRestored`` event), or, for a kind that may not be written back (a Kueue Workload),
the attempt ends naming the object (an ``OwnedObjectChanged`` event). An object that follows the TaskSet
(``OwnedObject.updates``: the live membership) is compared the same way at the end of the pass, once the
moves settled what it holds; its changes are the controller's own, so they go without an event.

Nothing here asks the clock: a gate opens on a watch event (a Pod, an owned object, the TaskSet).
"""

from __future__ import annotations

from typing import Final

from taskset.api.constants import KIND, EventReason, TaskSetPhase
from taskset.api.spec import Role, TaskSetSpec
from taskset.api.status import AttemptResult, clip
from taskset.decide.context import PassContext, next_pass_now, transient
from taskset.decide.plan import ActionResult, CreateOwned, DeleteOwned, Event, ResultKind, UpdateOwned
from taskset.decide.preemption import charge_admission_preemption
from taskset.decide.upkeep import LEFT_BEHIND_OBJECT, OWNED_DATA, OWNED_OBJECT
from taskset.decide.waiting import HELD_PREFIX, WAIT_MESSAGE_MAX
from taskset.integrations.base import Attempt
from taskset.integrations.framework import Admissions
from taskset.objects.owned import OwnedObject, Owner, Scope, control_unit_owner, manifest, taskset_owner
from taskset.observed.proof import ProofSubject, creation_proof, owned_subject, proves
from taskset.observed.slim import EVERY_ITEM, declared_digests, declared_value, path_label
from taskset.observed.views import OwnedView

# Seconds until the pass that makes anew an object an earlier TaskSet object of the same name left behind.
LEFT_BEHIND_RECHECK: Final = 1.0
# Reasons joined into one hold when several objects are missing, bounded like every wait message.
_JOIN = "; "
_RUNNING: Final = (TaskSetPhase.ATTEMPT_PREPARING, TaskSetPhase.ATTEMPT_RUNNING)


def attempt_of(ctx: PassContext, spec: TaskSetSpec | None = None) -> Attempt | None:
    """What the integrations may know of this attempt, running with ``spec`` (by default the pass's);
    None before its spec is known. The one place an ``Attempt`` is made: again only when the pass moves
    to another spec or attempt (T3, T14)."""
    spec = ctx.plan.spec if spec is None else spec
    known = ctx.attempt
    if spec is None:
        return None
    if known is None or known.spec is not spec or known.attempt != ctx.status.attempt_id:
        ref = ctx.ref
        known = Attempt(
            ref.name,
            ref.namespace,
            ref.uid,
            ctx.status.attempt_id,
            spec,
            labels=ref.labels,
            status=ctx.status,
        )
        ctx.attempt = known
    return known


def admission_of(ctx: PassContext, attempt: Attempt) -> Admissions:
    """What the admitting integrations say of ``attempt`` (``Framework.admission``), asked once per
    attempt and spec in a pass."""
    known = ctx.admissions
    if known is None or known[0] is not attempt:
        known = (attempt, ctx.settings.framework.admission(attempt, ctx.observed))
        ctx.admissions = known
    return known[1]


def sync_owned(ctx: PassContext) -> None:
    """Once per pass, while the attempt runs: create the wanted objects that are missing, and keep why
    the roles must wait for them (``PassContext.owned_hold``)."""
    if ctx.owned_synced:
        return
    ctx.owned_synced = True
    attempt = attempt_of(ctx)
    if attempt is None:
        return
    reasons = [
        reason
        for wanted in ctx.settings.framework.wanted_objects(attempt)
        if (reason := _sync_one(ctx, wanted)) is not None
    ]
    ctx.owned_hold = _JOIN.join(reasons) or None
    end_if_refused(ctx, attempt)
    charge_admission_preemption(ctx, admission_of(ctx, attempt).preempted)


def end_if_refused(ctx: PassContext, attempt: Attempt) -> None:
    """An admission refuses the attempt (``Admission.refused``): it ends as failed, naming why, as an
    object the API server refuses does; its retry policy decides what follows."""
    if ctx.status.attempt_result is not None:
        return
    reason = admission_of(ctx, attempt).refused
    if reason is not None:
        ctx.status.attempt_result = AttemptResult(False, clip(reason, WAIT_MESSAGE_MAX))


def _owner(ctx: PassContext, scope: Scope) -> Owner:
    if scope == Scope.TASKSET:
        return taskset_owner(ctx.ref.name, ctx.ref.uid)
    unit = ctx.observed.control_unit
    return control_unit_owner(unit.name if unit else "", ctx.status.control_unit_uid or "")


def _sync_one(ctx: PassContext, wanted: OwnedObject) -> str | None:
    """Why the roles wait for ``wanted``, or None when it is there and ours; asks for it if absent."""
    owner = _owner(ctx, wanted.scope)
    seen = ctx.observed.owned.get((wanted.kind.key, wanted.name))
    label = f"{wanted.kind.kind} {wanted.name}"
    key, subject = ctx.settings.proof_key, _subject(ctx, wanted.kind.key, wanted.name, owner.kind, owner.uid)
    if seen is None:
        proof = creation_proof(key, subject)
        body = manifest(wanted, taskset=ctx.ref.name, namespace=ctx.ref.namespace, owner=owner, proof=proof)
        ctx.plan.intents.append(
            CreateOwned(
                wanted.name, wanted.kind, wanted.integration, body, row=OWNED_OBJECT, follows=wanted.updates
            )
        )
        return f"waiting for {label} ({wanted.integration})" if wanted.holds else None
    # Its controlling owner reference is anyone's to write; the proof is only the controller's.
    if seen.controller_uid != owner.uid or not proves(seen.proof, key, subject):
        return foreign_message(label, wanted.integration)
    if seen.deleting:
        return f"waiting for {label} to be deleted and made anew ({wanted.integration})"
    if not wanted.updates:  # one that follows the TaskSet is kept at the end of the pass
        keep_declared(ctx, wanted, seen)
    return None


def update_owned(ctx: PassContext) -> None:
    """At the end of a pass that compared the owned objects (the attempt runs): keep each one that
    follows the TaskSet (``OwnedObject.updates``) as the pass's moves made it, when it is there, ours and
    not going away. Nothing is read back from it: what it holds is computed from the TaskSet, so a
    difference (a stranger's edit included) is overwritten."""
    attempt = attempt_of(ctx) if ctx.owned_synced else None
    if attempt is None:
        return
    for wanted in ctx.settings.framework.followed_objects(attempt):
        seen = ctx.observed.owned.get((wanted.kind.key, wanted.name))
        if seen is not None and not seen.deleting and _ours(ctx, wanted, seen):
            keep_declared(ctx, wanted, seen)


def _ours(ctx: PassContext, wanted: OwnedObject, seen: OwnedView) -> bool:
    """Whether ``seen`` is the controller's object for ``wanted``: controlled by its owner, with the proof."""
    owner = _owner(ctx, wanted.scope)
    subject = _subject(ctx, wanted.kind.key, wanted.name, owner.kind, owner.uid)
    return seen.controller_uid == owner.uid and proves(seen.proof, ctx.settings.proof_key, subject)


def drifted(wanted: OwnedObject, seen: OwnedView) -> tuple[tuple[str, ...], ...]:
    """The fields of ``wanted``'s kind that its body declares and whose cached digest differs (changed or
    removed by someone else, or, for one that follows the TaskSet, declared anew), in declared order."""
    want = declared_digests(wanted.body, wanted.kind.declared)
    return tuple(
        path
        for path in wanted.kind.declared
        if (label := path_label(path)) in want and seen.declared.get(label) != want[label]
    )


def keep_declared(ctx: PassContext, wanted: OwnedObject, seen: OwnedView) -> None:
    """Keep ``seen`` (there and ours) as ``wanted`` declares it: patch its drifted fields back, or, where
    its kind may not be written back (``ObjectKind.restorable``), end the running attempt naming it."""
    paths = drifted(wanted, seen)
    if not paths:
        return
    label, names = f"{wanted.kind.kind} {wanted.name}", ", ".join(path_label(path) for path in paths)
    if wanted.kind.restorable and not any(EVERY_ITEM in path for path in paths):
        fields = tuple((path, declared_value(wanted.body, path)) for path in paths)
        update = UpdateOwned(wanted.name, seen.uid, fields, wanted.kind, wanted.integration, row=OWNED_DATA)
        ctx.plan.intents.append(update)
        followed = wanted.kind.followed  # of a follower: the fields it changes itself (empty: all)
        strangers = [path_label(p) for p in paths if wanted.updates and followed and p not in followed]
        if not wanted.updates or strangers:  # a follower's changes are the controller's own
            names = ", ".join(strangers) or names
            text = f"{label}: {names} changed by someone else, restored as declared ({wanted.integration})"
            ctx.plan.events.append(Event(EventReason.OWNED_OBJECT_RESTORED, clip(text, WAIT_MESSAGE_MAX)))
        return
    if ctx.status.phase not in _RUNNING or ctx.status.attempt_result is not None:
        return
    message = clip(
        f"{label} was changed by someone else ({names}) and may not be written back ({wanted.integration})",
        WAIT_MESSAGE_MAX,
    )
    ctx.plan.events.append(Event(EventReason.OWNED_OBJECT_CHANGED, message))
    ctx.status.attempt_result = AttemptResult(False, message)
    next_pass_now(ctx)


def owned_updated(ctx: PassContext, intent: UpdateOwned, result: ActionResult) -> None:
    """An owned object's declared fields came back: written, gone or replaced meanwhile (its events bring
    the next pass, which creates or compares it anew), a failure to retry with backoff, or refused by the
    API server (its validation or an admission webhook): a Warning event names it and why (for the
    live membership, the status already says the generation the object does not show), and the
    retries back off."""
    if result.kind == ResultKind.INVALID:
        message = f"{intent.kind.kind} {intent.name} update refused: {result.message}"
        ctx.plan.events.append(
            Event(EventReason.OWNED_OBJECT_UPDATE_REFUSED, clip(message, WAIT_MESSAGE_MAX))
        )
    if result.kind in (ResultKind.ERROR, ResultKind.INVALID):
        ctx.plan.backoff = True


def foreign_message(label: str, integration: str) -> str:
    """Why an object under the wanted name is never taken over."""
    return f"{label} exists and is not controlled by this TaskSet ({integration})"


def gate(ctx: PassContext, position: int, role: Role) -> str | None:
    """Why the role's Pods may not be created now, or None: the owned objects first, then the
    integrations' gates and admissions in order. Once per role and pass."""
    if position in ctx.gates:
        return ctx.gates[position]
    reason = ctx.owned_hold
    attempt = attempt_of(ctx)
    if reason is None and attempt is not None:
        reason = _gate(ctx, attempt, role)
    ctx.gates[position] = reason
    return reason


def recheck_gates(ctx: PassContext) -> None:
    """At the end of a pass: a gate that closed on what the status recorded (a ``dependsOn``) may have
    been asked before the replicas it waits for moved in this same pass (a role that depends on one
    declared after it). No watch event follows the controller's own status write, so if the pass's moves
    open such a gate, look again at once."""
    attempt, spec = attempt_of(ctx), ctx.plan.spec
    if attempt is None or spec is None or ctx.owned_hold is not None:
        return
    for position, reason in ctx.gates.items():
        if reason is None or position >= len(spec.roles):
            continue
        role = spec.roles[position]
        if _gate(ctx, attempt, role) is None:
            next_pass_now(ctx)
            return


def _gate(ctx: PassContext, attempt: Attempt, role: Role) -> str | None:
    admissions = admission_of(ctx, attempt)
    return ctx.settings.framework.gate(attempt, role, ctx.observed, ctx.status, admissions)


def report_hold(ctx: PassContext, position: int, role: Role, message: str) -> str:
    """The held replica's phaseMessage for the gate's ``reason``; one event per role and pass when a
    replica's message starts saying it (the status is the memory, so each change is said once)."""
    reason = gate(ctx, position, role)
    if reason is None:
        return message
    text = clip(HELD_PREFIX + reason, WAIT_MESSAGE_MAX)
    if text != message and position not in ctx.held_reported:
        ctx.held_reported.add(position)
        ctx.plan.events.append(
            Event(EventReason.ROLE_HELD, clip(f"TaskRole:{role.name}: {reason}", WAIT_MESSAGE_MAX))
        )
    return text


# ----- results --------------------------------------------------------------------------------------------


def owned_created(ctx: PassContext, intent: CreateOwned, result: ActionResult) -> None:
    """An integration's object came back: made or already there (its watch event brings the next
    pass), refused for good (the attempt ends, naming it), or a transient failure to retry."""
    foreign = result.kind == ResultKind.EXISTS and _foreign(intent, result)
    if result.kind in (ResultKind.OK, ResultKind.EXISTS) and not foreign:
        return
    if foreign and isinstance(result.view, OwnedView) and _left_behind(ctx, intent, result.view):
        stale = result.view
        ctx.plan.intents.append(
            DeleteOwned(stale.name, stale.uid, False, intent.kind, intent.integration, row=LEFT_BEHIND_OBJECT)
        )
        ctx.plan.requeue(LEFT_BEHIND_RECHECK)  # made anew by the pass after it is gone
        return
    message = f"{intent.kind.kind} {intent.name} creation rejected: {result.message}"
    if foreign:
        message = foreign_message(f"{intent.kind.kind} {intent.name}", intent.integration)
    if result.kind == ResultKind.INVALID or foreign:
        ctx.plan.events.append(Event(EventReason.OWNED_OBJECT_CREATION_FAILED, message))
        if (
            ctx.status.phase in (TaskSetPhase.ATTEMPT_PREPARING, TaskSetPhase.ATTEMPT_RUNNING)
            and ctx.status.attempt_result is None
        ):
            ctx.status.attempt_result = AttemptResult(False, message)
        next_pass_now(ctx)
        return
    transient(
        ctx, EventReason.OWNED_OBJECT_CREATION_FAILED, f"{intent.kind.kind} {intent.name}: {result.message}"
    )


def _subject(ctx: PassContext, kind_key: str, name: str, owner_kind: str, owner_uid: str) -> ProofSubject:
    """What an owned object's proof binds. An object the TaskSet owns for its whole life is bound to the
    TaskSet's name rather than its UID: one left behind by an earlier TaskSet object of that name
    (deleted with orphan propagation, W-16) is then still provably this controller's, and is removed
    rather than taken for a stranger's. An attempt's object is bound to its ControlUnit's UID."""
    owner = f"{KIND}/{ctx.ref.name}" if owner_kind == KIND else owner_uid
    return owned_subject(ctx.ref.namespace, kind_key, name, owner)


def _left_behind(ctx: PassContext, intent: CreateOwned, view: OwnedView) -> bool:
    """Whether the object a create found is this controller's, left by an earlier TaskSet object of
    the same name: a proof for this TaskSet's name, though not controlled by this TaskSet (an orphaning
    delete removed its owner reference, or the garbage collector has not reached it yet). Only one
    TaskSet of a name exists at a time, so it is no living TaskSet's."""
    subject = _subject(ctx, intent.kind.key, intent.name, KIND, "")
    return proves(view.proof, ctx.settings.proof_key, subject)


def _foreign(intent: CreateOwned, result: ActionResult) -> bool:
    """Whether the object a create found under its name is controlled by another owner than the one the
    manifest names: one the caches cannot show (it lacks the TaskSet label), so no pass can hold the
    roles for it; the attempt ends instead, naming it, as for a refused create."""
    view = result.view
    if not isinstance(view, OwnedView):
        return False
    refs = intent.manifest.get("metadata", {}).get("ownerReferences") or [{}]
    return bool(view.controller_uid != refs[0].get("uid"))


def owned_deleted(ctx: PassContext, intent: DeleteOwned, result: ActionResult) -> None:
    """An integration's object's delete came back: only a failure matters (retry with backoff)."""
    if result.kind == ResultKind.ERROR:
        ctx.plan.backoff = True
