"""``slim_pod`` interns the strings it keeps as it copies them, in one pass: it must keep exactly what the
two-pass transform before it kept (slim, then copy it all again to intern it; ``reference_slim_pod``
below, as it was), on Pods of every shape: recorded from the control plane, the controller's own of
each phase, arbitrary JSON, valid Pods with junk in them, and the hostile corpus's Pod templates."""

from __future__ import annotations

import contextlib
import copy
import sys
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from taskset.api.readers import get_path, main_container
from taskset.api.status import EXIT_MESSAGE_MAX, IDENTIFIER_MAX, QUOTED_MAX, REASON_MAX, clip
from taskset.observed.slim import (
    CONDITION_FIELDS_KEPT,
    CONDITIONS_KEPT,
    CONTAINER_STATUS_KEPT,
    LIST_KEPT,
    NODE_NAME_MAX,
    POD_STATUS_KEPT,
    STATE_FIELDS_KEPT,
    slim_metadata,
    slim_pod,
)
from tests.corpus.hostile import CORPUS, as_strangers_objects
from tests.unit.taskset.test_fuzz_input import FUZZ, RECORDED_POD, mutated, pods, valid_pod
from tests.unit.taskset.world import PodBuilder

pytestmark = pytest.mark.unit

MESSAGE_KEPT = {"waiting": QUOTED_MAX, "terminated": EXIT_MESSAGE_MAX}


def reference_slim_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """The transform as it was: slim with shallow copies, then intern the whole result again."""
    slim: dict[str, Any] = {key: pod[key] for key in ("apiVersion", "kind") if key in pod}
    if "metadata" in pod:
        slim["metadata"] = slim_metadata(pod["metadata"])
    spec = pod.get("spec")
    if isinstance(spec, dict) and isinstance(spec.get("containers"), list):
        slim["spec"] = {"containers": [_only(c, {"name"}) for c in spec["containers"][:LIST_KEPT]]}
    elif isinstance(spec, dict):
        slim["spec"] = {}
    if isinstance(spec, dict) and isinstance(spec.get("nodeName"), str):
        slim["spec"]["nodeName"] = spec["nodeName"][:NODE_NAME_MAX]
    if isinstance(pod.get("status"), dict):
        slim["status"] = _status(pod["status"], main_container(pod)[0])
    shared: dict[str, Any] = _shared(slim)
    return shared


def _status(status: dict[str, Any], main: str) -> dict[str, Any]:
    kept: dict[str, Any] = _only(status, POD_STATUS_KEPT)
    for key, limit in (("reason", REASON_MAX), ("message", QUOTED_MAX)):
        if isinstance(kept.get(key), str):
            kept[key] = clip(kept[key], limit)
    for key in ("containerStatuses", "initContainerStatuses"):
        if isinstance(kept.get(key), list):
            entries = _bounded(kept[key], main if key == "containerStatuses" else None)
            kept[key] = [_container(entry) for entry in entries]
    if isinstance(kept.get("conditions"), list):
        scheduled = [c for c in kept["conditions"] if _kept_type(get_path(c, "type"))][:LIST_KEPT]
        kept["conditions"] = [_clip_texts(_only(c, CONDITION_FIELDS_KEPT), QUOTED_MAX) for c in scheduled]
    return kept


def _bounded(statuses: list[Any], main: str | None) -> list[Any]:
    kept = [entry for entry in statuses[:LIST_KEPT] if isinstance(entry, dict)]
    if main is None:
        return kept
    chosen = next((s for s in statuses if isinstance(s, dict) and (not main or s.get("name") == main)), None)
    return kept if chosen is None or any(entry is chosen for entry in kept) else [*kept, chosen]


def _container(entry: dict[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = _only(entry, CONTAINER_STATUS_KEPT)
    if isinstance(kept.get("containerID"), str):
        kept["containerID"] = clip(kept["containerID"], IDENTIFIER_MAX)
    state = kept.get("state")
    if isinstance(state, dict):
        kept["state"] = {
            name: _clip_texts(_only(value, STATE_FIELDS_KEPT[name]), MESSAGE_KEPT[name])
            for name, value in state.items()
            if name in STATE_FIELDS_KEPT
        }
    return kept


def _clip_texts(value: Any, message_max: int) -> Any:
    if not isinstance(value, dict):
        return value
    limits = {"reason": REASON_MAX, "message": message_max}
    return {k: clip(v, limits[k]) if k in limits and isinstance(v, str) else v for k, v in value.items()}


def _shared(value: Any) -> Any:
    if isinstance(value, str):
        return sys.intern(value)
    if isinstance(value, dict):
        return {key: _shared(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_shared(item) for item in value]
    return value


def _only(value: Any, keys: frozenset[str] | set[str]) -> Any:
    return {k: v for k, v in value.items() if k in keys} if isinstance(value, dict) else value


def check(pod: Any) -> None:
    """The same slim Pod to the byte (1 is not true), the same strings shared, ``pod`` left alone. The
    fuzz's junk is nested up to 400 levels (``test_fuzz_input.deep``): ``slim_pod`` walks it within the
    interpreter's default recursion limit, as the daemon runs it, while this check's own walks (a deep
    copy, ``same``, the reference transform) take up to three frames a level, and run with a higher one."""
    with deeper_recursion():
        before = copy.deepcopy(pod)
    slim = slim_pod(pod)
    with deeper_recursion():
        assert pod == before
        assert same(slim, reference_slim_pod(pod))
    assert slim_pod(slim) == slim
    with deeper_recursion():
        strings = _strings(_without_own_texts(slim))
    for value in strings:
        assert value is sys.intern(value)


# The texts each Pod holds alone, which the transform keeps as they came (not interned), by part.
OWN_TEXTS = {
    "metadata": {"name", "uid", "resourceVersion"},
    "status": {"podIP"},
    "container": {"containerID"},
}


def _without_own_texts(slim: dict[str, Any]) -> dict[str, Any]:
    """``slim`` less the strings it holds alone (``OWN_TEXTS``); every other string is interned."""

    def less(part: Any, own: set[str]) -> Any:
        return (
            {k: v for k, v in part.items() if not (k in own and type(v) is str)}
            if isinstance(part, dict)
            else part
        )

    rest = dict(slim)
    rest["metadata"] = less(slim.get("metadata"), OWN_TEXTS["metadata"])
    status = less(slim.get("status"), OWN_TEXTS["status"])
    if isinstance(status, dict):
        for key in ("containerStatuses", "initContainerStatuses"):
            if isinstance(status.get(key), list):
                status[key] = [less(entry, OWN_TEXTS["container"]) for entry in status[key]]
    rest["status"] = status
    return rest


@contextlib.contextmanager
def deeper_recursion(limit: int = 10_000) -> Iterator[None]:
    """The test's own recursive walks of deep junk, not the transform's, get a higher recursion limit."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(max(before, limit))
    try:
        yield
    finally:
        sys.setrecursionlimit(before)


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down (``==`` has 1 equal true)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    return [s for item in items for s in _strings(item)]


def _nested(levels: int) -> Any:
    """The fuzz's deepest junk (``test_fuzz_input.deep``): dicts and lists within each other."""
    value: Any = "leaf"
    for level in range(levels):
        value = {"k": value} if level % 2 else [value]
    return value


def _exited_long() -> dict[str, Any]:
    pod = PodBuilder("ts-a-0").exited(137, message="OOMKilled " * 2000).obj()
    pod["status"]["containerStatuses"][0]["containerID"] = "containerd://" + "a" * 500
    pod["status"]["reason"], pod["status"]["message"] = "R" * 2000, "<m>" * 3000
    pod["status"]["conditions"] = [{"type": "DisruptionTarget", "status": "True", "message": "x" * 9000}] * 20
    return pod


@pytest.mark.parametrize(
    "pod",
    [
        pytest.param(orjson.loads(RECORDED_POD.read_bytes()), id="recorded from the control plane"),
        pytest.param(
            PodBuilder("ts-a-0").uid("p").controlled_by("cu").taskset("t").attempt(2).obj(), id="new"
        ),
        pytest.param(PodBuilder("ts-a-0").running().deleting().obj(), id="running, being deleted"),
        pytest.param(_exited_long(), id="exited with texts past every clip bound"),
        pytest.param({"spec": {"containers": 1}, "status": {"conditions": {"a": "b"}}}, id="wrong types"),
        pytest.param({"spec": [], "status": "x", "metadata": 3, "kind": ["Pod"]}, id="wrong tops"),
        pytest.param({"status": {"containerStatuses": [1, {"name": "c", "state": "s"}]}}, id="junk statuses"),
        pytest.param({"status": {"phase": _nested(400), "message": _nested(400)}}, id="junk 400 levels deep"),
    ],
)
def test_one_pass_keeps_what_two_passes_kept(pod: dict[str, Any]) -> None:
    check(pod)


@pytest.mark.parametrize(("obj", "outcome"), CORPUS)
def test_one_pass_keeps_what_two_passes_kept_of_the_hostile_corpus(obj: Any, outcome: object) -> None:
    """Each hostile TaskSet as a stranger's object, and each of its roles' Pod templates as a Pod."""
    del outcome
    for seen in as_strangers_objects(obj):
        check(seen)


@FUZZ
@given(pod=st.one_of(pods(), mutated(valid_pod()), mutated(orjson.loads(RECORDED_POD.read_bytes()))))
def test_one_pass_keeps_what_two_passes_kept_of_any_pod(pod: Any) -> None:
    check(pod)


def _kept_type(kind: object) -> bool:
    """A condition's type the controller reads; a type that is no string (a stranger's object) is not
    one, and must not reach a set lookup, where an unhashable value would raise."""
    return isinstance(kind, str) and kind in CONDITIONS_KEPT


def test_a_condition_whose_type_is_an_object_is_dropped_not_a_crash() -> None:
    pod = PodBuilder("job-w-0").running().obj()
    pod["status"]["conditions"] = [
        {"type": {"not": "a string"}, "status": "True"},
        {"type": "Ready", "status": "True"},
    ]
    slim = slim_pod(pod)
    assert [c["type"] for c in slim["status"]["conditions"]] == ["Ready"]
