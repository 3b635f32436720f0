"""A cached Pod's parts that the Pods of a TaskSet hold alike (labels, controlling owner, spec, conditions,
a running or waiting container's state) are held once, by every Pod that holds them: the same object.
What a Pod keeps is still exactly what it kept (``test_slim_in_one_pass`` holds every Pod to the
transform's reference, to the type), a shared part is never one of another type (``1`` is not ``true``),
and the table of parts is bounded."""

from __future__ import annotations

import copy
import sys
import tracemalloc
import uuid
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from taskset.observed import slim as slim_module
from taskset.observed import views as views_module
from taskset.observed.slim import SHARED_PART_CHARS, SHARED_PARTS_KEPT, slim_pod
from taskset.observed.views import CONDITION_SETS_KEPT, pod_view
from tests.unit.taskset.observed.test_slim_in_one_pass import deeper_recursion, reference_slim_pod, same
from tests.unit.taskset.test_fuzz_input import FUZZ, RECORDED_POD, mutated, pods, valid_pod
from tests.unit.taskset.world import PodBuilder

pytestmark = pytest.mark.unit


def replica(index: int) -> dict[str, Any]:
    """The recorded Pod as replica ``index`` of one TaskSet: its own name, UID, version, IP and index."""
    pod: dict[str, Any] = orjson.loads(RECORDED_POD.read_bytes())
    meta = pod["metadata"]
    meta |= {"name": f"train-worker-{index}", "uid": f"uid-{index}", "resourceVersion": str(100 + index)}
    meta.setdefault("annotations", {})["RoleReplicaIndex"] = str(index)
    pod["status"]["podIP"] = f"10.0.0.{index}"
    return pod


def part(pod: Any, *path: str | int) -> Any:
    for step in path:
        pod = pod[step]
    return pod


SHARED = [
    ("metadata", "labels"),
    ("metadata", "ownerReferences"),
    ("spec",),
    ("status", "conditions"),
    ("status", "containerStatuses", 0, "state"),
]


@pytest.mark.parametrize("path", SHARED, ids=lambda path: "/".join(map(str, path)))
def test_the_replicas_of_a_taskset_hold_one_copy_of_each_part_they_hold_alike(path: tuple[Any, ...]) -> None:
    first, second = slim_pod(replica(1)), slim_pod(replica(2))
    assert same(part(first, *path), part(reference_slim_pod(replica(1)), *path))
    assert part(first, *path) is part(second, *path)


def test_what_each_pod_holds_alone_stays_its_own() -> None:
    first, second = slim_pod(replica(1)), slim_pod(replica(2))
    assert first["metadata"] is not second["metadata"]
    assert first["metadata"]["annotations"] is not second["metadata"]["annotations"]
    assert first["status"]["containerStatuses"] is not second["status"]["containerStatuses"]
    assert (first["metadata"]["uid"], second["metadata"]["uid"]) == ("uid-1", "uid-2")


# The dicts each Pod holds alone, all of them in the recorded Pod.
OWN = [(), ("metadata",), ("metadata", "annotations"), ("status",), ("status", "containerStatuses", 0)]


def held_bytes(pods: list[dict[str, Any]]) -> int:
    """What ``slim_pod`` of each of ``pods`` holds, once the strings it interns are held already."""
    tracemalloc.start()
    try:
        held = [slim_pod(pod) for pod in pods]
        return tracemalloc.get_traced_memory()[0] if held else 0
    finally:
        tracemalloc.stop()


def test_what_each_pod_holds_alone_holds_its_keys_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The five dicts a Pod holds alone point at one table of keys for each part: a third less than
    the same dicts each with its own table (what they were), and still plain dicts, equal in items and
    order to those, so every reader sees what it saw."""
    pods = [replica(i) for i in range(200)]
    monkeypatch.setattr(slim_module, "_parts", {})  # room for every part: each run finds them all made
    interned = [slim_pod(pod) for pod in pods]  # the strings and parts, held by both runs alike
    shared = held_bytes(pods)
    with monkeypatch.context() as patched:
        patched.setattr(slim_module, "keys_shared", lambda items, table: items)
        own_tables = held_bytes(pods)
        plain = slim_pod(replica(1))
    assert own_tables - shared > 300 * len(pods)  # about 100 bytes a dict
    first = slim_pod(replica(1))
    for path in OWN:
        assert type(part(first, *path)) is dict
        assert part(first, *path) == part(plain, *path)
        assert list(part(first, *path)) == list(part(plain, *path))
    assert len(interned) == len(pods)


def test_a_part_is_never_shared_with_one_that_differs_in_a_value_s_type() -> None:
    """``{"status": true}`` and ``{"status": 1}`` are equal to Python; the wire tells them apart."""
    with_true, with_one = PodBuilder("job-w-0").running().obj(), PodBuilder("job-w-1").running().obj()
    with_true["status"]["conditions"] = [{"type": "Ready", "status": True}]
    with_one["status"]["conditions"] = [{"type": "Ready", "status": 1}]
    kept_true, kept_one = slim_pod(with_true), slim_pod(with_one)
    assert type(kept_true["status"]["conditions"][0]["status"]) is bool
    assert type(kept_one["status"]["conditions"][0]["status"]) is int


def test_an_exit_is_never_shared() -> None:
    """A terminated state holds integers (its exit code, its signal): it is not keyed at all."""
    first, second = (slim_pod(PodBuilder(f"job-w-{i}").exited(1).obj()) for i in range(2))
    states = [part(pod, "status", "containerStatuses", 0, "state") for pod in (first, second)]
    assert states[0] == states[1]
    assert states[0] is not states[1]


def test_a_part_longer_than_the_bound_is_kept_by_its_pod_alone() -> None:
    long, alike = (PodBuilder(f"job-w-{i}").running().obj() for i in range(2))
    for pod in (long, alike):
        message = "m" * SHARED_PART_CHARS
        pod["status"]["conditions"] = [{"type": "Ready", "status": "False", "message": message}]
    assert part(slim_pod(long), "status", "conditions") is not part(slim_pod(alike), "status", "conditions")
    assert not any("m" * SHARED_PART_CHARS in repr(key) for key in slim_module._parts)


def test_the_table_of_parts_is_bounded() -> None:
    for i in range(SHARED_PARTS_KEPT * 2 + 3):
        pod = replica(i)
        pod["metadata"]["labels"]["PodTaskRole"] = f"role-{i}"  # a part nobody else holds
        slim_pod(pod)
        assert len(slim_module._parts) <= SHARED_PARTS_KEPT
    # The Pods cached before the table was dropped keep their parts; the next ones share anew.
    first, second = slim_pod(replica(1)), slim_pod(replica(2))
    assert first["metadata"]["labels"] is second["metadata"]["labels"]


@FUZZ
@given(
    batch=st.lists(
        st.one_of(pods(), mutated(valid_pod()), mutated(orjson.loads(RECORDED_POD.read_bytes()))),
        min_size=2,
        max_size=6,
    )
)
def test_pods_slimmed_one_after_another_each_keep_exactly_their_own(batch: list[Any]) -> None:
    """Every Pod of a batch, slimmed in turn (sharing parts with the ones before), still equals its own
    reference to the type once the whole batch is slimmed: no later Pod changed a part an earlier one
    holds, and none was given another Pod's part that only looks equal."""
    with deeper_recursion():  # the fuzz's junk is 400 levels deep: the test's walks, not the transform's
        given_pods = copy.deepcopy(batch)
    kept = [slim_pod(pod) for pod in batch]
    with deeper_recursion():
        assert batch == given_pods
        for pod, slim in zip(batch, kept, strict=True):
            assert same(slim, reference_slim_pod(pod))


def test_the_views_of_the_replicas_hold_one_tuple_of_their_conditions() -> None:
    first, second = pod_view(slim_pod(replica(1))), pod_view(slim_pod(replica(2)))
    assert first.conditions == (("Ready", "True"), ("PodScheduled", "True"))
    assert first.conditions is second.conditions


def test_the_table_of_condition_tuples_is_bounded() -> None:
    for i in range(3 * CONDITION_SETS_KEPT):
        pod = PodBuilder(f"p{i}").obj()
        pod["status"]["conditions"] = [{"type": "Ready", "status": f"stranger's {i}"}]
        assert pod_view(pod).conditions == (("Ready", f"stranger's {i}"),)
    assert len(views_module._condition_sets) <= CONDITION_SETS_KEPT


def test_the_texts_a_pod_holds_alone_are_not_interned() -> None:
    """Its name, UID, version, IP and container ID would only grow the interpreter's table of interned
    strings: an equal text interned afterwards is another object than the cached one."""
    unique = uuid.uuid4().hex
    pod = replica(1)
    pod["metadata"] |= {"name": f"n-{unique}", "uid": f"u-{unique}", "resourceVersion": f"v-{unique}"}
    pod["status"]["podIP"] = f"ip-{unique}"
    pod["status"]["containerStatuses"][0]["containerID"] = f"containerd://{unique}"
    slim = slim_pod(pod)
    held = [slim["metadata"][key] for key in ("name", "uid", "resourceVersion")]
    held += [slim["status"]["podIP"], slim["status"]["containerStatuses"][0]["containerID"]]
    assert held == [f"n-{unique}", f"u-{unique}", f"v-{unique}", f"ip-{unique}", f"containerd://{unique}"]
    for text in held:
        assert sys.intern("".join(list(text))) is not text
