"""Scaling that flaps: running elastic TaskSets whose count is written back and forth as fast as a client
can (the role's ``replicas`` by read-replace, and the scale subresource an autoscaler writes), with the
controller's status writes conflicting with every one of them and its caches lagging behind.

A process in a replica watches the live membership's generation and re-reads the file when it moves, so
the generation must never go back (neither in the ConfigMap nor in the status) and one generation must
never stand for two contents (``tests.chaos.invariants.membership_generations``, checked on the whole
record by ``History.verdict``). With no fault but the conflicts, every generation the status announces
(``status.membership``, ``lastScale``) is one the ConfigMap showed. Once the writes stop, every TaskSet
settles at the count last asked for, with no retry counted and no duplicate Pod.
"""

from __future__ import annotations

import functools
import json
import random
import threading
from typing import Any

from devcluster import Cluster
from taskset.api import constants as c
from tests.builders import TaskSetBuilder
from tests.chaos import run
from tests.chaos.history import History
from tests.chaos.invariants import Outcome
from tests.chaos.workload import Planned
from tests.integration.daemon import Daemon
from tests.integration.harness import TaskSets, eventually

history = run.history  # the shared fixtures, bound by name
daemon = run.daemon

TASKSETS, FLAPS, SEED = 4, 40, 37
SETTLE_TIMEOUT = 120.0  # seconds for every TaskSet to settle at its last count once the writes stop


def elastic(name: str, *, by_scale: bool) -> dict[str, Any]:
    obj = TaskSetBuilder(name).role("w", 2, minReplicas=1, maxReplicas=4, retry=(True, 2, 0)).obj()
    if by_scale:
        obj["spec"]["scale"] = {"role": "w", "replicas": 2}
    return obj


def write_scale(api: TaskSets, name: str, replicas: int) -> None:
    """What an autoscaler writes: the scale subresource (``spec.scale.replicas``)."""
    api.custom.patch_namespaced_custom_object_scale(
        c.GROUP, c.VERSION, api.namespace, c.PLURAL, name, {"spec": {"replicas": replicas}}
    )


def flap(api: TaskSets, name: str, by_scale: bool, counts: list[int]) -> None:
    for count in counts:
        if by_scale:
            write_scale(api, name, count)
        else:
            api.set_replicas(name, count)


def announced_by(status: dict[str, Any]) -> set[int]:
    """The membership generations a status announces: its own and its roles' ``lastScale``'s."""
    found = {(status.get("membership") or {}).get("generation")}
    found |= {(role.get("lastScale") or {}).get("generation") for role in status.get("roleStatus") or []}
    return {generation for generation in found if isinstance(generation, int) and generation > 0}


def settled(api: TaskSets, name: str, count: int) -> bool:
    """The count asked for, everywhere: replicas running, and the membership listing them at the
    generation the status announces."""
    status = api.status(name)
    [role] = status.get("roleStatus") or [{}]
    replicas = role.get("replicaStatus") or []
    pods = api.live_pods(name)
    cm = api.configmap(f"{name}-membership") or {}
    document = json.loads(cm.get("data", {}).get("membership.json") or "{}")
    return (
        status.get("phase") == c.TaskSetPhase.ATTEMPT_RUNNING
        and [r.get("index") for r in replicas] == list(range(count))
        and all(r.get("phase") == c.ReplicaPhase.ATTEMPT_RUNNING and not r.get("stopped") for r in replicas)
        and len(pods) == count
        and len(document.get("roles", {}).get("w", {}).get("peers", [])) == count
        and document.get("generation") == (status.get("membership") or {}).get("generation")
    )


def where_it_stands(api: TaskSets, name: str) -> dict[str, Any]:
    """What ``settled`` reads, for the failure message: the spec's counts, the status, the live Pods and
    the membership document."""
    obj = api.get(name) or {"spec": {"roles": [{}]}}
    cm = api.configmap(f"{name}-membership") or {}
    return {
        "spec": {"replicas": obj["spec"]["roles"][0].get("replicas"), "scale": obj["spec"].get("scale")},
        "status": api.status(name),
        "pods": sorted(pod["metadata"]["name"] for pod in api.live_pods(name)),
        "membership": json.loads(cm.get("data", {}).get("membership.json") or "{}"),
    }


def test_flapping_scales_never_move_the_membership_generation_back(
    cluster: Cluster, namespace: str, history: History, daemon: Daemon
) -> None:
    api, rng = TaskSets(cluster, namespace), random.Random(SEED)
    names = {f"f{i:02d}": i % 2 == 1 for i in range(TASKSETS)}  # odd ones through the scale subresource
    daemon.start()
    for name, by_scale in names.items():
        api.create(elastic(name, by_scale=by_scale))
    for name in names:
        eventually(functools.partial(settled, api, name, 2), SETTLE_TIMEOUT, f"{name} running")
    # 3, 2, 3, 2, ... as fast as the API server takes them, ending at either
    plans = {name: [3 - i % 2 for i in range(FLAPS - 1)] + [rng.choice((2, 3))] for name in names}
    writers = [
        threading.Thread(target=flap, args=(api, name, by_scale, plans[name]))
        for name, by_scale in names.items()
    ]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    for name in names:
        settle = functools.partial(settled, api, name, plans[name][-1])
        try:
            eventually(settle, SETTLE_TIMEOUT, f"{name} settled at {plans[name][-1]}")
        except AssertionError as failed:
            raise AssertionError(f"{failed}: {where_it_stands(api, name)}") from None
    for name in names:
        for pod in api.live_pods(name):
            api.end_pod(pod["metadata"]["name"], 0)
    planned = [  # no retry counted: the workload's Pods fail nothing
        Planned(
            {"metadata": {"name": name}},
            Outcome("Succeeded", 0, tuple(("w", i, 0, 0) for i in range(plans[name][-1]))),
        )
        for name in names
    ]
    summary = run.finish(api, history, planned, run.FINAL_TIMEOUT)
    published = history.published()
    moved = [len(versions) for versions in published.values()]
    # The flapping reached the controller: the memberships moved, on average at least twice each. Not each
    # one twice: a TaskSet whose writes all land between two of its passes is seen only at its last count
    # (a run under load had one membership move once while the others moved 4, 9 and 16 times).
    assert len(moved) == TASKSETS and sum(m - 1 for m in moved) >= 2 * TASKSETS, (
        f"the membership followed the scales: {moved}"
    )
    for record in history.tasksets().values():
        shown = {version.generation for version in published[record.uid]}
        announced = {generation for status in record.statuses for generation in announced_by(status)}
        assert announced <= shown, f"{record.label}: announced {sorted(announced - shown)}, never shown"
    print(f"{FLAPS} flaps on {TASKSETS} TaskSets: {summary}, membership versions {moved}")
