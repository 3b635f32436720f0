"""The builders write exactly the TaskSet the user manual documents, and only what was set; the
controller's parser accepts what they build."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from taskset.api.spec import ParsedTaskSet, parse_taskset
from taskset_sdk import (
    Backoff,
    DependsOn,
    EventPolicy,
    FailureRule,
    Framework,
    Gang,
    Network,
    Role,
    Scale,
    TaskSet,
    pod_template,
)

TEMPLATE = pod_template("busybox", ["sh", "-c", "exit 0"])


@pytest.mark.parametrize(
    ("role", "expected"),
    [
        pytest.param(
            Role("w", 2, TEMPLATE),
            {"name": "w", "replicas": 2, "template": TEMPLATE},
            id="a bare role writes no policy (the controller's defaults apply)",
        ),
        pytest.param(
            Role("w", 4, TEMPLATE).completion(min_succeeded=3),
            {"name": "w", "replicas": 4, "template": TEMPLATE, "completionPolicy": {"minSucceeded": 3}},
            id="a completion policy writes only the bound that was set",
        ),
        pytest.param(
            Role("w", 1, TEMPLATE).retry(max_retry_count=2, delay=10),
            {
                "name": "w",
                "replicas": 1,
                "template": TEMPLATE,
                "retryPolicy": {"retry": True, "maxRetryCount": 2, "delay": 10},
            },
            id="a retry policy turns retry on",
        ),
        pytest.param(
            Role("w", 1, TEMPLATE).on("RoleSucceeded", "TaskSetSucceeded").on("RoleFailed", "NoAction"),
            {
                "name": "w",
                "replicas": 1,
                "template": TEMPLATE,
                "eventPolicy": [
                    {"event": "RoleSucceeded", "action": "TaskSetSucceeded"},
                    {"event": "RoleFailed", "action": "NoAction"},
                ],
            },
            id="event policies keep their order",
        ),
    ],
)
def test_a_role_builds_its_spec(role: Role, expected: dict[str, Any]) -> None:
    assert role.to_dict() == expected


def test_a_taskset_builds_the_object_the_controller_accepts() -> None:
    taskset = (
        TaskSet("mnist", namespace="ml", labels={"team": "vision"})
        .role(Role("ps", 1, TEMPLATE))
        .role(Role("worker", 3, TEMPLATE).completion(min_succeeded=2, max_failed=2))
        .retry(max_retry_count=1, delay=30)
    )
    obj = taskset.to_dict()
    assert obj["apiVersion"] == "octopus.openi.pcl.cn/v1alpha1" and obj["kind"] == "TaskSet"
    assert obj["metadata"] == {"name": "mnist", "namespace": "ml", "labels": {"team": "vision"}}
    assert obj["spec"]["retryPolicy"] == {"retry": True, "maxRetryCount": 1, "delay": 30}
    assert [r["name"] for r in obj["spec"]["roles"]] == ["ps", "worker"]
    obj["metadata"]["uid"] = "u1"  # the API server's; the parser requires it
    parsed = parse_taskset(obj)
    assert isinstance(parsed, ParsedTaskSet), parsed
    assert [role.name for role in parsed.spec.roles] == ["ps", "worker"]
    assert parsed.spec.roles[1].completion_policy.min_succeeded == 2


def test_to_dict_returns_a_fresh_copy() -> None:
    taskset = TaskSet("t").role(Role("w", 1, TEMPLATE))
    first = taskset.to_dict()
    first["spec"]["roles"][0]["template"]["spec"]["containers"][0]["image"] = "changed"
    assert taskset.to_dict()["spec"]["roles"][0]["template"] == TEMPLATE


def test_pod_template_fields() -> None:
    template = pod_template(
        "trainer:1",
        ["python", "train.py"],
        container="trainer",
        env={"EPOCHS": "3"},
        resources={"limits": {"nvidia.com/gpu": 1}},
        annotations={"a": "b"},
        nodeSelector={"gpu": "a100"},
    )
    assert template == {
        "metadata": {"annotations": {"a": "b"}},
        "spec": {
            "restartPolicy": "Never",
            "nodeSelector": {"gpu": "a100"},
            "containers": [
                {
                    "name": "trainer",
                    "image": "trainer:1",
                    "command": ["python", "train.py"],
                    "env": [{"name": "EPOCHS", "value": "3"}],
                    "resources": {"limits": {"nvidia.com/gpu": 1}},
                }
            ],
        },
    }


@pytest.mark.parametrize(
    ("event", "action", "message"),
    [
        pytest.param("RoleDone", "NoAction", "event 'RoleDone' is not one of RoleFailed", id="event"),
        pytest.param("RoleFailed", "Stop", "action 'Stop' is not one of TaskSetFailed", id="action"),
    ],
)
def test_an_unknown_event_policy_word_is_refused_with_the_choices(
    event: str, action: str, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        EventPolicy(event, action)


# ----- the whole spec ---------------------------------------------------------------------------------
CRD = Path(__file__).resolve().parents[3] / "manifests" / "crd" / "tasksets.octopus.openi.pcl.cn.yaml"


FULL_RULE = FailureRule(
    "FailTaskSet",
    name="oom",
    exit_codes=[137, "64-78"],
    operator="NotIn",
    container="main",
    terminated_reasons=["OOMKilled"],
    pod_reasons=["Evicted"],
    pod_conditions={"DisruptionTarget": "True"},
    avoid_failed_nodes=True,
    memory_factor=1.5,
    memory_ceiling="8Gi",
)
FULL_BACKOFF = Backoff(10, factor=2, max_delay=300, jitter_percent=20)


def full_taskset() -> TaskSet:
    """A TaskSet that sets every field of the spec the builders can write (the CRD's, but the Pod
    template's own)."""
    return (
        TaskSet(
            "every",
            framework=Framework(
                "mpi", master_role="launcher", port=2222, nproc_per_node="2", slots_per_worker=2
            ),
            network=Network(enable_dns_hostnames=True, subdomain="peers"),
            gang=Gang("volcano", min_available=2, schedule_timeout_seconds=60, queue="research"),
            scale=Scale("worker", 3),
            clean_pod_policy="Running",
            active_deadline_seconds=3600,
            start_deadline_seconds=300,
            ttl_seconds_after_finished=600,
            suspend=True,
            managed_by="octopus.openi.pcl.cn/taskset-controller",
            queue="default",
            priority=5,
            node_loss="Recover",
            node_loss_grace_seconds=120,
        )
        .retry(max_retry_count=3, backoff=FULL_BACKOFF, max_preemptions=2)
        .fail_on(FULL_RULE)
        .role(Role("launcher", 1, TEMPLATE).after("worker", until="Running", min_replicas=1))
        .role(
            Role("worker", 3, TEMPLATE, min_replicas=1, max_replicas=8, start_deadline_seconds=120)
            .completion(min_succeeded="50%", max_failed=1)
            .retry(max_retry_count=2, backoff=FULL_BACKOFF)
            .on("RoleSucceeded", "TaskSetSucceeded")
            .fail_on(FailureRule("FailRole", exit_codes=["64-78"]))
            .fail_on(FULL_RULE)
        )
    )


def schema_paths(schema: dict[str, Any], prefix: str = "") -> set[str]:
    """Every field path of an OpenAPI schema, lists read through their items; a Pod template is one
    field (the Kubernetes Pod schema, which pod_template and plain dicts write)."""
    paths = set()
    for key, sub in schema.get("properties", {}).items():
        path = f"{prefix}.{key}" if prefix else key
        paths.add(path)
        if key == "template":
            continue
        paths |= schema_paths(sub.get("items", sub), path)
    return paths


def written_paths(value: Any, prefix: str = "") -> set[str]:
    paths = set()
    items = value if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, dict):
            for key, sub in item.items():
                path = f"{prefix}.{key}" if prefix else key
                paths.add(path)
                if key != "template":
                    paths |= written_paths(sub, path)
    return paths


def test_the_builders_cover_every_field_of_the_spec() -> None:
    crd = yaml.safe_load(CRD.read_text())
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    missing = schema_paths(spec_schema) - written_paths(full_taskset().to_dict()["spec"])
    assert not missing, f"fields of the CRD no builder writes: {sorted(missing)}"


def test_the_whole_spec_is_what_the_controller_parses() -> None:
    obj = full_taskset().to_dict()
    obj["metadata"]["uid"] = "u1"
    parsed = parse_taskset(obj)
    assert isinstance(parsed, ParsedTaskSet), parsed
    spec = obj["spec"]
    assert spec["framework"] == "mpi"
    assert spec["frameworkOptions"] == {
        "masterRole": "launcher",
        "port": 2222,
        "nprocPerNode": "2",
        "slotsPerWorker": 2,
    }
    assert spec["failureRules"] == [
        {
            "name": "oom",
            "action": "FailTaskSet",
            "onExitCodes": {"containerName": "main", "operator": "NotIn", "values": [137, "64-78"]},
            "onTerminatedReasons": ["OOMKilled"],
            "onPodReasons": ["Evicted"],
            "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
            "nextAttempt": {"avoidFailedNodes": True, "memory": {"factor": 1.5, "ceiling": "8Gi"}},
        }
    ]
    assert spec["retryPolicy"]["maxPreemptions"] == 2
    assert spec["retryPolicy"]["backoff"] == {
        "initialDelay": 10,
        "factor": 2,
        "maxDelay": 300,
        "jitterPercent": 20,
    }
    launcher, worker = spec["roles"]
    assert launcher["dependsOn"] == [{"role": "worker", "until": "Running", "minReplicas": 1}]
    assert worker["failureRules"] == [
        {"action": "FailRole", "onExitCodes": {"operator": "In", "values": ["64-78"]}},
        spec["failureRules"][0],
    ]
    assert (worker["minReplicas"], worker["maxReplicas"], worker["startDeadlineSeconds"]) == (1, 8, 120)
    assert worker["completionPolicy"] == {"minSucceeded": "50%", "maxFailed": 1}


@pytest.mark.parametrize(
    ("taskset", "spec"),
    [
        pytest.param(TaskSet("t"), {"roles": []}, id="nothing set writes nothing"),
        pytest.param(TaskSet("t", suspend=False), {"roles": [], "suspend": False}, id="a false is written"),
        pytest.param(
            TaskSet("t", framework=Framework("jax")), {"roles": [], "framework": "jax"}, id="no options"
        ),
        pytest.param(
            TaskSet("t", network=Network(enable_dns_hostnames=False)),
            {"roles": [], "network": {"enableDNSHostnames": False}},
            id="names off",
        ),
        pytest.param(
            TaskSet("t", gang=Gang("coscheduling")),
            {"roles": [], "gang": {"scheduler": "coscheduling"}},
            id="a gang of all the Pods",
        ),
        pytest.param(
            TaskSet("t", ttl_seconds_after_finished=0),
            {"roles": [], "ttlSecondsAfterFinished": 0},
            id="a TTL of zero is a TTL",
        ),
        pytest.param(
            TaskSet("t").fail_on(FailureRule("RetryNotCounted", pod_reasons=["Evicted"])),
            {"roles": [], "failureRules": [{"action": "RetryNotCounted", "onPodReasons": ["Evicted"]}]},
            id="a rule writes only its matchers",
        ),
    ],
)
def test_a_taskset_writes_only_what_was_set(taskset: TaskSet, spec: dict[str, Any]) -> None:
    assert taskset.to_dict()["spec"] == spec


@pytest.mark.parametrize(
    ("build", "message"),
    [
        pytest.param(
            lambda: TaskSet("t", clean_pod_policy="Some"),
            "cleanPodPolicy 'Some' is not one of None",
            id="clean",
        ),
        pytest.param(
            lambda: Framework("keras"), "framework 'keras' is not one of tensorflow", id="framework"
        ),
        pytest.param(lambda: Gang("kube-batch"), "gang scheduler 'kube-batch' is not one of", id="gang"),
        pytest.param(
            lambda: DependsOn("ps", until="Done"), "dependsOn until 'Done' is not one of", id="until"
        ),
        pytest.param(lambda: FailureRule("Retry"), "failure rule action 'Retry' is not one of", id="action"),
        pytest.param(
            lambda: FailureRule("FailRole", operator="Is"), "exit code operator 'Is'", id="operator"
        ),
        pytest.param(
            lambda: FailureRule("FailRole", pod_conditions={"Ready": "yes"}),
            "Pod condition status 'yes' is not one of True, False, Unknown",
            id="condition status",
        ),
    ],
)
def test_a_word_the_crd_refuses_is_refused_with_the_choices(build: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()
