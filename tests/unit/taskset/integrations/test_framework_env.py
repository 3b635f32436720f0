"""Framework presets (issue 23, item 4): TensorFlow's TF_CONFIG, exactly as TFConfigClusterResolver
parses it, and the spec.framework field's checks."""

from __future__ import annotations

import json
from typing import Any

import pytest

from taskset.api.spec import ParsedTaskSet, ValidationFailure, parse_taskset
from taskset.integrations import BUILT_IN, spec_checks
from taskset.integrations.base import Attempt
from taskset.integrations.framework_env import FrameworkEnv, tf_config
from taskset.objects.pods import PodIdentity
from tests.builders import TaskSetBuilder, pod_template

pytestmark = pytest.mark.unit


def attempt_of(builder: TaskSetBuilder) -> Attempt:
    ts = parse_taskset(builder.namespace("ml").uid("u").obj(), spec_checks(BUILT_IN))
    assert isinstance(ts, ParsedTaskSet), ts
    return Attempt(ts.name, ts.namespace, ts.uid, 0, ts.spec)


def tf_config_of(attempt: Attempt, role: str, index: int) -> str | None:
    spec_role = attempt.spec.role(role)
    assert spec_role is not None
    who = PodIdentity(
        attempt.taskset, "ml", "u", role, index, f"{attempt.taskset}-{role}-{index}", "c", "", 0, 0, "0" * 64
    )
    decoration = FrameworkEnv().decorate_pod(attempt, spec_role, who)
    return None if decoration is None else dict(decoration.env)["TF_CONFIG"]


def test_tf_config_for_the_seed_ps_worker_example() -> None:
    ps = pod_template()
    ps["spec"]["containers"][0]["ports"] = [{"containerPort": 5000}]
    attempt = attempt_of(
        TaskSetBuilder("tf")
        .role("ps", 1, template=ps)
        .role("worker", 2)
        .spec_field("framework", "tensorflow")
    )
    assert tf_config_of(attempt, "worker", 1) == (
        '{"cluster":{"ps":["tf-ps-0.tf.ml.svc:5000"],'
        '"worker":["tf-worker-0.tf.ml.svc:2222","tf-worker-1.tf.ml.svc:2222"]},'
        '"task":{"type":"worker","index":1}}'
    )
    assert tf_config_of(attempt, "ps", 0) == (
        '{"cluster":{"ps":["tf-ps-0.tf.ml.svc:5000"],'
        '"worker":["tf-worker-0.tf.ml.svc:2222","tf-worker-1.tf.ml.svc:2222"]},'
        '"task":{"type":"ps","index":0}}'
    )


def test_tf_config_is_the_json_tensorflow_reads() -> None:
    """TFConfigClusterResolver: json.loads(TF_CONFIG)['cluster'] is the ClusterSpec dict, 'task' gives
    type and index."""
    text = tf_config({"chief": ["a:1"], "worker": ["b:1", "c:1"]}, "worker", 0)
    parsed = json.loads(text)
    assert parsed["cluster"] == {"chief": ["a:1"], "worker": ["b:1", "c:1"]}
    assert (parsed["task"]["type"], parsed["task"]["index"]) == ("worker", 0)


def test_no_framework_no_tf_config() -> None:
    assert tf_config_of(attempt_of(TaskSetBuilder("tf").role("worker", 1)), "worker", 0) is None


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        pytest.param({"framework": "caffe"}, "spec.framework", "must be one of tensorflow", id="unknown"),
        pytest.param({"framework": 1}, "spec.framework", "must be one of tensorflow", id="a number"),
        pytest.param({"framework": "pytorch"}, "spec.framework", "must be one of", id="not built yet"),
        pytest.param(
            {"framework": "tensorflow", "network": {"enableDNSHostnames": False}},
            "spec.network.enableDNSHostnames",
            "needs the replicas' DNS names",
            id="names switched off",
        ),
    ],
)
def test_a_bad_framework_is_illegal_naming_the_field(
    fields: dict[str, Any], field: str, message: str
) -> None:
    builder = TaskSetBuilder("tf").role("worker", 1)
    for name, value in fields.items():
        builder.spec_field(name, value)
    result = parse_taskset(builder.obj(), spec_checks(BUILT_IN))
    assert isinstance(result, ValidationFailure)
    assert result.field == field and message in result.message
