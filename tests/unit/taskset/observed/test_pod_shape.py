"""The Pod watch decodes each event straight into ``POD_SHAPE`` (``informers.pruned``), and the cache
keeps ``slim_pod`` of that: it must be what ``slim_pod`` of the whole Pod is, for any Pod the API server
could send and any a stranger could write: recorded from the control plane, the controller's own of each
phase, arbitrary JSON, valid Pods with junk in them, the hostile corpus. A field ``slim_pod`` starts to
read and ``POD_SHAPE`` does not name fails here."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from informers.listwatch import TransportError
from informers.pruned import PrunedDecoder, decode_whole_event
from taskset.api.constants import (
    ANNOTATION_CONTROL_UNIT_UID,
    ANNOTATION_REPLICA_INDEX,
    ANNOTATION_TASKSET,
    LABEL_ROLE,
    LABEL_TASKSET,
    OWN_ANNOTATIONS,
    OWN_LABELS,
)
from taskset.observed.slim import (
    CONDITION_FIELDS_KEPT,
    CONDITIONS_KEPT,
    CONTAINER_STATUS_KEPT,
    OWNER_REFERENCE_KEPT,
    POD_METADATA_KEPT,
    POD_SHAPE,
    POD_STATUS_KEPT,
    STATE_FIELDS_KEPT,
    slim_pod,
)
from tests.corpus.hostile import CORPUS, as_strangers_objects
from tests.unit.taskset.observed.pruned_cases import check_pruned, watch_line
from tests.unit.taskset.test_fuzz_input import FUZZ, JUNK, RECORDED_POD, mutated, pods, valid_pod
from tests.unit.taskset.world import PodBuilder

pytestmark = pytest.mark.unit

DECODER = PrunedDecoder(POD_SHAPE)


def _recorded() -> dict[str, Any]:
    """The recorded Pod with the controller's own labels and annotations beside the recording's."""
    pod: dict[str, Any] = orjson.loads(RECORDED_POD.read_bytes())
    pod["metadata"]["labels"] |= {LABEL_TASKSET: "train", LABEL_ROLE: "worker"}
    pod["metadata"]["annotations"] |= {ANNOTATION_TASKSET: "train", ANNOTATION_REPLICA_INDEX: "3"}
    return pod


def _every_kept_field() -> dict[str, Any]:
    """A Pod holding a value in every field ``slim_pod`` keeps, built from the same sets."""
    metadata: dict[str, Any] = {key: f"m-{key}" for key in POD_METADATA_KEPT} | {
        "labels": dict.fromkeys(OWN_LABELS, "label"),
        "annotations": dict.fromkeys(OWN_ANNOTATIONS, "annotation"),
        "ownerReferences": [dict.fromkeys(OWNER_REFERENCE_KEPT, "r") | {"controller": True}],
        "finalizers": ["example.com/hold"],
    }
    state = {name: dict.fromkeys(keys, f"{name}-text") for name, keys in STATE_FIELDS_KEPT.items()}
    container = dict.fromkeys(CONTAINER_STATUS_KEPT, "c") | {"name": "main", "state": state}
    status: dict[str, Any] = {key: f"s-{key}" for key in POD_STATUS_KEPT} | {
        "conditions": [
            dict.fromkeys(CONDITION_FIELDS_KEPT, "why") | {"type": kind} for kind in CONDITIONS_KEPT
        ],
        "containerStatuses": [container],
        "initContainerStatuses": [container | {"name": "init"}],
    }
    spec = {"containers": [{"name": "main", "image": "trainer"}], "nodeName": "node-1"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec, "status": status}


def check(pod: Any) -> None:
    """The pruned Pod, slimmed, is the whole Pod slimmed: as a watch event and as a list's item."""
    check_pruned(DECODER, slim_pod, pod, "PodList", "v1")


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param(_recorded(), id="recorded from the control plane"),
        pytest.param(_every_kept_field(), id="every kept field"),
        pytest.param(
            PodBuilder("ts-a-0").uid("p1").controlled_by("cu").taskset("t").attempt(2).obj(), id="new"
        ),
        pytest.param(PodBuilder("ts-a-0").running().deleting().obj(), id="running, being deleted"),
        pytest.param(PodBuilder("ts-a-0").exited(137, message="OOMKilled").obj(), id="exited"),
        pytest.param(PodBuilder("ts-a-0").phase("Unknown").reason("NodeLost").obj(), id="unknown"),
    ],
)
def test_the_pruned_pod_of_each_shape_is_cached_as_the_whole_one(pod: dict[str, Any]) -> None:
    check(pod)


@pytest.mark.parametrize(("obj", "outcome"), CORPUS)
def test_the_pruned_pod_of_the_hostile_corpus_is_cached_as_the_whole_one(obj: Any, outcome: object) -> None:
    """Each hostile TaskSet as a stranger's object, and each of its roles' Pod templates as a Pod."""
    del outcome
    for seen in as_strangers_objects(obj):
        check(seen)


@FUZZ
@given(pod=st.one_of(pods(), mutated(valid_pod()), mutated(_recorded()), JUNK))
@example(pod={"metadata": {"labels": {LABEL_TASKSET: 3}, "annotations": {ANNOTATION_CONTROL_UNIT_UID: None}}})
@example(pod={"metadata": {"ownerReferences": [{"uid": "u", "controller": True}, 7]}})
@example(pod={"status": {"containerStatuses": [{"name": "c", "state": {"waiting": "x", "running": {}}}]}})
@example(pod={"status": {"conditions": [{"type": {"a": 1}}, {"type": "Ready", "status": "True"}]}})
@example(pod={"spec": {"containers": [{"name": "a"}] * 20, "nodeName": 5}})
def test_the_pruned_pod_is_cached_as_the_whole_one_whatever_it_holds(pod: Any) -> None:
    check(pod)


def test_what_the_cache_does_not_keep_is_never_built() -> None:
    """A stranger's 256 KB annotation, the spec's volumes and the managed fields are skipped in the text."""
    pod = _recorded()
    pod["metadata"]["annotations"]["stranger.example/blob"] = "x" * 256 * 1024
    pruned = DECODER.event(watch_line(pod) or b"")["object"]
    assert set(pruned["metadata"]["annotations"]) == {ANNOTATION_TASKSET, ANNOTATION_REPLICA_INDEX}
    assert set(pruned["metadata"]["labels"]) == {LABEL_TASKSET, LABEL_ROLE}
    assert set(pruned["spec"]) == {"containers", "nodeName"}
    assert pruned["spec"]["containers"] == [{"name": "main"}]
    assert "managedFields" not in pruned["metadata"] and "generation" not in pruned["metadata"]
    assert len(orjson.dumps(pruned)) < 1500


@pytest.mark.parametrize(
    ("line", "why"),
    [
        pytest.param(
            b'{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9",'
            b'"annotations":{"k8s.io/initial-events-end":"true"}}}}',
            "a bookmark's annotation says the initial list ended",
            id="bookmark",
        ),
        pytest.param(
            b'{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}',
            "an error's Status is no Pod",
            id="error",
        ),
        pytest.param(
            b'{"type":"ADDED","object":{"metadata":{"labels":"not a map"},"spec":{"volumes":[1]}}}',
            "a kept field of the wrong type is judged by the transform, as before",
            id="malformed kept field",
        ),
        pytest.param(
            b'{"type":"ADDED","object":null}', "no object: an empty one, as before", id="null object"
        ),
    ],
)
def test_what_the_shape_cannot_describe_is_decoded_whole(line: bytes, why: str) -> None:
    assert DECODER.event(line) == decode_whole_event(line), why


@pytest.mark.parametrize(
    "line",
    [b'{"type":"ADDED","object":{', b"[1, 2]", b'{"object":{}}', b'{"type":3,"object":{}}', b"\xff"],
)
def test_a_line_that_is_no_watch_event_breaks_the_watch(line: bytes) -> None:
    with pytest.raises(TransportError):
        DECODER.event(line)


def test_a_list_page_keeps_its_metadata_and_a_malformed_item_decodes_the_page_whole() -> None:
    pod = _recorded()
    body = {"kind": "PodList", "apiVersion": "v1", "metadata": {"resourceVersion": "7", "continue": "c"}}
    page = DECODER.page(orjson.dumps(body | {"items": [pod]}))
    assert page is not None
    assert {k: v for k, v in page.items() if k != "items"} == body
    assert slim_pod(page["items"][0]) == slim_pod(pod)
    assert DECODER.page(orjson.dumps(body | {"items": [pod, {"metadata": {"labels": []}}]})) is None
    assert DECODER.page(orjson.dumps({"items": None})) == {"items": None}
    with pytest.raises(TransportError):
        DECODER.page(b'{"items": [')
