"""The objects the controller creates (spec 3.1, 3.2, S27 at unit level): a replica's Pod built from its
role's template, and an attempt's ControlUnit ConfigMap."""

from __future__ import annotations

import copy
from typing import Any

import cachetools
import orjson
import pytest

from taskset.api.spec import CheckFailure, ParsedTaskSet, parse_taskset
from taskset.integrations.identity_env import identity_decoration
from taskset.objects import controlunit
from taskset.objects.controlunit import MAX_SNAPSHOT_BYTES, SNAPSHOT_KEY, build_control_unit, parse_snapshot
from taskset.objects.pods import PodIdentity, build_pod
from tests.builders import TaskSetBuilder, pod_template

pytestmark = pytest.mark.unit

TS_UID = "5f1c0e2a-ts"
CU_UID = "9b7d4c1e-cu"


def identity(index: int = 1, *, taskset_attempt: int = 0, replica_attempt: int = 0) -> PodIdentity:
    return PodIdentity(
        taskset="podshape",
        namespace="ns1",
        taskset_uid=TS_UID,
        role="r",
        index=index,
        name=f"podshape-r-{index}",
        control_unit_name=f"c-podshape-{taskset_attempt}",
        control_unit_uid=CU_UID,
        taskset_attempt=taskset_attempt,
        replica_attempt=replica_attempt,
        proof="0" * 64,
    )


def s27_template() -> dict[str, Any]:
    """The template of S27: labels, PodGroup annotation, a scheduler, an init container, two containers."""
    return {
        "metadata": {
            "labels": {"app": "demo"},
            "annotations": {"scheduling.k8s.io/group-name": "pg1", "note": "keep"},
        },
        "spec": {
            "schedulerName": "default-scheduler",
            "initContainers": [{"name": "init", "image": "busybox", "command": ["true"]}],
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "command": ["sh", "-c", "sleep 3600"],
                    "env": [{"name": "USERVAR", "value": "x"}],
                },
                {"name": "side", "image": "busybox", "command": ["sh", "-c", "sleep 3600"]},
            ],
        },
    }


INJECTED = [
    {"name": "TASKSET_NAMESPACE", "value": "ns1"},
    {"name": "TASKSET_NAME", "value": "podshape"},
    {"name": "TASKROLE_NAME", "value": "r"},
    {"name": "TASKROLE_REPLICA_INDEX", "value": "1"},
    {"name": "TASKSET_ATTEMPT_ID", "value": "0"},
    {"name": "TASKROLE_REPLICA_ATTEMPT_ID", "value": "0"},
]


def containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pod["spec"].get("initContainers", []), *pod["spec"]["containers"]]


# ----- S27 ------------------------------------------------------------------------------------------------


def test_s27_identity_name_and_kind() -> None:
    pod = build_pod(s27_template(), identity(), (identity_decoration(identity()),))
    assert (pod["apiVersion"], pod["kind"]) == ("v1", "Pod")
    assert (pod["metadata"]["name"], pod["metadata"]["namespace"]) == ("podshape-r-1", "ns1")


def test_s27_labels_keep_the_templates_and_add_the_selectors() -> None:
    pod = build_pod(s27_template(), identity(), (identity_decoration(identity()),))
    assert pod["metadata"]["labels"] == {"app": "demo", "TaskSet": "podshape", "PodTaskRole": "r"}


def test_s27_annotations_keep_the_templates_and_add_the_identity_with_d1_attempt_ids() -> None:
    pod = build_pod(s27_template(), identity(), (identity_decoration(identity()),))
    assert pod["metadata"]["annotations"] == {
        "scheduling.k8s.io/group-name": "pg1",
        "note": "keep",
        "RoleReplicaIndex": "1",
        "TaskSet": "podshape",
        "Namespace": "ns1",
        "TSUID": TS_UID,
        "CID": CU_UID,
        "TaskSetAttemptID": "0",
        "ReplicaAttemptID": "0",
        "octopus.openi.pcl.cn/creation-proof": "0" * 64,
    }


def test_s27_exactly_one_controller_owner_the_control_unit() -> None:
    pod = build_pod(s27_template(), identity(), (identity_decoration(identity()),))
    assert pod["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": "c-podshape-0",
            "uid": CU_UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_s27_six_variables_lead_the_env_of_every_container_and_init_container() -> None:
    pod = build_pod(s27_template(), identity(), (identity_decoration(identity()),))
    envs = {c["name"]: c["env"] for c in containers(pod)}
    assert envs == {
        "init": INJECTED,
        "main": [*INJECTED, {"name": "USERVAR", "value": "x"}],
        "side": INJECTED,
    }


def test_s27_termination_message_policy_and_restart_policy_defaults() -> None:
    pod = build_pod(s27_template(), identity(), (identity_decoration(identity()),))
    assert {c["name"]: c["terminationMessagePolicy"] for c in containers(pod)} == {
        "init": "FallbackToLogsOnError",
        "main": "FallbackToLogsOnError",
        "side": "FallbackToLogsOnError",
    }
    assert pod["spec"]["restartPolicy"] == "Never"
    assert pod["spec"]["schedulerName"] == "default-scheduler"


# ----- D1: the attempt ids travel in annotations and env, never in the name --------------------------------


@pytest.mark.parametrize(
    ("taskset_attempt", "replica_attempt"),
    [
        pytest.param(0, 0, id="the first attempt of both"),
        pytest.param(0, 2, id="a replica retried twice"),
        pytest.param(3, 1, id="a retried replica of a retried TaskSet"),
    ],
)
def test_d1_the_name_is_stable_and_the_attempt_ids_are_carried(
    taskset_attempt: int, replica_attempt: int
) -> None:
    who = identity(2, taskset_attempt=taskset_attempt, replica_attempt=replica_attempt)
    pod = build_pod(pod_template(), who, (identity_decoration(who),))
    assert pod["metadata"]["name"] == "podshape-r-2"
    annotations = pod["metadata"]["annotations"]
    assert (annotations["TaskSetAttemptID"], annotations["ReplicaAttemptID"]) == (
        str(taskset_attempt),
        str(replica_attempt),
    )
    assert pod["metadata"]["ownerReferences"][0]["name"] == f"c-podshape-{taskset_attempt}"
    env = pod["spec"]["containers"][0]["env"]
    assert [(e["name"], e["value"]) for e in env] == [
        ("TASKSET_NAMESPACE", "ns1"),
        ("TASKSET_NAME", "podshape"),
        ("TASKROLE_NAME", "r"),
        ("TASKROLE_REPLICA_INDEX", "2"),
        ("TASKSET_ATTEMPT_ID", str(taskset_attempt)),
        ("TASKROLE_REPLICA_ATTEMPT_ID", str(replica_attempt)),
    ]


# ----- what the controller owns overrides the template; everything else passes through --------------------


def test_the_template_cannot_override_the_identity() -> None:
    template = pod_template(labels={"TaskSet": "evil", "PodTaskRole": "evil", "keep": "me"})
    template["metadata"]["annotations"] = {"CID": "evil", "TSUID": "evil", "ReplicaAttemptID": "9"}
    template["metadata"] |= {"name": "evil", "namespace": "evil", "generateName": "evil-"}
    pod = build_pod(template, identity(), (identity_decoration(identity()),))
    meta = pod["metadata"]
    assert (meta["name"], meta["namespace"], "generateName" in meta) == ("podshape-r-1", "ns1", False)
    assert meta["labels"] == {"TaskSet": "podshape", "PodTaskRole": "r", "keep": "me"}
    assert (meta["annotations"]["CID"], meta["annotations"]["TSUID"]) == (CU_UID, TS_UID)
    assert meta["annotations"]["ReplicaAttemptID"] == "0"


def test_template_owner_references_are_kept_and_the_control_unit_is_appended() -> None:
    extra = {"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "secret-uid"}
    template = pod_template()
    template["metadata"] = {"ownerReferences": [extra]}
    pod = build_pod(template, identity(), (identity_decoration(identity()),))
    owners = pod["metadata"]["ownerReferences"]
    assert owners[0] == extra
    assert [o["uid"] for o in owners if o.get("controller") is True] == [CU_UID]


@pytest.mark.parametrize(
    ("template_policy", "expected"),
    [
        pytest.param(None, "Never", id="W-12 an unset restartPolicy becomes Never"),
        pytest.param("", "Never", id="W-12 an empty restartPolicy becomes Never"),
        pytest.param("OnFailure", "OnFailure", id="an explicit OnFailure is honoured"),
        pytest.param("Always", "Always", id="an explicit Always is honoured for service-like roles"),
    ],
)
def test_restart_policy(template_policy: str | None, expected: str) -> None:
    template = pod_template(restart_policy=template_policy)
    assert (
        build_pod(template, identity(), (identity_decoration(identity()),))["spec"]["restartPolicy"]
        == expected
    )


def test_an_explicit_termination_message_policy_is_kept() -> None:
    template = pod_template()
    template["spec"]["containers"][0]["terminationMessagePolicy"] = "File"
    template["spec"]["initContainers"] = [{"name": "i", "image": "busybox"}]
    pod = build_pod(template, identity(), (identity_decoration(identity()),))
    assert pod["spec"]["containers"][0]["terminationMessagePolicy"] == "File"
    assert pod["spec"]["initContainers"][0]["terminationMessagePolicy"] == "FallbackToLogsOnError"


def test_the_rest_of_the_template_passes_through_unchanged() -> None:
    passthrough = {
        "schedulerName": "kube-batch",
        "priorityClassName": "high",
        "serviceAccountName": "runner",
        "activeDeadlineSeconds": 600,
        "terminationGracePeriodSeconds": 1,
        "affinity": {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
        },
        "tolerations": [{"key": "gpu", "operator": "Exists"}],
        "volumes": [{"name": "data", "emptyDir": {}}],
        "nodeSelector": {"disk": "ssd"},
    }
    container = {
        "name": "c0",
        "image": "busybox",
        "resources": {"limits": {"nvidia.com/gpu": "1"}},
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
    }
    template = {"spec": {**passthrough, "restartPolicy": "Never", "containers": [container]}}
    pod = build_pod(template, identity(), (identity_decoration(identity()),))
    spec = pod["spec"]
    assert {key: spec[key] for key in passthrough} == passthrough
    assert {k: v for k, v in spec["containers"][0].items() if k in container} == container
    assert "hostname" not in spec and "subdomain" not in spec


def test_the_template_is_never_mutated() -> None:
    template = s27_template()
    before = copy.deepcopy(template)
    first = build_pod(template, identity(0), (identity_decoration(identity(0)),))
    second = build_pod(template, identity(1), (identity_decoration(identity(1)),))
    assert template == before
    first["spec"]["containers"][0]["env"].append({"name": "LATE", "value": "1"})
    first["metadata"]["labels"]["late"] = "1"
    assert template == before
    assert second["spec"]["containers"][0]["env"] == [
        *[e if e["name"] != "TASKROLE_REPLICA_INDEX" else {**e, "value": "1"} for e in INJECTED],
        {"name": "USERVAR", "value": "x"},
    ]


def test_the_parsed_roles_template_is_never_mutated() -> None:
    obj = TaskSetBuilder("podshape").role("r", replicas=2, template=s27_template()).obj()
    parsed = parse_taskset(obj)
    assert isinstance(parsed, ParsedTaskSet)
    before = copy.deepcopy(dict(parsed.spec.roles[0].template))
    build_pod(parsed.spec.roles[0].template, identity(), (identity_decoration(identity()),))
    assert dict(parsed.spec.roles[0].template) == before


@pytest.mark.parametrize(
    "template",
    [
        pytest.param({}, id="an empty template"),
        pytest.param({"metadata": None, "spec": None}, id="null metadata and spec"),
        pytest.param({"spec": {"containers": [{"name": "c0", "env": None}]}}, id="a null env list"),
    ],
)
def test_a_sparse_template_still_gives_a_pod(template: dict[str, Any]) -> None:
    pod = build_pod(template, identity(), (identity_decoration(identity()),))
    assert pod["metadata"]["name"] == "podshape-r-1"
    assert pod["spec"]["restartPolicy"] == "Never"
    assert len(pod["metadata"]["ownerReferences"]) == 1
    for container in pod["spec"].get("containers", []):
        assert container["env"] == INJECTED


# ----- the ControlUnit (3.1) --------------------------------------------------------------------------------


def taskset(spec: dict[str, Any] | None = None) -> dict[str, Any]:
    obj = TaskSetBuilder("tensorflowdemo").namespace("ns1").uid(TS_UID).role("ps").obj()
    if spec is not None:
        obj["spec"] = spec
    return obj


def test_the_control_unit_is_controlled_by_the_taskset() -> None:
    unit = build_control_unit(taskset(), "c-tensorflowdemo-0")
    assert (unit["apiVersion"], unit["kind"]) == ("v1", "ConfigMap")
    meta = unit["metadata"]
    assert (meta["name"], meta["namespace"]) == ("c-tensorflowdemo-0", "ns1")
    assert meta["labels"] == {"TaskSet": "tensorflowdemo"}
    assert meta["annotations"] == {"TaskSet": "tensorflowdemo", "Namespace": "ns1"}
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "octopus.openi.pcl.cn/v1alpha1",
            "kind": "TaskSet",
            "name": "tensorflowdemo",
            "uid": TS_UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


def test_the_control_unit_snapshots_the_spec_of_its_attempt() -> None:
    obj = taskset()
    unit = build_control_unit(obj, "c-tensorflowdemo-0")
    assert orjson.loads(unit["data"][SNAPSHOT_KEY]) == obj["spec"]
    spec = parse_snapshot(unit["data"][SNAPSHOT_KEY], "tensorflowdemo", "ns1", TS_UID)
    parsed = parse_taskset(obj)
    assert isinstance(parsed, ParsedTaskSet)
    assert spec == parsed.spec


def test_a_snapshot_is_parsed_once_for_every_pass_that_reads_it() -> None:
    """The passes of a running attempt share one parse of its snapshot (the spec is frozen); another
    TaskSet's, an edited text or another integration check gets its own."""
    text = build_control_unit(taskset(), "c-tensorflowdemo-0")["data"][SNAPSHOT_KEY]
    first = parse_snapshot(text, "tensorflowdemo", "ns1", TS_UID)
    assert first is not None
    assert parse_snapshot("".join(text), "tensorflowdemo", "ns1", TS_UID) is first  # equal text, new object
    assert parse_snapshot(text, "tensorflowdemo", "ns1", "another-uid") is not first
    edited = text.replace('"replicas":1', '"replicas":3', 1)
    assert edited != text
    again = parse_snapshot(edited, "tensorflowdemo", "ns1", TS_UID)
    assert again is not None and again != first

    def refuse(_spec: Any) -> Any:
        return CheckFailure(field="spec.roles", message="refused")

    assert parse_snapshot(text, "tensorflowdemo", "ns1", TS_UID, [refuse]) is None


def test_the_remembered_parses_are_bounded_by_the_bytes_of_their_texts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Least recently used first: a finished attempt's parse goes as others come, parsed anew if read."""
    bound: cachetools.LRUCache[Any, Any] = cachetools.LRUCache(450, getsizeof=lambda entry: max(1, entry[0]))
    monkeypatch.setattr(controlunit, "_parsed", bound)
    text = build_control_unit(taskset(), "c-tensorflowdemo-0")["data"][SNAPSHOT_KEY]
    assert 150 < len(text) <= 225  # two fit in the bound, three do not
    first = parse_snapshot(text, "tensorflowdemo", "ns1", "uid-0")
    for index in (1, 2):
        parse_snapshot(text, "tensorflowdemo", "ns1", f"uid-{index}")
    assert bound.currsize <= 450 and len(bound) == 2
    again = parse_snapshot(text, "tensorflowdemo", "ns1", "uid-0")
    assert again == first and again is not first


class _Unhashable:
    __hash__ = None  # type: ignore[assignment]

    def __call__(self, _spec: Any) -> None:
        return None


def test_a_snapshot_checked_by_an_unhashable_check_is_parsed_each_time() -> None:
    text = build_control_unit(taskset(), "c-tensorflowdemo-0")["data"][SNAPSHOT_KEY]
    check = _Unhashable()
    first = parse_snapshot(text, "tensorflowdemo", "ns1", TS_UID, [check])
    assert first is not None and first == parse_snapshot(text, "tensorflowdemo", "ns1", TS_UID)
    assert parse_snapshot(text, "tensorflowdemo", "ns1", TS_UID, [check]) is not first


def test_an_oversized_spec_is_not_snapshotted() -> None:
    big = pod_template()
    big["metadata"] = {"annotations": {"blob": "x" * MAX_SNAPSHOT_BYTES}}
    obj = TaskSetBuilder("big").namespace("ns1").uid(TS_UID).role("r", template=big).obj()
    assert build_control_unit(obj, "c-big-0")["data"] == {}


@pytest.mark.parametrize(
    "snapshot",
    [
        pytest.param("not json", id="unreadable"),
        pytest.param(
            '{"roles": [{"name": "r", "replicas": 1, "completionPolicy": {"minSucceeded": 2}}]}', id="illegal"
        ),
        pytest.param("[]", id="not an object"),
    ],
)
def test_an_unusable_snapshot_is_ignored(snapshot: str) -> None:
    assert parse_snapshot(snapshot, "job", "ns", "uid") is None


def test_a_spec_nested_too_deep_to_encode_runs_without_a_snapshot() -> None:
    """The decisions build the ControlUnit, so building it never raises: a spec nested deeper than JSON
    encoding allows runs with the live spec, as one too large for a ConfigMap does."""
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(400):
        inner["x"] = {}
        inner = inner["x"]
    taskset = TaskSetBuilder("deep").uid(TS_UID).namespace("ns1").role("r", 1).obj()
    taskset["spec"]["extra"] = deep
    assert build_control_unit(taskset, "c-deep-0")["data"] == {}
