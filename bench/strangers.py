"""The ``strangers`` scenario (a bounded cache): the controller's RSS with a stranger's labelled
objects in its caches, against without them, in one run.

Anyone may label a ConfigMap or a Pod ``TaskSet``, which is what the controller's informers select, so
a stranger's objects reach its caches; the caches keep only the controller's own metadata of them and
no ConfigMap data (``taskset.observed.views``). The issue measured 20 ConfigMaps of 1 MB adding 21 MB of
RSS and 40 Pods with 250 KB annotations 12 MB. Here, in order:

1. ``strangers-without``: a burst's TaskSets (the ``burst`` shape and count) run to their end, with no
   stranger around; then the controller's RSS (``rss_mib_without``);
2. the stranger creates ``CONFIG_MAPS`` labelled ConfigMaps of 1 MB and ``PODS`` labelled Pods with a
   250 KB annotation (running, under kwok) in a namespace of its own; once every Pod runs, the RSS
   again (``rss_mib_strangers_arrived``);
3. ``strangers-with``: the same TaskSets again, the stranger's objects still there; then the RSS
   (``rss_mib_with``).

The figure is ``rss_ratio_with_to_without``: RSS only grows (CPython rarely returns memory), so the run
without strangers comes first and the ratio with them is close to 1 when the strangers cost little,
against about (RSS + 33 MB) / RSS when their objects are cached whole.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from bench.kube import Api, ApiError
from bench.recorder import wait_until
from taskset.api import constants as c

CONFIG_MAPS = 20  # the issue's
PODS = 40  # the issue's
CONFIG_MAP_BYTES = 1_000_000  # a ConfigMap holds at most 1 MiB in all
ANNOTATION_BYTES = 250 * 1024  # the API server admits 256 KiB of annotations per object
SETTLE = 5.0  # seconds after the strangers are all there: the controller's caches take them in
STRANGERS_TIMEOUT = 300.0


class Bench(Protocol):
    """What the scenario uses of ``bench.run.Bench``."""

    api: Api

    def namespace(self, scenario: str) -> str: ...

    def drop(self, namespace: str) -> None: ...

    def running(self, namespace: str) -> int: ...

    def run_tasksets(self, scenario: str, *, round_: int = 1) -> dict[str, Any]: ...

    def rss_kib(self) -> int: ...


def labelled(name: str, **annotations: str) -> dict[str, Any]:
    """Metadata as the controller's objects carry it: the ``TaskSet`` label and annotation, and more."""
    labels, own = {c.LABEL_TASKSET: name}, {c.ANNOTATION_TASKSET: name}
    return {"name": name, "labels": labels, "annotations": own | annotations}


def config_map(name: str) -> dict[str, Any]:
    """A stranger's ConfigMap of 1 MB, labelled and annotated as a ControlUnit would be."""
    data = {"spec.json": "x" * CONFIG_MAP_BYTES}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": labelled(name), "data": data}


def pod(name: str) -> dict[str, Any]:
    """A stranger's Pod labelled ``TaskSet`` with a 250 KB annotation; it runs until deleted (kwok)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": labelled(name, notes="x" * ANNOTATION_BYTES),
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 0,
            "containers": [{"name": "main", "image": "busybox", "command": ["sleep", "3600"]}],
        },
    }


def memory(without_kib: int, arrived_kib: int, with_kib: int, errors: list[str]) -> dict[str, Any]:
    """The scenario's memory record, from the controller's RSS at the three points (KiB)."""
    return {
        "name": "strangers",
        "config_maps": CONFIG_MAPS,
        "pods": PODS,
        "stranger_bytes": CONFIG_MAPS * CONFIG_MAP_BYTES + PODS * ANNOTATION_BYTES,
        "controller": {
            "rss_mib_without": round(without_kib / 1024, 1),
            "rss_mib_strangers_arrived": round(arrived_kib / 1024, 1),
            "rss_mib_with": round(with_kib / 1024, 1),
            "rss_ratio_with_to_without": round(with_kib / without_kib, 3) if without_kib else None,
        },
        "correctness": {"errors": errors[:20], "ok": not errors},
    }


def run(bench: Bench) -> dict[str, dict[str, Any]]:
    """The scenario: its two TaskSet runs and its memory record, by name."""
    without = bench.run_tasksets("strangers-without")
    without_kib = bench.rss_kib()
    namespace = bench.namespace("strangers")
    errors = create(bench.api, namespace)
    try:
        wait_until(
            lambda: bench.running(namespace) >= PODS or bool(errors),
            STRANGERS_TIMEOUT,
            "strangers: every Pod Running",
            poll=1.0,
        )
    except TimeoutError as err:
        errors.append(str(err))
    time.sleep(SETTLE)
    arrived_kib = bench.rss_kib()
    with_ = bench.run_tasksets("strangers-with")
    with_kib = bench.rss_kib()
    bench.drop(namespace)
    record = memory(without_kib, arrived_kib, with_kib, errors)
    return {"strangers-without": without, "strangers-with": with_, "strangers": record}


def create(api: Api, namespace: str) -> list[str]:
    """The stranger's objects, created a few at a time; the errors, if any."""
    errors: list[str] = []
    base = f"/api/v1/namespaces/{namespace}"
    requests = [(f"{base}/configmaps", config_map(f"stranger-{i:02d}")) for i in range(CONFIG_MAPS)]
    requests += [(f"{base}/pods", pod(f"stranger-{i:02d}")) for i in range(PODS)]

    def send(request: tuple[str, dict[str, Any]]) -> None:
        try:
            api.request("POST", request[0], request[1])
        except ApiError as err:  # reported in the scenario's correctness
            errors.append(str(err))

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(send, requests))
    return errors
