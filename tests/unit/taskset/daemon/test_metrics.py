"""Metric names, types and labels exactly as controller-runtime and client-go export them, scraped as text."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest
import urllib3
from prometheus_client import CollectorRegistry, enable_created_metrics, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from devcluster.ports import free_port
from informers.rest import Endpoint, Transport
from taskset.daemon.http import BindAddress, ObservabilityServer, parse_bind_address
from taskset.daemon.metrics import (
    RECONCILE_BUCKETS,
    REQUEST_BUCKETS,
    ControllerMetrics,
    new_registry,
    request_verb_and_resource,
    workqueue_metrics_provider,
)
from taskset.daemon.metrics_auth import Decision


@dataclass(frozen=True)
class Scrape:
    types: dict[str, str]  # name on the "# TYPE" line (counters keep _total) -> type
    samples: dict[str, list[tuple[dict[str, str], float]]]  # sample name -> (labels, value)

    def value(self, sample: str, /, **labels: str) -> float:
        matches = [v for got, v in self.samples.get(sample, []) if got == labels]
        assert len(matches) == 1, (sample, labels, self.samples.get(sample))
        return matches[0]

    def label_names(self, name: str) -> set[tuple[str, ...]]:
        return {tuple(sorted(k for k in labels if k != "le")) for labels, _ in self.samples.get(name, [])}


def scrape(registry: CollectorRegistry) -> Scrape:
    text = generate_latest(registry).decode()
    types: dict[str, str] = {}
    samples: dict[str, list[tuple[dict[str, str], float]]] = defaultdict(list)
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if not sample.name.endswith("_created"):
                samples[sample.name].append((dict(sample.labels), sample.value))
    return Scrape(types=types, samples=dict(samples))


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def metrics(registry: CollectorRegistry) -> ControllerMetrics:
    return ControllerMetrics(registry=registry, workers=10)


# name -> (type, label names of its series), controller-runtime / client-go / ours.
EXPECTED = [
    pytest.param(
        "controller_runtime_reconcile_total", "counter", ("controller", "result"), id="reconcile_total"
    ),
    pytest.param(
        "controller_runtime_reconcile_errors_total", "counter", ("controller",), id="reconcile_errors"
    ),
    pytest.param(
        "controller_runtime_terminal_reconcile_errors_total", "counter", ("controller",), id="terminal_errors"
    ),
    pytest.param("controller_runtime_reconcile_panics_total", "counter", ("controller",), id="panics"),
    pytest.param(
        "controller_runtime_reconcile_time_seconds", "histogram", ("controller",), id="reconcile_time"
    ),
    pytest.param(
        "controller_runtime_max_concurrent_reconciles", "gauge", ("controller",), id="max_concurrent"
    ),
    pytest.param("controller_runtime_active_workers", "gauge", ("controller",), id="active_workers"),
    pytest.param("rest_client_requests_total", "counter", ("code", "host", "method"), id="rest requests"),
    pytest.param("rest_client_request_duration_seconds", "histogram", ("host", "verb"), id="rest duration"),
    pytest.param("taskset_api_requests_total", "counter", ("code", "resource", "verb"), id="api requests"),
    pytest.param("taskset_tasksets", "gauge", ("state",), id="tasksets by state"),
    pytest.param("taskset_phase_transitions_total", "counter", ("from", "machine", "to"), id="transitions"),
    pytest.param("taskset_retries_total", "counter", ("level",), id="retries"),
    pytest.param("taskset_pod_creates_total", "counter", ("result",), id="pod creates"),
    pytest.param("taskset_pod_deletes_total", "counter", ("result",), id="pod deletes"),
    pytest.param("taskset_control_unit_creates_total", "counter", ("result",), id="control unit creates"),
    pytest.param("taskset_control_unit_deletes_total", "counter", ("result",), id="control unit deletes"),
    pytest.param("taskset_status_writes_total", "counter", ("result",), id="status writes"),
    pytest.param("taskset_events_total", "counter", ("result",), id="events"),
]


def _exercise(metrics: ControllerMetrics) -> None:
    """Touch every metric once, so that every family has series to inspect."""
    metrics.observe_reconcile("taskset", "success", 0.01)
    metrics.observe_request("POST", "pods", 201, 0.02)
    metrics.set_tasksets_by_state({"Running": 1})
    metrics.observe_transition("replica", "a", "b")
    for kind in ("CreatePod", "DeletePod", "CreateControlUnit", "DeleteControlUnit"):
        metrics.observe_action(kind, "ok")
    metrics.observe_status_write("success")
    metrics.observe_event("created")


@pytest.mark.parametrize(("name", "kind", "labels"), EXPECTED)
def test_names_types_and_labels(
    registry: CollectorRegistry, metrics: ControllerMetrics, name: str, kind: str, labels: tuple[str, ...]
) -> None:
    _exercise(metrics)
    got = scrape(registry)
    assert got.types[name] == kind
    sample = f"{name}_count" if kind == "histogram" else name
    assert got.label_names(sample) == {labels}


def test_histogram_buckets_are_the_go_controllers(
    registry: CollectorRegistry, metrics: ControllerMetrics
) -> None:
    _exercise(metrics)
    got = scrape(registry)
    for name, buckets in (
        ("controller_runtime_reconcile_time_seconds", RECONCILE_BUCKETS),
        ("rest_client_request_duration_seconds", REQUEST_BUCKETS),
    ):
        bounds = [labels["le"] for labels, _ in got.samples[f"{name}_bucket"]]
        assert bounds == [*(repr(float(b)) for b in buckets), "+Inf"]
    assert len(RECONCILE_BUCKETS) == 40
    assert (RECONCILE_BUCKETS[0], RECONCILE_BUCKETS[-1]) == (0.005, 60.0)


def test_a_controllers_series_exist_at_zero_from_the_start(registry: CollectorRegistry) -> None:
    ControllerMetrics(registry=registry, workers=7)
    got = scrape(registry)
    for result in ("success", "error", "requeue", "requeue_after"):
        assert got.value("controller_runtime_reconcile_total", controller="taskset", result=result) == 0
    for name in (
        "controller_runtime_reconcile_errors_total",
        "controller_runtime_terminal_reconcile_errors_total",
        "controller_runtime_reconcile_panics_total",
        "controller_runtime_active_workers",
    ):
        assert got.value(name, controller="taskset") == 0
    assert got.value("controller_runtime_max_concurrent_reconciles", controller="taskset") == 7
    assert got.value("taskset_retries_total", level="taskset") == 0
    assert got.value("taskset_retries_total", level="replica") == 0
    assert {labels["state"] for labels, _ in got.samples["taskset_tasksets"]} == {
        "Waiting",
        "Running",
        "Succeeded",
        "Failed",
    }


OUTCOMES = [
    pytest.param("success", {"success": 1}, {}, id="success counts once"),
    pytest.param("requeue_after", {"requeue_after": 1}, {}, id="requeue_after"),
    pytest.param("requeue", {"requeue": 1}, {}, id="requeue"),
    pytest.param("error", {"error": 1}, {"reconcile_errors": 1}, id="an error also counts in errors_total"),
    pytest.param(
        "panic",
        {"error": 1},
        {"reconcile_errors": 1, "reconcile_panics": 1},
        id="a panic counts as a panic and as an error, as controller-runtime does",
    ),
    pytest.param(
        "terminal_error",
        {"error": 1},
        {"reconcile_errors": 1, "terminal_reconcile_errors": 1},
        id="a terminal error counts as terminal and as an error",
    ),
]


@pytest.mark.parametrize(("outcome", "results", "counters"), OUTCOMES)
def test_reconcile_outcomes(
    registry: CollectorRegistry,
    metrics: ControllerMetrics,
    outcome: str,
    results: dict[str, int],
    counters: dict[str, int],
) -> None:
    metrics.observe_reconcile("taskset", outcome, 0.2)
    got = scrape(registry)
    for result in ("success", "error", "requeue", "requeue_after"):
        want = results.get(result, 0)
        assert got.value("controller_runtime_reconcile_total", controller="taskset", result=result) == want
    for name in ("reconcile_errors", "terminal_reconcile_errors", "reconcile_panics"):
        assert got.value(f"controller_runtime_{name}_total", controller="taskset") == counters.get(name, 0)
    assert got.value("controller_runtime_reconcile_time_seconds_count", controller="taskset") == 1
    assert got.value("controller_runtime_reconcile_time_seconds_sum", controller="taskset") == 0.2


def test_an_unknown_reconcile_result_is_a_programming_error(metrics: ControllerMetrics) -> None:
    with pytest.raises(ValueError, match="'sucess'"):
        metrics.observe_reconcile("taskset", "sucess", 0.1)


def test_worker_gauges(registry: CollectorRegistry, metrics: ControllerMetrics) -> None:
    metrics.set_active_workers("taskset", 3)
    metrics.set_max_concurrent_reconciles("taskset", 12)
    got = scrape(registry)
    assert got.value("controller_runtime_active_workers", controller="taskset") == 3
    assert got.value("controller_runtime_max_concurrent_reconciles", controller="taskset") == 12


def test_a_kubeclient_request_feeds_rest_and_api_cost_series(
    registry: CollectorRegistry, metrics: ControllerMetrics
) -> None:
    metrics.observe_request("PUT", "tasksets/status", 409, 0.05)
    metrics.observe_request("post", "pods", 0, 10.0)
    got = scrape(registry)
    assert got.value("rest_client_requests_total", code="409", method="PUT", host="") == 1
    assert got.value("rest_client_requests_total", code="<error>", method="POST", host="") == 1
    assert got.value("rest_client_request_duration_seconds_count", verb="PUT", host="") == 1
    assert got.value("taskset_api_requests_total", verb="update", resource="tasksets/status", code="409") == 1
    assert got.value("taskset_api_requests_total", verb="create", resource="pods", code="<error>") == 1


class _Ok(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def api_server() -> Iterator[str]:
    """A local server answering every GET with 200 and ``{}``: its base URL."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _stream(transport: Transport, path: str, query: list[tuple[str, str]]) -> None:
    transport.stream(path, query=query, timeout=urllib3.Timeout(connect=2, read=5)).release_conn()


def test_an_instrumented_transport_reports_lists_and_watches_with_their_verbs(
    registry: CollectorRegistry, metrics: ControllerMetrics, api_server: str
) -> None:
    transport = Transport(Endpoint(host=api_server))
    host = urlsplit(api_server).netloc
    metrics.instrument_api_client(transport)
    _stream(transport, "/api/v1/namespaces/ns/pods", [("labelSelector", "TaskSet"), ("limit", "500")])
    _stream(transport, "/apis/octopus.openi.pcl.cn/v1alpha1/tasksets", [("watch", "true")])
    metrics.observe_request("DELETE", "pods", 200, 0.01)  # a KubeClient write: the host is the transport's
    got = scrape(registry)
    assert got.value("taskset_api_requests_total", verb="list", resource="pods", code="200") == 1
    assert got.value("taskset_api_requests_total", verb="watch", resource="tasksets", code="200") == 1
    assert got.value("rest_client_requests_total", code="200", method="GET", host=host) == 2
    assert got.value("rest_client_requests_total", code="200", method="DELETE", host=host) == 1


def test_an_instrumented_transport_counts_a_request_without_answer_and_reraises(
    registry: CollectorRegistry, metrics: ControllerMetrics
) -> None:
    port = free_port()
    transport = Transport(Endpoint(host=f"http://127.0.0.1:{port}"), retries=False)
    metrics.instrument_api_client(transport)
    with pytest.raises(urllib3.exceptions.HTTPError):
        _stream(transport, "/api/v1/pods", [])
    got = scrape(registry)
    assert (
        got.value("rest_client_requests_total", code="<error>", method="GET", host=f"127.0.0.1:{port}") == 1
    )


VERBS = [
    pytest.param("GET", "/api/v1/pods", ("list", "pods"), id="a core collection is a list"),
    pytest.param("GET", "/api/v1/namespaces/ns/pods/p", ("get", "pods"), id="a named core object is a get"),
    pytest.param("GET", "/api/v1/namespaces/ns/pods?watch=1", ("watch", "pods"), id="watch=1 is a watch"),
    pytest.param("GET", "/api/v1/namespaces/ns", ("get", "namespaces"), id="a namespace itself"),
    pytest.param("GET", "/api/v1/namespaces", ("list", "namespaces"), id="the namespaces collection"),
    pytest.param(
        "PUT",
        "/apis/octopus.openi.pcl.cn/v1alpha1/namespaces/ns/tasksets/t/status",
        ("update", "tasksets/status"),
        id="a status update names the subresource",
    ),
    pytest.param(
        "POST", "/apis/events.k8s.io/v1/namespaces/ns/events", ("create", "events"), id="a create in a group"
    ),
    pytest.param("PATCH", "/api/v1/namespaces/ns/events/e", ("patch", "events"), id="a patch"),
    pytest.param("DELETE", "/api/v1/namespaces/ns/configmaps/c", ("delete", "configmaps"), id="a delete"),
    pytest.param(
        "DELETE", "/api/v1/namespaces/ns/pods", ("deletecollection", "pods"), id="a collection delete"
    ),
    pytest.param(
        "GET",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/tasksets.octopus.openi.pcl.cn",
        ("get", "customresourcedefinitions"),
        id="a cluster-scoped object",
    ),
    pytest.param("GET", "/version", ("get", ""), id="a non-resource path has no resource"),
    pytest.param("GET", "/apis/octopus.openi.pcl.cn/v1alpha1", ("get", ""), id="a discovery path"),
]


@pytest.mark.parametrize(("method", "path", "want"), VERBS)
def test_request_verb_and_resource(method: str, path: str, want: tuple[str, str]) -> None:
    assert request_verb_and_resource(method, f"https://h:6443{path}") == want


def test_tasksets_by_state_from_counts_or_a_callable(
    registry: CollectorRegistry, metrics: ControllerMetrics
) -> None:
    metrics.set_tasksets_by_state({"Running": 2, "Failed": 1})
    got = scrape(registry)
    assert got.value("taskset_tasksets", state="Running") == 2
    assert got.value("taskset_tasksets", state="Waiting") == 0
    counts = {"Succeeded": 5}
    metrics.count_tasksets_with(lambda: counts)
    counts["Succeeded"] = 6
    got = scrape(registry)
    assert got.value("taskset_tasksets", state="Succeeded") == 6
    assert got.value("taskset_tasksets", state="Running") == 0


TRANSITIONS = [
    pytest.param(
        "taskset",
        "TaskSetAttemptRetryPending",
        "TaskSetAttemptPending",
        "taskset",
        id="a TaskSet retry starts",
    ),
    pytest.param(
        "replica",
        "TaskRoleReplicaAttemptRetryPending",
        "TaskRoleReplicaAttemptPending",
        "replica",
        id="a replica retry starts",
    ),
    pytest.param(
        "taskset",
        "TaskSetAttemptCompleted",
        "TaskSetAttemptRetryPending",
        None,
        id="deciding to retry is not yet one",
    ),
    pytest.param("role", "TaskRoleWaiting", "TaskRoleRunning", None, id="an ordinary transition"),
]


@pytest.mark.parametrize(("machine", "source", "target", "retry_level"), TRANSITIONS)
def test_transitions_and_the_retries_they_start(
    registry: CollectorRegistry,
    metrics: ControllerMetrics,
    *,
    machine: str,
    source: str,
    target: str,
    retry_level: str | None,
) -> None:
    metrics.observe_transition(machine, source, target)
    got = scrape(registry)
    assert (
        got.value("taskset_phase_transitions_total", machine=machine, **{"from": source, "to": target}) == 1
    )
    for level in ("taskset", "replica"):
        assert got.value("taskset_retries_total", level=level) == (1 if level == retry_level else 0)


ACTIONS = [
    pytest.param("CreatePod", "taskset_pod_creates_total", id="pod create"),
    pytest.param("DeletePod", "taskset_pod_deletes_total", id="pod delete"),
    pytest.param("CreateControlUnit", "taskset_control_unit_creates_total", id="control unit create"),
    pytest.param("DeleteControlUnit", "taskset_control_unit_deletes_total", id="control unit delete"),
]


@pytest.mark.parametrize(("kind", "name"), ACTIONS)
def test_actions_are_counted_by_kind_and_result(
    registry: CollectorRegistry, metrics: ControllerMetrics, kind: str, name: str
) -> None:
    metrics.observe_action(kind, "already-exists")
    metrics.observe_action("SomethingElse", "ok")
    metrics.observe_status_write("conflict")
    got = scrape(registry)
    assert got.value(name, result="already-exists") == 1
    assert got.value("taskset_status_writes_total", result="conflict") == 1


def test_the_workqueue_provider_shares_the_registry(
    registry: CollectorRegistry, metrics: ControllerMetrics
) -> None:
    provider = workqueue_metrics_provider(registry)
    provider.new_adds_metric("taskset").inc()
    got = scrape(registry)
    assert got.value("workqueue_adds_total", name="taskset", controller="taskset") == 1
    assert "controller_runtime_reconcile_total" in got.samples


def test_new_registry_has_process_metrics_and_no_created_series() -> None:
    try:
        registry = new_registry()
        ControllerMetrics(registry=registry)
        text = generate_latest(registry).decode()
    finally:
        # new_registry's switch is process-wide: leave other tests as they were.
        enable_created_metrics()
    assert "process_cpu_seconds_total" in text or "python_info" in text
    assert "python_gc_objects_collected_total" in text
    assert "_created" not in text


SERVER_LAYOUTS = [
    pytest.param(True, id="metrics and probes share one server when the addresses are equal"),
    pytest.param(False, id="metrics and probes on two servers"),
]


@pytest.mark.parametrize("shared", SERVER_LAYOUTS)
def test_the_http_server_serves_metrics_and_probes(registry: CollectorRegistry, shared: bool) -> None:
    ControllerMetrics(registry=registry)
    ready = {"now": False}
    address = BindAddress(host="127.0.0.1", port=0)
    server = ObservabilityServer(
        metrics_address=address,
        probe_address=address if shared else BindAddress(host="127.0.0.1", port=free_port()),
        registry=registry,
        ready=lambda: ready["now"],
        not_ready_reason=lambda: "caches not synced yet",
    )
    server.start()
    try:
        assert (server.metrics_port == server.probe_port) is shared

        def get(port: int | None, path: str) -> tuple[int, str]:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
                    return response.status, response.read().decode()
            except urllib.error.HTTPError as err:
                return err.code, err.read().decode()

        status, body = get(server.metrics_port, "/metrics")
        assert status == 200
        assert "controller_runtime_reconcile_total" in body
        assert get(server.probe_port, "/healthz") == (200, "ok\n")
        assert get(server.probe_port, "/readyz") == (503, "caches not synced yet\n")
        ready["now"] = True
        assert get(server.probe_port, "/readyz") == (200, "ok\n")
        assert get(server.probe_port, "/nothing")[0] == 404
    finally:
        server.stop()
        server.stop()  # idempotent


def test_a_secured_metrics_and_the_probes_on_port_0_get_a_free_port_each(
    registry: CollectorRegistry,
) -> None:
    """Port 0 is a free port the kernel picks at each bind: /metrics, secured, and the plain-HTTP
    probes both asking for it never share a port, so nothing is refused."""
    address = BindAddress(host="127.0.0.1", port=0)
    server = ObservabilityServer(
        metrics_address=address,
        probe_address=address,
        registry=registry,
        ready=lambda: True,
        not_ready_reason=lambda: "",
        metrics_guard=lambda request: Decision(200, ""),
    )
    server.start()
    try:
        assert server.metrics_port != server.probe_port
        with urllib.request.urlopen(f"http://127.0.0.1:{server.probe_port}/healthz", timeout=5) as response:
            assert response.status == 200
    finally:
        server.stop()


def test_a_secured_metrics_on_the_probes_fixed_port_is_refused(registry: CollectorRegistry) -> None:
    address = BindAddress(host="127.0.0.1", port=free_port())
    with pytest.raises(ValueError, match="apart from the plain-HTTP probes"):
        ObservabilityServer(
            metrics_address=address,
            probe_address=address,
            registry=registry,
            ready=lambda: True,
            not_ready_reason=lambda: "",
            metrics_guard=lambda request: Decision(200, ""),
        )


BIND_ADDRESSES = [
    pytest.param(":8080", BindAddress("", 8080), id="a port alone binds every interface"),
    pytest.param("127.0.0.1:0", BindAddress("127.0.0.1", 0), id="port 0 picks a free port"),
    pytest.param("[::1]:9090", BindAddress("::1", 9090), id="an IPv6 host in brackets"),
    pytest.param("0", None, id="0 disables"),
]


@pytest.mark.parametrize(("text", "want"), BIND_ADDRESSES)
def test_parse_bind_address(text: str, want: BindAddress | None) -> None:
    assert parse_bind_address(text) == want


def test_two_instances_on_one_registry_are_refused(
    registry: CollectorRegistry, metrics: ControllerMetrics
) -> None:
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        ControllerMetrics(registry=registry)
