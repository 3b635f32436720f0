"""A tiny in-memory world for driving the pure decision functions through whole lifecycles.

Not an API server: it only stores the ConfigMap and Pods the plans ask for, answers intents the way
the API server would (create -> UID, AlreadyExists, delete -> gone), and lets a test move Pods through
their phases. It exists so table tests can check the machines over many passes without a cluster.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from taskset.api import ParsedTaskSet, parse_taskset
from taskset.controlunit import build_control_unit
from taskset.decide import (
    ActionResult,
    CreateControlUnit,
    CreatePod,
    DeleteControlUnit,
    DeletePod,
    Plan,
    ResultKind,
    Settings,
    TaskSetRef,
    apply_result,
    decide,
)
from taskset.observe import Observed, control_unit_view, pod_view
from taskset.pods import PodIdentity, build_pod
from taskset.status import TaskSetStatus

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

    def __post_init__(self) -> None:
        meta = self.taskset.setdefault("metadata", {})
        meta.setdefault("namespace", "ns")
        meta.setdefault("uid", new_uid())
        meta.setdefault("generation", 1)

    @property
    def ref(self) -> TaskSetRef:
        meta = self.taskset["metadata"]
        return TaskSetRef(meta["name"], meta["namespace"], meta["uid"], meta["generation"], self.deleting)

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
        )

    def reconcile(self) -> Plan:
        plan = decide(self.ref, parse_taskset(self.taskset), self.status, self.observed(), self.now, settings=self.settings)
        for intent in plan.intents:
            apply_result(plan, intent, self._execute(intent, plan))
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
        if isinstance(intent, CreateControlUnit):
            if intent.name in self.units:
                return ActionResult(ResultKind.EXISTS, self.units[intent.name])
            unit = build_control_unit(self.taskset, intent.name)
            unit["metadata"]["uid"] = new_uid()
            self.units[intent.name] = unit
            return ActionResult(ResultKind.OK, unit)
        if isinstance(intent, DeleteControlUnit):
            unit = self.units.get(intent.name)
            if unit is None:
                return ActionResult(ResultKind.NOT_FOUND)
            if unit["metadata"]["uid"] != intent.uid:
                return ActionResult(ResultKind.CONFLICT)
            unit["metadata"]["deletionTimestamp"] = "now"  # foreground: pods go first (gc())
            return ActionResult(ResultKind.OK)
        if isinstance(intent, CreatePod):
            if intent.name in self.pods:
                return ActionResult(ResultKind.EXISTS, self.pods[intent.name])
            spec = parse_taskset(self.taskset)
            assert isinstance(spec, ParsedTaskSet)
            role = plan.spec.roles[intent.role] if plan.spec else spec.spec.roles[intent.role]
            unit_name = f"c-{self.ref.name}-{intent.taskset_attempt}"
            identity = PodIdentity(
                self.ref.name, self.ref.namespace, self.ref.uid, role.name, intent.index, intent.name,
                unit_name, plan.status.control_unit_uid or "", intent.taskset_attempt, intent.replica_attempt,
            )
            pod = build_pod(role.template, identity)
            pod["metadata"]["uid"] = new_uid()
            pod["status"] = {"phase": "Pending"}
            self.pods[intent.name] = pod
            self.created_pods.append(pod)
            return ActionResult(ResultKind.OK, pod)
        assert isinstance(intent, DeletePod)
        pod = self.pods.get(intent.name)
        if pod is None:
            return ActionResult(ResultKind.NOT_FOUND)
        if pod["metadata"]["uid"] != intent.uid:
            return ActionResult(ResultKind.CONFLICT)
        del self.pods[intent.name]  # like kwok: gone at once
        return ActionResult(ResultKind.OK)

    def gc(self) -> None:
        """Foreground deletion of ControlUnits: their Pods go, then they do."""
        for name, unit in list(self.units.items()):
            if "deletionTimestamp" in unit["metadata"]:
                uid = unit["metadata"]["uid"]
                for pod_name, pod in list(self.pods.items()):
                    if any(r.get("uid") == uid for r in pod["metadata"].get("ownerReferences", [])):
                        del self.pods[pod_name]
                del self.units[name]

    # ----- the kubelet's side --------------------------------------------------------------
    def run(self, name: str) -> None:
        pod = self.pods[name]
        pod["status"] = {
            "phase": "Running",
            "hostIP": "10.0.0.1",
            "podIP": "10.0.1.1",
            "startTime": "2026-01-01T00:00:01Z",
            "containerStatuses": [
                {"name": pod["spec"]["containers"][0]["name"], "containerID": f"kwok://{name}", "state": {"running": {}}}
            ],
        }

    def exit(self, name: str, code: int) -> None:
        pod = self.pods[name]
        if pod["status"].get("phase") != "Running":
            self.run(name)
        pod["status"]["phase"] = "Succeeded" if code == 0 else "Failed"
        pod["status"]["containerStatuses"][0]["state"] = {
            "terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error", "finishedAt": "2026-01-01T00:00:09Z"}
        }
