"""The seam in the decisions, over the in-memory world: what an integration owns is made before any Pod
and never taken over from a stranger, a closed gate holds a role's Pods and says why, a refusal ends the
attempt naming the object, and every Pod carries what the integrations add."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pytest

from taskset.api.constants import ANNOTATION_CREATION_PROOF, ConditionType, EventReason
from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import TaskSetPhase as T
from taskset.api.spec import Role
from taskset.api.status import TaskSetStatus
from taskset.decide import CreateOwned, CreatePod, Settings
from taskset.integrations import Attempt, DecoratesPods, Framework, GatesRoles, OwnsObjects
from taskset.integrations.identity_env import IdentityEnv
from taskset.objects.decorations import PodDecoration
from taskset.objects.owned import CONFIGMAPS, OwnedObject, Scope
from taskset.objects.pods import PodIdentity
from taskset.observed.proof import PROCESS_PROOF_KEY, creation_proof, owned_subject
from taskset.observed.views import Observed
from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import World, replica

pytestmark = pytest.mark.unit

KEY = (CONFIGMAPS.key, "job-extra-0")


@dataclass
class Example(OwnsObjects, DecoratesPods, GatesRoles):
    """Owns one ConfigMap per attempt, labels every Pod, and holds role ``b`` while ``closed`` is set."""

    closed: str | None = None
    scope: Scope = Scope.ATTEMPT
    asked: list[str] = field(default_factory=list)

    name = "example"

    def owned_objects(self, attempt: Attempt) -> Sequence[OwnedObject]:
        name = f"{attempt.taskset}-extra-{attempt.attempt}"
        return (OwnedObject(CONFIGMAPS, name, self.scope, {"data": {"roles": "a,b"}}, self.name),)

    def decorate_pod(self, attempt: Attempt, role: Role, identity: PodIdentity) -> PodDecoration:
        return PodDecoration(labels={"example/index": str(identity.index)})

    def gate(self, attempt: Attempt, role: Role, observed: Observed, status: TaskSetStatus) -> str | None:
        self.asked.append(role.name)
        return self.closed if role.name == "b" else None


def world_with(example: Example) -> World:
    taskset = TaskSetBuilder("job").role("a", 1).role("b", 2).obj()
    # Without the headless Service: these tests count the example's objects and holds alone.
    return World(taskset, settings=Settings(framework=Framework((IdentityEnv(), example))))


def test_the_owned_object_comes_first_and_the_pods_wait_for_it_saying_why() -> None:
    world = world_with(Example())
    plan = world.reconcile()  # ControlUnit, then (chained) the owned object; no Pod yet
    assert [i.name for i in plan.intents if isinstance(i, CreateOwned)] == ["c-job-0", "job-extra-0"]
    assert not [i for i in plan.intents if isinstance(i, CreatePod)]
    held = replica(world, "b", 1)
    assert (held.phase, held.phase_message) == (
        P.ATTEMPT_PENDING,
        "Held: waiting for ConfigMap job-extra-0 (example)",
    )
    held_events = [e for e in plan.events if e.reason == EventReason.ROLE_HELD]
    assert [e.message for e in held_events] == [
        "TaskRole:a: waiting for ConfigMap job-extra-0 (example)",
        "TaskRole:b: waiting for ConfigMap job-extra-0 (example)",
    ]
    assert world.status is not None
    running = world.status.condition(ConditionType.RUNNING)
    assert running is not None and running.message.startswith("3 replicas waiting: a-0: Held: waiting for")

    made = world.owned[KEY]
    [owner] = made["metadata"]["ownerReferences"]
    assert owner["uid"] == world.units["c-job-0"]["metadata"]["uid"]  # goes with the attempt
    plan = world.reconcile()  # the cache shows it now: the Pods go out, decorated
    pods = [i for i in plan.intents if isinstance(i, CreatePod)]
    assert [p.name for p in pods] == ["job-a-0", "job-b-0", "job-b-1"]
    assert world.pods["job-b-1"]["metadata"]["labels"]["example/index"] == "1"
    assert world.pods["job-b-1"]["spec"]["containers"][0]["env"][0]["name"] == "TASKSET_NAMESPACE"
    assert not [e for e in plan.events if e.reason == EventReason.ROLE_HELD]


def test_a_held_role_is_reported_once_while_its_reason_stays_the_same() -> None:
    world = world_with(Example())
    world.reconcile()
    world.owned.clear()  # never shows up: the hold goes on
    plan = world.reconcile()
    assert not [e for e in plan.events if e.reason == EventReason.ROLE_HELD]
    assert [i.name for i in plan.intents if isinstance(i, CreateOwned)] == ["job-extra-0"]  # asked again


def test_a_closed_gate_holds_only_its_role_until_it_opens() -> None:
    example = Example(closed="waiting for the queue to admit the job")
    world = world_with(example)
    world.settle()
    assert "job-a-0" in world.pods and "job-b-0" not in world.pods
    assert replica(world, "b", 0).phase_message == "Held: waiting for the queue to admit the job"
    example.closed = None
    world.settle()
    assert {"job-b-0", "job-b-1"} <= set(world.pods)
    opened = replica(world, "b", 0)
    assert opened.phase == P.ATTEMPT_PREPARING and not opened.phase_message.startswith("Held: ")


def test_gates_are_asked_only_for_replicas_about_to_be_created() -> None:
    example = Example()
    world = world_with(example)
    world.settle()
    example.asked.clear()
    world.reconcile()  # every Pod exists: nothing to create, nothing to ask
    assert example.asked == []


@pytest.mark.parametrize(
    ("controller_uid", "deleting", "why"),
    [
        pytest.param(
            "someone-else", False, "exists and is not controlled by this TaskSet", id="a stranger's"
        ),
        pytest.param(None, False, "exists and is not controlled by this TaskSet", id="an unowned one"),
    ],
)
def test_an_object_under_the_name_that_is_not_ours_is_never_taken_over(
    controller_uid: str | None, deleting: bool, why: str
) -> None:
    world = world_with(Example())
    refs = [{"uid": controller_uid, "controller": True}] if controller_uid else []
    world.owned[KEY] = {"metadata": {"name": "job-extra-0", "uid": "x", "ownerReferences": refs}}
    world.settle()
    assert world.pods == {}
    assert world.owned[KEY]["metadata"]["uid"] == "x"
    assert replica(world, "a", 0).phase_message == (
        "Held: ConfigMap job-extra-0 exists and is not controlled by this TaskSet (example)"
    )


def test_a_refused_object_ends_the_attempt_and_says_which_and_why() -> None:
    world = world_with(Example())
    world.owned_refused = 'ConfigMap "job-extra-0" is invalid: data: Too long'
    world.settle()
    status = world.status
    assert status is not None and status.phase == T.COMPLETED and status.state == "Failed"
    assert status.state_message == (
        'ConfigMap job-extra-0 creation rejected: ConfigMap "job-extra-0" is invalid: data: Too long'
    )
    assert world.pods == {}
    assert any(e.startswith("OwnedObjectCreationFailed: ConfigMap job-extra-0") for e in world.events)


def test_a_taskset_scoped_object_is_owned_by_the_taskset_and_outlives_the_attempt() -> None:
    world = world_with(Example(scope=Scope.TASKSET))
    world.settle()
    [owner] = world.owned[KEY]["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["uid"]) == ("TaskSet", world.ref.uid)
    for name in list(world.pods):
        world.exit(name, 0)
    world.settle()
    assert world.status is not None and world.status.state == "Succeeded"
    assert KEY in world.owned  # the garbage collector takes it with the TaskSet, not with the attempt


@pytest.mark.parametrize(
    ("proof_for", "taken"),
    [
        pytest.param(None, False, id="no proof: a planted claim"),
        pytest.param("job-extra-1", False, id="a proof copied from another object"),
        pytest.param("job-extra-0", True, id="the controller's own proof: its object"),
    ],
)
def test_an_object_claiming_the_taskset_as_its_owner_is_ours_only_with_its_proof(
    proof_for: str | None, taken: bool
) -> None:
    """The controlling owner reference is anyone's to write (the TaskSet's UID is
    readable), so an object under the wanted name is the wanted one only with its creation proof."""
    world = world_with(Example(scope=Scope.TASKSET))
    meta: dict[str, object] = {
        "name": "job-extra-0",
        "uid": "x",
        "ownerReferences": [{"uid": world.ref.uid, "controller": True}],
    }
    if proof_for is not None:
        subject = owned_subject(world.ref.namespace, CONFIGMAPS.key, proof_for, f"TaskSet/{world.ref.name}")
        meta["annotations"] = {ANNOTATION_CREATION_PROOF: creation_proof(PROCESS_PROOF_KEY, subject)}
    world.owned[KEY] = {"metadata": meta}
    world.settle()
    assert world.owned[KEY]["metadata"]["uid"] == "x"  # never replaced or deleted either way
    assert bool(world.pods) == taken
    if not taken:
        assert replica(world, "a", 0).phase_message == (
            "Held: ConfigMap job-extra-0 exists and is not controlled by this TaskSet (example)"
        )
