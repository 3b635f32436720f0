"""The live membership: whole passes in the in-memory World. An elastic TaskSet owns a
ConfigMap whose content follows every scale, replica retry and new attempt, with a generation that moves
exactly then; the Pods mount it; a TaskSet with no elastic role has none."""

from __future__ import annotations

import copy
import dataclasses
import itertools
import json
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from taskset.api.spec import parse_taskset
from taskset.decide import decide
from taskset.decide.plan import DeleteOwned, DeletePod, Intent, UpdateOwned, publishes_status
from taskset.integrations.membership import (
    ENV_MEMBERSHIP_DIR,
    GENERATION_FILE,
    MEMBERSHIP_DIR,
    MEMBERSHIP_FILE,
    MEMBERSHIP_VOLUME,
    content_digest,
)
from taskset.observed.proof import owned_subject, proves
from taskset.observed.views import owned_view
from tests.builders import TaskSetBuilder
from tests.unit.taskset.decide.scenes import running, the_status
from tests.unit.taskset.world import World, role_status

pytestmark = pytest.mark.unit

KEY = ("configmaps", "job-membership")


def elastic(replicas: int = 2, *, retry: tuple[bool, int, int] | None = None, **spec: Any) -> World:
    builder = TaskSetBuilder("job").role("r", replicas, maxReplicas=4, retry=retry)
    obj = builder.obj()
    obj["spec"].update(spec)
    return World(obj)


def elastic_named(name: str, role: str, **spec: Any) -> World:
    obj = TaskSetBuilder(name).role(role, 2, maxReplicas=10000).obj()
    obj["spec"].update(spec)
    return World(obj)


def membership(world: World) -> dict[str, Any]:
    data = world.owned[KEY]["data"]
    document: dict[str, Any] = json.loads(data[MEMBERSHIP_FILE])
    assert data[GENERATION_FILE] == str(document["generation"])
    assert document["generation"] == the_status(world).membership.generation
    return document


def scale(world: World, replicas: int) -> None:
    world.taskset["spec"]["roles"][0]["replicas"] = replicas
    world.settle()


def test_an_elastic_taskset_owns_a_membership_that_its_pods_mount() -> None:
    world = running(elastic())
    document = membership(world)
    assert document == {
        "generation": 1,
        "attempt": 0,
        "roles": {
            "r": {
                "replicas": 2,
                "minReplicas": 1,
                "maxReplicas": 4,
                "peers": ["job-r-0.job.ns.svc", "job-r-1.job.ns.svc"],
                "instances": [0, 0],
            }
        },
    }
    status = the_status(world).membership
    assert status is not None and status.config_map == "job-membership"
    for pod in world.created_pods:
        spec = pod["spec"]
        volume = {"name": MEMBERSHIP_VOLUME, "configMap": {"name": "job-membership"}}
        assert volume in spec["volumes"]
        for container in spec["containers"]:
            mount = {"name": MEMBERSHIP_VOLUME, "mountPath": MEMBERSHIP_DIR, "readOnly": True}
            assert mount in container["volumeMounts"]
            assert {"name": ENV_MEMBERSHIP_DIR, "value": MEMBERSHIP_DIR} in container["env"]


def test_without_names_the_peers_are_pod_names() -> None:
    world = running(elastic(network={"enableDNSHostnames": False}))
    assert membership(world)["roles"]["r"]["peers"] == ["job-r-0", "job-r-1"]


def test_a_taskset_with_no_elastic_role_has_no_membership() -> None:
    world = running(World(TaskSetBuilder("job").role("r", 2).obj()))
    assert world.owned.get(KEY) is None and the_status(world).membership is None
    assert all("volumes" not in pod["spec"] for pod in world.created_pods)


def test_every_scale_moves_the_generation_once_and_is_announced_with_it() -> None:
    world = running(elastic())
    scale(world, 4)
    document = membership(world)
    assert document["generation"] == 2 and document["roles"]["r"]["replicas"] == 4
    assert len(document["roles"]["r"]["peers"]) == 4
    last = role_status(world, "r").last_scale
    assert last is not None and (last.before, last.after, last.generation) == (2, 4, 2)
    scale(world, 1)
    document = membership(world)
    assert document["generation"] == 3 and document["roles"]["r"]["peers"] == ["job-r-0.job.ns.svc"]
    assert [e for e in world.events if e.startswith("TaskRoleScaled")] == [
        "TaskRoleScaled: TaskRole:r, replicas 2 -> 4, membership generation 2",
        "TaskRoleScaled: TaskRole:r, replicas 4 -> 1, membership generation 3",
    ]
    world.settle()
    assert membership(world)["generation"] == 3  # nothing changed: no new generation, no write
    assert not any(isinstance(i, UpdateOwned) for i in world.plans[-1].intents)


def test_a_replica_retry_is_a_new_instance_and_a_new_generation() -> None:
    world = running(elastic(retry=(True, 2, 0)))
    world.exit("job-r-1", 1)
    world.settle()
    document = membership(world)
    assert document["roles"]["r"]["instances"] == [0, 1] and document["generation"] == 2


def test_a_taskset_retry_is_a_new_attempt_and_a_new_generation() -> None:
    world = running(elastic(retryPolicy={"retry": True, "maxRetryCount": 1}))
    for name in list(world.pods):
        world.exit(name, 1)
    for _ in range(5):
        world.settle()
        world.gc()
    status = the_status(world)
    assert status.total_retried_count == 1
    running(world)
    document = membership(world)
    assert document["attempt"] == 1 and document["generation"] >= 2


def test_a_strangers_edit_of_the_content_is_written_over_and_the_proof_stays() -> None:
    world = running(elastic())
    obj = world.owned[KEY]
    proof = obj["metadata"]["annotations"]["octopus.openi.pcl.cn/creation-proof"]
    obj["data"] = {MEMBERSHIP_FILE: "{}", GENERATION_FILE: "99"}
    world.settle()
    assert membership(world)["generation"] == 1  # overwritten, not read back; the generation did not move
    assert world.owned[KEY]["metadata"]["annotations"]["octopus.openi.pcl.cn/creation-proof"] == proof
    subject = owned_subject("ns", "configmaps", "job-membership", "TaskSet/job")
    assert proves(proof, world.settings.proof_key, subject)


def test_a_strangers_configmap_under_the_name_is_never_written() -> None:
    world = running(elastic())
    obj = world.owned[KEY]
    obj["metadata"]["annotations"].pop("octopus.openi.pcl.cn/creation-proof")
    obj["data"] = {"theirs": "1"}
    scale(world, 3)
    assert world.owned[KEY]["data"] == {"theirs": "1"}


def test_who_asked_is_named_in_the_event() -> None:
    world = running(elastic())
    world.taskset["metadata"]["managedFields"] = [
        {
            "manager": "kubectl",
            "operation": "Update",
            "subresource": "scale",
            "time": "2026-01-01T00:00:00Z",
            "fieldsV1": {"f:spec": {"f:scale": {"f:replicas": {}}}},
        }
    ]
    world.taskset["spec"]["scale"] = {"role": "r", "replicas": 3}
    world.settle()
    assert role_status(world, "r").last_scale.by == "kubectl via /scale"
    assert world.events[-1] == (
        "TaskRoleScaled: TaskRole:r, replicas 2 -> 3 by kubectl via /scale, membership generation 2"
    )
    assert the_status(world).scale.to_json() == {
        "replicas": 3,
        "selector": "TaskSet=job,PodTaskRole=r",
    }


# ----- the generation under any interleaving -----------------------------------------------------------
# A pass's status write may be lost (a conflict with a scale write, a kill) and the ConfigMap cache may lag
# behind its last write. The reconciler's contract, as modelled here: a pass's writes go out in order,
# and one that destroys evidence (an advancing delete) or publishes what the status allocates
# (``publishes_status``) only once the status is persisted; a lost status write stops the pass there.


def _persisted_first(intent: Intent) -> bool:
    return publishes_status(intent) or (isinstance(intent, DeletePod | DeleteOwned) and intent.advances)


class Shown(NamedTuple):
    generation: int
    digest: str


def _shown(world: World) -> Shown | None:
    obj = world.owned.get(KEY)
    if obj is None:
        return None
    document = json.loads(obj["data"][MEMBERSHIP_FILE])
    generation = document.pop("generation")
    return Shown(generation, content_digest(document))


def _lossy_pass(world: World, *, status_lost: bool, lagging: dict[str, Any] | None) -> None:
    """One pass; its status write lost when ``status_lost``; the ConfigMap cache showing ``lagging``."""
    observed = world.observed()
    if lagging is not None:
        observed = dataclasses.replace(observed, owned={**observed.owned, KEY: owned_view(lagging)})
    step = decide(
        world.ref, parse_taskset(world.taskset), world.status, observed, world.now, settings=world.settings
    )
    plan = step.plan
    done = 0
    while done < len(plan.intents):  # results may add intents
        intent = plan.intents[done]
        done += 1
        if status_lost and _persisted_first(intent):
            return
        step.fold(intent, world._execute(intent, plan))
    if not status_lost:
        world.status = plan.status


Step = tuple[str, int]  # ("scale", count) | ("pass", 0) | ("lost", 0) | ("lagging", 0) | ("run", 0)

STEPS = st.one_of(
    st.tuples(st.just("scale"), st.integers(1, 4)),
    st.tuples(st.sampled_from(("pass", "lost", "lagging", "run")), st.just(0)),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STEPS, min_size=1, max_size=30))
@example([("scale", 3), ("lost", 0), ("scale", 2)])  # the scale-up's Pod was left running (flapping chaos)
def test_the_generation_never_goes_back_the_status_announces_what_the_configmap_shows_and_no_pod_is_left(
    steps: list[Step],
) -> None:
    world = running(elastic())
    shown = [_shown(world)]
    persisted = [the_status(world).membership]
    lagging = copy.deepcopy(world.owned[KEY])  # the cache's view, one write behind at most
    for kind, count in steps:
        if kind == "scale":
            world.taskset["spec"]["roles"][0]["replicas"] = count
        elif kind == "run":
            for name, pod in world.pods.items():
                if (pod.get("status") or {}).get("phase") != "Running":
                    world.run(name)
        else:
            before = copy.deepcopy(world.owned[KEY])
            _lossy_pass(world, status_lost=kind == "lost", lagging=lagging if kind == "lagging" else None)
            lagging = before
            world.gc()
        shown.append(_shown(world))
        persisted.append(the_status(world).membership)
    for _ in range(3):  # the writes stop: every pass goes through
        for name, pod in world.pods.items():
            if (pod.get("status") or {}).get("phase") != "Running":
                world.run(name)
        world.settle()
    shown.append(_shown(world))
    persisted.append(the_status(world).membership)
    published = [s for s in shown if s is not None]
    for earlier, later in itertools.pairwise(published):
        assert later.generation >= earlier.generation, f"the ConfigMap went {earlier} -> {later}"
        assert later.generation > earlier.generation or later.digest == earlier.digest, "two contents"
    generations = [m.generation for m in persisted if m is not None]
    assert generations == sorted(generations), f"the status went back: {generations}"
    for showing, status in zip(shown, persisted, strict=True):  # the status allocates, then it is shown
        assert showing is None or (status is not None and showing.generation <= status.generation)
    final, status = published[-1], persisted[-1]
    assert status is not None and (final.generation, final.digest) == (status.generation, status.digest)
    last = role_status(world, "r").last_scale
    assert last is None or last.generation <= status.generation
    # And the Pods are the count last asked for: none left over from a scale whose status write was lost
    # after its Pod was created (the create goes out before the write; the write is what would delete it).
    count = next((count for kind, count in reversed(steps) if kind == "scale"), 2)
    assert sorted(world.pods) == sorted(f"job-r-{i}" for i in range(count)), "a Pod left over"


# ----- a membership too large for a ConfigMap ----------------------------------------------------------


def test_a_membership_too_large_for_a_configmap_is_refused_said_and_never_announced() -> None:
    # Long names make each peer's DNS name about 130 bytes: 9,000 of them pass the API server's 1 MiB.
    name, role = "t" * 30, "worker" + "w" * 14
    world = elastic_named(name, role, network={"subdomain": "s" * 63})
    running(world)
    key = ("configmaps", f"{name}-membership")
    before = copy.deepcopy(world.owned[key]["data"])
    world.taskset["spec"]["roles"][0]["replicas"] = 9000
    world.reconcile()
    membership = the_status(world).membership
    assert membership is not None and membership.generation == 1
    assert membership.refused.startswith(
        f"ConfigMap {name}-membership not updated: the membership would hold "
    )
    assert "above the 1048576 a ConfigMap's data may hold; it still shows generation 1" in membership.refused
    assert world.owned[key]["data"] == before  # never written, never announced
    assert not any(isinstance(i, UpdateOwned) for i in world.plans[-1].intents)
    last = role_status(world, role).last_scale
    assert last is not None and (last.after, last.generation) == (9000, 0)
    scaled = [e for e in world.events if e.startswith("TaskRoleScaled")]
    assert scaled == [
        f"TaskRoleScaled: TaskRole:{role}, replicas 2 -> 9000, membership not updated "
        f"(ConfigMap {name}-membership would be too large)"
    ]
    world.reconcile()  # said once, not on every pass
    assert [e for e in world.events if e.startswith("OwnedObjectUpdateRefused")] == [
        f"OwnedObjectUpdateRefused: {membership.refused}"
    ]
    world.taskset["spec"]["roles"][0]["replicas"] = 3  # fits again: the next generation, published
    world.settle()
    document = json.loads(world.owned[key]["data"][MEMBERSHIP_FILE])
    status = the_status(world).membership
    assert status is not None and status.refused == "" and document["generation"] == status.generation == 2
    assert len(document["roles"][role]["peers"]) == 3
