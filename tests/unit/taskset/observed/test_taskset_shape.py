"""The TaskSet watch decodes each event straight into ``TASKSET_SHAPE`` (``informers.pruned``): the whole
TaskSet but its status, of which only ``state``. The cache keeps ``slim_taskset`` of that, and it must be
what ``slim_taskset`` of the whole TaskSet is, for any TaskSet: one with a large status and managed fields
that own counts, one of each recorded status, the hostile corpus, arbitrary JSON. A field ``slim_taskset``
starts to read of the status and ``TASKSET_SHAPE`` does not name fails here."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from informers.pruned import PrunedDecoder
from taskset.observed.slim import TASKSET_SHAPE, slim_taskset
from tests.builders import TaskSetBuilder
from tests.corpus.hostile import CORPUS
from tests.unit.taskset.decide.test_properties import recorded_statuses, taskset_objects
from tests.unit.taskset.observed.pruned_cases import check_pruned, watch_line
from tests.unit.taskset.test_fuzz_input import FUZZ, JUNK, mutated, tasksets

pytestmark = pytest.mark.unit

DECODER = PrunedDecoder(TASKSET_SHAPE)
SCALED = {"f:spec": {"f:roles": {'k:{"name":"worker"}': {"f:replicas": {}}}, "f:scale": {"f:replicas": {}}}}


def _large(replicas: int = 400) -> dict[str, Any]:
    """A running TaskSet of ``replicas`` workers, its status as big as theirs, scaled by two managers."""
    obj = TaskSetBuilder("job").uid("u-1").role("worker", replicas=replicas).obj()
    obj["metadata"]["managedFields"] = [
        {"manager": "kubectl", "operation": "Update", "time": "2026-12-01T10:00:00Z", "fieldsV1": SCALED},
        {"manager": "autoscaler", "operation": "Update", "subresource": "scale", "fieldsV1": SCALED},
        {"manager": "taskset-controller", "operation": "Update", "subresource": "status", "fieldsV1": {}},
    ]
    running = {"phase": "TaskRoleReplicaAttemptRunning", "transitionTime": "2026-11-23T02:41:10Z"}
    replicas_running = [running | {"index": i} for i in range(replicas)]
    obj["status"] = {
        "state": "Running",
        "phase": "TaskSetAttemptRunning",
        "roleStatus": [{"name": "worker", "replicaStatus": replicas_running}],
        "conditions": [{"type": "Running", "status": "True"}],
    }
    return obj


def check(obj: Any) -> None:
    """The pruned TaskSet, slimmed, is the whole TaskSet slimmed: as a watch event and as a list's item."""
    check_pruned(DECODER, slim_taskset, obj, "TaskSetList", "v1alpha1")


def _with_status(draw: st.DrawFn) -> dict[str, Any]:
    obj = draw(taskset_objects(active=True))
    status = draw(recorded_statuses(obj, active=True))
    return {**obj, "status": status.to_json() if status is not None else {"state": "Pending"}}


with_status = st.composite(_with_status)


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(_large(), id="400 running replicas, scaled twice"),
        pytest.param(TaskSetBuilder("new").obj(), id="new, no status"),
        pytest.param({**_large(2), "status": {"roleStatus": []}}, id="a status without state"),
        pytest.param({**_large(2), "status": None}, id="a null status"),
        pytest.param({**_large(2), "status": ["not", "a", "status"]}, id="a status of another type"),
    ],
)
def test_the_pruned_taskset_of_each_shape_is_cached_as_the_whole_one(obj: dict[str, Any]) -> None:
    check(obj)


@pytest.mark.parametrize(("obj", "outcome"), CORPUS)
def test_the_pruned_taskset_of_the_hostile_corpus_is_cached_as_the_whole_one(obj: Any, outcome: Any) -> None:
    del outcome
    check(obj)


@FUZZ
@given(obj=st.one_of(tasksets(), with_status().flatmap(mutated), JUNK))
@example(obj={"status": {"state": {"nested": ["x"]}, "roleStatus": 5}})
@example(obj={"metadata": {"managedFields": [{"fieldsV1": SCALED, "manager": 7}, None]}, "status": {}})
def test_the_pruned_taskset_is_cached_as_the_whole_one_whatever_it_holds(obj: Any) -> None:
    check(obj)


def test_the_status_a_write_echoes_is_never_built() -> None:
    """Of a 2,000-replica status only its state is built; the spec and the metadata are whole."""
    obj = _large(2000)
    line = watch_line(obj) or b""
    pruned = DECODER.event(line)["object"]
    assert pruned["status"] == {"state": "Running"}
    assert pruned["spec"] == obj["spec"] and pruned["metadata"] == obj["metadata"]
    assert len(orjson.dumps(pruned)) * 20 < len(line)
