"""The ``strangers`` bench scenario's pure parts: the stranger's objects are what the issue measured
(and what the API server admits), and the memory record and its report line say with against without."""

from __future__ import annotations

import orjson
import pytest

from bench import report, strangers
from taskset.api import constants as c

pytestmark = pytest.mark.unit


def test_a_stranger_s_config_map_is_labelled_and_holds_1_mb_within_the_api_server_s_limit() -> None:
    cm = strangers.config_map("stranger-00")
    assert cm["metadata"]["labels"] == {c.LABEL_TASKSET: "stranger-00"}
    assert strangers.CONFIG_MAP_BYTES <= len(orjson.dumps(cm)) < 1024 * 1024


def test_a_stranger_s_pod_is_labelled_and_carries_250_kb_of_annotations_within_the_limit() -> None:
    pod = strangers.pod("stranger-00")
    assert pod["metadata"]["labels"] == {c.LABEL_TASKSET: "stranger-00"}
    assert strangers.ANNOTATION_BYTES <= len(orjson.dumps(pod["metadata"]["annotations"])) < 256 * 1024


@pytest.mark.parametrize(
    ("without", "with_", "ratio"),
    [
        pytest.param(100 * 1024, 101 * 1024, 1.01, id="strangers cost little"),
        pytest.param(100 * 1024, 133 * 1024, 1.33, id="strangers cached whole"),
        pytest.param(0, 10, None, id="no sample without"),
    ],
)
def test_the_memory_record_is_the_ratio_of_rss_with_strangers_to_without(
    without: int, with_: int, ratio: float | None
) -> None:
    record = strangers.memory(without, without + 512, with_, [])
    assert record["controller"]["rss_ratio_with_to_without"] == ratio
    assert record["controller"]["rss_mib_with"] == round(with_ / 1024, 1)
    assert record["correctness"]["ok"]
    assert record["stranger_bytes"] == 20 * 1_000_000 + 40 * 250 * 1024


def test_a_failed_stranger_makes_the_record_incorrect_and_the_line_says_why() -> None:
    record = strangers.memory(1024, 1024, 1024, ["409 AlreadyExists"])
    assert not record["correctness"]["ok"]
    assert "NOT correct: 409 AlreadyExists" in report.strangers_line({"strangers": record})


def test_the_report_gives_the_memory_line_and_no_table_row_for_the_record() -> None:
    record = strangers.memory(100 * 1024, 100 * 1024, 101 * 1024, [])
    line = report.strangers_line({"strangers": record})
    assert "101.0 MiB after a burst with them against 100.0 MiB" in line and "(1.01x;" in line
    results = {
        "scenarios": {"strangers": record},
        "scale": "small",
        "seed": 1,
        "machine": {"date": "d", "cpus": 2, "loadavg_at_start": [0.0, 0.0, 0.0]},
    }
    table = report.table(results)
    assert line in table
    assert "| strangers |" not in table
