"""How the daemon assembles the controller: its settings from the ``Config``, its metrics on the
process's Prometheus registry. Wiring belongs to the process, not to the runtime it wires."""

from __future__ import annotations

from typing import Any

from informers.rest import as_transport
from taskset.daemon.buckets import ShardCollector
from taskset.daemon.leader import own_namespace
from taskset.daemon.metrics import ControllerMetrics, workqueue_metrics_provider
from taskset.daemon.proof_key import load_proof_key
from taskset.integrations import BUILT_IN
from taskset.integrations.base import Integration
from taskset.integrations.gang import gang_integrations
from taskset.integrations.kueue import KueueWorkload
from taskset.runtime.controller import CONTROLLER_NAME, Controller, ControllerSettings
from taskset.runtime.kube import KubeClient


def build_controller(
    *, config: Any, api_client: Any, registry: Any, logger: Any, metrics: Any = None, shards: Any = None
) -> Controller:
    """The controller as the daemon runs it, from its ``Config`` and a Prometheus registry.

    ``metrics``: a ``ControllerMetrics`` on ``registry`` to use (the daemon shares it with leader
    election); by default one is made here. ``shards``: this replica's ``BucketElector`` (``--shards
    auto``), or ``None``. Raises ``ProofKeyError`` when the key of the creation
    proofs cannot be had (``taskset.daemon.proof_key``).
    """
    if metrics is None:
        metrics = ControllerMetrics(registry=registry, workers=config.workers)
    api_client = as_transport(api_client)
    metrics.instrument_api_client(api_client)  # counts the informers' lists and watches too
    settings = ControllerSettings(
        workers=config.workers,
        namespace=config.namespace or None,
        qps=config.qps,
        burst=config.burst,
        cache_creation_timeout=config.cache_creation_timeout,
        proof_key=load_proof_key(KubeClient(api_client), own_namespace(config), config.proof_key_secret),
        stuck_terminating_after=config.stuck_terminating_after,
        watch_nodes=config.watch_nodes,
    )
    controller = Controller(
        api_client=api_client,
        settings=settings,
        integrations=integrations_of(config),
        logger=logger,
        queue_metrics=workqueue_metrics_provider(registry),
        reconcile_metrics=metrics,
        worker_metrics=metrics,
        request_observer=metrics.observe_request,
        event_metrics=metrics,
        shards=shards,
    )
    metrics.init_controller(CONTROLLER_NAME, workers=settings.workers)
    metrics.count_tasksets_with(controller.tasksets_by_state)
    if shards is not None:
        registry.register(ShardCollector(shards, lambda: sum(controller.tasksets_by_state().values())))
    return controller


def integrations_of(config: Any) -> tuple[Integration, ...]:
    """The built-in integrations, and those the flags turn on: the gang schedulers served
    (``--gang-scheduling``) and Kueue (``--kueue``)."""
    kueue: tuple[Integration, ...] = (KueueWorkload(),) if config.kueue else ()
    return (*BUILT_IN, *gang_integrations(config.gang_scheduling), *kueue)
