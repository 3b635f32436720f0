"""A tiny in-memory world for driving the pure decision functions through whole lifecycles.

Not an API server: it only stores the ConfigMap and Pods the plans ask for, answers intents the way
the API server would (create -> UID, AlreadyExists, delete -> gone), and lets a test move Pods through
their phases. It exists so table tests can check the machines over many passes without a cluster.
"""

from __future__ import annotations

import copy
import itertools
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import structlog

from clock import Clock
from informers import Store
from taskset.api.constants import ANNOTATION_CREATION_PROOF, TaskSetPhase
from taskset.api.live_fields import suspended
from taskset.api.scale import scale_requesters
from taskset.api.spec import parse_taskset
from taskset.api.status import ReplicaStatus, RoleStatus, TaskSetStatus
from taskset.decide import (
    ActionResult,
    ApplyOwnedStatus,
    CreateOwned,
    CreatePod,
    DeleteOwned,
    DeletePod,
    DeleteTaskSet,
    Intent,
    Pass,
    Plan,
    ResultKind,
    ResultView,
    Settings,
    TaskSetRef,
    UpdateOwned,
    decide,
)
from taskset.integrations import Framework, Integration
from taskset.integrations.identity_env import IdentityEnv
from taskset.objects.controlunit import build_control_unit
from taskset.objects.owned import CONFIGMAPS
from taskset.objects.pods import build_pod
from taskset.observed.nodes import node_view
from taskset.observed.proof import PROCESS_PROOF_KEY, ProofSubject, creation_proof
from taskset.observed.views import Observed, control_unit_view, owned_view, pod_view
from taskset.runtime.indexes import OWNER_INDEX, POD_INDEX, controller_uid_index, taskset_index
from taskset.runtime.kube import KubeError
from taskset.runtime.reconciler import Reconciler

_uids = itertools.count(1)


def new_uid() -> str:
    return f"uid-{next(_uids)}"


@dataclass
class World:
    taskset: dict[str, Any]
    now: datetime = field(default_factory=lambda: datetime(2026, 1, 1, tzinfo=UTC))
    units: dict[str, dict[str, Any]] = field(default_factory=dict)
    pods: dict[str, dict[str, Any]] = field(default_factory=dict)
    status: TaskSetStatus | None = None
    settings: Settings = field(default_factory=Settings)
    created_pods: list[dict[str, Any]] = field(default_factory=list)
    events: list[str] = field(default_factory=list)
    plans: list[Plan] = field(default_factory=list)
    deleting: bool = False
    taskset_deletes: list[str] = field(default_factory=list)  # UIDs the TTL's deletes named
    pods_refused: bool = False  # Pod creates answer 503, as an overloaded API server does
    # When set, what every Pod create answers instead (an admission denial, for now or for good); a
    # "{pod}" in its message is the Pod's name, as the API server's own words name it.
    pod_refusal: ActionResult | None = None
    # Objects integrations own, by (kind key, name), as the API server keeps them; and, when set, the
    # message with which the API server refuses to create any more of them (a 422).
    owned: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    owned_refused: str | None = None
    # Pods deleted while disrupted, as the Pod cache's delete handler last saw them, by name.
    gone: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Cluster-scoped objects integrations read (Kueue's ResourceFlavors), by (kind key, name).
    read: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    # Set: a deleted Pod stays, terminating, until ``remove`` (its kubelet stopped it), as on a cluster;
    # unset: it is gone at once, as under kwok without a grace period.
    graceful: bool = False
    # Nodes by name, as the API server keeps them; the pass sees those of its Pods that are lost.
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        meta = self.taskset.setdefault("metadata", {})
        meta.setdefault("namespace", "ns")
        meta.setdefault("uid", new_uid())
        meta.setdefault("generation", 1)

    @property
    def ref(self) -> TaskSetRef:
        meta = self.taskset["metadata"]
        return TaskSetRef(
            meta["name"],
            meta["namespace"],
            meta["uid"],
            meta["generation"],
            self.deleting,
            suspended=suspended(self.taskset),
            labels=meta.get("labels") or {},
            scale_requesters=scale_requesters(self.taskset),
        )

    def declared(self, kind_key: str) -> tuple[tuple[str, ...], ...]:
        """The fields the controller declares for the kind of ``kind_key`` (``ObjectKind.declared``)."""
        kinds = {kind.key: kind for kind in (CONFIGMAPS, *self.settings.framework.owned_kinds())}
        return kinds[kind_key].declared if kind_key in kinds else ()

    def observed(self) -> Observed:
        status = self.status
        attempt = status.total_retried_count if status else 0
        name = f"c-{self.ref.name}-{attempt}"
        unit = self.units.get(name)
        others = tuple(control_unit_view(u, "spec.json") for n, u in self.units.items() if n != name)
        return Observed(
            control_unit=control_unit_view(unit, "spec.json") if unit else None,
            pods={n: pod_view(p) for n, p in self.pods.items()},
            other_control_units=others,
            owned={key: owned_view(obj, self.declared(key[0])) for key, obj in self.owned.items()},
            gone={n: pod_view(p) for n, p in self.gone.items()},
            read=self.read,
            nodes={
                name: view
                for name, view in ((n, node_view(obj)) for n, obj in self.nodes.items())
                if view.lost and any(p.get("spec", {}).get("nodeName") == name for p in self.pods.values())
            },
        )

    def reconcile(self) -> Plan:
        step = decide(
            self.ref,
            parse_taskset(self.taskset),
            self.status,
            self.observed(),
            self.now,
            settings=self.settings,
        )
        plan = step.plan
        for intent in plan.intents:
            step.fold(intent, self._execute(intent, plan))
        step.conclude()
        self.status = plan.status
        self.events += [f"{e.reason}: {e.message}" for e in plan.events]
        self.plans.append(plan)
        return plan

    def settle(self, passes: int = 20) -> None:
        """Reconcile until a pass changes nothing."""
        for _ in range(passes):
            before = self.status.to_json() if self.status else None
            plan = self.reconcile()
            self.gc()
            if plan.status.to_json() == before and not plan.intents:
                return

    def tick(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)

    # ----- the API server's side -----------------------------------------------------------
    def _execute(self, intent: Any, plan: Plan) -> ActionResult:
        if isinstance(intent, DeleteTaskSet):  # the TTL: the TaskSet goes, as the API server does it
            self.deleting = True
            self.taskset_deletes.append(intent.uid)
            return ActionResult(ResultKind.OK)
        if isinstance(intent, CreateOwned) and not intent.control_unit:
            return self._create_owned(intent)
        if isinstance(intent, UpdateOwned):
            return self._update_owned(intent)
        if isinstance(intent, CreateOwned):
            if intent.name in self.units:
                return ActionResult(ResultKind.EXISTS, view_of(intent, self.units[intent.name]))
            unit = copy.deepcopy(dict(intent.manifest))  # what the pass decided, as the API server keeps it
            unit["metadata"]["uid"] = new_uid()
            self.units[intent.name] = unit
            return ActionResult(ResultKind.OK, view_of(intent, unit))
        if isinstance(intent, DeleteOwned) and not intent.control_unit:
            return self._delete_owned(intent)
        if isinstance(intent, ApplyOwnedStatus):
            return self._apply_status(intent)
        if isinstance(intent, DeleteOwned):
            found = self.units.get(intent.name)
            if found is None:
                return ActionResult(ResultKind.NOT_FOUND)
            unit = found
            if unit["metadata"]["uid"] != intent.uid:
                return ActionResult(ResultKind.CONFLICT)
            unit["metadata"]["deletionTimestamp"] = "now"  # foreground: pods go first (gc())
            return ActionResult(ResultKind.OK)
        if isinstance(intent, CreatePod):
            if self.pod_refusal is not None:
                refusal = self.pod_refusal
                return ActionResult(refusal.kind, message=refusal.message.replace("{pod}", intent.name))
            if self.pods_refused:
                return ActionResult(ResultKind.ERROR, message="the server is currently unable to handle it")
            if intent.name in self.pods:
                return ActionResult(ResultKind.EXISTS, view_of(intent, self.pods[intent.name]))
            assert plan.spec is not None and intent.identity is not None
            role = plan.spec.roles[intent.role]
            pod = build_pod(role.template, intent.identity, intent.decorations)
            pod["metadata"]["uid"] = new_uid()
            pod["status"] = {"phase": "Pending"}
            self.pods[intent.name] = pod
            self.created_pods.append(pod)
            return ActionResult(ResultKind.OK, view_of(intent, pod))
        assert isinstance(intent, DeletePod)
        existing = self.pods.get(intent.name)
        if existing is None:
            return ActionResult(ResultKind.NOT_FOUND)
        pod = existing
        if pod["metadata"]["uid"] != intent.uid:
            return ActionResult(ResultKind.CONFLICT)
        if self.graceful and not intent.force:  # a forced delete needs no kubelet
            pod["metadata"].setdefault("deletionTimestamp", "2026-01-01T00:00:05Z")
        else:
            self._removed(intent.name)  # like kwok: gone at once
        return ActionResult(ResultKind.OK)

    def _create_owned(self, intent: CreateOwned) -> ActionResult:
        key = (intent.kind.key, intent.name)
        if key in self.owned:
            return ActionResult(ResultKind.EXISTS, owned_view(self.owned[key], intent.kind.declared))
        if self.owned_refused is not None:
            return ActionResult(ResultKind.INVALID, message=self.owned_refused)
        obj = copy.deepcopy(dict(intent.manifest))
        obj["metadata"]["uid"] = new_uid()
        self.owned[key] = obj
        return ActionResult(ResultKind.OK, owned_view(obj, intent.kind.declared))

    def _apply_status(self, intent: ApplyOwnedStatus) -> ActionResult:
        """Server-side apply of status conditions, a list mapped by type: the applied ones replace those
        of their type, the others stay."""
        found = self.owned.get((intent.kind.key, intent.name))
        if found is None:
            return ActionResult(ResultKind.NOT_FOUND)
        if found["metadata"]["uid"] != intent.body["metadata"]["uid"]:
            return ActionResult(ResultKind.INVALID, message="metadata.uid: field is immutable")
        status = found.setdefault("status", {})
        applied = intent.body["status"].get("conditions") or []
        types = {c["type"] for c in applied}
        status["conditions"] = [c for c in status.get("conditions") or [] if c["type"] not in types] + applied
        return ActionResult(ResultKind.OK)

    def _update_owned(self, intent: UpdateOwned) -> ActionResult:
        """As the JSON patch does it: each field replaced whole, only on the object with the UID."""
        found = self.owned.get((intent.kind.key, intent.name))
        if found is None:
            return ActionResult(ResultKind.NOT_FOUND)
        if found["metadata"]["uid"] != intent.uid:
            return ActionResult(ResultKind.ERROR, message="the test of metadata.uid failed")
        for path, value in intent.fields:
            parent = found
            for step in path[:-1]:
                parent = parent[step]
            parent[path[-1]] = copy.deepcopy(value)
        return ActionResult(ResultKind.OK)

    def _delete_owned(self, intent: DeleteOwned) -> ActionResult:
        key = (intent.kind.key, intent.name)
        found = self.owned.get(key)
        if found is None:
            return ActionResult(ResultKind.NOT_FOUND)
        if found["metadata"]["uid"] != intent.uid:
            return ActionResult(ResultKind.CONFLICT)
        del self.owned[key]
        return ActionResult(ResultKind.OK)

    def gc(self) -> None:
        """Foreground deletion of ControlUnits: their Pods and owned objects go, then they do."""
        for name, unit in list(self.units.items()):
            if "deletionTimestamp" in unit["metadata"]:
                uid = unit["metadata"]["uid"]
                for pod_name, pod in list(self.pods.items()):
                    if any(r.get("uid") == uid for r in pod["metadata"].get("ownerReferences", [])):
                        del self.pods[pod_name]
                for key, obj in list(self.owned.items()):
                    if any(r.get("uid") == uid for r in obj["metadata"].get("ownerReferences", [])):
                        del self.owned[key]
                del self.units[name]

    # ----- the kubelet's side --------------------------------------------------------------
    def remove(self, name: str) -> None:
        """A terminating Pod's containers stopped: the kubelet removes it (``graceful`` deletes)."""
        assert "deletionTimestamp" in self.pods[name]["metadata"], f"{name} is not terminating"
        self._removed(name)

    def _removed(self, name: str) -> None:
        """The Pod is gone; the Pod cache's delete handler keeps a disrupted one's last state
        (``taskset.runtime.disruptions``)."""
        pod = self.pods.pop(name)
        conditions = pod.get("status", {}).get("conditions") or []
        if any(c.get("type") == "DisruptionTarget" and c.get("status") == "True" for c in conditions):
            self.gone[name] = pod

    def run(self, name: str) -> None:
        run_pod(self.pods[name])

    def exit(self, name: str, code: int, *, message: str = "") -> None:
        """The Pod's main container ends with ``code`` (and ``message``, its termination message)."""
        exit_pod(self.pods[name], code, message=message)


# ----- single passes and hand-made scenes (additive) -----------------------------------------------------
# A test settles a world into some phase, edits its status, Pods or clock by hand, then looks at exactly
# one decide() pass (``decide_once``), and optionally carries it out (``pass_once``, then ``execute``).


def view_of(intent: Intent, obj: Mapping[str, Any] | None) -> ResultView | None:
    """What the reconciler hands decide of an action's object: its view, never the raw response."""
    if isinstance(intent, CreatePod):
        return None if obj is None else pod_view(obj)
    if isinstance(intent, CreateOwned):
        return control_unit_view(obj, "spec.json") if obj else None
    return None  # a delete's answer carries no object


def pass_once(world: World) -> Pass:
    """One decide() pass over the world as it stands; no intent is carried out."""
    live = parse_taskset(world.taskset)
    return decide(world.ref, live, world.status, world.observed(), world.now, settings=world.settings)


def decide_once(world: World) -> Plan:
    """The plan of one decide() pass over the world as it stands, for a test that only reads it."""
    return pass_once(world).plan


def execute(world: World, step: Pass) -> None:
    """Carry out the pass's intents the way ``World.reconcile`` does, and adopt its status."""
    plan = step.plan
    for intent in plan.intents:
        step.fold(intent, world._execute(intent, plan))
    world.status = plan.status
    world.events += [f"{e.reason}: {e.message}" for e in plan.events]
    world.plans.append(plan)


def execute_write_lost(world: World, step: Pass) -> None:
    """Carry out the pass's intents, as ``execute``, but lose its status write, as when a write of the
    TaskSet's spec lands between the pass's read and its write, twice (a flapping ``spec.suspend``): the
    status stays the one the reconciler wrote before the pass's first delete that moves a machine on
    (persisted before destroying, spec 4.4), or else the one before the pass."""
    plan = step.plan
    kept, said = world.status, []
    persisted = False
    for intent in plan.intents:
        forced = isinstance(intent, DeletePod) and intent.force  # as plan.persists_first
        if not persisted and isinstance(intent, DeletePod | DeleteOwned) and (intent.advances or forced):
            kept, persisted = TaskSetStatus.from_json(plan.status.to_json()), True
            said = [f"{e.reason}: {e.message}" for e in plan.events]  # sent with the persisted status
        step.fold(intent, world._execute(intent, plan))
    world.status = kept
    world.events += said
    world.plans.append(plan)


def settle_terminating(world: World, rounds: int = 10) -> None:
    """Settle, with the kubelet removing every terminating Pod after each round (``graceful``)."""
    for _ in range(rounds):
        world.settle()
        terminating = [n for n, pod in world.pods.items() if "deletionTimestamp" in pod["metadata"]]
        if not terminating:
            return
        for name in terminating:
            world.remove(name)


def control_unit_ready(world: World) -> World:
    """The first pass of a fresh world, with its Pod creates refused for the moment (a 503): the
    ControlUnit is created and the TaskSet ``Preparing``, but every replica is still ``AttemptPending``,
    so the next pass is the one that creates the Pods. (Without the 503 the first pass chains on from the
    ControlUnit's create to the Pods' creates.)"""
    world.pods_refused = True
    world.reconcile()
    world.pods_refused = False
    assert world.status is not None and world.status.phase == TaskSetPhase.ATTEMPT_PREPARING
    return world


def adopted_unseen_control_unit(world: World) -> str:
    """The pass of a fresh world whose ControlUnit create answers AlreadyExists (a lost status write), with
    the live object the cache does not show yet: the TaskSet adopts it and stays in
    ``AttemptCreationRequested`` until the cache shows it. Returns its UID; ``world.units`` has it, as a
    cache that caught up would."""
    unit = build_control_unit(world.taskset, f"c-{world.ref.name}-0")
    unit["metadata"]["uid"] = new_uid()
    step = pass_once(world)
    plan = step.plan
    intent = plan.intents[0]
    assert isinstance(intent, CreateOwned)
    step.fold(intent, ActionResult(ResultKind.EXISTS, view_of(intent, unit)))
    world.status = plan.status
    world.units[intent.name] = unit
    assert plan.status.phase == TaskSetPhase.ATTEMPT_CREATION_REQUESTED
    return str(unit["metadata"]["uid"])


def role_status(world: World, role: str) -> RoleStatus:
    assert world.status is not None, "reconcile the world first"
    found = world.status.role(role)
    assert found is not None, role
    return found


def replica(world: World, role: str, index: int = 0) -> ReplicaStatus:
    return role_status(world, role).replicas[index]


class PodBuilder:
    """Raw Pods of every shape the replica machine must handle (spec 5.3.1, S55).

    PodBuilder("job-r-0").uid("p1").controlled_by("cu-1").taskset("ts-1").attempt(0).running().obj()
    """

    def __init__(self, name: str) -> None:
        self._pod: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "uid": f"uid-of-{name}", "annotations": {}},
            "spec": {"containers": [{"name": "c0"}]},
            "status": {"phase": "Pending"},
        }

    @property
    def _meta(self) -> dict[str, Any]:
        meta: dict[str, Any] = self._pod["metadata"]
        return meta

    def uid(self, uid: str) -> PodBuilder:
        self._meta["uid"] = uid
        return self

    def controlled_by(self, control_unit_uid: str | None) -> PodBuilder:
        """The controlling owner reference (a ControlUnit); None removes every owner reference."""
        if control_unit_uid is None:
            self._meta.pop("ownerReferences", None)
        else:
            owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cu", "uid": control_unit_uid}
            self._meta["ownerReferences"] = [{**owner, "controller": True}]
        return self

    def taskset(self, taskset_uid: str | None) -> PodBuilder:
        """The ``TSUID`` annotation; None leaves it out."""
        return self._annotate("TSUID", taskset_uid)

    def attempt(self, replica_attempt: int | None) -> PodBuilder:
        """The ``ReplicaAttemptID`` annotation; None leaves it out."""
        return self._annotate("ReplicaAttemptID", None if replica_attempt is None else str(replica_attempt))

    def proven(self, namespace: str = "ns", key: bytes = PROCESS_PROOF_KEY) -> PodBuilder:
        """The creation proof the controller writes for the Pod's name, controlling owner and attempt
        (call it after ``controlled_by`` and ``attempt``): what a Pod the controller made carries."""
        meta = self._meta
        owner = (meta.get("ownerReferences") or [{}])[0]
        subject = ProofSubject(
            namespace, meta["name"], owner.get("uid", ""), int(meta["annotations"]["ReplicaAttemptID"])
        )
        return self._annotate(ANNOTATION_CREATION_PROOF, creation_proof(key, subject))

    def _annotate(self, key: str, value: str | None) -> PodBuilder:
        if value is None:
            self._meta["annotations"].pop(key, None)
        else:
            self._meta["annotations"][key] = value
        return self

    def phase(self, phase: str) -> PodBuilder:
        self._pod["status"]["phase"] = phase
        return self

    def ips(self, host_ip: str = "10.0.0.1", pod_ip: str = "10.0.1.1") -> PodBuilder:
        self._pod["status"]["hostIP"] = host_ip
        self._pod["status"]["podIP"] = pod_ip
        return self

    def running(self) -> PodBuilder:
        return self.phase("Running").ips()

    def reason(self, reason: str) -> PodBuilder:
        """The Pod-level ``status.reason`` (Evicted, DeadlineExceeded, ...)."""
        self._pod["status"]["reason"] = reason
        return self

    def exited(self, code: int, *, message: str = "") -> PodBuilder:
        """The main container terminated with ``code``; the Pod phase follows (Succeeded or Failed)."""
        self.phase("Succeeded" if code == 0 else "Failed").ips()
        terminated = {
            "exitCode": code,
            "reason": "Completed" if code == 0 else "Error",
            "message": message,
            "finishedAt": "2026-01-01T00:00:09Z",
        }
        self._pod["status"]["containerStatuses"] = [
            {"name": "c0", "containerID": "kwok://c0", "state": {"terminated": terminated}}
        ]
        return self

    def deleting(self, deleting: bool = True) -> PodBuilder:
        if deleting:
            self._meta["deletionTimestamp"] = "2026-01-01T00:00:05Z"
        else:
            self._meta.pop("deletionTimestamp", None)
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self._pod)


def run_pod(pod: dict[str, Any]) -> None:
    """The Pod (changed in place) Running on a node, its main container started."""
    pod["status"] = {
        "phase": "Running",
        "hostIP": "10.0.0.1",
        "podIP": "10.0.1.1",
        "startTime": "2026-01-01T00:00:01Z",
        "containerStatuses": [
            {
                "name": pod["spec"]["containers"][0]["name"],
                "containerID": f"kwok://{pod['metadata']['name']}",
                "state": {"running": {}},
            }
        ],
    }


def exit_pod(pod: dict[str, Any], code: int, *, message: str = "") -> None:
    """The Pod's (changed in place) main container ends with ``code`` (and ``message``)."""
    if pod["status"].get("phase") != "Running":
        run_pod(pod)
    pod["status"]["phase"] = "Succeeded" if code == 0 else "Failed"
    terminated: dict[str, Any] = {
        "exitCode": code,
        "reason": "Completed" if code == 0 else "Error",
        "finishedAt": "2026-01-01T00:00:09Z",
    }
    if message:
        terminated["message"] = message
    pod["status"]["containerStatuses"][0]["state"] = {"terminated": terminated}


def control_unit(name: str, uid: str, owner_uid: str | None, *, deleting: bool = False) -> dict[str, Any]:
    """A raw ControlUnit ConfigMap controlled by ``owner_uid`` (None: no owner reference at all)."""
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": uid}
    if owner_uid is not None:
        owner = {"apiVersion": "octopus.openi.pcl.cn/v1alpha1", "kind": "TaskSet", "uid": owner_uid}
        meta["ownerReferences"] = [{**owner, "name": "owner", "controller": True}]
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:05Z"
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {}}


class NoEvents:
    """An event recorder that sends nothing."""

    def record(self, target: Any, reason: str, message: str, *, warning: bool) -> None:
        return None


def cached_taskset(world: World) -> dict[str, Any]:
    """The world's TaskSet as the API server and the caches show it: with the world's status."""
    taskset = copy.deepcopy(world.taskset)
    if world.status is not None:
        taskset["status"] = world.status.to_json()
    taskset["metadata"]["resourceVersion"] = "1"
    return taskset


class RecordingClient:
    """The API server's side of one TaskSet for a real Reconciler: its live object, creates that get a
    UID, status writes that make a new version, and a log of every write asked for."""

    def __init__(self, taskset: dict[str, Any]) -> None:
        self.live = taskset
        self.calls: list[tuple[str, str]] = []  # ("create"/"delete", name) or ("status", replica 0's phase)
        self.created: list[dict[str, Any]] = []
        self.status_error: KubeError | None = None
        self.deletes_together: threading.Barrier | None = None  # set: deletes must overlap
        self.check_versions = False  # set: a status write on an older version conflicts, as the API's
        self._version = 1

    def get(self, path: str, *, resource: str) -> dict[str, Any] | None:
        return self.live

    def create(self, path: str, obj: dict[str, Any], *, resource: str) -> dict[str, Any]:
        created = copy.deepcopy(obj)
        created["metadata"]["uid"] = f"{resource}-{len(self.created)}"
        created["metadata"]["resourceVersion"] = "1"
        self.created.append(created)
        self.calls.append(("create", created["metadata"]["name"]))
        return created

    def delete(self, path: str, *, uid: str, resource: str, propagation: str | None = None) -> None:
        self.calls.append(("delete", path.rsplit("/", 1)[-1]))
        if self.deletes_together is not None:
            self.deletes_together.wait()

    def replace_status(
        self, namespace: str, name: str, resource_version: str, status: dict[str, Any]
    ) -> dict[str, Any]:
        self.calls.append(("status", status["roleStatus"][0]["replicaStatus"][0]["phase"]))
        if self.status_error is not None:
            raise self.status_error
        if self.check_versions and resource_version != self.live["metadata"].get("resourceVersion"):
            raise KubeError(409, "Conflict", "the object has been modified")
        self._version += 1
        self.live = {**self.live, "status": status}
        self.live["metadata"] = {**self.live["metadata"], "resourceVersion": str(self._version)}
        return self.live


class Caches(NamedTuple):
    tasksets: Store
    pods: Store
    units: Store


# The integrations the runtime's own tests run with: the status-write and expectation tests count every
# request, and the headless Service (which these caches do not hold) has its own tests.
CORE_INTEGRATIONS: tuple[Integration, ...] = (IdentityEnv(),)


def reconciler_over(
    world: World,
    client: Any,
    *,
    clock: Clock | None = None,
    parallelism: int = 1,
    fence: Callable[[str], bool] | None = None,
) -> tuple[Reconciler, Caches]:
    """A real Reconciler whose caches show ``world`` (its TaskSet, Pods and ControlUnits) and whose API
    server is ``client``; with its caches, for a test to add or drop objects as the informers would."""
    tasksets, pods = Store(), Store(indexers={POD_INDEX: taskset_index})
    units = Store(indexers={POD_INDEX: taskset_index, OWNER_INDEX: controller_uid_index})
    tasksets.add(cached_taskset(world))
    for pod in world.pods.values():
        pods.add(pod)
    for unit in world.units.values():
        units.add(unit)
    reconciler = Reconciler(
        client=client,
        tasksets=tasksets,
        pods=pods,
        units=units,
        recorder=NoEvents(),
        logger=structlog.get_logger("test"),
        clock=clock,
        action_parallelism=parallelism,
        settings=Settings(framework=Framework(CORE_INTEGRATIONS)),
        fence=fence,
    )
    return reconciler, Caches(tasksets, pods, units)


def show_created(reconciler: Reconciler, client: RecordingClient, caches: Caches) -> None:
    """What the informers do with the creates: cache them and run the add handler."""
    for obj in client.created:
        store = caches.pods if obj["kind"] == "Pod" else caches.units
        if store.get_by_key(f"ns/{obj['metadata']['name']}") is None:
            store.add(obj)
            reconciler.creation_observed(obj)
