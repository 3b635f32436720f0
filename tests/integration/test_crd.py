"""The CRD on a real API server: every documented example applies unchanged, and invalid TaskSets are
rejected at create time with an error that names the offending field (D7, S25)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from devcluster import Cluster
from taskset.api import compact
from taskset.api import constants as c
from taskset.api.status import TaskSetStatus
from tests.builders import TaskSetBuilder, pod_template
from tests.integration.conftest import install_crd

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "tests" / "examples").glob("*.yaml"))
LONG = "a" * 59  # with role "r": replicas 10 gives a 63-character pod name, 11 gives 64 (S25)

# kube-batch's PodGroup, only so that the manual's kube-batch example can apply as written.
PODGROUP_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {
        "name": "podgroups.scheduling.incubator.k8s.io",
        # *.k8s.io groups are protected; "unapproved..." is the documented way to install one anyway.
        "annotations": {"api-approved.kubernetes.io": "unapproved, a test stand-in for kube-batch"},
    },
    "spec": {
        "group": "scheduling.incubator.k8s.io",
        "scope": "Namespaced",
        "names": {
            "plural": "podgroups",
            "singular": "podgroup",
            "kind": "PodGroup",
            "listKind": "PodGroupList",
        },
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            }
        ],
    },
}


@pytest.fixture(scope="session")
def podgroup_crd(cluster: Cluster) -> None:
    install_crd(cluster, json.dumps(PODGROUP_CRD), "podgroups.scheduling.incubator.k8s.io", "podgroups")


def create(cluster: Cluster, namespace: str, obj: dict[str, Any], *flags: str) -> Any:
    return cluster.kubectl("create", "-n", namespace, "-f", "-", *flags, input=json.dumps(obj), check=False)


def stored_tasksets(cluster: Cluster, namespace: str) -> list[str]:
    return cluster.kubectl("get", c.PLURAL, "-n", namespace, "-o", "name").stdout.split()


def get_taskset(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(
        cluster.kubectl("get", c.PLURAL, name, "-n", namespace, "-o", "json").stdout
    )
    return result


# ======================================================================================================
# Examples
# ======================================================================================================


@pytest.mark.parametrize("example", EXAMPLES, ids=[path.stem for path in EXAMPLES])
def test_documented_example_applies_unchanged(
    cluster: Cluster, crd_installed: None, podgroup_crd: None, namespace: str, example: Path
) -> None:
    """The README's, the user manual's and the spec's YAML, byte for byte, apply and are stored as written."""
    applied = cluster.kubectl("apply", "-n", namespace, "-f", str(example), check=False)
    assert applied.returncode == 0, applied.stderr
    assert "Warning" not in applied.stderr
    documents = [doc for doc in yaml.safe_load_all(example.read_text()) if doc and doc["kind"] == c.KIND]
    assert documents
    for document in documents:
        stored = get_taskset(cluster, namespace, document["metadata"]["name"])
        assert stored["spec"] == document["spec"]


def test_examples_cover_every_yaml_taskset_of_the_seeds_and_spec() -> None:
    assert [path.name for path in EXAMPLES] == [
        "readme-zh-quickstart.yaml",
        "spec-2.2-ps-worker.yaml",
        "user-manual-zh-example.yaml",
        "user-manual-zh-kube-batch.yaml",
    ]


# ======================================================================================================
# Rejections: each names the offending field
# ======================================================================================================


def _edit(obj: dict[str, Any], change: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    change(obj)
    return obj


def _role(obj: dict[str, Any], index: int = 0) -> dict[str, Any]:
    role: dict[str, Any] = obj["spec"]["roles"][index]
    return role


def _container(obj: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = _role(obj)["template"]["spec"]["containers"][0]
    return container


def one_role(**kwargs: Any) -> dict[str, Any]:
    return TaskSetBuilder("ts").role("r", **kwargs).obj()


GE = "should be greater than or equal to"
PATTERN = "should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'"

# Through kubectl, as a user meets them. The hostile corpus (tests/corpus/hostile.py) holds the other S25
# rejections and sends them through the API (tests/integration/test_hostile_input.py).
REJECTED = [
    pytest.param(
        TaskSetBuilder("dupnames").role("role1").role("role1").obj(),
        ["spec.roles[1]: Duplicate value", '"name":"role1"'],
        id="duplicate role names (S23)",
    ),
    pytest.param(
        one_role(min_succeeded=2, max_failed=1),
        [
            "spec.roles[0].completionPolicy.minSucceeded",
            "MinSucceeded cannot be bigger than replica amount for TaskRole:r",
        ],
        id="minSucceeded above replicas (S24)",
    ),
    pytest.param(
        one_role(min_succeeded=1, max_failed=2),
        [
            "spec.roles[0].completionPolicy.maxFailed",
            "MaxFailed cannot be bigger than replica amount for TaskRole:r",
        ],
        id="maxFailed above replicas (S24)",
    ),
    pytest.param(
        TaskSetBuilder("ts").role("ok", replicas=3).role("w", replicas=3, max_failed=4).obj(),
        ["spec.roles[1].completionPolicy.maxFailed", "TaskRole:w"],
        id="the completion rule names the role and its index",
    ),
    pytest.param(
        one_role(replicas=None), ["spec.roles[0].replicas: Required value"], id="a role without replicas"
    ),
    pytest.param(
        _edit(one_role(), lambda o: _role(o).pop("name")),
        ["spec.roles[0].name: Required value"],
        id="a role without a name",
    ),
    pytest.param(
        TaskSetBuilder("ts").role("Ps").obj(), ["spec.roles[0].name", PATTERN], id="role name Ps (S25)"
    ),
    pytest.param(
        TaskSetBuilder("ts").role("r" * 64).obj(),
        ["spec.roles[0].name: Too long"],
        id="a 64-character role name",
    ),
    pytest.param(
        TaskSetBuilder("MyJob").role("r").obj(), ["metadata.name", PATTERN], id="TaskSet name MyJob (S25)"
    ),
    pytest.param(
        TaskSetBuilder(LONG).role("r", replicas=11).obj(),
        ["spec.roles: Invalid value", "Pod name cannot be longer than 63 characters for TaskRole:r"],
        id="a 64-character pod name (S25, D2)",
    ),
    pytest.param(
        TaskSetBuilder("a" * 40).role("short").role("w" * 20, replicas=100).obj(),
        [
            "spec.roles: Invalid value",
            "Pod name cannot be longer than 63 characters for TaskRole:" + "w" * 20,
        ],
        id="the pod-name rule names the offending role",
    ),
    pytest.param(
        TaskSetBuilder("ts").retry(True, -1, 0).role("r").obj(),
        ["spec.retryPolicy.maxRetryCount", f"{GE} 0"],
        id="a negative TaskSet maxRetryCount",
    ),
    pytest.param(
        one_role(retry=(True, c.MAX_RETRY_COUNT + 1, 0)),
        ["spec.roles[0].retryPolicy.maxRetryCount", f"should be less than or equal to {c.MAX_RETRY_COUNT}"],
        id="a role maxRetryCount above the maximum",
    ),
    pytest.param(
        one_role(event_policy=[("RoleFail", "NoAction")]),
        ['spec.roles[0].eventPolicy[0].event: Unsupported value: "RoleFail"'],
        id="unknown event (S25, W-19)",
    ),
    pytest.param(
        one_role(event_policy=[{"event": "RoleFailed"}]),
        ["spec.roles[0].eventPolicy[0].action: Required value"],
        id="an event policy entry without action",
    ),
    pytest.param(
        _edit(one_role(), lambda o: _role(o).update(completionPolicy={"minSucceeded": "all"})),
        ["spec.roles[0].completionPolicy.minSucceeded", "should match '^(100|[1-9][0-9]?)%$'"],
        id="minSucceeded as a string that is no percentage",
    ),
    pytest.param(
        TaskSetBuilder("ts").queue("Default").role("r").obj(),
        ["spec.queue", "should match '^[a-z0-9]{1,63}$'"],
        id="a queue name with upper case",
    ),
    pytest.param(
        {
            "apiVersion": c.API_VERSION,
            "kind": c.KIND,
            "metadata": {"name": "many"},
            "spec": {"roles": [{"name": f"r{i}", "replicas": 1} for i in range(c.MAX_ROLES + 1)]},
        },
        [f"spec.roles: Too many: {c.MAX_ROLES + 1}"],
        id=f"more than {c.MAX_ROLES} roles",
    ),
    pytest.param(
        TaskSetBuilder("big").role("a", replicas=6000).role("b", replicas=4001).obj(),
        ["spec.roles", f"the replicas of all roles must total at most {c.MAX_TOTAL_REPLICAS}"],
        id="more than 10,000 replicas in total",
    ),
    pytest.param(
        _edit(one_role(), lambda o: _role(o)["template"]["spec"].update(contaners=[])),
        ['unknown field "spec.roles[0].template.spec.contaners"'],
        id="a misspelt field in the pod template (strict validation, kubectl's default)",
    ),
    pytest.param(
        _edit(one_role(), lambda o: _role(o).update(replica=2)),
        ['unknown field "spec.roles[0].replica"'],
        id="a misspelt role field",
    ),
    pytest.param(
        _edit(one_role(), lambda o: _role(o)["template"].update(metadata={"lables": {"a": "b"}})),
        ['unknown field "spec.roles[0].template.metadata.lables"'],
        id="a misspelt field in the template metadata",
    ),
    pytest.param(
        _edit(one_role(), lambda o: _container(o).pop("name")),
        ["spec.roles[0].template.spec.containers[0].name: Required value"],
        id="a container without a name",
    ),
    pytest.param(
        _edit(one_role(), lambda o: _role(o)["template"]["spec"]["containers"].append(dict(_container(o)))),
        ["spec.roles[0].template.spec.containers[1]: Duplicate value", '"name":"c0"'],
        id="two containers with the same name",
    ),
    pytest.param(
        one_role(template={"spec": {"restartPolicy": "Never"}}),
        ["spec.roles[0].template.spec.containers: Required value"],
        id="a pod spec without containers",
    ),
    pytest.param(
        _edit(one_role(), lambda o: _role(o)["template"]["spec"].update(restartPolicy=5)),
        ["spec.roles[0].template.spec.restartPolicy", "must be of type string"],
        id="restartPolicy as a number",
    ),
    pytest.param(
        _edit(one_role(), lambda o: _container(o).update(resources={"limits": {"cpu": 0.5}})),
        ["spec.roles[0].template.spec.containers[0].resources.limits.cpu", "must be of type integer,string"],
        id="a float quantity, which int-or-string rejects (write 500m)",
    ),
]


@pytest.mark.parametrize(("obj", "expected"), REJECTED)
def test_invalid_taskset_is_rejected_naming_the_field(
    cluster: Cluster, crd_installed: None, namespace: str, obj: dict[str, Any], expected: list[str]
) -> None:
    result = create(cluster, namespace, obj)
    assert result.returncode != 0, result.stdout
    for text in expected:
        assert text in result.stderr, result.stderr
    assert stored_tasksets(cluster, namespace) == []


def test_at_least_25_rejections_are_covered() -> None:
    assert len(REJECTED) >= 25


# ======================================================================================================
# Acceptances at the edges
# ======================================================================================================


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(TaskSetBuilder(LONG).role("r", replicas=10).obj(), id="a 63-character pod name (S25)"),
        pytest.param(
            TaskSetBuilder("my-job").role("ps-a").obj(),
            id="hyphenated names O rejected are accepted (S25, D2)",
        ),
        pytest.param(TaskSetBuilder("noroles").no_roles().obj(), id="no roles (S26)"),
        pytest.param(
            TaskSetBuilder("untouched").queue("default").priority(5).role("r").obj(),
            id="reserved queue and priority are preserved (S59)",
        ),
        pytest.param(
            TaskSetBuilder("ts")
            .role("r", replicas=c.MAX_REPLICAS, min_succeeded=c.MAX_REPLICAS, max_failed=1)
            .obj(),
            id="the largest replica count with minSucceeded equal to it",
        ),
        pytest.param(
            TaskSetBuilder("ts").role("a", replicas=5000).role("b", replicas=5000).obj(),
            id="10,000 replicas in total, the largest supported TaskSet",
        ),
        pytest.param(
            {
                "apiVersion": c.API_VERSION,
                "kind": c.KIND,
                "metadata": {"name": "many"},
                "spec": {"roles": [{"name": f"r{i}", "replicas": 1} for i in range(c.MAX_ROLES)]},
            },
            id="the most roles, within the CEL cost budget",
        ),
        pytest.param(
            TaskSetBuilder("ts")
            .role(
                "r",
                template=pod_template(
                    labels={"app": "demo"},
                    annotations={"scheduling.k8s.io/group-name": "pg1"},
                    schedulerName="kube-batch",
                    activeDeadlineSeconds=5,
                    tolerations=[{"operator": "Exists"}],
                    volumes=[{"name": "data", "emptyDir": {"sizeLimit": "1Gi"}}],
                ),
            )
            .obj(),
            id="a rich pod template passes through",
        ),
        pytest.param(
            _edit(
                one_role(),
                lambda o: _container(o).update(resources={"limits": {"cpu": "500m", "nvidia.com/gpu": 1}}),
            ),
            id="quantities as strings and integers",
        ),
    ],
)
def test_valid_taskset_is_stored_as_written(
    cluster: Cluster, crd_installed: None, namespace: str, obj: dict[str, Any]
) -> None:
    result = create(cluster, namespace, obj)
    assert result.returncode == 0, result.stderr
    assert get_taskset(cluster, namespace, obj["metadata"]["name"])["spec"] == obj["spec"]


def test_template_nulls_are_pruned_and_an_optional_port_protocol_defaults_to_tcp(
    cluster: Cluster, crd_installed: None, namespace: str
) -> None:
    """The two ways the API server touches a stored template: null pruning, and the one structural default."""
    obj = one_role()
    _role(obj)["template"]["metadata"] = {"creationTimestamp": None, "labels": {"app": "x"}}
    _container(obj)["ports"] = [{"containerPort": 8080}]
    assert create(cluster, namespace, obj).returncode == 0
    template = get_taskset(cluster, namespace, "ts")["spec"]["roles"][0]["template"]
    assert template["metadata"] == {"labels": {"app": "x"}}
    assert template["spec"]["containers"][0]["ports"] == [{"containerPort": 8080, "protocol": "TCP"}]


def test_generate_name_is_checked_against_the_pod_name_rule(
    cluster: Cluster, crd_installed: None, namespace: str
) -> None:
    obj = one_role(replicas=2)
    obj["metadata"] = {"generateName": "g" * 58}  # the server appends 5 characters: 63, then "-r-1" overflows
    result = create(cluster, namespace, obj)
    assert result.returncode != 0
    assert "Pod name cannot be longer than 63 characters for TaskRole:r" in result.stderr


# ======================================================================================================
# Status subresource, printer columns, names
# ======================================================================================================

T0 = "2024-01-01T00:00:00Z"


def full_status() -> dict[str, Any]:
    """The full status shape of spec 2.5, with nulls where the spec has pointers."""

    def replica(index: int, phase: str, terminated: dict[str, Any] | None = None) -> dict[str, Any]:
        return {
            "index": index, "name": "worker", "phase": phase, "phaseMessage": "", "stopped": False,
            "transitionTime": T0, "startAt": None, "finishAt": None, "totalRetriedCount": 0,
            "podName": "", "podReason": "", "podUID": None, "podIP": "", "podHostIP": "",
            "containerName": "", "containerID": "", "terminatedInfo": terminated,
        }  # fmt: skip

    exited = {"exitCode": 0, "exitMessage": "", "signal": 0, "reason": "Completed"}
    return {
        "phase": c.TaskSetPhase.ATTEMPT_RUNNING,
        "phaseMessage": "Some TaskRole is running",
        "transitionTime": T0,
        "state": c.State.RUNNING,
        "stateMessage": "Some TaskRole is running",
        "controlUnitUID": None,
        "createdAt": T0,
        "startAt": T0,
        "finishAt": None,
        "totalRetriedCount": 0,
        "preemptCount": 0,
        "observedGeneration": 1,
        "conditions": [
            {
                "type": c.ConditionType.RUNNING,
                "status": c.ConditionStatus.TRUE,
                "reason": c.ConditionReason.RUNNING,
                "message": "",
                "lastTransitionTime": T0,
                "observedGeneration": 1,
            }
        ],
        "summary": {
            "roles": "1/2",
            "replicas": "1/3",
            "waiting": 0,
            "running": 1,
            "succeeded": 1,
            "failed": 0,
            "retrying": 0,
            "stopped": 0,
        },
        "roleStatus": [
            {
                "name": "worker",
                "phase": c.RolePhase.COMPLETED,
                "phaseMessage": "",
                "transitionTime": T0,
                "state": c.State.SUCCEEDED,
                "stateMessage": "",
                "replicaCounts": {
                    "waiting": 0,
                    "running": 1,
                    "succeeded": 1,
                    "failed": 0,
                    "retrying": 0,
                    "stopped": 0,
                },
                "replicaStatus": [
                    replica(0, c.ReplicaPhase.COMPLETED, exited),
                    replica(1, c.ReplicaPhase.ATTEMPT_RUNNING),
                ],
            }
        ],
    }


def put_status(cluster: Cluster, namespace: str, status: dict[str, Any]) -> Any:
    obj = get_taskset(cluster, namespace, "ts")
    obj["status"] = status
    return cluster.kubectl(
        "replace", "-n", namespace, "--subresource=status", "-f", "-", input=json.dumps(obj), check=False
    )


def test_status_is_a_subresource_that_keeps_the_full_shape(
    cluster: Cluster, crd_installed: None, namespace: str
) -> None:
    obj = one_role(replicas=2)
    assert create(cluster, namespace, obj).returncode == 0
    status = full_status()
    written = put_status(cluster, namespace, status)
    assert written.returncode == 0, written.stderr
    stored = get_taskset(cluster, namespace, "ts")
    assert stored["status"] == status  # every key kept, nulls included (PUT; a merge patch would drop nulls)
    assert stored["spec"] == obj["spec"]
    assert stored["metadata"]["generation"] == 1  # status writes do not bump the generation (W-15)

    waited = cluster.kubectl("wait", "-n", namespace, "--for=condition=Running", "ts/ts", "--timeout=10s")
    assert waited.returncode == 0

    table = cluster.kubectl("get", "ts", "-n", namespace).stdout.split("\n")
    assert table[0].split() == ["NAME", "STATE", "ROLES", "REPLICAS", "RETRIES", "AGE"]
    assert table[1].split()[:5] == ["ts", "Running", "1/2", "1/3", "0"]
    wide = cluster.kubectl("get", "ts", "-n", namespace, "-o", "wide").stdout.split("\n")
    columns = ["PHASE", "STARTED", "FINISHED", "WAITING", "RUNNING", "SUCCEEDED", "FAILED", "RETRYING"]
    assert wide[0].split()[-13:] == [*columns, "STOPPED", "MESSAGE", "SUSPENDED", "QUEUE", "PRIORITY"]
    assert wide[1].split()[-10:-4] == ["0", "1", "1", "0", "0", "0"]  # then "Some TaskRole is running"


def test_a_compact_status_is_kept_whole_by_the_schema(
    cluster: Cluster, crd_installed: None, namespace: str
) -> None:
    """The compact shape passes the status schema without a field pruned: a pruned row would be
    a replica forgotten."""
    assert create(cluster, namespace, one_role(replicas=2)).returncode == 0
    status = full_status()
    written = compact.compact(status)
    role = written["roleStatus"][0]
    assert role["replicaRows"]["rows"] and role["replicaRows"]["texts"]
    result = put_status(cluster, namespace, written)
    assert result.returncode == 0, result.stderr
    stored = get_taskset(cluster, namespace, "ts")["status"]
    assert stored == written
    assert TaskSetStatus.from_json(stored) == TaskSetStatus.from_json(status)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param({"phase": "Running"}, "status.phase: Unsupported value", id="an unknown TaskSet phase"),
        pytest.param({"state": "Done"}, "status.state: Unsupported value", id="an unknown state"),
        pytest.param({"transitionTime": ""}, "status.transitionTime", id="an empty timestamp"),
        pytest.param({"totalRetriedCount": -1}, "status.totalRetriedCount", id="a negative counter"),
    ],
)
def test_status_schema_rejects_what_the_controller_must_never_write(
    cluster: Cluster, crd_installed: None, namespace: str, change: dict[str, Any], expected: str
) -> None:
    assert create(cluster, namespace, one_role(replicas=2)).returncode == 0
    result = put_status(cluster, namespace, {**full_status(), **change})
    assert result.returncode != 0
    assert expected in result.stderr


def test_short_name_and_category_but_not_all(cluster: Cluster, crd_installed: None, namespace: str) -> None:
    assert create(cluster, namespace, one_role()).returncode == 0
    assert cluster.kubectl("get", "ts", "-n", namespace, "-o", "name").stdout.split() == [
        f"{c.SINGULAR}.{c.GROUP}/ts"
    ]
    assert cluster.kubectl("get", "octopus", "-n", namespace, "-o", "name").stdout.split() == [
        f"{c.SINGULAR}.{c.GROUP}/ts"
    ]
    everything = cluster.kubectl("get", "all", "-n", namespace, "-o", "name").stdout
    assert c.SINGULAR not in everything


def test_strict_field_validation_through_the_api(
    cluster: Cluster, crd_installed: None, namespace: str
) -> None:
    """A client other than kubectl gets the same unknown-field rejection with fieldValidation=Strict."""
    from kubernetes import client  # noqa: PLC0415

    obj = one_role()
    _container(obj)["imagePullPolcy"] = "Always"
    api = client.CustomObjectsApi(cluster.api_client())
    with pytest.raises(client.ApiException) as raised:
        api.create_namespaced_custom_object(
            c.GROUP, c.VERSION, namespace, c.PLURAL, obj, field_validation="Strict"
        )
    assert raised.value.status == 400
    message = json.loads(raised.value.body or "{}")["message"]
    assert 'unknown field "spec.roles[0].template.spec.containers[0].imagePullPolcy"' in message
