"""``bench.shards``' pure parts: one namespace per bucket, the Pods split evenly, the replica counts it
accepts, and the table it prints from its results."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.shards import (
    Config,
    namespace_per_bucket,
    parse_args,
    pods_per_taskset,
    table,
    tenure_troubles,
)
from informers.shards import Buckets

pytestmark = pytest.mark.unit


def test_one_namespace_in_each_bucket() -> None:
    names = namespace_per_bucket("ring")
    assert [Buckets().of_namespace(name) for name in names] == list(range(Buckets().count))


@pytest.mark.parametrize(
    ("pods", "tasksets", "expected"),
    [(10_000, 32, [313] * 16 + [312] * 16), (64, 32, [2] * 32), (5, 3, [2, 2, 1])],
)
def test_pods_are_split_as_evenly_as_integers_allow(pods: int, tasksets: int, expected: list[int]) -> None:
    assert pods_per_taskset(pods, tasksets) == expected


def test_the_configurations_are_the_single_process_install_then_each_count_sharded() -> None:
    args = parse_args(["--replicas", "1,2,4"])
    assert args.configs == [Config(1, False), Config(1, True), Config(2, True), Config(4, True)]


def test_a_count_that_does_not_divide_the_buckets_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--replicas", "3"])
    assert "--replicas" in capsys.readouterr().err


def replica(rss: float, cpu: float, got: int | None) -> dict[str, Any]:
    return {
        "rss_mib": rss,
        "peak_rss_mib": rss + 1,
        "cpu_s": cpu,
        "objects_received": got,
        "objects_dropped": None if got is None else 0,
        "tasksets_held": None if got is None else 16,
        "leases_lapsed": None if got is None else 0,
        "held_set_changes": None if got is None else 1,
        "follows_refused": None if got is None else 0,
    }


def test_the_table_gives_medians_per_replica_with_their_range() -> None:
    results = [
        {"config": "1 unsharded", "pods_per_second": 90.0, "kube_apiserver_cpu_s": 40.0,
         "per_replica": [replica(100.0, 20.0, None)]},
        {"config": "2 sharded", "pods_per_second": 80.0, "kube_apiserver_cpu_s": 42.0,
         "per_replica": [replica(60.0, 11.0, 5000), replica(62.0, 9.0, 5200)]},
    ]  # fmt: skip
    lines = table(results)
    assert (
        lines[2]
        == "| 1 unsharded | 100 (100-100) | 101 (101-101) | 20 (20-20) | - | - | - | - | - | - | 90 | 40 |"
    )
    assert lines[3] == (
        "| 2 sharded | 61 (60-62) | 62 (61-63) | 10 (9-11) | 5100 (5000-5200) | 0 (0-0) | 16 (16-16) "
        "| 0 (0-0) | 1 (1-1) | 0 (0-0) | 80 | 42 |"
    )


def test_tenure_troubles_are_read_from_the_replica_s_log(tmp_path: Path) -> None:
    log = tmp_path / "replica.log"
    records = [
        {"msg": "shard buckets changed", "held": [0, 1]},
        {"msg": "bucket lease not renewed in time; dropped", "bucket": 1},
        {"msg": "shard buckets changed", "held": [0]},
        {"msg": "reconciled"},
    ]
    log.write_text("\n".join(json.dumps(r) for r in records) + "\nnot json\n[1]\n")
    assert tenure_troubles(log) == (1, 2)
