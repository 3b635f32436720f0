"""Hostile input on a real API server and a running controller: every case of the hostile corpus
(``tests/corpus/hostile.py``) has its one pinned outcome (the schema refuses it with HTTP 4xx naming the
field and stores nothing; or the TaskSet ends ``Failed`` within ``FINAL_TIMEOUT`` naming the field; or it
succeeds). No reconcile raises and the workers stay alive.

Creates use ``fieldValidation=Strict`` (kubectl's default) unless a test says otherwise. The corpus also
runs in one namespace under one controller, interleaved with well-formed TaskSets that must keep
succeeding, and a last TaskSet must still complete afterwards (the workers are alive).
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client

from devcluster import Cluster
from taskset.api import constants as c
from taskset.runtime.controller import Controller
from tests.builders import TaskSetBuilder
from tests.corpus.hostile import (
    CORPUS,
    GOOD,
    NAME,
    Expectation,
    Fails,
    Rejected,
    Succeeds,
    nested,
    with_role,
)
from tests.integration.harness import eventually

pytestmark = pytest.mark.integration

FINAL_TIMEOUT = 60.0

# ----- sending and judging ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sent:
    status: int
    body: dict[str, Any]


def send(api: client.CustomObjectsApi, namespace: str, obj: Any, validation: str = "Strict") -> Sent:
    try:
        response: Any = api.create_namespaced_custom_object(
            c.GROUP, c.VERSION, namespace, c.PLURAL, obj, field_validation=validation, _preload_content=False
        )
    except client.ApiException as err:
        try:
            body = json.loads(err.body or "{}")
        except ValueError:
            body = {"message": str(err.body)}
        return Sent(err.status, body if isinstance(body, dict) else {"message": str(body)})
    return Sent(response.status, json.loads(response.data))


def get(api: client.CustomObjectsApi, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        found: Any = api.get_namespaced_custom_object(c.GROUP, c.VERSION, namespace, c.PLURAL, name)
    except client.ApiException as err:
        if err.status == 404:
            return None
        raise
    return dict(found)


def final_status(api: client.CustomObjectsApi, namespace: str, name: str, timeout: float) -> dict[str, Any]:
    def completed() -> dict[str, Any] | None:
        status = (get(api, namespace, name) or {}).get("status") or {}
        return status if status.get("phase") == c.TaskSetPhase.COMPLETED else None

    status: dict[str, Any] = eventually(completed, timeout, f"TaskSet {name} completed")
    return status


def failure_messages(status: dict[str, Any]) -> list[str]:
    """The replicas' PodCreationFailed messages."""
    return [
        str(replica.get("phaseMessage", ""))
        for role in status.get("roleStatus") or []
        for replica in role.get("replicaStatus") or []
        if replica.get("podReason") == c.POD_REASON_CREATION_FAILED
    ]


def check_rejected(sent: Sent, expected: Rejected) -> None:
    message = str(sent.body.get("message", ""))
    assert sent.status == expected.status, f"HTTP {sent.status}: {message[:3000]}"
    for text in expected.texts:
        assert text in message, f"{text!r} not in: {message[:3000]}"


def check_final(status: dict[str, Any], expected: Fails | Succeeds, name: str) -> None:
    if isinstance(expected, Succeeds):
        assert status["state"] == "Succeeded", (name, expected.why, status)
        return
    assert status["state"] == "Failed", (name, status)
    messages = failure_messages(status) if expected.pod_creation else [str(status.get("stateMessage"))]
    assert any(all(text in message for text in expected.texts) for message in messages), (
        name,
        expected.texts,
        messages,
    )


class Panics:
    """Records every exception that escapes a reconcile (the worker logs it as a panic and goes on)."""

    def __init__(self, controller: Controller) -> None:
        self.errors: list[str] = []
        reconcile = controller.reconciler.reconcile

        def spied(key: str) -> Any:
            try:
                return reconcile(key)
            except Exception as err:
                self.errors.append(f"{key}: {type(err).__name__}: {err}")
                raise

        controller.reconciler.reconcile = spied  # type: ignore[method-assign]


def workers_alive(controller: Controller) -> bool:
    workers = controller._workers
    return bool(workers) and all(worker.is_alive() for worker in workers)


# ----- the tests --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("obj", "expected"), CORPUS)
def test_hostile_taskset_is_rejected_or_fails_clearly(
    *,
    cluster: Cluster,
    crd_installed: None,
    namespace: str,
    request: pytest.FixtureRequest,
    obj: Any,
    expected: Expectation,
) -> None:
    api = client.CustomObjectsApi(cluster.api_client())
    if isinstance(expected, Rejected):
        sent = send(api, namespace, obj)
        check_rejected(sent, expected)
        listed: Any = api.list_namespaced_custom_object(c.GROUP, c.VERSION, namespace, c.PLURAL)
        assert listed["items"] == []
        return
    running: Controller = request.getfixturevalue("controller")
    panics = Panics(running)
    sent = send(api, namespace, obj)
    assert sent.status == 201, sent.body.get("message", sent.body)
    name = sent.body["metadata"]["name"]
    check_final(final_status(api, namespace, name, FINAL_TIMEOUT), expected, name)
    assert panics.errors == []
    assert workers_alive(running)


def test_unknown_fields_are_pruned_when_the_client_asks_for_it(
    cluster: Cluster, namespace: str, controller: Controller
) -> None:
    """Without strict validation (``fieldValidation=Ignore``) unknown fields at every level are dropped and
    the TaskSet runs as if they were not there."""
    api = client.CustomObjectsApi(cluster.api_client())
    obj = with_role(junk=nested(200), completionPolicy={"junk": 1}, retryPolicy={"junk": [1]})
    obj["junk"] = 1
    obj["spec"]["junk"] = {"a": None}
    obj["spec"]["roles"][0]["template"]["spec"]["junk"] = 1
    sent = send(api, namespace, obj, validation="Ignore")
    assert sent.status == 201, sent.body
    stored = get(api, namespace, NAME)
    assert stored is not None
    assert "junk" not in stored and "junk" not in stored["spec"]
    assert "junk" not in stored["spec"]["roles"][0]
    check_final(final_status(api, namespace, NAME, FINAL_TIMEOUT), Succeeds("pruned"), NAME)


def renamed(obj: Any, name: str) -> Any:
    """The case under a namespace-unique name, when its name is the default one."""
    obj = copy.deepcopy(obj)
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    if isinstance(metadata, dict) and metadata.get("name") == NAME:
        metadata["name"] = name
    return obj


def test_other_tasksets_keep_progressing_while_the_corpus_runs(
    cluster: Cluster, namespace: str, controller: Controller
) -> None:
    api = client.CustomObjectsApi(cluster.api_client())
    panics = Panics(controller)
    started = time.monotonic()
    good: list[str] = []
    accepted: dict[str, Fails | Succeeds] = {}
    for position, case in enumerate(CORPUS):
        obj, expected = case.values
        assert isinstance(expected, Rejected | Fails | Succeeds)
        if position % 10 == 0:  # a well-formed TaskSet every ten hostile ones
            ok = f"ok-{position:02d}"
            assert send(api, namespace, TaskSetBuilder(ok).role("r", 1, template=GOOD).obj()).status == 201
            good.append(ok)
        sent = send(api, namespace, renamed(obj, f"bad-{position:02d}"))
        if isinstance(expected, Rejected):
            check_rejected(sent, expected)
        else:
            assert sent.status == 201, (case.id, sent.body.get("message", sent.body))
            accepted[sent.body["metadata"]["name"]] = expected
    for name in good:
        status = final_status(api, namespace, name, FINAL_TIMEOUT)
        assert status["state"] == "Succeeded", (name, status)
    for name, expected in accepted.items():
        check_final(final_status(api, namespace, name, FINAL_TIMEOUT), expected, name)
    # The workers are alive after the corpus: one more TaskSet runs to the end.
    assert send(api, namespace, TaskSetBuilder("ok-after").role("r", 1, template=GOOD).obj()).status == 201
    assert final_status(api, namespace, "ok-after", FINAL_TIMEOUT)["state"] == "Succeeded"
    assert time.monotonic() - started < 300
    assert panics.errors == []
    assert workers_alive(controller)


def test_pod_squatting_a_replica_name_with_a_non_ascii_digit_attempt_id(
    cluster: Cluster, namespace: str, controller: Controller
) -> None:
    """Hostile input that is not a TaskSet: someone else's Pod under a replica's name, annotated with a
    replica attempt id of ``"²"`` (``str.isdigit`` is true for it, ``int`` refuses it). The replica must
    end with a PodNameConflict as for any foreign Pod (S50), and no reconcile may raise."""
    api = client.CustomObjectsApi(cluster.api_client())
    core = client.CoreV1Api(cluster.api_client())
    panics = Panics(controller)
    pod = {
        "metadata": {"name": "squat-r-0", "annotations": {c.ANNOTATION_REPLICA_ATTEMPT_ID: "²"}},
        "spec": {"containers": [{"name": "c0", "image": "busybox"}]},
    }
    core.create_namespaced_pod(namespace, pod)
    assert send(api, namespace, TaskSetBuilder("squat").role("r", 1, template=GOOD).obj()).status == 201
    status = final_status(api, namespace, "squat", FINAL_TIMEOUT)
    assert status["state"] == "Failed"
    assert status["roleStatus"][0]["replicaStatus"][0]["podReason"] == "PodNameConflict"
    assert panics.errors == []
    assert workers_alive(controller)
