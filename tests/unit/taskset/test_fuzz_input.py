"""Fuzzing of the input side: arbitrary raw JSON, never an exception.

Everything the controller reads from the API server is JSON that the schema may not have checked (an
object stored under an older CRD, a hand-edited status, someone else's Pod or ConfigMap under our name).
Fed arbitrary JSON (deeply nested, unicode, wrong types, nulls) as a whole TaskSet, as its ``spec`` or
``status``, as Pods and ConfigMaps, and as Pod templates:

* ``parse_taskset`` returns a ``ParsedTaskSet`` or a ``ValidationFailure`` naming a field, and never raises;
* ``TaskSetStatus.from_json``, ``pod_view``, ``control_unit_view`` and ``build_pod`` never raise;
* a full ``decide`` pass over such inputs never raises and every phase change it makes is a declared edge
  of the TaskSet, role and replica machines (``statemachine.Machine.check`` through ``check_plan``), also
  after arbitrary action results are folded in.

Two kinds of input: free-form JSON (anything at all), and well-formed objects with a few nodes replaced
by junk (which gets past the first type check and so reaches deeper code).
"""

from __future__ import annotations

import copy
from datetime import timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from taskset.api.constants import ANNOTATION_REPLICA_ATTEMPT_ID as REPLICA_ATTEMPT
from taskset.api.constants import LABEL_ROLE, LABEL_TASKSET
from taskset.api.spec import ParsedTaskSet, ValidationFailure, parse_taskset
from taskset.api.status import TaskSetStatus
from taskset.decide import ActionResult, ResultKind, TaskSetRef, decide
from taskset.integrations.identity_env import identity_decoration
from taskset.objects.pods import PodIdentity, build_pod
from taskset.observed.slim import slim_pod, slim_taskset
from taskset.observed.views import Observed, PodView, control_unit_view, pod_view
from taskset.runtime.indexes import taskset_index
from tests.builders import TaskSetBuilder
from tests.unit.taskset.decide.test_properties import (
    CU_CURRENT,
    NAME,
    START,
    TS_UID,
    Scene,
    check_plan,
    recorded_statuses,
    taskset_objects,
)
from tests.unit.taskset.world import PodBuilder, control_unit, view_of

RECORDED_POD = Path(__file__).resolve().parents[3] / "bench" / "data" / "pod.json"

pytestmark = pytest.mark.unit

# No shrinking: shrinking hundreds of levels of junk takes minutes; a failure is reported as generated.
FUZZ = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
)

# ----- strategies -------------------------------------------------------------------------------------------

FIELD_NAMES = [
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "namespace",
    "uid",
    "generation",
    "labels",
    "annotations",
    "ownerReferences",
    "controller",
    "deletionTimestamp",
    "spec",
    "status",
    "roles",
    "replicas",
    "template",
    "completionPolicy",
    "minSucceeded",
    "maxFailed",
    "retryPolicy",
    "retry",
    "maxRetryCount",
    "delay",
    "eventPolicy",
    "event",
    "action",
    "queue",
    "priority",
    "phase",
    "state",
    "roleStatus",
    "replicaStatus",
    "containers",
    "containerStatuses",
    "initContainers",
    "env",
    "restartPolicy",
    "conditions",
    "data",
    "spec.json",
    "podIP",
    "hostIP",
]
TEXT = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        ["", "r", "job", "RoleFailed", "NoAction", "Running", "Failed", "日本語", "🚀", "\u202e"]
    ),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),  # unbounded: 2**64 and beyond, negative
    st.floats(allow_nan=False, allow_infinity=False),  # JSON has no NaN or infinity
    TEXT,
)
KEYS = st.one_of(st.sampled_from(FIELD_NAMES), st.text(max_size=6))


def json_values(max_leaves: int = 25) -> st.SearchStrategy[Any]:
    return st.recursive(
        SCALARS,
        lambda children: st.one_of(
            st.lists(children, max_size=4), st.dictionaries(KEYS, children, max_size=5)
        ),
        max_leaves=max_leaves,
    )


@st.composite
def deep(draw: st.DrawFn) -> Any:
    """A value nested 50 to 400 levels deep, in dicts or lists."""
    value: Any = draw(SCALARS)
    for _ in range(draw(st.integers(50, 400))):
        value = {draw(KEYS): value} if draw(st.booleans()) else [value]
    return value


JUNK = st.one_of(json_values(), deep())
JSON_OBJECTS = st.dictionaries(KEYS, JUNK, max_size=6)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, child in value.items():
            found += _paths(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            found += _paths(child, (*path, index))
    return found


@st.composite
def mutated(draw: st.DrawFn, base: Any) -> Any:
    """``base`` with one to three nodes replaced by junk, set to null, or deleted."""
    value = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        paths = [path for path in _paths(value) if path]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = value
        for step in path[:-1]:
            parent = parent[step]
        how = draw(st.sampled_from(["junk", "null", "delete"]))
        if how == "delete":
            del parent[path[-1]]
        else:
            parent[path[-1]] = None if how == "null" else draw(JUNK)
    return value


def valid_pod(name: str = f"{NAME}-a-0") -> dict[str, Any]:
    return PodBuilder(name).uid("p-1").controlled_by(CU_CURRENT).taskset(TS_UID).attempt(0).running().obj()


def valid_control_unit() -> dict[str, Any]:
    unit = control_unit(f"c-{NAME}-0", CU_CURRENT, TS_UID)
    unit["data"] = {"spec.json": '{"roles": [{"name": "a", "replicas": 1}]}'}
    return unit


def tasksets() -> st.SearchStrategy[Any]:
    """Whole TaskSets: free-form, well-formed with junk nodes, or with a junk spec."""
    return st.one_of(
        JUNK,
        JSON_OBJECTS,
        taskset_objects(active=True).flatmap(mutated),
        taskset_objects(active=False).flatmap(mutated),
        JUNK.map(lambda spec: {**TaskSetBuilder(NAME).uid(TS_UID).obj(), "spec": spec}),
    )


def statuses() -> st.SearchStrategy[Any]:
    """Raw statuses: free-form, or a spec-shaped status with junk nodes."""
    shaped = taskset_objects(active=False).flatmap(lambda obj: recorded_statuses(obj, active=False))
    return st.one_of(
        JUNK,
        JSON_OBJECTS,
        shaped.map(lambda s: s.to_json() if s is not None else {}).flatmap(mutated),
    )


def pods() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(JSON_OBJECTS, mutated(valid_pod()))


def control_units() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(JSON_OBJECTS, mutated(valid_control_unit()))


IDENTITY = PodIdentity(
    taskset=NAME,
    namespace="ns",
    taskset_uid=TS_UID,
    role="a",
    index=0,
    name=f"{NAME}-a-0",
    control_unit_name=f"c-{NAME}-0",
    control_unit_uid=CU_CURRENT,
    taskset_attempt=0,
    replica_attempt=0,
    proof="0" * 64,
)


# ----- the parsers and views --------------------------------------------------------------------------------


@FUZZ
@given(obj=tasksets())
def test_parse_taskset_is_total_and_names_the_field(obj: Any) -> None:
    result = parse_taskset(obj)
    assert isinstance(result, ParsedTaskSet | ValidationFailure)
    if isinstance(result, ValidationFailure):
        assert isinstance(result.message, str) and result.message
        assert isinstance(result.field, str)
        if result.field:  # "" only when the TaskSet itself is not an object
            assert result.field.split(".")[0].split("[")[0] in ("metadata", "spec")
        else:
            assert not isinstance(obj, dict)


@FUZZ
@given(raw=statuses())
def test_status_from_json_is_total_and_round_trips(raw: Any) -> None:
    status = TaskSetStatus.from_json(raw)
    if status is not None:
        again = TaskSetStatus.from_json(status.to_json())
        assert again is not None
        assert again.to_json() == status.to_json()


@FUZZ
@given(pod=pods(), unit=control_units())
@example(pod={"spec": {"containers": 1}}, unit={})
@example(pod={"spec": {"containers": {"c0": {}}}}, unit={})
@example(pod={"metadata": {"ownerReferences": 1}}, unit={"metadata": {"ownerReferences": 1}})
@example(pod={"status": {"containerStatuses": 1, "conditions": 1}}, unit={"data": []})
@example(pod={"metadata": {"annotations": {REPLICA_ATTEMPT: "²"}}}, unit={})
def test_views_of_arbitrary_pods_and_configmaps_never_raise(
    pod: dict[str, Any], unit: dict[str, Any]
) -> None:
    view = pod_view(pod)
    assert isinstance(view, PodView)
    _ = (view.terminal, view.assigned, view.running)
    control_unit_view(unit, "spec.json")


@FUZZ
@given(
    template=st.one_of(
        JSON_OBJECTS, mutated({"metadata": {"labels": {"a": "b"}}, "spec": valid_pod()["spec"]})
    )
)
@example(template={"metadata": {"ownerReferences": 1.5}})  # found by this test: a crash
def test_build_pod_from_an_arbitrary_template_keeps_the_identity(template: dict[str, Any]) -> None:
    pod = build_pod(template, IDENTITY, (identity_decoration(IDENTITY),))
    assert pod["metadata"]["name"] == IDENTITY.name
    assert pod["metadata"]["namespace"] == IDENTITY.namespace
    owner = pod["metadata"]["ownerReferences"][-1]
    assert owner["uid"] == CU_CURRENT and owner["controller"] is True


# ----- the full decision pass -------------------------------------------------------------------------------


@st.composite
def hostile_scenes(draw: st.DrawFn) -> Scene:
    live = parse_taskset(draw(tasksets()))
    recorded = TaskSetStatus.from_json(draw(statuses()))
    names = {f"{NAME}-a-0", f"{NAME}-b-0", f"{NAME}-a-1"}
    if isinstance(live, ParsedTaskSet):
        names |= {f"{NAME}-{role.name}-{i}" for role in live.spec.roles for i in range(min(role.replicas, 3))}
    observed_pods: dict[str, PodView] = {}
    for name in sorted(names):
        if draw(st.booleans()):
            raw = draw(st.one_of(JSON_OBJECTS, mutated(valid_pod(name))))
            try:  # pod_view's own property is checked above; here it must not mask decide's
                observed_pods[name] = pod_view(raw)
            except Exception:
                continue
    unit = draw(st.one_of(st.none(), control_units()))
    observed = Observed(
        control_unit=None if unit is None else control_unit_view(unit, "spec.json"), pods=observed_pods
    )
    ref = TaskSetRef(NAME, "ns", TS_UID, draw(st.integers(0, 3)), draw(st.booleans()))
    now = START + timedelta(seconds=draw(st.floats(-10, 10**7, allow_nan=False)))
    return Scene(ref, live, recorded, observed, now)


@FUZZ
@given(scene=hostile_scenes(), data=st.data())
def test_decide_on_hostile_input_is_total_and_moves_along_declared_edges(
    scene: Scene, data: st.DataObject
) -> None:
    step = decide(scene.ref, scene.live, scene.recorded, scene.observed, scene.now)
    plan = step.plan
    check_plan(scene, plan, round_trip=False)
    for intent in list(plan.intents):
        result = ActionResult(
            kind=data.draw(st.sampled_from(list(ResultKind))),
            view=view_of(
                intent, data.draw(st.one_of(st.none(), JSON_OBJECTS, mutated(valid_pod(intent.name))))
            ),
            message=data.draw(TEXT),
        )
        step.fold(intent, result)
    check_plan(scene, plan, round_trip=False)


@FUZZ
@given(pod=st.one_of(pods(), mutated(valid_pod())))
@example(pod={"spec": {"containers": 1}})
@example(pod={"spec": [], "status": "x", "metadata": 3})
@example(pod={"status": {"containerStatuses": [1, {"name": "c", "image": "i"}]}})
def test_the_slim_cached_pod_looks_the_same_to_the_controller(pod: dict[str, Any]) -> None:
    """The pod cache keeps ``slim_pod`` of every Pod: nothing the controller reads may be lost, the
    transform must be idempotent and must leave its argument alone (the informer contract)."""
    before = copy.deepcopy(pod)
    slim = slim_pod(pod)
    assert pod == before
    assert pod_view(slim) == pod_view(pod)
    assert slim_pod(slim) == slim
    meta = pod.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("annotations", {}), dict):  # the API server's types
        assert taskset_index(slim) == taskset_index(pod)


def _unschedulable() -> dict[str, Any]:
    pod = PodBuilder("ts-a-0").obj()
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/4 nodes"}
    pod["status"]["conditions"] = [condition]
    return pod


def _image_pull_backoff() -> dict[str, Any]:
    pod = PodBuilder("ts-a-0").obj()
    waiting = {"reason": "ImagePullBackOff", "message": "Back-off pulling image"}
    pod["status"]["initContainerStatuses"] = [{"name": "init", "image": "x", "state": {"waiting": waiting}}]
    return pod


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param(
            PodBuilder("ts-a-0").uid("p1").controlled_by("cu").taskset("t").attempt(2).obj(), id="new"
        ),
        pytest.param(PodBuilder("ts-a-0").running().deleting().obj(), id="running, being deleted"),
        pytest.param(PodBuilder("ts-a-0").exited(137, message="OOMKilled").obj(), id="exited"),
        pytest.param(PodBuilder("ts-a-0").phase("Unknown").reason("NodeLost").obj(), id="unknown"),
        pytest.param(_unschedulable(), id="unschedulable"),
        pytest.param(_image_pull_backoff(), id="init container waiting"),
        pytest.param(orjson.loads(RECORDED_POD.read_bytes()), id="recorded from the control plane"),
    ],
)
def test_the_slim_cached_pod_of_each_shape_looks_the_same_to_the_controller(pod: dict[str, Any]) -> None:
    slim = slim_pod(pod)
    assert pod_view(slim) == pod_view(pod)


def test_a_slim_cached_pod_is_under_a_third_of_the_pod() -> None:
    """The cache memory target (10,000 Pods) rests on this: a recorded running Pod, 4.5 KB of JSON."""
    pod = orjson.loads(RECORDED_POD.read_bytes())
    assert len(orjson.dumps(slim_pod(pod))) < len(orjson.dumps(pod)) / 3


def test_slim_cached_pods_share_their_repeated_strings() -> None:
    """Two Pods decoded apart keep one copy of what repeats across a TaskSet's Pods (the memory target:
    a slim Pod is a third smaller so), and of the conditions only the one the controller reads."""
    first, second = (orjson.loads(RECORDED_POD.read_bytes()) for _ in range(2))
    for pod in (first, second):  # the recording's labels are another scheme's: the cache drops them
        labels = pod["metadata"]["labels"]
        labels |= {LABEL_TASKSET: labels["example.com/taskset"], LABEL_ROLE: labels["example.com/role"]}
    assert first["metadata"]["namespace"] is not second["metadata"]["namespace"]
    assert first["metadata"]["labels"][LABEL_ROLE] is not second["metadata"]["labels"][LABEL_ROLE]

    a, b = slim_pod(first), slim_pod(second)

    assert a["metadata"]["namespace"] is b["metadata"]["namespace"]
    assert a["status"]["phase"] is b["status"]["phase"]
    labels = list(zip(a["metadata"]["labels"].values(), b["metadata"]["labels"].values(), strict=True))
    assert labels and all(x is y for x, y in labels)
    assert [c["type"] for c in a["status"]["conditions"]] == ["Ready", "PodScheduled"]


def test_slim_cached_tasksets_keep_no_status_but_its_state_and_share_their_strings() -> None:
    """The TaskSet cache's part of the memory target: passes build on the status they wrote or read live,
    so the cache keeps only its ``state`` (the gauge's); TaskSets of one kind repeat their templates."""
    obj = TaskSetBuilder("job").role("worker", replicas=2).obj()
    obj["metadata"]["managedFields"] = [{"manager": "taskset-controller", "operation": "Update"}]
    running = {"phase": "TaskRoleReplicaAttemptRunning", "transitionTime": "2026-11-23T02:41:10Z"}
    obj["status"] = {"state": "Running", "roleStatus": [{"name": "worker", "replicaStatus": [running]}]}
    raw = orjson.dumps(obj)
    first, second = orjson.loads(raw), orjson.loads(raw)
    before = copy.deepcopy(first)

    a, b = slim_taskset(first), slim_taskset(second)

    assert first == before  # the informer's contract: the decoded object is never changed
    assert "managedFields" not in a["metadata"]
    assert a == slim_taskset(a)
    assert a["status"] == {"state": "Running"}
    assert a["status"]["state"] is b["status"]["state"]
    image = a["spec"]["roles"][0]["template"]["spec"]["containers"][0]["image"]
    assert image is b["spec"]["roles"][0]["template"]["spec"]["containers"][0]["image"]
    assert a["spec"] == obj["spec"]
    assert "status" not in slim_taskset({**obj, "status": {"roleStatus": []}})  # no state: no status
