"""The workloads: TaskSet shapes, scales, and the churn driver.

Shape of a burst/steady/churn TaskSet: a ``ps`` role of 1 replica that runs until deleted (a parameter
server never exits by itself) and a ``worker`` role of 4 replicas that run 5 s and exit 0, with the event
policy ``RoleSucceeded -> TaskSetSucceeded`` on the workers (as in the README's quick start). So a
TaskSet ends when its 4 workers have succeeded, and the controller then deletes the ps Pod; the
expected final state is ``Succeeded``. ``large`` is one TaskSet with only a worker role; ``huge`` the
same at the largest supported size (10,000 replicas at full scale).

Churn: both roles get ``retryPolicy {retry: true, maxRetryCount: 1, delay: 0}``, and a seeded 20% of
all replicas (ps included) fail their first attempt: the role's template carries
``sim.attempt_exit_code(0, index, 0) = 1`` for each chosen index, so replica attempt 0 of a chosen
replica runs 5 s and exits 1 and its retry runs as the template says (a chosen ps also gets a duration:
it fails at 2.5 s, before the workers end, and its retry ends 2.5 s later with 0). Every TaskSet still
ends ``Succeeded``. The failures are fixed at creation; patching outcomes onto live Pods raced kwok's
by-name timers (see ``devcluster/stages/stages.yaml``) and ended some retries early.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from devcluster import sim
from taskset.api import constants as c
from taskset.api.names import pod_name
from taskset.api.spec import ParsedTaskSet, parse_taskset
from taskset.integrations import BUILT_IN_FRAMEWORK, Attempt
from taskset.integrations.identity_env import identity_decoration
from taskset.objects.owned import control_unit_owner, manifest
from taskset.objects.pods import PodIdentity, build_pod
from taskset.observed.views import Observed

RUN_SECONDS = 5.0
WORKERS_PER_TASKSET = 4
CHURN_FRACTION = 0.2
NOTHING_OBSERVED = Observed(control_unit=None)  # a first attempt's Pods, before anything is admitted
RAW_LABEL = "bench-raw-taskset"  # in place of the TaskSet label: the controller must not see raw Pods


@dataclass(frozen=True)
class Scale:
    burst: int  # TaskSets created at once
    large: int  # worker replicas of the one large TaskSet
    huge: int  # worker replicas of the one TaskSet at the supported maximum
    steady_rate: float  # TaskSets per second
    steady_seconds: float
    churn: int  # TaskSets of the churn burst
    cache: int  # Pods held in the controller's cache at once for the memory figure
    timeout: float  # seconds for a scenario's TaskSets to end

    @property
    def raw_pods(self) -> int:
        """Pods of the raw-limit reference: as many as the largest of burst and large."""
        return max(self.burst * (1 + WORKERS_PER_TASKSET), self.large)


SCALES = {
    "small": Scale(
        burst=40,
        large=400,
        huge=1000,
        steady_rate=2.0,
        steady_seconds=60.0,
        churn=40,
        cache=2000,
        timeout=600.0,
    ),
    "full": Scale(
        burst=200,
        large=2000,
        huge=10000,
        steady_rate=5.0,
        steady_seconds=120.0,
        churn=200,
        cache=10000,
        timeout=1800.0,
    ),
}


def pod_template(annotations: dict[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"annotations": annotations, "labels": {"bench": "true"}},
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "main", "image": "busybox", "command": ["sh", "-c", "sleep 5"]}],
        },
    }


def taskset(name: str, workers: int, *, ps: bool = True, retries: int = 0) -> dict[str, Any]:
    retry = {"retry": retries > 0, "maxRetryCount": retries, "delay": 0}
    roles: list[dict[str, Any]] = []
    if ps:
        roles.append({"name": "ps", "replicas": 1, "retryPolicy": retry, "template": pod_template({})})
    roles.append(
        {
            "name": "worker",
            "replicas": workers,
            "eventPolicy": [{"event": "RoleSucceeded", "action": "TaskSetSucceeded"}],
            "retryPolicy": retry,
            "template": pod_template(sim.outcome(duration=RUN_SECONDS, exit_code=0)),
        }
    )
    return {
        "apiVersion": f"{c.GROUP}/{c.VERSION}",
        "kind": "TaskSet",
        "metadata": {"name": name},
        "spec": {"retryPolicy": {"retry": False, "maxRetryCount": 0}, "roles": roles},
    }


def long_running(name: str, replicas: int) -> dict[str, Any]:
    """One role of Pods that run until deleted (the ``cache`` scenario's: they stay in the cache)."""
    obj = taskset(name, replicas, ps=False)
    obj["spec"]["roles"][0]["template"] = pod_template({})
    return obj


def replicas_of(obj: dict[str, Any]) -> list[str]:
    """Pod names of every replica of a TaskSet (``{taskset}-{role}-{index}``)."""
    name = obj["metadata"]["name"]
    return [f"{name}-{r['name']}-{i}" for r in obj["spec"]["roles"] for i in range(r["replicas"])]


def raw_pod(name: str, namespace: str, unit: dict[str, Any]) -> dict[str, Any]:
    """A Pod as the controller makes one for a TaskSet without network identity (its identity decoration
    only), owned by ``unit`` and under ``RAW_LABEL``: the unit of ``bench.prices``' per-request prices."""
    template = taskset("raw", 1, ps=False)["spec"]["roles"][0]["template"]
    identity = _raw_identity("raw", "worker", 0, name=name, namespace=namespace, unit=unit)
    return _raw_labelled(build_pod(template, identity, (identity_decoration(identity),)))


def _raw_identity(
    taskset: str, role: str, index: int, *, name: str, namespace: str, unit: dict[str, Any]
) -> PodIdentity:
    """A first-attempt replica's identity, owned by the raw client's ``unit`` ConfigMap."""
    meta = unit["metadata"]
    return PodIdentity(
        taskset=taskset,
        namespace=namespace,
        taskset_uid=meta["uid"],
        role=role,
        index=index,
        name=name,
        control_unit_name=meta["name"],
        control_unit_uid=meta["uid"],
        taskset_attempt=0,
        replica_attempt=0,
        proof="0" * 64,
    )


def raw_copies(
    objects: list[dict[str, Any]], namespace: str, unit: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[tuple[str, dict[str, Any]]]]:
    """The Pods and owned objects (the headless Services, with their resource's plural) the controller
    makes for ``objects``' first attempt, every built-in integration's decoration included (the
    hostnames, the peer lists), byte for byte, but owned by ``unit`` and under ``RAW_LABEL``. The raw
    client of a paired reference thus makes the API server, the EndpointSlice controller, the scheduler
    and kwok do what the controller's Pods make them do, and nothing for the controller to see."""
    pods: list[dict[str, Any]] = []
    owned: list[tuple[str, dict[str, Any]]] = []
    meta = unit["metadata"]
    for obj in objects:
        parsed = parse_taskset(obj, BUILT_IN_FRAMEWORK.spec_checks())
        assert isinstance(parsed, ParsedTaskSet), parsed
        attempt = Attempt(
            taskset=parsed.name, namespace=namespace, uid=meta["uid"], attempt=0, spec=parsed.spec
        )
        for role in parsed.spec.roles:
            for index in range(role.replicas):
                name = pod_name(parsed.name, role.name, index)
                identity = _raw_identity(
                    parsed.name, role.name, index, name=name, namespace=namespace, unit=unit
                )
                decorations = BUILT_IN_FRAMEWORK.pod_decorations(
                    attempt, role, identity, BUILT_IN_FRAMEWORK.admission(attempt, NOTHING_OBSERVED)
                )
                pods.append(_raw_labelled(build_pod(role.template, identity, decorations)))
        owner = control_unit_owner(meta["name"], meta["uid"])
        for wanted in BUILT_IN_FRAMEWORK.wanted_objects(attempt):
            made = manifest(wanted, taskset=parsed.name, namespace=namespace, owner=owner, proof="0" * 64)
            assert not wanted.kind.group, wanted.kind  # the built-in ones are core objects
            owned.append((wanted.kind.plural, _raw_labelled(made)))
    return pods, owned


def _raw_labelled(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` with the TaskSet label key renamed ``RAW_LABEL``, in its labels and in its selector."""
    labels = obj["metadata"]["labels"]
    labels[RAW_LABEL] = labels.pop(c.LABEL_TASKSET)
    selector = obj.get("spec", {}).get("selector")
    if isinstance(selector, dict) and c.LABEL_TASKSET in selector:
        selector[RAW_LABEL] = selector.pop(c.LABEL_TASKSET)
    return obj


def churn(names: list[str], seed: int) -> tuple[list[dict[str, Any]], frozenset[str]]:
    """The churn TaskSets and the replicas (Pod names) chosen to fail their first attempt."""
    objects = [taskset(name, WORKERS_PER_TASKSET, retries=1) for name in names]
    replicas = sorted(r for obj in objects for r in replicas_of(obj))
    chosen = frozenset(random.Random(seed).sample(replicas, round(len(replicas) * CHURN_FRACTION)))
    for obj in objects:
        for role in obj["spec"]["roles"]:
            annotations = role["template"]["metadata"]["annotations"]
            for index in range(role["replicas"]):
                if f"{obj['metadata']['name']}-{role['name']}-{index}" in chosen:
                    # A ps has no duration of its own: half the workers' run, so it fails before they end.
                    annotations.setdefault(sim.DURATION, f"{int(RUN_SECONDS * 500)}ms")
                    annotations[sim.attempt_exit_code(0, index, 0)] = "1"
    return objects, chosen
