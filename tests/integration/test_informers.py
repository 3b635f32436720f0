"""Informers against the embedded control plane: a real API server, its watch cache, compaction, restarts.

Every test ends the same way: the informer's store must equal a fresh consistent LIST, key for key and
resourceVersion for resourceVersion, and every delete must have reached the handler.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson
import pytest
from kubernetes.client import ApiClient

from devcluster import Cluster, Settings
from informers import (
    DeletedFinalStateUnknown,
    InformerSettings,
    ListOptions,
    ListResult,
    ReflectorSettings,
    Resource,
    SharedInformer,
    SharedInformerFactory,
    WatchEvent,
    WatchStream,
    WatchTarget,
    deletion_handling_key,
    wait_for_cache_sync,
)
from informers.kube import KubeListerWatcher, lister_watcher_factory

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

PODS = Resource(group="", version="v1", plural="pods")
CONVERGE_TIMEOUT = 120.0  # seconds for the cache to catch up with the API server
PARALLEL_WRITES = 8  # concurrent API calls when creating/updating/deleting many pods
# Short server-side watch timeouts so each test also crosses several normal watch ends.
SETTINGS = InformerSettings(reflector=ReflectorSettings(min_watch_timeout=5.0))
# The dedicated uncached control plane compacts etcd this often (as the shared fixture does).
COMPACTION_INTERVAL = "5s"
COMPACTION_SECONDS = 5.0


def wait_until(predicate: Callable[[], Any], timeout: float = CONVERGE_TIMEOUT, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(interval)


def call(api: Any, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
    """One raw API call (no models), asserting success."""
    verb, url, headers, _, _ = api.param_serialize(
        method=method,
        resource_path=path,
        header_params={"Content-Type": content_type, "Accept": "application/json"},
        body=body,
        auth_settings=["BearerToken"],
    )
    response = api.call_api(verb, url, header_params=headers, body=body, _request_timeout=(10, 60))
    data = response.read()
    assert 200 <= response.status < 300, f"{method} {path} -> {response.status}: {data[:300]!r}"
    return orjson.loads(data) if data else None


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"suite": "informers"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]},
    }


class Pods:
    """Writes pods of one namespace through the raw API, many at a time."""

    def __init__(self, api: ApiClient, namespace: str) -> None:
        self.api = api
        self.namespace = namespace
        self.base = f"/api/v1/namespaces/{namespace}/pods"

    def create(self, names: list[str]) -> None:
        self._each(names, lambda n: call(self.api, "POST", self.base, pod(n)))

    def label(self, names: list[str], **labels: str) -> None:
        patch = {"metadata": {"labels": labels}}
        self._each(
            names,
            lambda n: call(self.api, "PATCH", f"{self.base}/{n}", patch, "application/merge-patch+json"),
        )

    def delete(self, names: list[str]) -> None:
        # Grace period 0: gone from the API at once, as a kubelet would make it after the containers stop.
        options = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}
        self._each(names, lambda n: call(self.api, "DELETE", f"{self.base}/{n}", options))

    def listed(self) -> dict[str, str]:
        """``{key: resourceVersion}`` of a fresh consistent LIST."""
        items = call(self.api, "GET", self.base)["items"]
        return {f"{self.namespace}/{i['metadata']['name']}": i["metadata"]["resourceVersion"] for i in items}

    def _each(self, names: list[str], action: Callable[[str], Any]) -> None:
        with ThreadPoolExecutor(PARALLEL_WRITES) as pool:
            list(pool.map(action, names))


class Recorder:
    """Handler that remembers keys by notification kind; thread-safe enough for one handler thread."""

    def __init__(self) -> None:
        self.added: set[str] = set()
        self.updated: set[str] = set()
        self.deleted: dict[str, str] = {}  # key -> "final" or "tombstone"

    def on_add(self, obj: dict[str, Any]) -> None:
        self.added.add(deletion_handling_key(obj))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.updated.add(deletion_handling_key(new))

    def on_delete(self, obj: dict[str, Any] | DeletedFinalStateUnknown) -> None:
        kind = "tombstone" if isinstance(obj, DeletedFinalStateUnknown) else "final"
        self.deleted[deletion_handling_key(obj)] = kind


def cached(informer: SharedInformer) -> dict[str, str]:
    return {
        key: obj["metadata"]["resourceVersion"]
        for key in informer.store.list_keys()
        if (obj := informer.store.get_by_key(key))
    }


def converged(informer: SharedInformer, pods: Pods) -> bool:
    return cached(informer) == pods.listed()


@pytest.fixture
def api(cluster: Cluster) -> Iterator[ApiClient]:
    configuration = cluster.api_client().configuration
    # One connection per concurrent writer plus the informers' watches, so urllib3 never discards any.
    configuration.connection_pool_maxsize = PARALLEL_WRITES + 4
    client: Any = ApiClient(configuration)
    yield client
    client.close()


def test_an_informer_follows_500_pods_through_create_update_and_delete(
    cluster: Cluster, namespace: str, api: ApiClient
) -> None:
    pods = Pods(api, namespace)
    factory = SharedInformerFactory(lister_watcher_for=lister_watcher_factory(api), settings=SETTINGS)
    informer = factory.informer_for(PODS, namespace=namespace)
    recorder = Recorder()
    registration = informer.add_event_handler(
        on_add=recorder.on_add, on_update=recorder.on_update, on_delete=recorder.on_delete
    )
    factory.start()
    try:
        assert factory.wait_for_cache_sync(timeout=30) == {
            WatchTarget(resource=PODS, namespace=namespace): True
        }
        assert wait_for_cache_sync([registration.has_synced], timeout=10)
        names = [f"pod-{i:03}" for i in range(500)]
        keys = {f"{namespace}/{n}" for n in names}

        pods.create(names)
        wait_until(lambda: set(informer.store.list_keys()) == keys)
        pods.label(names, step="updated")
        wait_until(
            lambda: all(o["metadata"]["labels"].get("step") == "updated" for o in informer.store.list())
        )
        wait_until(lambda: converged(informer, pods))
        assert all("managedFields" not in o["metadata"] for o in informer.store.list())

        pods.delete(names)
        wait_until(lambda: len(informer.store) == 0)
        wait_until(lambda: len(recorder.deleted) == 500)

        assert recorder.added == keys
        assert recorder.updated == keys
        assert set(recorder.deleted) == keys
        assert cached(informer) == pods.listed() == {}
    finally:
        factory.stop()


class Interposer:
    """A ``ListerWatcher`` between the informer and the API server that can hold a re-watch back (while
    the test changes things behind its back) and cut the open watch; it records what passed through."""

    def __init__(self, inner: KubeListerWatcher) -> None:
        self.inner = inner
        self.gate = threading.Event()
        self.gate.set()
        self.waiting = False  # a watch call is held at the gate
        self.lists: list[ListOptions] = []
        self.watch_rvs: list[str] = []
        self.error_codes: list[int] = []
        self.streams: list[WatchStream] = []

    def list(self, options: ListOptions) -> ListResult:
        self.lists.append(options)
        return self.inner.list(options)

    def watch(self, *, resource_version: str, timeout_seconds: int, allow_bookmarks: bool) -> WatchStream:
        if not self.gate.is_set():
            self.waiting = True
            self.gate.wait(CONVERGE_TIMEOUT)
            self.waiting = False
        self.watch_rvs.append(resource_version)
        stream = self.inner.watch(
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            allow_bookmarks=allow_bookmarks,
        )
        self.streams.append(stream)
        return _Recorded(stream, self.error_codes)


class _Recorded:
    def __init__(self, stream: WatchStream, error_codes: list[int]) -> None:
        self.stream = stream
        self.error_codes = error_codes

    def __iter__(self) -> Iterator[WatchEvent]:
        for event in self.stream:
            if event["type"] == "ERROR":
                self.error_codes.append(int(event["object"].get("code", 0)))
            yield event

    def close(self) -> None:
        self.stream.close()


@pytest.fixture(scope="module")
def uncached_cluster() -> Iterator[Cluster]:
    """A second control plane whose API server has no watch cache, so watches are served by etcd itself.

    With the watch cache on (the shared fixture), a watch from an old RV is answered from the cache's own
    event window, which etcd compaction never touches; only without it does compaction expire a watch RV.
    """
    with Cluster(
        Settings(
            nodes=1,
            etcd_compaction_interval=COMPACTION_INTERVAL,
            extra_apiserver_args=("--watch-cache=false",),
        )
    ) as running:
        yield running


def test_a_watch_rv_compacted_away_is_recovered_by_a_relist_that_misses_no_delete(
    uncached_cluster: Cluster,
) -> None:
    api: Any = uncached_cluster.api_client()
    namespace = "default"
    pods = Pods(api, namespace)
    interposer = Interposer(
        KubeListerWatcher(api_client=api, target=WatchTarget(resource=PODS, namespace=namespace))
    )
    informer = SharedInformer(name="pods", lister_watcher=interposer, settings=SETTINGS)
    recorder = Recorder()
    informer.add_event_handler(
        on_add=recorder.on_add, on_update=recorder.on_update, on_delete=recorder.on_delete
    )
    informer.start()
    try:
        assert informer.wait_for_cache_sync(timeout=30)
        names = [f"pod-{i}" for i in range(10)]
        pods.create(names)
        wait_until(lambda: converged(informer, pods))

        # Disconnect: the next watch waits at the gate, then the open one is cut.
        interposer.gate.clear()
        opened = len(interposer.watch_rvs)
        interposer.streams[-1].close()
        wait_until(lambda: interposer.waiting)
        stale_rv = informer.last_sync_resource_version()
        gone = names[:4]
        pods.delete(gone)
        # Two compaction rounds: the apiserver compacts etcd up to the RV it saw one interval earlier.
        time.sleep(2 * COMPACTION_SECONDS + 1)
        interposer.gate.set()

        wait_until(lambda: converged(informer, pods))
        assert interposer.watch_rvs[opened] == stale_rv
        assert 410 in interposer.error_codes
        relist = interposer.lists[-1]
        assert (relist.resource_version, relist.resource_version_match) in {
            (stale_rv, "NotOlderThan"),
            ("", None),
        }
        assert recorder.deleted == {f"{namespace}/{n}": "tombstone" for n in gone}
        assert set(informer.store.list_keys()) == {f"{namespace}/{n}" for n in names[4:]}
    finally:
        informer.stop()
        api.close()


class RestartMetrics:
    def __init__(self) -> None:
        self.restarts: list[str] = []
        self.lists = 0

    def event_received(self, name: str, event_type: str) -> None:
        pass

    def listed(self, name: str, items: int, seconds: float) -> None:
        self.lists += 1

    def watch_restarted(self, name: str, reason: str) -> None:
        self.restarts.append(reason)

    def resource_version(self, name: str, resource_version: str) -> None:
        pass


def test_an_api_server_restart_mid_watch_is_recovered(
    cluster: Cluster, namespace: str, api: ApiClient
) -> None:
    pods = Pods(api, namespace)
    metrics = RestartMetrics()
    factory = SharedInformerFactory(
        lister_watcher_for=lister_watcher_factory(api), settings=SETTINGS, metrics=metrics
    )
    informer = factory.informer_for(PODS, namespace=namespace)
    recorder = Recorder()
    informer.add_event_handler(
        on_add=recorder.on_add, on_update=recorder.on_update, on_delete=recorder.on_delete
    )
    factory.start()
    try:
        assert informer.wait_for_cache_sync(timeout=30)
        before = [f"before-{i}" for i in range(5)]
        pods.create(before)
        wait_until(lambda: converged(informer, pods))
        restarts_before = len(metrics.restarts)

        cluster.restart_apiserver(downtime=2.0)
        after = [f"after-{i}" for i in range(5)]
        pods.create(after)
        pods.delete(before[:2])

        wait_until(lambda: converged(informer, pods))
        assert len(metrics.restarts) > restarts_before
        assert set(informer.store.list_keys()) == {f"{namespace}/{n}" for n in before[2:] + after}
        assert set(recorder.deleted) == {f"{namespace}/{n}" for n in before[:2]}
        assert {f"{namespace}/{n}" for n in after} <= recorder.added
    finally:
        factory.stop()
