"""The builders write exactly the TaskSet the user manual documents, and only what was set; the
controller's parser accepts what they build."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.api.spec import ParsedTaskSet, parse_taskset
from taskset_sdk import EventPolicy, Role, TaskSet, pod_template

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
