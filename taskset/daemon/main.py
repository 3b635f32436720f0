"""The daemon: configuration, logging, the Kubernetes client, HTTP endpoints, the CRD, the controller.

Startup (spec 9.2): load the configuration (exit 2 with a one-line message if it is unusable), set up
JSON logging, build the client, serve ``/metrics``, ``/healthz`` and ``/readyz``, register the CRD unless
told not to, build and start the controller. ``/readyz`` turns 200 once the controller's caches have
synced, and back to 503 when shutdown begins.

Shutdown: the first SIGTERM or SIGINT stops the controller gracefully: no new keys, in-flight reconciles
get ``--shutdown-grace-period`` seconds to finish, then the informers stop, and the process exits 0 (or 1
if the controller did not stop in time). A second signal exits 1 at once. A signal during startup (for
example while waiting for the CRD) ends it promptly with exit code 0.

Leader election (``--leader-elect``, ``taskset.daemon.leader``): every replica registers the CRD (idempotent),
starts its informers and so keeps warm caches; only the replica holding the Lease starts the workers, so
no reconcile runs before the lease is held. Readiness is the same for leader and standby, as in
controller-runtime: caches synced. (Tying it to leadership would keep a standby out of the metrics
Service and stall a rolling update, whose new pods could never become Ready while the old leader runs.)
``/healthz`` fails if the leader has not renewed for lease duration + 20 s (a stuck renew loop). On
SIGTERM a standby stops competing at once; a leader keeps renewing while its workers drain, then releases
the Lease, so a standby takes over at its next retry instead of waiting out the lease. Losing the lease
(no renewal within the renew deadline, or another holder seen) ends the process at once with exit code 3,
without draining: another replica may already be leading, and the Deployment restarts this one.

Exit codes: 0 clean stop (and ``--help``), 1 startup failure or forced exit, 2 configuration error,
3 leader election lost.
"""

from __future__ import annotations

import gc
import os
import signal
import ssl
import sys
import threading
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Protocol, cast

from informers.sharding import ShardView
from informers.shards import Buckets
from taskset.api.constants import CRD_NAME
from taskset.daemon.allocator import bound_arenas
from taskset.daemon.buckets import LEASE_WRITES_IN_FLIGHT, BucketElector
from taskset.daemon.config import PROG, Config, ConfigError, HelpRequested, load_config
from taskset.daemon.crd import CRDRegistrationError, ensure_crd
from taskset.daemon.http import ObservabilityServer, parse_bind_address
from taskset.daemon.leader import LeaderElector, Timings, new_identity, own_namespace
from taskset.daemon.logs import configure_logging, get_logger
from taskset.daemon.metrics import ControllerMetrics, new_registry
from taskset.daemon.metrics_auth import MetricsAuthorizer
from taskset.daemon.proof_key import ProofKeyError
from taskset.daemon.tls import server_context
from taskset.runtime import events
from taskset.runtime.controller import pod_action_threads
from taskset.runtime.kube import KubeClient, Transport, build_api_client

__all__ = ["CRD_MANIFEST", "EXIT_CONFIG", "EXIT_FAILURE", "EXIT_LEADERSHIP_LOST", "EXIT_OK", "main"]

# The collector's thresholds once the heap is frozen (Python's defaults: 700, 10, 10): bench/README.md,
# "The strangers' cost", has the informer path at 10,100 events/s with the defaults and 24,300 with these.
GC_THRESHOLDS: Final = (50_000, 20, 20)
EXIT_OK: Final = 0
EXIT_FAILURE: Final = 1
EXIT_CONFIG: Final = 2  # the usual code for a usage error (argparse, Go's flag package)
EXIT_LEADERSHIP_LOST: Final = 3  # the lease was lost: stop at once and let the Deployment restart us

CRD_MANIFEST: Final = Path(__file__).resolve().parents[2] / "manifests" / "crd" / f"{CRD_NAME}.yaml"
# Connections beyond one per worker and one per pod-action thread (``config.pod_action_threads``):
# three informer watches, the event senders, the leader elector, the bucket Lease writes of a sharded
# replica (sent together: ``taskset.daemon.buckets``) and two spares. Fewer
# than the threads using the client and urllib3 discards connections and opens new ones (a TLS handshake
# each): with one per worker plus 8 a burst logged "Connection pool is full".
EXTRA_CONNECTIONS: Final = 3 + events.SENDERS + 1 + LEASE_WRITES_IN_FLIGHT + 2
# Seconds beyond the grace period that the controller's stop() may take before we give up on it.
STOP_SLACK: Final = 5.0
# Seconds between checks of the stop flag in the main thread; signals wake it sooner anyway.
WAIT_SLICE: Final = 1.0
# Seconds past the lease duration without a renewal before /healthz fails (client-go's HealthzAdaptor).
LEADER_HEALTH_TOLERANCE: Final = 20.0


class Controller(Protocol):
    """What ``taskset.daemon.wiring.build_controller`` returns."""

    def start(self) -> None:
        """Start informers and workers without blocking."""

    def has_synced(self) -> bool:
        """Whether every cache has synced."""

    def stop(self, timeout: float) -> None:
        """Stop taking keys, let in-flight reconciles finish within ``timeout`` seconds, stop informers."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the controller until a signal stops it; returns the process exit code."""
    bound_arenas()  # before any thread: each would take an arena of its own (taskset.daemon.allocator)
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        config = load_config(args, os.environ, _read_text)
    except HelpRequested as help_request:
        print(help_request.text, end="")
        return EXIT_OK
    except ConfigError as err:
        print(f"{PROG}: {err}", file=sys.stderr)
        return EXIT_CONFIG
    configure_logging(config.log_level)
    return _Daemon(config).run()


def _read_text(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


class _Signals:
    """The first SIGTERM/SIGINT sets ``stop``; a second one ends the process at once with exit code 1."""

    def __init__(self, log: Any) -> None:
        self.stop: Final = threading.Event()
        self.received = ""  # name of the first signal; written only by the handler
        self._log = log
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            self._previous[sig] = signal.signal(sig, self._handle)

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def _handle(self, signum: int, frame: types.FrameType | None) -> None:
        name = signal.Signals(signum).name
        if not self.stop.is_set():
            self.received = name
            self.stop.set()  # the main thread logs and stops; a handler must not block
            return
        try:  # the main thread may be inside a write to the same stream: best effort only
            self._log.error("second signal, exiting immediately", signal=name)
            sys.stdout.flush()
        except Exception:
            pass
        os._exit(EXIT_FAILURE)


class StandbyController(Controller, Protocol):
    """A controller that can start its informers and its workers separately (leader election)."""

    def start(self, *, workers: bool = True) -> None: ...

    def start_workers(self) -> None: ...


class _Daemon:
    def __init__(self, config: Config) -> None:
        self._config = config
        self._log = get_logger()
        self._controller: Controller | None = None
        self._signals = _Signals(self._log)
        self._elector: LeaderElector | None = None
        self._buckets: BucketElector | None = None
        self._stop_buckets = threading.Event()  # set once the workers have drained, on shutdown
        self._stop_renewing = threading.Event()  # set once the workers have drained, on shutdown

    def run(self) -> int:
        config, log = self._config, self._log
        log.info("TaskSet controller starting", **config.summary())
        for warning in config.warnings:
            log.warning(warning)
        registry = new_registry()
        try:
            api_client, source = build_api_client(
                kubeconfig=config.kubeconfig,
                api_server=config.api_server,
                pool_size=config.workers + pod_action_threads(config.workers) + EXTRA_CONNECTIONS,
            )
        except (OSError, ValueError) as err:
            log.error("cannot configure the Kubernetes client", error=str(err))
            return EXIT_FAILURE
        log.info("Kubernetes client configured", host=api_client.host, credentials=source)
        metrics_address = parse_bind_address(config.metrics_bind_address)
        secure = config.metrics_secure and metrics_address is not None
        try:
            tls = server_context(config.metrics_cert_dir) if secure else None
        except (OSError, ssl.SSLError) as err:
            where = config.metrics_cert_dir or "a self-signed certificate"
            log.error("cannot set up TLS for /metrics", cert_dir=where, error=str(err))
            api_client.close()
            return EXIT_FAILURE
        guard = MetricsAuthorizer(KubeClient(api_client), on_error=log.warning).decide if secure else None
        try:
            server = ObservabilityServer(
                metrics_address=metrics_address,
                probe_address=parse_bind_address(config.health_probe_bind_address),
                registry=registry,
                ready=self._ready,
                not_ready_reason=self._not_ready_reason,
                healthy=self._healthy,
                metrics_tls=tls,
                metrics_guard=guard,
            )
        except OSError as err:
            log.error("cannot bind the HTTP endpoints", error=str(err))
            api_client.close()
            return EXIT_FAILURE
        self._signals.install()
        server.start()
        log.info(
            "serving HTTP endpoints",
            metrics_port=server.metrics_port,
            metrics_scheme="https" if secure else "http",
            metrics_cert=(config.metrics_cert_dir or "self-signed") if secure else None,
            probe_port=server.probe_port,
        )
        try:
            return self._run_controller(api_client, registry)
        finally:
            server.stop()
            self._signals.restore()
            api_client.close()
            log.info("TaskSet controller stopped")

    def _run_controller(self, api_client: Transport, registry: Any) -> int:
        config, log = self._config, self._log
        if config.register_crd:
            try:
                action = ensure_crd(KubeClient(api_client), CRD_MANIFEST, interrupt=self._signals.stop)
            except CRDRegistrationError as err:
                if self._signals.stop.is_set():
                    log.info("stopped during startup", signal=self._signals.received)
                    return EXIT_OK
                log.error("CRD registration failed", error=str(err))
                return EXIT_FAILURE
            log.info("CRD registered", crd=CRD_NAME, action=action)
        from taskset.daemon.wiring import build_controller  # noqa: PLC0415  (keeps --help and config errors fast)

        metrics = ControllerMetrics(registry=registry, workers=config.workers)
        if config.leader_elect:
            self._elector = self._new_elector(api_client, metrics)
        if config.shards == "auto":
            self._buckets = self._new_buckets(api_client, metrics)
        try:
            controller: Controller = build_controller(
                config=config,
                api_client=api_client,
                registry=registry,
                logger=log,
                metrics=metrics,
                shards=self._buckets,
            )
            if self._elector is None:
                controller.start()
            else:
                cast("StandbyController", controller).start(workers=False)
        except ProofKeyError as err:
            log.error("cannot load the key of the Pods' creation proofs", error=str(err))
            return EXIT_FAILURE
        except Exception as err:
            log.exception("cannot start the controller", error=str(err))
            return EXIT_FAILURE
        self._controller = controller
        lead: threading.Thread | None = None
        if self._buckets is not None:
            lead = threading.Thread(
                target=self._buckets.run, args=(self._stop_buckets,), name="shard-buckets", daemon=True
            )
            lead.start()
        if self._elector is not None:
            lead = threading.Thread(
                target=self._lead, args=(self._elector, controller), name="leader-election", daemon=True
            )
            lead.start()
            log.info("informers started, workers wait for the lease", lease=self._elector.description)
        else:
            log.info("controller started, waiting for caches to sync", workers=config.workers)
        frozen = False
        while not self._signals.stop.wait(WAIT_SLICE):
            if not frozen and controller.has_synced():
                frozen = _freeze_heap()
        return self._shutdown(controller, lead)

    def _new_elector(self, api_client: Transport, metrics: ControllerMetrics) -> LeaderElector:
        config = self._config
        namespace = own_namespace(config)
        elector = LeaderElector(
            # Its own client: no rate limit, so a busy reconciler never delays a renewal.
            client=KubeClient(api_client, observer=metrics.observe_request),
            namespace=namespace,
            name=config.leader_elect_id,
            identity=new_identity(),
            logger=self._log,
            timings=Timings(
                config.leader_elect_lease_duration,
                config.leader_elect_renew_deadline,
                config.leader_elect_retry_period,
            ),
            metrics=metrics,
        )
        metrics.set_leader(elector.name, False)
        self._log.info("leader election enabled", lease=elector.description, identity=elector.identity)
        return elector

    def _new_buckets(self, api_client: Transport, metrics: ControllerMetrics) -> BucketElector:
        config = self._config
        buckets = BucketElector(
            client=KubeClient(api_client, observer=metrics.observe_request),  # unthrottled, as the elector's
            namespace=own_namespace(config),
            ring=config.leader_elect_id,
            identity=new_identity(),
            view=ShardView(Buckets()),
            logger=self._log,
            timings=Timings(
                config.leader_elect_lease_duration,
                config.leader_elect_renew_deadline,
                config.leader_elect_retry_period,
            ),
        )
        self._log.info(
            "sharding enabled", ring=buckets.ring, identity=buckets.identity, buckets=Buckets().count
        )
        return buckets

    def _lead(self, elector: LeaderElector, controller: Controller) -> None:
        """The leader-election thread: acquire, start the workers, renew until shutdown or loss."""
        if not elector.acquire(self._signals.stop):
            return  # shutting down before we ever led
        if self._signals.stop.is_set():
            return  # acquired just as shutdown began: _shutdown releases it without starting anything
        workers = self._config.workers
        self._log.info("became leader, starting workers", lease=elector.description, workers=workers)
        cast("StandbyController", controller).start_workers()
        if elector.renew(self._stop_renewing):
            return
        self._log.error("leader election lost, exiting at once", lease=elector.description)
        try:
            sys.stdout.flush()
        finally:
            os._exit(EXIT_LEADERSHIP_LOST)

    def _shutdown(self, controller: Controller, lead: threading.Thread | None) -> int:
        grace = self._config.shutdown_grace_period
        self._log.info("shutting down", signal=self._signals.received, grace_period=grace)
        stopper = threading.Thread(target=controller.stop, args=(grace,), name="controller-stop", daemon=True)
        stopper.start()
        stopper.join(grace + STOP_SLACK)
        stopped = not stopper.is_alive()
        if not stopped:
            self._log.error("controller did not stop within the grace period", grace_period=grace)
        if self._buckets is not None and lead is not None and stopped:
            # The workers are done: free the buckets now (a worker still running keeps them until expiry).
            self._stop_buckets.set()
            lead.join(self._buckets.timings.renew_deadline * 2 + STOP_SLACK)
        elector = self._elector
        if elector is not None and lead is not None:
            self._stop_renewing.set()  # the workers are done: renewing may stop now
            lead.join(elector.timings.renew_deadline + STOP_SLACK)
            # A worker still running must stay covered by the lease: then let it expire instead.
            if stopped and not lead.is_alive():
                elector.release()
        return EXIT_OK if stopped else EXIT_FAILURE

    def _healthy(self) -> bool:
        elector = self._elector
        return elector is None or elector.healthy(LEADER_HEALTH_TOLERANCE)

    def _ready(self) -> bool:
        controller = self._controller
        return controller is not None and not self._signals.stop.is_set() and controller.has_synced()

    def _not_ready_reason(self) -> str:
        if self._signals.stop.is_set():
            return "shutting down"
        if self._controller is None:
            return "starting: controller not built yet"
        return "caches not synced yet"


def _freeze_heap() -> bool:
    """Move everything alive once the caches have synced (the listed objects, modules, the client) out of
    the collector's reach: they live as long as the process, and every full collection would otherwise
    walk them again; with a large cache those walks dominated event handling (bench/informers_bench).
    Then collect less often (``GC_THRESHOLDS``): a decoded watch event allocates hundreds of dicts and
    lists, which reference counting frees (JSON has no cycles), yet each 700 of them started a young
    collection, and every tenth of those an older one, over every Pod cached since the freeze."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    return True


if __name__ == "__main__":
    sys.exit(main())
