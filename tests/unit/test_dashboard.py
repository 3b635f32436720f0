"""manifests/grafana-dashboard.json is valid JSON that Grafana can import, every series it queries is
exported by the controller (taskset/daemon/metrics.py, the workqueue metrics, the process collectors), and it
covers what an operator looks at first."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from taskset.daemon.metrics import ControllerMetrics, new_registry, workqueue_metrics_provider

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = json.loads((ROOT / "manifests" / "grafana-dashboard.json").read_text())
METRIC_RE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{")
# What the issue asks the dashboard to show: reconcile rate, errors, latency, queue depth and latency,
# TaskSets by state, transitions, retries, Pod creates/deletes, REST client requests, leader status.
REQUIRED = {
    "controller_runtime_reconcile_total",
    "controller_runtime_reconcile_errors_total",
    "controller_runtime_reconcile_time_seconds_bucket",
    "workqueue_depth",
    "workqueue_queue_duration_seconds_bucket",
    "taskset_tasksets",
    "taskset_phase_transitions_total",
    "taskset_retries_total",
    "taskset_pod_creates_total",
    "taskset_pod_deletes_total",
    "rest_client_requests_total",
    "leader_election_master_status",
}


def exported_series() -> set[str]:
    """Every sample name the daemon's registry can produce (counters end in _total, histograms in
    _bucket/_count/_sum), from the same constructors the daemon uses."""
    registry = new_registry()
    ControllerMetrics(registry=registry).set_leader("taskset-controller", True)
    workqueue_metrics_provider(registry)
    names: set[str] = set()
    for family in registry.collect():  # families without samples yet still carry their name and type
        if family.type == "counter":
            names.add(f"{family.name}_total")
        elif family.type == "histogram":
            names |= {f"{family.name}_bucket", f"{family.name}_count", f"{family.name}_sum"}
        else:
            names.add(family.name)
        names |= {sample.name for sample in family.samples}
    return names


def panels(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in items:
        yield panel
        yield from panels(panel.get("panels") or [])


def expressions() -> list[str]:
    found = [t["expr"] for p in panels(DASHBOARD["panels"]) for t in p.get("targets") or []]
    for variable in DASHBOARD["templating"]["list"]:
        query = variable.get("query")
        if isinstance(query, dict):
            found.append(query["query"])
    return found


def queried_metrics() -> set[str]:
    names = {name for expr in expressions() for name in METRIC_RE.findall(expr)}
    names |= {m.group(1) for expr in expressions() for m in re.finditer(r"label_values\((\w+)", expr)}
    return names


def test_it_is_an_importable_dashboard() -> None:
    assert DASHBOARD["uid"] == "taskset-controller"
    assert DASHBOARD["title"]
    assert isinstance(DASHBOARD["schemaVersion"], int)
    ids = [p["id"] for p in panels(DASHBOARD["panels"])]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for panel in panels(DASHBOARD["panels"]):
        assert {"h", "w", "x", "y"} <= set(panel["gridPos"])
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        for target in panel.get("targets") or []:
            assert target["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
    assert DASHBOARD["templating"]["list"][0]["name"] == "datasource"


def test_every_queried_metric_is_exported() -> None:
    exported = exported_series()
    assert queried_metrics(), "no metric found in the expressions"
    assert queried_metrics() - exported == set()


def test_it_shows_what_the_issue_asks_for() -> None:
    assert REQUIRED - queried_metrics() == set()


def test_every_expression_is_balanced_and_scoped_to_the_job() -> None:
    for expr in expressions():
        assert expr.count("(") == expr.count(")"), expr
        assert expr.count("{") == expr.count("}"), expr
        if not expr.startswith("label_values"):
            assert all('job=~"$job"' in selector for selector in re.findall(r"\{[^}]*\}", expr)), expr
