"""External deletion of Pods, of the ControlUnit ConfigMap and of the TaskSet itself,
with each propagation policy, at each phase that can be held still.

Every case of the tables below runs at once, in one namespace, against the real controller process, with
the chaos suite's history recorder on (the module fixture ``run``, about 40 s); each case is then its own
test item, named by a sentence, that reports what its thread saw. One case is one TaskSet: it is brought
to a phase, a deletion is injected, and what follows is checked against the spec:

* a replica's Pod (its grace period, or grace 0), section 8.1 and rows P10/P11/P11-R: the attempt counts
  as failed, so the role's retry policy applies (the same Pod name again, ``ReplicaAttemptID`` 1, and the
  TaskSet succeeds), else the TaskSet's, else the replica ends with ``Retry is forbidden``, the role fails
  and the TaskSet ends ``Failed`` with ``TaskSet completed beacause taskrole(r) is failed``;
* the ControlUnit with each propagation policy, section 8.3: the attempt ends failed and the TaskSet retry
  policy applies (``c-<ts>-1``, and the TaskSet succeeds), else the TaskSet ends ``Failed`` with the retry
  deletion as its message (``ControlUnit c-<ts>-0 was deleted``). The controller's log tells
  how: T11 (the ConfigMap seen gone, message ``ControlUnit c-<ts>-0 was deleted``) or T12 (seen lingering
  with a deletionTimestamp, which Foreground and Orphan deletion allow but Background never does). With
  Orphan and no retry the Pods the status recorded are deleted once the TaskSet has completed (
  nothing else would ever end them); a retry deletes them first (row P0) and, since
  the fix this suite found (W-11, ``taskset.decide.replicas._earlier_attempt_alive``), starts no Pod of
  the next attempt until every Pod of the previous one is gone: the slow-termination cases hold one old
  Pod with a finalizer for SLOW seconds to make that window certain;
* the TaskSet with each propagation policy, section 8.4: it disappears and no retry starts (W-10). With
  Foreground and Background its ControlUnit and Pods go too. With Orphan the garbage collector strips the
  ControlUnit's owner reference only: the ControlUnit stays, its Pods with it (they are its dependents,
  not the TaskSet's), and the controller leaves them alone, even in the pass that sees the ControlUnit
  stripped while the TaskSet still lingers (a loaded collector: that pass ends the attempt, and
  deleting the Pods it recorded as orphans made them vanish here), since Pods that still name their
  ControlUnit are no orphans (``taskset.decide.deletions``). A TaskSet re-created under the same name
  (W-16) meets the orphaned ``c-<ts>-0``: a ControlUnit name conflict (W-24: a Warning event, the attempt
  failed, nothing adopted, nothing deleted); once they are cleaned away, and after every other TaskSet
  deletion, the re-created TaskSet succeeds.

Phases held still for the injection: a replica Pending and not yet scheduled (a scheduling gate) or
Pending but assigned (``sim.HOLD``), the TaskSet Preparing; Running; a replica waiting out its role
retry delay; the TaskSet waiting out its own retry delay; and a Pod that has exited (Succeeded or Failed)
but is not yet deleted by the controller: that window exists only while the controller has not looked,
so the controller process is frozen (SIGSTOP) while the Pod exits and is deleted, then thawed (SIGCONT).
The phases the controller passes in well under a second by itself (a replica or an attempt in
CreationRequested, DeletionPending or DeletionRequested) are not targeted.

After every case, a fresh TaskSet must succeed in the namespace, the controller process must never have
exited or panicked, and the record must show no two live Pods of one replica, no overlapping attempts and
no status going back.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from devcluster import Cluster, sim
from taskset.api import constants as c
from tests.builders import TaskSetBuilder, pod_template
from tests.chaos.history import History
from tests.chaos.run import CATCH_UP
from tests.integration.daemon import Daemon
from tests.integration.harness import TaskSets, eventually

P = c.ReplicaPhase
T = c.TaskSetPhase
WAIT = 60.0  # seconds for any one step of a case
POLL = 0.5
UNTOUCHED = 4.0  # seconds leftovers are watched to prove the controller leaves them alone
RETRY_DELAY = 90  # seconds: a retry delay no case outlives, so "waiting out the delay" is a stable phase
QUICK = 0.3  # seconds a released or scripted Pod runs before it exits
FOREVER = "sleep 3600"
SLOW = 4.0  # seconds a slowly terminating Pod lingers once its deletion has begun
SLOW_FINALIZER = "sim.octopus.openi.pcl.cn/slow-termination"


class CaseError(AssertionError):
    pass


@dataclass(frozen=True)
class Transition:
    """A ``TaskSetPhaseTransition`` record of the controller's log (spec 10.2)."""

    source: str
    target: str
    reason: str


def wait_for(predicate: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
    """``eventually`` at this file's slower poll: 45 cases wait side by side."""
    return eventually(predicate, timeout, what, poll=POLL)


# ----- the phases a deletion is injected in -------------------------------------------------------------


def replicas_of(status: dict[str, Any]) -> list[dict[str, Any]]:
    return [r for role in status.get("roleStatus") or [] for r in role.get("replicaStatus") or []]


def first_replica(status: dict[str, Any]) -> dict[str, Any]:
    found = replicas_of(status)
    return found[0] if found else {}


@dataclass(frozen=True)
class Phase:
    """Where a case stands when its deletion is injected: the role template that gets it there (and
    whether it needs the test to end its Pods later), and the status that proves it is there."""

    what: str
    template: Callable[[int], dict[str, Any]]  # replicas -> the role template
    reached: Callable[[dict[str, Any]], bool]  # the TaskSet status shows the phase
    taskset_phase: str  # the TaskSet's phase then
    released: bool = True  # Pods created after the injection are ended by the test (run forever or held)
    role_delay: bool = False  # the role retries with RETRY_DELAY (the phase is that delay)
    taskset_delay: bool = False  # the TaskSet retries with RETRY_DELAY (the phase is that delay)


def _all(status: dict[str, Any], phase: str, taskset_phase: str) -> bool:
    found = replicas_of(status)
    return status.get("phase") == taskset_phase and bool(found) and all(r["phase"] == phase for r in found)


def _failing_first(replicas: int, failing: tuple[int, ...]) -> dict[str, Any]:
    """Every Pod runs QUICK seconds; the replicas ``failing`` exit 1 in their first attempt (0, 0)."""
    failures = {sim.attempt_exit_code(0, index, 0): "1" for index in failing}
    return pod_template(FOREVER, annotations={**sim.outcome(duration=QUICK), **failures})


GATE = "sim.octopus.openi.pcl.cn/not-yet"

UNSCHEDULED = Phase(
    "a replica Pending and not yet scheduled (TaskSet Preparing)",
    lambda replicas: pod_template(FOREVER, schedulingGates=[{"name": GATE}]),
    lambda s: _all(s, P.ATTEMPT_PREPARING, T.ATTEMPT_PREPARING),
    T.ATTEMPT_PREPARING,
)
ASSIGNED = Phase(
    "a replica Pending but assigned (TaskSet Preparing)",
    lambda replicas: pod_template(FOREVER, annotations={sim.HOLD: "init"}),
    lambda s: _all(s, P.ATTEMPT_ASSIGNED, T.ATTEMPT_PREPARING),
    T.ATTEMPT_PREPARING,
)
RUNNING = Phase(
    "Running",
    lambda replicas: pod_template(FOREVER),
    lambda s: _all(s, P.ATTEMPT_RUNNING, T.ATTEMPT_RUNNING),
    T.ATTEMPT_RUNNING,
)
REPLICA_DELAY = Phase(
    "a replica waiting out its retry delay (TaskSet Running)",
    lambda replicas: _failing_first(replicas, (0,)),
    lambda s: (
        s.get("phase") == T.ATTEMPT_RUNNING and first_replica(s).get("phase") == P.ATTEMPT_RETRY_PENDING
    ),
    T.ATTEMPT_RUNNING,
    released=False,
    role_delay=True,
)
TASKSET_DELAY = Phase(
    "the TaskSet waiting out its retry delay",
    lambda replicas: _failing_first(replicas, tuple(range(replicas))),
    lambda s: s.get("phase") == T.ATTEMPT_RETRY_PENDING,
    T.ATTEMPT_RETRY_PENDING,
    released=False,
    taskset_delay=True,
)


# ----- what every case shares ---------------------------------------------------------------------------


@dataclass
class Context:
    """One case's view of the run: its own API client, the shared recorder and the freeze."""

    api: TaskSets
    history: History
    freeze: Freeze
    injected: list[str] = field(default_factory=list)  # what was deleted, for the run's figures
    observed: str = ""  # a line for the report

    def status(self, name: str) -> dict[str, Any]:
        return self.api.status(name)

    def pod_uids(self, name: str) -> dict[str, str]:
        return {p["metadata"]["uid"]: p["metadata"]["name"] for p in self.api.pods(name)}

    def release(self, name: str, before: set[str], done: threading.Event) -> None:
        """Until ``done``: every Pod of TaskSet ``name`` that was not there at the injection (``before``)
        leaves its scheduling gate or its hold, runs QUICK seconds and exits 0 (the next attempts of a
        gated, held or endless Pod)."""
        seen: set[str] = set()
        while not done.is_set():
            for pod in self.api.pods(name):
                uid = pod["metadata"]["uid"]
                if uid in before or uid in seen:
                    continue
                seen.add(uid)
                annotations = {sim.HOLD: None, **sim.outcome(duration=QUICK, exit_code=0)}
                patch: dict[str, Any] = {"metadata": {"annotations": annotations}}
                if pod["spec"].get("schedulingGates"):
                    patch["spec"] = {"schedulingGates": None}
                with contextlib.suppress(client.ApiException):  # already gone
                    self.api.core.patch_namespaced_pod(pod["metadata"]["name"], self.api.namespace, patch)
            done.wait(POLL)

    @contextlib.contextmanager
    def releasing(self, name: str, before: set[str], phase: Phase) -> Iterator[None]:
        done = threading.Event()
        thread = threading.Thread(target=self.release, args=(name, before, done), daemon=True)
        if phase.released:
            thread.start()
        try:
            yield
        finally:
            done.set()
            if phase.released:
                thread.join(10)

    @contextlib.contextmanager
    def terminating_slowly(self, pod: str | None) -> Iterator[None]:
        """Pod ``pod`` gets a finalizer; SLOW seconds after its deletion has begun, it is removed (a
        container that ignores SIGTERM until its grace period is over)."""
        if pod is None:
            yield
            return
        patch = self.api.core.patch_namespaced_pod
        patch(pod, self.api.namespace, {"metadata": {"finalizers": [SLOW_FINALIZER]}})
        done = threading.Event()

        def release() -> None:
            while not done.is_set() and not ((self.api.pod(pod) or {}).get("metadata") or {}).get(
                "deletionTimestamp"
            ):
                done.wait(POLL)
            done.wait(SLOW)
            with contextlib.suppress(client.ApiException):
                patch(pod, self.api.namespace, {"metadata": {"finalizers": None}})

        thread = threading.Thread(target=release, daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join(10)

    def final(self, name: str) -> dict[str, Any]:
        status: dict[str, Any] = wait_for(
            lambda: (s := self.status(name)).get("phase") == T.COMPLETED and s, f"{name} completed", 90
        )
        return status

    def reach(self, name: str, phase: Phase) -> dict[str, Any]:
        found: dict[str, Any] = wait_for(
            lambda: phase.reached(s := self.status(name)) and s, f"{name} in {phase.what}"
        )
        return found


def taskset(name: str, phase: Phase, replicas: int, role_retry: bool, taskset_retry: bool) -> dict[str, Any]:
    builder = TaskSetBuilder(name)
    if taskset_retry or phase.taskset_delay:
        builder.retry(True, 1, RETRY_DELAY if phase.taskset_delay else 0)
    retry = (True, 1, RETRY_DELAY if phase.role_delay else 0) if role_retry or phase.role_delay else None
    builder.role("r", replicas, template=phase.template(replicas), retry=retry)
    return builder.obj()


def check(condition: bool, message: str) -> None:
    if not condition:
        raise CaseError(message)


# ----- a replica's Pod -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PodDeleted:
    """One replica; its Pod is deleted in ``phase`` (grace None: the template's 1 s; 0: force)."""

    name: str
    phase: Phase
    grace: int | None
    role_retry: bool = False
    taskset_retry: bool = False

    def run(self, ctx: Context) -> None:
        name, api = self.name, ctx.api
        api.create(taskset(name, self.phase, 1, self.role_retry, self.taskset_retry))
        ctx.reach(name, self.phase)
        ctx.freeze.wait()
        before = set(ctx.pod_uids(name))
        with ctx.releasing(name, before, self.phase):
            options = {} if self.grace is None else {"grace_period_seconds": self.grace}
            api.delete_pod(f"{name}-r-0", **options)
            ctx.injected.append("pod")
            status = ctx.final(name)
        check_pod_outcome(ctx, name, status, self.role_retry, self.taskset_retry)


ROLE_FAILED = "TaskSet completed beacause taskrole(r) is failed"  # spec 6.3, O's spelling


def check_failed_by_the_replica(status: dict[str, Any], observed: str) -> None:
    """The deleted Pod's attempt counted as failed (no exit code captured) and nothing retried it: the
    replica ends with the retry decision, after "Pod <name> was deleted" when no exit was captured;
    the role fails, and the TaskSet with it (default policy)."""
    replica = first_replica(status)
    check(status["state"] == "Failed", f"expected Failed: {observed}")
    check(status["stateMessage"] == ROLE_FAILED, f"expected {ROLE_FAILED!r}: {observed}")
    check((replica["phase"], replica["totalRetriedCount"]) == (P.COMPLETED, 0), observed)
    check(not replica.get("terminatedInfo") or replica["terminatedInfo"]["exitCode"] != 0, observed)
    deleted = c.MSG_POD_DELETED.format(name=replica.get("podName"))
    expected = (
        c.MSG_RETRY_FORBIDDEN if replica.get("terminatedInfo") else f"{deleted}; {c.MSG_RETRY_FORBIDDEN}"
    )
    check(replica["phaseMessage"] == expected, f"expected {expected!r}: {observed}")


def check_pod_outcome(
    ctx: Context, name: str, status: dict[str, Any], role_retry: bool, taskset_retry: bool
) -> None:
    replica = first_replica(status)
    ctx.observed = (
        f"{status['state']}, replica retries {replica.get('totalRetriedCount')}, TaskSet retries "
        f"{status.get('totalRetriedCount')}: {status.get('stateMessage')!r} / {replica.get('phaseMessage')!r}"
    )
    if role_retry:
        check(status["state"] == "Succeeded", f"expected Succeeded: {ctx.observed}")
        check(replica["totalRetriedCount"] == 1, f"expected one replica retry: {ctx.observed}")
        check(status["totalRetriedCount"] == 0, f"expected no TaskSet retry: {ctx.observed}")
    elif taskset_retry:
        check(status["state"] == "Succeeded", f"expected Succeeded: {ctx.observed}")
        check(status["totalRetriedCount"] == 1, f"expected one TaskSet retry: {ctx.observed}")
    else:
        check_failed_by_the_replica(status, ctx.observed)
    if not role_retry:
        return
    # the next Pod has the same name and the next ReplicaAttemptID (D1), and came after the first was gone
    pods = sorted((p for p in ctx.history.lifetimes("Pod") if p.name == f"{name}-r-0"), key=lambda p: p.born)
    check([p.replica_attempt for p in pods] == ["0", "1"], f"Pods of {name}-r-0: {pods}")


# ----- a replica's Pod that exited, deleted before the controller saw it ----------------------------------


@dataclass(frozen=True)
class ExitedPodDeleted:
    """One Running replica; with the controller frozen its Pod exits ``code`` and is deleted, so the
    controller meets the Pod's end and its disappearance at once (or only the disappearance)."""

    name: str
    code: int
    role_retry: bool

    def run(self, ctx: Context) -> None:
        name, api = self.name, ctx.api
        api.create(taskset(name, RUNNING, 1, self.role_retry, False))
        ctx.reach(name, RUNNING)
        before = set(ctx.pod_uids(name))
        with ctx.releasing(name, before, RUNNING):
            ctx.freeze.inject(lambda: self._exit_then_delete(ctx))
            ctx.injected.append("pod")
            status = ctx.final(name)
        replica = first_replica(status)
        ctx.observed = (
            f"{status['state']}, replica retries {replica.get('totalRetriedCount')}: "
            f"{status.get('stateMessage')!r} / {replica.get('phaseMessage')!r}"
        )
        if self.code != 0 and not self.role_retry:
            check_failed_by_the_replica(status, ctx.observed)
            return
        check(status["state"] == "Succeeded", f"expected Succeeded: {ctx.observed}")
        # exit 0 counts only if the controller captured it before the Pod vanished (P11): either way is
        # documented, so either retry count is right; a failed exit is retried whichever it saw.
        expected = {0, 1} if self.code == 0 else {1}
        check(replica["totalRetriedCount"] in expected, f"expected retries in {expected}: {ctx.observed}")

    def _exit_then_delete(self, ctx: Context) -> None:
        pod = f"{self.name}-r-0"
        ctx.api.end_pod(pod, self.code)
        terminal = "Succeeded" if self.code == 0 else "Failed"
        wait_for(lambda: ((ctx.api.pod(pod) or {}).get("status") or {}).get("phase") == terminal, pod)
        ctx.api.delete_pod(pod)
        wait_for(lambda: ctx.api.pod(pod) is None, f"{pod} gone")


# ----- the ControlUnit -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ControlUnitDeleted:
    """Two replicas; the ControlUnit ``c-<ts>-0`` is deleted with ``propagation`` in ``phase``."""

    name: str
    phase: Phase
    propagation: str
    taskset_retry: bool
    slow: bool = False  # replica 1's old Pod terminates slowly (a finalizer held SLOW seconds)

    def run(self, ctx: Context) -> None:
        name, api = self.name, ctx.api
        uid = api.create(taskset(name, self.phase, 2, False, self.taskset_retry))["metadata"]["uid"]
        ctx.reach(name, self.phase)
        ctx.freeze.wait()
        unit = api.configmap(f"c-{name}-0")
        check(unit is not None, f"c-{name}-0 exists")
        before = ctx.pod_uids(name)
        slow = f"{name}-r-1" if self.slow else None
        with ctx.releasing(name, set(before), self.phase), ctx.terminating_slowly(slow):
            api.core.delete_namespaced_config_map(
                f"c-{name}-0", api.namespace, body=client.V1DeleteOptions(propagation_policy=self.propagation)
            )
            ctx.injected.append("configmap")
            status = ctx.final(name)
        if slow is not None:  # W-11: the retry's Pods, replica 0's too, came after the slow one was gone
            pods = [p for p in ctx.history.lifetimes("Pod") if p.taskset_uid == uid]
            old = [p for p in pods if p.uid in before and p.name == slow]
            new = [p for p in pods if p.taskset_attempt == "1"]
            check(len(old) == 1 and len(new) == 2, f"Pods of {name}: {pods}")
            check(all(old[0].ended_before(p) for p in new), f"attempt 1 overlapped {slow}: {pods}")
        ctx.observed = (
            f"{status['state']}, TaskSet retries {status.get('totalRetriedCount')}: "
            f"{status.get('stateMessage')!r}"
        )
        if self.taskset_retry:
            check(status["state"] == "Succeeded", f"expected Succeeded: {ctx.observed}")
            check(status["totalRetriedCount"] == 1, f"expected one TaskSet retry: {ctx.observed}")
            check(api.configmap(f"c-{name}-1") is None, "the retry's ControlUnit is gone at the end")
        else:
            # not complete, so no completion reason: the deletion is why the attempt failed
            check(status["state"] == "Failed", f"expected Failed: {ctx.observed}")
            deleted = c.MSG_CONTROL_UNIT_DELETED.format(name=f"c-{name}-0")
            check(status["stateMessage"] == deleted, f"expected {deleted!r}: {ctx.observed}")
        units = {u.name for u in ctx.history.lifetimes("ConfigMap") if u.taskset_uid == uid}
        check(
            units == ({f"c-{name}-0", f"c-{name}-1"} if self.taskset_retry else {f"c-{name}-0"}), str(units)
        )
        # with Orphan and no retry, the completed TaskSet deletes the Pods its status recorded
        wait_for(lambda: not set(ctx.pod_uids(name)) & set(before), "the attempt-0 Pods gone")

    def check_log(self, transitions: list[Transition]) -> str:
        """The controller's log of the TaskSet's phases says how attempt 0 ended: the ControlUnit seen
        gone (T11), or seen lingering with a deletionTimestamp first (T12: Foreground and Orphan deletion
        keep it until the garbage collector is done; Background deletion never does)."""
        unit = f"c-{self.name}-0"
        t11 = c.MSG_CONTROL_UNIT_DELETED.format(name=unit)
        t12 = c.MSG_CONTROL_UNIT_BEING_DELETED.format(name=unit)
        ends = [t for t in transitions if t.reason in (t11, t12)]
        check(bool(ends), f"no T11/T12 in the log: {transitions}")
        first = ends[0]
        expected = {(t11, T.ATTEMPT_COMPLETED)}
        if self.propagation != "Background":
            expected.add((t12, T.ATTEMPT_DELETION_REQUESTED))
        check((first.reason, first.target) in expected, f"{first} not in {expected}")
        check(first.source == self.phase.taskset_phase, f"{first} not from {self.phase.taskset_phase}")
        return "T11" if first.reason == t11 else "T12"


# ----- the TaskSet ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskSetDeleted:
    """Two replicas; the TaskSet is deleted with ``propagation`` in ``phase``, then re-created under the
    same name (W-16)."""

    name: str
    phase: Phase
    propagation: str

    def run(self, ctx: Context) -> None:
        name, api = self.name, ctx.api
        first = api.create(taskset(name, self.phase, 2, False, True))
        uid = first["metadata"]["uid"]
        ctx.reach(name, self.phase)
        ctx.freeze.wait()
        pods = ctx.pod_uids(name)
        unit = api.configmap(f"c-{name}-0")
        api.delete(name, self.propagation)
        ctx.injected.append("taskset")
        wait_for(lambda: api.get(name) is None, f"{name} gone")
        orphans = self.propagation == "Orphan" and unit is not None
        if orphans:
            self._orphans_left_alone(ctx, unit, pods)
        else:
            wait_for(
                lambda: api.configmap(f"c-{name}-0") is None and not api.pods(name),
                "its ControlUnit and Pods gone",
            )
        # no retry was started for the deleted TaskSet (W-10)
        units = {u.name for u in ctx.history.lifetimes("ConfigMap") if u.taskset_uid == uid}
        attempts = {p.taskset_attempt for p in ctx.history.lifetimes("Pod") if p.taskset_uid == uid}
        check(units <= {f"c-{name}-0"}, f"ControlUnits of the deleted TaskSet: {units}")
        check(attempts <= {"0"}, f"attempts of the deleted TaskSet: {attempts}")
        ctx.observed = f"gone; {'ControlUnit and Pods orphaned, left alone' if orphans else 'nothing left'}"
        if orphans:
            self._recreated_next_to_orphans(ctx, uid)
        self._recreated(ctx, uid)

    def _orphans_left_alone(self, ctx: Context, unit: dict[str, Any] | None, pods: dict[str, str]) -> None:
        name, api = self.name, ctx.api
        assert unit is not None
        wait_for(
            lambda: not ((api.configmap(f"c-{name}-0") or {}).get("metadata") or {}).get("ownerReferences"),
            "the ControlUnit's owner reference stripped",
        )
        deadline = time.monotonic() + UNTOUCHED
        while time.monotonic() < deadline:
            meta = (api.configmap(f"c-{name}-0") or {}).get("metadata") or {}
            check(meta.get("uid") == unit["metadata"]["uid"], "the ControlUnit stays")
            check(not meta.get("deletionTimestamp"), "the orphaned ControlUnit is not deleted")
            check(ctx.pod_uids(name) == pods, f"its Pods stay: {pods} -> {ctx.pod_uids(name)}")
            time.sleep(POLL)
        for pod in api.pods(name):
            owners = [o["uid"] for o in pod["metadata"].get("ownerReferences") or []]
            check(owners == [unit["metadata"]["uid"]], f"{pod['metadata']['name']} owned by {owners}")

    def _recreated_next_to_orphans(self, ctx: Context, old_uid: str) -> None:
        """A new TaskSet of the same name meets the orphaned ControlUnit under its attempt-0 name: a name
        conflict (W-24), the orphans neither adopted nor deleted; cleaned away, the name is free again."""
        name, api = self.name, ctx.api
        unit = api.configmap(f"c-{name}-0")
        pods = ctx.pod_uids(name)
        api.create(
            TaskSetBuilder(name).role("r", 2, template=pod_template(annotations=sim.outcome(QUICK))).obj()
        )
        status = ctx.final(name)
        check(status["state"] == "Failed", f"re-created next to the orphans: {status}")
        # the reason is in the Warning event and the log; the final message is the retry decision (6.3)
        conflict = ("ControlUnitNameConflict", f"ControlUnit name conflict: c-{name}-0")
        # Events are sent after the status write, asynchronously: the final status can be read first.
        wait_for(lambda: conflict in api.events(name), "the ControlUnitNameConflict event")
        check(status.get("stateMessage") == c.MSG_RETRY_FORBIDDEN, f"re-created: {status}")
        check(api.configmap(f"c-{name}-0") == unit and ctx.pod_uids(name) == pods, "the orphans untouched")
        ctx.observed += "; re-created next to them: Failed, ControlUnitNameConflict"
        api.core.delete_namespaced_config_map(f"c-{name}-0", api.namespace)  # the operator cleans up
        api.delete(name)
        wait_for(lambda: api.get(name) is None and not api.pods(name), "the orphans cleaned away")

    def _recreated(self, ctx: Context, old_uid: str) -> None:
        name, api = self.name, ctx.api
        obj = TaskSetBuilder(name).role("r", 2, template=pod_template(annotations=sim.outcome(QUICK))).obj()
        again = api.create(obj)
        status = ctx.final(name)
        check(again["metadata"]["uid"] != old_uid, "a new object")
        check(
            status["state"] == "Succeeded" and status.get("totalRetriedCount") == 0, f"re-created: {status}"
        )
        ctx.observed += "; re-created: Succeeded"


Case = PodDeleted | ExitedPodDeleted | ControlUnitDeleted | TaskSetDeleted


# ----- the freeze: the controller process stopped while some cases inject ---------------------------------


class Freeze:
    """The cases that need the controller frozen register here and inject together; every other case
    waits until the freeze is over (so it never measures a frozen controller)."""

    def __init__(self, daemon: Daemon, expected: int) -> None:
        self._daemon = daemon
        self._expected = expected
        self._lock = threading.Lock()
        self._injections: list[Callable[[], None]] = []
        self._failures: list[str] = []
        self._ready = threading.Event()
        self.over = threading.Event()
        if expected == 0:
            self.over.set()
        self.seconds = 0.0

    def inject(self, action: Callable[[], None]) -> None:
        with self._lock:
            self._injections.append(action)
            if len(self._injections) == self._expected:
                self._ready.set()
        self.over.wait(2 * WAIT)
        if self._failures:
            raise CaseError(f"the frozen injections failed: {self._failures}")

    def wait(self) -> None:
        if not self.over.wait(2 * WAIT):
            raise CaseError("the freeze never ended")

    def abandon(self) -> None:
        """A case that will never register (it failed before): do not wait for it."""
        with self._lock:
            self._expected -= 1
            if len(self._injections) >= self._expected:
                self._ready.set()

    def run(self) -> None:
        """The coordinator (the fixture's thread): stop the controller, inject, let it go on."""
        try:
            if self._expected <= 0 or not self._ready.wait(WAIT):
                return
            process = self._daemon.process
            assert process is not None
            started = time.monotonic()
            process.send_signal(signal.SIGSTOP)
            try:
                for action in self._injections:
                    try:
                        action()
                    except Exception as err:  # reported by the case that registered it
                        self._failures.append(repr(err))
            finally:
                process.send_signal(signal.SIGCONT)
                self.seconds = time.monotonic() - started
        finally:
            self.over.set()


# ----- the tables -------------------------------------------------------------------------------------------


POD_CASES = [
    pytest.param(
        PodDeleted("pu-grace", UNSCHEDULED, None, role_retry=True),
        id="a Pod not yet scheduled deleted with its grace period is retried and the TaskSet succeeds",
    ),
    pytest.param(
        PodDeleted("pu-force-noretry", UNSCHEDULED, 0),
        id="a Pod not yet scheduled force-deleted without any retry fails the TaskSet",
    ),
    pytest.param(
        PodDeleted("pa-grace", ASSIGNED, None, role_retry=True),
        id="a Pod held Pending-assigned deleted with its grace period is retried and the TaskSet succeeds",
    ),
    pytest.param(
        PodDeleted("pa-force", ASSIGNED, 0, role_retry=True),
        id="a Pod held Pending-assigned force-deleted is retried and the TaskSet succeeds",
    ),
    pytest.param(
        PodDeleted("pa-force-noretry", ASSIGNED, 0),
        id="a Pod held Pending-assigned force-deleted without any retry fails the TaskSet",
    ),
    pytest.param(
        PodDeleted("pr-grace", RUNNING, None, role_retry=True),
        id="a Running Pod deleted with its grace period is retried and the TaskSet succeeds",
    ),
    pytest.param(
        PodDeleted("pr-force", RUNNING, 0, role_retry=True),
        id="a Running Pod force-deleted is retried and the TaskSet succeeds",
    ),
    pytest.param(
        PodDeleted("pr-grace-noretry", RUNNING, None),
        id="a Running Pod deleted with its grace period without any retry fails the TaskSet",
    ),
    pytest.param(
        PodDeleted("pr-force-noretry", RUNNING, 0),
        id="a Running Pod force-deleted without any retry fails the TaskSet",
    ),
    pytest.param(
        PodDeleted("pr-force-tsretry", RUNNING, 0, taskset_retry=True),
        id="a Running Pod force-deleted without a role retry makes the TaskSet retry and succeed",
    ),
    pytest.param(
        ExitedPodDeleted("px-ok", 0, role_retry=True),
        id="a Pod that succeeded and was deleted before the controller saw it ends Succeeded",
    ),
    pytest.param(
        ExitedPodDeleted("px-fail", 1, role_retry=True),
        id="a Pod that failed and was deleted before the controller saw it is retried and succeeds",
    ),
    pytest.param(
        ExitedPodDeleted("px-fail-noretry", 1, role_retry=False),
        id="a Pod that failed and was deleted before the controller saw it fails the TaskSet without retry",
    ),
]

CONTROL_UNIT_CASES = [
    pytest.param(
        ControlUnitDeleted(
            f"cu-{phase_id}-{policy[:2].lower()}{'-r' if retry else ''}", phase, policy, retry
        ),
        id=f"the ControlUnit deleted with {policy} propagation in {phase.what} "
        + (
            "fails the attempt and the TaskSet retry succeeds" if retry else "fails the TaskSet without retry"
        ),
    )
    for phase_id, phase, retries in (
        ("u", UNSCHEDULED, (True,)),
        ("a", ASSIGNED, (True, False)),
        ("r", RUNNING, (True, False)),
        ("d", REPLICA_DELAY, (True,)),
    )
    for policy in ("Foreground", "Background", "Orphan")
    for retry in retries
]

CONTROL_UNIT_CASES += [
    pytest.param(
        ControlUnitDeleted(f"cu-slow-{policy[:2].lower()}", RUNNING, policy, True, slow=True),
        id=f"the ControlUnit deleted with {policy} propagation in Running while an old Pod terminates slowly "
        "starts no Pod of the TaskSet retry before that one is gone",
    )
    for policy in ("Background", "Orphan")
]

TASKSET_CASES = [
    pytest.param(
        TaskSetDeleted(f"ts-{phase_id}-{policy[:2].lower()}", phase, policy),
        id=f"the TaskSet deleted with {policy} propagation in {phase.what} "
        + (
            "leaves its ControlUnit and Pods alone and a re-created TaskSet is not confused"
            if policy == "Orphan" and phase is not TASKSET_DELAY
            else "takes everything with it and a re-created TaskSet succeeds"
        ),
    )
    for phase_id, phase in (("u", UNSCHEDULED), ("a", ASSIGNED), ("r", RUNNING), ("d", TASKSET_DELAY))
    for policy in ("Foreground", "Background", "Orphan")
]

CASES = POD_CASES + CONTROL_UNIT_CASES + TASKSET_CASES


# ----- the run ----------------------------------------------------------------------------------------------


@dataclass
class Run:
    errors: dict[str, str]  # TaskSet name -> the failure of its case ("" if it passed)
    observed: dict[str, str]
    injected: dict[str, int]
    fresh: dict[str, Any]  # status of the TaskSet created after every case
    violations: list[str]
    unverifiable: list[str]
    summary: dict[str, int]
    transitions: dict[str, list[Transition]]  # by TaskSet name, from the controller's log
    daemon_alive: bool
    exit_code: int  # of the graceful stop at the end
    starts: int
    panics: float
    seconds: float
    freeze_seconds: float


def _case_params() -> list[Case]:
    return [param.values[0] for param in CASES]  # type: ignore[misc]


def _transitions(daemon: Daemon) -> dict[str, list[Transition]]:
    found: dict[str, list[Transition]] = {}
    for record in daemon.records():
        if record.get("QueryKey") == "TaskSetPhaseTransition":
            found.setdefault(str(record.get("TaskSet")), []).append(
                Transition(
                    str(record.get("PrePhase")), str(record.get("NextPhase")), str(record.get("Reason"))
                )
            )
    return found


def _panics(daemon: Daemon) -> float:
    text = daemon.get(daemon.metrics_port, "/metrics")[1]
    return sum(
        float(line.rpartition(" ")[2])
        for line in text.splitlines()
        if line.startswith("controller_runtime_reconcile_panics_total")
    )


@pytest.fixture(scope="module")
def run(cluster: Cluster, crd_installed: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    started = time.monotonic()
    namespace = f"external-deletions-{uuid.uuid4().hex[:6]}"
    cluster.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    history = History(cluster, namespace).start()
    daemon = Daemon(cluster, namespace, Path(tmp_path_factory.mktemp("external-deletions")), "--workers=4")
    cases = _case_params()
    freeze = Freeze(daemon, sum(isinstance(case, ExitedPodDeleted) for case in cases))
    contexts = {case.name: Context(TaskSets(cluster, namespace), history, freeze) for case in cases}
    errors: dict[str, str] = {}

    def play(case: Case) -> None:
        try:
            case.run(contexts[case.name])
            errors[case.name] = ""
        except Exception:
            errors[case.name] = traceback.format_exc()
            if isinstance(case, ExitedPodDeleted):
                freeze.abandon()

    try:
        daemon.start()
        threads = [threading.Thread(target=play, args=(case,), name=case.name, daemon=True) for case in cases]
        for thread in threads:
            thread.start()
        freeze.run()
        for thread in threads:
            thread.join(300)
        api = TaskSets(cluster, namespace)
        api.create(
            TaskSetBuilder("fresh")
            .role("ps", 1, template=pod_template(annotations=sim.outcome(QUICK)))
            .role("worker", 2, template=pod_template(annotations=sim.outcome(QUICK)))
            .obj()
        )
        try:
            fresh = api.final("fresh", 90)
        except AssertionError as err:
            fresh = {"error": str(err), "controller": daemon.output()[-2000:]}
        time.sleep(CATCH_UP)
        history.stop()
        verdict = history.verdict()
        owners = {life.taskset_uid[:8]: life.name for life in history.lifetimes("ConfigMap")}
        violations = [
            f"{v} [{', '.join(n for u, n in owners.items() if u in v)}]" for v in verdict.violations
        ]
        injected: dict[str, int] = {}
        for ctx in contexts.values():
            for what in ctx.injected:
                injected[what] = injected.get(what, 0) + 1
        alive, panics = daemon.running(), _panics(daemon)
        exit_code = daemon.stop() if alive else -1  # a graceful stop: the whole log is written
        yield Run(
            errors=errors,
            observed={name: ctx.observed for name, ctx in contexts.items()},
            injected=injected,
            fresh=fresh,
            violations=violations,
            unverifiable=verdict.unverifiable,
            summary=history.summary(),
            transitions=_transitions(daemon),
            daemon_alive=alive,
            exit_code=exit_code,
            starts=daemon.starts,
            panics=panics,
            seconds=time.monotonic() - started,
            freeze_seconds=freeze.seconds,
        )
    finally:
        history.stop()
        if daemon.running():
            daemon.stop()
        with contextlib.suppress(OSError):
            cluster.request("DELETE", f"/api/v1/namespaces/{namespace}")


@pytest.mark.parametrize("case", CASES)
def test_an_external_deletion_ends_as_documented(run: Run, case: Case) -> None:
    error = run.errors.get(case.name)
    assert error is not None, f"{case.name} did not finish"
    if error:
        pytest.fail(f"{case.name}: {error}", pytrace=False)
    seen = ""
    if isinstance(case, ControlUnitDeleted):
        try:
            seen = f" ({case.check_log(run.transitions.get(case.name, []))})"
        except CaseError as err:
            pytest.fail(f"{case.name}: {err}", pytrace=False)
    print(f"{case.name}: {run.observed[case.name]}{seen}")


def test_the_record_shows_no_overlap_and_no_going_back(run: Run) -> None:
    assert run.violations == [], "\n".join(run.violations)
    assert run.summary["unverifiable"] <= run.summary["pods"] // 10, run.unverifiable


def test_the_controller_kept_working(run: Run) -> None:
    assert run.daemon_alive and run.starts == 1 and run.exit_code == 0
    assert run.panics == 0
    assert run.fresh["state"] == "Succeeded", run.fresh
    print(
        f"\nexternal deletions: {len(CASES)} cases, injected {run.injected}, history {run.summary}, "
        f"controller frozen {run.freeze_seconds:.1f} s, {run.seconds:.0f} s in all"
    )
