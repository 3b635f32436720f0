"""A bounded cache: a cached Pod or ConfigMap keeps only the controller's own labels and
annotations, its controlling owner reference and a few finalizers, each value bounded, so that a
stranger's object labelled ``TaskSet`` costs a small, bounded amount of memory whatever it carries."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import orjson
import pytest

from taskset.api import constants
from taskset.api.constants import OWN_ANNOTATIONS, OWN_LABELS
from taskset.integrations.identity_env import identity_decoration
from taskset.objects.controlunit import SNAPSHOT_KEY
from taskset.objects.pods import PodIdentity, build_pod
from taskset.observed.slim import (
    DECLARED_DIGESTS_FIELD,
    FINALIZERS_KEPT,
    LIST_KEPT,
    NO_SNAPSHOT_DIGEST,
    OWN_VALUE_MAX,
    SNAPSHOT_DIGEST_FIELD,
    slim_config_map,
    slim_owned,
    slim_pod,
    snapshot_digest,
)
from taskset.observed.views import control_unit_view, owned_view, pod_view
from taskset.runtime.indexes import controller_uid_index, taskset_index
from tests.unit.taskset.world import PodBuilder, control_unit

TS_UID = "0b7e3c1a-8d6f-4e2b-9a51-3c7d2e9f4a10"
CU_UID = "5f2a9c84-1e3b-47d6-8a0f-b29c4e61d7a3"
BIG = 250 * 1024  # the annotations of the swelling Pods


def identity(replica_attempt: int = 0) -> PodIdentity:
    return PodIdentity(
        taskset="train",
        namespace="team-a",
        taskset_uid=TS_UID,
        role="worker",
        index=3,
        name="train-worker-3",
        control_unit_name="c-train-0",
        control_unit_uid=CU_UID,
        taskset_attempt=0,
        replica_attempt=replica_attempt,
        proof="0" * 64,
    )


def ours(template_metadata: dict[str, Any] | None = None, replica_attempt: int = 0) -> dict[str, Any]:
    """A Pod as the controller creates it, then as the API server returns it (uid, finalizers...)."""
    template = {"metadata": template_metadata or {}, "spec": {"containers": [{"name": "main", "image": "b"}]}}
    pod = build_pod(template, identity(replica_attempt), (identity_decoration(identity(replica_attempt)),))
    pod["metadata"] |= {
        "uid": "pod-uid-1",
        "resourceVersion": "42",
        "creationTimestamp": "2026-11-25T22:00:00Z",
    }
    pod["status"] = {"phase": "Running", "hostIP": "10.0.0.1", "podIP": "10.0.1.1"}
    return pod


def foreign_refs(count: int) -> list[dict[str, Any]]:
    return [{"apiVersion": "v1", "kind": "Secret", "name": f"s{i}", "uid": f"u{i}"} for i in range(count)]


def strangers(**metadata: Any) -> dict[str, Any]:
    """A Pod someone else created in the TaskSet's namespace, labelled ``TaskSet`` so the cache sees it."""
    pod = PodBuilder("train-worker-3").running().obj()
    pod["metadata"] |= {"namespace": "team-a", "labels": {constants.LABEL_TASKSET: "train"}} | metadata
    return pod


def size(obj: object) -> int:
    return len(orjson.dumps(obj))


@pytest.mark.parametrize(
    ("pod", "kept"),
    [
        pytest.param(
            strangers(annotations={"notes": "x" * BIG, constants.ANNOTATION_TASKSET: "train"}),
            {"labels": {"TaskSet": "train"}, "annotations": {"TaskSet": "train"}},
            id="a stranger's 250 KB annotation is not cached, the TaskSet annotation is",
        ),
        pytest.param(
            strangers(labels={"TaskSet": "train", "app": "x" * 63, "team": "evil"}, annotations={"a": "b"}),
            {"labels": {"TaskSet": "train"}, "annotations": {}},
            id="foreign labels and annotations are not cached",
        ),
        pytest.param(
            strangers(annotations={"TaskSet": "t" * (OWN_VALUE_MAX + 1), "TSUID": "u" * BIG, "CID": "c"}),
            {"annotations": {"CID": "c"}},
            id="an own key with a value longer than any the controller writes is dropped, not clipped",
        ),
        pytest.param(
            strangers(annotations={"TaskSet": 7, "TSUID": {"deep": ["x"]}, "ReplicaAttemptID": None}),
            {"annotations": {}},
            id="an own key with a value that is not a string is dropped",
        ),
        pytest.param(
            strangers(annotations=["x" * BIG], labels="TaskSet"),
            {"labels": {}, "annotations": {}},
            id="labels and annotations that are not mappings are dropped",
        ),
        pytest.param(
            strangers(
                ownerReferences=[*foreign_refs(2000), {"uid": CU_UID, "controller": True, "x": "y" * BIG}]
            ),
            {"ownerReferences": [{"uid": CU_UID, "controller": True}]},
            id="of 2001 owner references only the controlling one is cached, with only the keys read",
        ),
        pytest.param(
            strangers(ownerReferences=[{"uid": "u" * (OWN_VALUE_MAX + 1), "controller": True}]),
            {"ownerReferences": []},
            id="a controlling owner reference with an over-long UID is dropped",
        ),
        pytest.param(
            strangers(ownerReferences={"uid": CU_UID, "controller": True}),
            {"ownerReferences": []},
            id="owner references that are not a list are dropped",
        ),
        pytest.param(
            strangers(finalizers=[f"example.com/f{i}" for i in range(5000)]),
            {"finalizers": [f"example.com/f{i}" for i in range(FINALIZERS_KEPT)]},
            id="of 5000 finalizers only the first eight are cached",
        ),
        pytest.param(
            strangers(finalizers=["f" * BIG, 3, "example.com/keep"]),
            {"finalizers": ["example.com/keep"]},
            id="finalizers that are not qualified names are dropped",
        ),
        pytest.param(
            strangers(managedFields=[{"manager": "kubectl", "fieldsV1": {"f:x": "y" * BIG}}]),
            {"managedFields": None},
            id="managed fields are not cached",
        ),
    ],
)
def test_a_strangers_pod_is_cached_with_only_the_controllers_own_metadata(
    pod: dict[str, Any], kept: dict[str, Any]
) -> None:
    before = copy.deepcopy(pod)

    slim = slim_pod(pod)

    assert {key: slim["metadata"].get(key) for key in kept} == kept
    assert size(slim) < 2048
    assert pod == before, "the transform must leave its argument alone (the informer contract)"
    assert slim_pod(slim) == slim, "the transform must be idempotent (a relist stores it again)"


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param(ours(), id="a Pod built from a plain template"),
        pytest.param(ours(replica_attempt=12), id="a retried replica's Pod"),
        pytest.param(
            ours({"labels": {"app": "train"}, "annotations": {"notes": "x" * BIG}}),
            id="a Pod whose template carries 250 KB of annotations",
        ),
        pytest.param(
            ours({"ownerReferences": foreign_refs(9)}),
            id="a Pod whose template lists nine owner references before the controller's",
        ),
    ],
)
def test_a_pod_of_ours_keeps_every_key_the_controller_wrote_and_looks_the_same(pod: dict[str, Any]) -> None:
    before = copy.deepcopy(pod)

    slim = slim_pod(pod)

    meta = slim["metadata"]
    assert set(meta["labels"]) == OWN_LABELS
    assert set(meta["annotations"]) == OWN_ANNOTATIONS
    assert {k: pod["metadata"]["annotations"][k] for k in OWN_ANNOTATIONS} == meta["annotations"]
    assert [ref["uid"] for ref in meta["ownerReferences"]] == [CU_UID]
    assert pod_view(slim) == pod_view(pod)
    assert taskset_index(slim) == taskset_index(pod) == ["team-a/train"]
    assert controller_uid_index(slim) == controller_uid_index(pod) == [f"team-a/{CU_UID}"]
    assert size(slim) < 2048
    assert pod == before
    assert slim_pod(slim) == slim


def test_the_kept_keys_are_every_label_and_annotation_the_controller_writes() -> None:
    """A key the controller adds to its objects must be decided on here: kept if a cache reader needs it."""
    names = vars(constants)
    assert {v for k, v in names.items() if k.startswith("LABEL_") and isinstance(v, str)} == OWN_LABELS
    assert {
        v for k, v in names.items() if k.startswith("ANNOTATION_") and isinstance(v, str)
    } == OWN_ANNOTATIONS


def test_a_pod_with_250_kb_of_annotations_costs_under_a_hundredth_of_it_in_the_cache() -> None:
    """The issue measured 40 such Pods at 12 MB of RSS: each now costs what an ordinary Pod costs."""
    pod = ours({"annotations": {"notes": "x" * BIG}})

    assert size(pod) > BIG
    assert size(slim_pod(pod)) < size(pod) / 100
    assert size(slim_pod(pod)) == size(slim_pod(ours()))


def unit_with(**extra: Any) -> dict[str, Any]:
    unit = control_unit("c-train-0", CU_UID, TS_UID)
    unit["metadata"] |= {"namespace": "team-a", "annotations": {"TaskSet": "train", "notes": "x" * BIG}}
    return unit | {"data": {SNAPSHOT_KEY: '{"roles": []}'}} | extra


@pytest.mark.parametrize(
    ("unit", "snapshot"),
    [
        pytest.param(unit_with(), '{"roles": []}', id="a ControlUnit with a stranger's annotation"),
        pytest.param(
            unit_with(binaryData={"blob": "eA==" * BIG}), '{"roles": []}', id="a ControlUnit with binary data"
        ),
        pytest.param(
            unit_with(data={"other": "y" * BIG}), None, id="a ConfigMap of 250 KB without a snapshot"
        ),
        pytest.param(unit_with(data={SNAPSHOT_KEY: "z" * BIG}), "z" * BIG, id="a snapshot of 250 KB"),
        pytest.param(unit_with(data={SNAPSHOT_KEY: 3}), None, id="a snapshot that is not a string"),
        pytest.param(unit_with(data="x" * BIG), None, id="data that is not a mapping"),
    ],
)
def test_a_cached_config_map_keeps_only_its_snapshot_s_digest_and_the_controllers_own_metadata(
    unit: dict[str, Any], snapshot: str | None
) -> None:
    """Not its data: the snapshot is judged by its digest and its text fetched once, to be used."""
    before = copy.deepcopy(unit)

    slim = slim_config_map(unit)

    assert set(slim) == {"apiVersion", "kind", "metadata", SNAPSHOT_DIGEST_FIELD, DECLARED_DIGESTS_FIELD}
    assert slim[SNAPSHOT_DIGEST_FIELD] == snapshot_digest(snapshot)
    assert size(slim) < 1024
    assert slim["metadata"]["annotations"] == {"TaskSet": "train"}
    assert taskset_index(slim) == taskset_index(unit)
    assert controller_uid_index(slim) == controller_uid_index(unit)
    assert unit == before
    assert slim_config_map(slim) == slim


def test_the_view_of_a_cached_control_unit_knows_its_snapshot_by_its_digest_only() -> None:
    whole = unit_with()

    known, cached = (
        control_unit_view(whole, SNAPSHOT_KEY),
        control_unit_view(slim_config_map(whole), SNAPSHOT_KEY),
    )

    assert (known.spec_snapshot, known.snapshot_known) == ('{"roles": []}', True)
    assert (cached.spec_snapshot, cached.snapshot_known) == (None, False)
    assert cached.spec_digest == known.spec_digest == snapshot_digest('{"roles": []}')
    assert replace(cached, spec_snapshot=known.spec_snapshot, snapshot_known=True) == known


def test_a_config_map_whose_data_is_gone_digests_as_one_without_a_snapshot() -> None:
    """An ordinary ConfigMap (no ``spec.json``) and a ControlUnit of a spec too large to keep one alike."""
    unit = unit_with()
    del unit["data"]
    assert control_unit_view(unit).spec_digest == NO_SNAPSHOT_DIGEST == snapshot_digest("")
    assert control_unit_view(slim_config_map(unit)).spec_digest == NO_SNAPSHOT_DIGEST


def test_an_owned_object_of_another_kind_is_cached_with_its_metadata_only() -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": unit_with()["metadata"],
        "spec": {"clusterIP": "None", "selector": {"x": "y" * BIG}},
        "status": {"loadBalancer": {}},
    }
    before = copy.deepcopy(service)

    slim = slim_owned(service)

    assert set(slim) == {"apiVersion", "kind", "metadata"}
    assert slim["metadata"]["annotations"] == {"TaskSet": "train"}
    assert owned_view(slim) == owned_view(service)
    assert size(slim) < 1024
    assert service == before
    assert slim_owned(slim) == slim


# ----- a Pod's status: every list bounded, every text clipped as pod_view clips it ------------------------

KIB4 = 4096  # the kubelet's largest termination message


def exited(count: int, *, main: str = "c0", text: str = "m" * KIB4) -> dict[str, Any]:
    """A Pod of ``count`` containers (``main`` first in the spec), each exited with a 4 KiB message, as
    the kubelet lists them: by name."""
    names = [main, *(f"c{i:02d}" for i in range(1, count))]
    terminated = {
        "exitCode": 1,
        "signal": 9,
        "reason": "R" * KIB4,
        "message": text,
        "finishedAt": "2026-01-01T00:00:00Z",
    }
    pod = strangers()
    pod["spec"] = {"containers": [{"name": name, "image": "i" * 1000} for name in names]}
    pod["status"] = {
        "phase": "Failed",
        "reason": "r" * KIB4,
        "message": "m" * KIB4,
        "containerStatuses": [
            {"name": name, "containerID": "docker://" + "d" * KIB4, "state": {"terminated": terminated}}
            for name in sorted(names)
        ],
        "initContainerStatuses": [
            {"name": f"i{i}", "state": {"waiting": {"reason": "ErrImagePull", "message": "w" * KIB4}}}
            for i in range(count)
        ],
        "conditions": [
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "u" * KIB4,
                "x": "y",
            },
            {"type": "Ready", "status": "False", "message": "n" * KIB4},
        ],
    }
    return pod


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param(exited(1), id="one container exited with a 4 KiB message"),
        pytest.param(exited(3), id="three containers"),
        pytest.param(exited(200), id="200 containers: the lists are bounded"),
        pytest.param(exited(200, main="zz"), id="200 containers, the workload's status listed last"),
        pytest.param(exited(2, text="short"), id="a short message is kept as it is"),
    ],
)
def test_a_pod_s_status_texts_are_clipped_and_its_lists_bounded_as_the_controller_reads_them(
    pod: dict[str, Any],
) -> None:
    before = copy.deepcopy(pod)

    slim = slim_pod(pod)

    assert pod_view(slim) == pod_view(pod)
    assert pod_view(slim).terminated is not None
    assert size(slim) < 12 * 1024 + 3 * LIST_KEPT * 1024  # whatever the Pod lists
    assert pod == before
    assert slim_pod(slim) == slim


def test_a_pod_with_200_containers_costs_what_one_with_sixteen_costs() -> None:
    assert abs(size(slim_pod(exited(200))) - size(slim_pod(exited(LIST_KEPT)))) < 200
    assert size(slim_pod(exited(200))) < size(exited(200)) / 50
