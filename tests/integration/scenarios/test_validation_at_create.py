"""Scenarios S23 and S25 (spec 14.1, D7): illegal TaskSets are rejected by the API server at create, with
HTTP 422 and a message naming the field, and nothing is stored, so the controller never sees them.

Every S25 rejection is a case of the hostile corpus (``tests/corpus/hostile.py``), sent through the API
by ``tests/integration/test_hostile_input.py`` (HTTP 422, the field named, nothing stored);
``tests/integration/test_crd.py`` sends a handful through kubectl. This file adds what they leave out:
that a running controller creates nothing for a rejected TaskSet (S23), that a 63-character Pod name
is accepted, and that a hyphenated name O rejected now runs, with the expected Pod name (S25).
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from kubernetes import client

from devcluster import Cluster
from taskset.api import constants as c
from tests.builders import TaskSetBuilder
from tests.integration.harness import Recorder, TaskSets, exits, replica

pytestmark = pytest.mark.integration

LONG = "a" * 59  # with role "r": replicas 10 gives a 63-character Pod name, 11 gives 64


def _rejected(api: client.CustomObjectsApi, namespace: str, obj: dict[str, Any]) -> tuple[int, str]:
    with pytest.raises(client.ApiException) as raised:
        api.create_namespaced_custom_object(c.GROUP, c.VERSION, namespace, c.PLURAL, obj)
    message = json.loads(raised.value.body or "{}").get("message", "")
    return raised.value.status, message


def _stored(api: client.CustomObjectsApi, namespace: str) -> list[str]:
    listed: Any = api.list_namespaced_custom_object(c.GROUP, c.VERSION, namespace, c.PLURAL)
    return [item["metadata"]["name"] for item in listed["items"]]


def test_s23_duplicate_role_names_rejected_by_the_api_server(
    ts: TaskSets, recorder: Recorder, namespace: str
) -> None:
    obj = TaskSetBuilder("dupnames").role("role1").role("role1").obj()
    status, message = _rejected(ts.custom, namespace, obj)
    assert status == 422, message
    assert "spec.roles[1]: Duplicate value" in message
    assert '"name":"role1"' in message
    assert _stored(ts.custom, namespace) == []
    # The controller runs, but has nothing to act on: no ControlUnit and no Pod ever appear.
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        assert ts.configmap("c-dupnames-0") is None
        time.sleep(0.2)
    assert recorder.pod_log() == []
    assert ts.get("dupnames") is None


def test_s25b_63_character_pod_name_is_accepted(
    cluster: Cluster, crd_installed: None, namespace: str
) -> None:
    api = client.CustomObjectsApi(cluster.api_client())
    api.create_namespaced_custom_object(
        c.GROUP, c.VERSION, namespace, c.PLURAL, TaskSetBuilder(LONG).role("r", replicas=10).obj()
    )
    assert _stored(api, namespace) == [LONG]


def test_s25c_hyphenated_names_o_rejected_are_stored_and_run(ts: TaskSets, recorder: Recorder) -> None:
    recorder.script = lambda pod: exits(0)
    obj = TaskSetBuilder("my-job").role("ps-a").obj()
    created = ts.create(obj)
    assert created["spec"] == obj["spec"]
    status = ts.final("my-job")
    assert status["state"] == "Succeeded"
    assert replica(status, "ps-a", 0)["podName"] == "my-job-ps-a-0"
    assert [entry.name for entry in recorder.pod_log()] == ["my-job-ps-a-0"]
