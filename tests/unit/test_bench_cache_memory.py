"""``bench.cache_memory`` runs as its README section says, and what it builds is what the controller
caches: each copy of the recorded Pod a distinct cached Pod of its TaskSet."""

from __future__ import annotations

import orjson
import pytest

from bench.cache_memory import REPLICAS, main, watch_lines
from taskset.api.constants import LABEL_TASKSET
from taskset.observed.slim import slim_pod

pytestmark = pytest.mark.unit


def test_each_copy_is_its_own_pod_of_its_taskset() -> None:
    pods = [slim_pod(orjson.loads(line)["object"]) for line in watch_lines(REPLICAS + 2)]
    assert (
        len({pod["metadata"]["uid"] for pod in pods}) == len({pod["metadata"]["name"] for pod in pods}) == 502
    )
    assert pods[REPLICAS]["metadata"]["name"] == "cache-1-worker-0"
    assert {pod["metadata"]["labels"][LABEL_TASKSET] for pod in pods} == {"cache-0", "cache-1"}


def test_it_reports_each_part(capsys: pytest.CaptureFixture[str]) -> None:
    main(REPLICAS)
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == [
        "the Pod cache (slim Pods in the store, with its indexes)",
        "the Pod views",
        "the statuses, as read live (full shape) and parsed",
        "the statuses as the records keep them (written, parsed, and the writers)",
    ]
    assert all("KiB a Pod" in line for line in lines)
