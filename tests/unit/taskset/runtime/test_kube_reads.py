"""What the controller decodes of the API server's answers: a write is answered with the whole object
(the deleted Pod, the created Event, the TaskSet with its megabyte of status), and each request decodes
only what its caller reads; an error's ``Status`` is always decoded whole."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from pytest_mock import MockerFixture

from informers.rest import Transport
from taskset.objects.owned import ObjectKind
from taskset.runtime import kube as kube_module
from taskset.runtime.kube import KubeClient, KubeError, read_nothing, read_version, read_whole

pytestmark = pytest.mark.unit

TASKSET_ANSWER: dict[str, Any] = {
    "apiVersion": "octopus.openi.pcl.cn/v1alpha1",
    "kind": "TaskSet",
    "metadata": {"name": "job", "namespace": "ns", "uid": "u-1", "resourceVersion": "4711", "generation": 3},
    "spec": {"roles": [{"name": "worker", "replicas": 2}]},
    "status": {"phase": "Running", "roleStatus": [{"name": "worker", "replicaStatus": [{"index": 0}] * 500}]},
}
POD_ANSWER: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "job-worker-0", "namespace": "ns", "uid": "p-1", "resourceVersion": "12"},
    "spec": {"containers": [{"name": "c", "image": "busybox"}]},
}
CONFLICT = {
    "kind": "Status",
    "apiVersion": "v1",
    "status": "Failure",
    "reason": "Conflict",
    "message": "the object has been modified",
    "code": 409,
}


class Answering(Transport):
    """A transport that answers every request with one status and body, and lists what it was sent."""

    def __init__(self, status: int, body: bytes) -> None:  # no pool: nothing is sent
        self.status, self.body = status, body
        self.sent: list[tuple[str, str]] = []

    def call(self, method: str, path: str, **kwargs: Any) -> tuple[int, bytes]:
        self.sent.append((method, path))
        return self.status, self.body


def client(status: int, answer: object) -> tuple[KubeClient, Answering]:
    transport = Answering(status, answer if isinstance(answer, bytes) else orjson.dumps(answer))
    return KubeClient(transport), transport


def test_a_status_write_reads_only_the_new_resource_version(mocker: MockerFixture) -> None:
    kube, transport = client(200, TASKSET_ANSWER)
    decode = mocker.spy(kube_module, "_decode")

    written = kube.replace_status("ns", "job", "4710", {"phase": "Running"})

    assert decode.call_count == 0  # the status echoed back is skipped, never built

    assert written == {"metadata": {"resourceVersion": "4711"}}
    assert transport.sent == [
        ("PUT", "/apis/octopus.openi.pcl.cn/v1alpha1/namespaces/ns/tasksets/job/status")
    ]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        pytest.param(TASKSET_ANSWER, {"metadata": {"resourceVersion": "4711"}}, id="an object"),
        pytest.param({"metadata": {}}, {}, id="no version"),
        pytest.param({"metadata": {"resourceVersion": ""}}, {}, id="an empty version"),
        pytest.param({"kind": "TaskSet"}, {}, id="no metadata"),
        pytest.param({"metadata": {"resourceVersion": 7}}, {}, id="a number"),
        pytest.param({"metadata": None}, {}, id="null metadata"),
        pytest.param(b"[1, 2]", {}, id="not an object"),
        pytest.param(b"<html>proxy</html>", {}, id="not JSON"),
        pytest.param(b"", {}, id="empty"),
    ],
)
def test_reading_the_version_of_any_answer_never_raises_nor_makes_one_up(
    answer: object, expected: dict[str, Any]
) -> None:
    """Only a non-empty string is taken as the version. Anything else reads as no version at all, never
    as an empty one (which the API server takes as an unconditional write)."""
    raw = answer if isinstance(answer, bytes) else orjson.dumps(answer)
    assert read_version(raw) == expected


def test_a_status_write_answered_without_a_version_is_a_failed_write_not_a_conflict() -> None:
    """The reconciler reports it and backs off; nothing is built on it."""
    kube, _ = client(200, {"kind": "TaskSet", "metadata": {"name": "job", "resourceVersion": ""}})
    with pytest.raises(KubeError) as raised:
        kube.replace_status("ns", "job", "4710", {"phase": "Running"})
    assert (raised.value.code, raised.value.reason, raised.value.conflict) == (
        200,
        "NoResourceVersion",
        False,
    )


def test_deletes_patches_and_event_creates_decode_nothing_yet_succeed(mocker: MockerFixture) -> None:
    kube, transport = client(200, POD_ANSWER)
    decode = mocker.spy(kube_module, "_decode")

    kube.delete("/api/v1/namespaces/ns/pods/job-worker-0", uid="p-1", resource="pods")
    created = kube.create(
        "/api/v1/namespaces/ns/events", {"kind": "Event"}, resource="events", read=read_nothing
    )
    kind = ObjectKind(group="kueue.x-k8s.io", version="v1beta2", plural="workloads", kind="Workload")
    kube.apply_status(kind, "ns", "job", {"status": {}})

    assert created is None
    assert [method for method, _ in transport.sent] == ["DELETE", "POST", "PATCH"]
    assert decode.call_count == 0


def test_a_create_reads_the_whole_object_by_default() -> None:
    kube, _ = client(201, POD_ANSWER)

    assert kube.create("/api/v1/namespaces/ns/pods", {"kind": "Pod"}, resource="pods") == POD_ANSWER
    assert read_whole(orjson.dumps(POD_ANSWER)) == POD_ANSWER


@pytest.mark.parametrize("read", [read_nothing, read_version, read_whole])
def test_an_error_status_is_decoded_whole_whatever_the_caller_reads(read: Any) -> None:
    kube, _ = client(409, CONFLICT)

    with pytest.raises(KubeError) as raised:
        kube.request("PUT", "/x", resource="tasksets/status", body={}, read=read)

    assert (raised.value.code, raised.value.reason, raised.value.conflict) == (409, "Conflict", True)
    assert raised.value.message == "the object has been modified"
