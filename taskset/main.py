"""The daemon: configuration, logging, the Kubernetes client, HTTP endpoints, the CRD, the controller.

Startup (spec 9.2): load the configuration (exit 2 with a one-line message if it is unusable), set up
JSON logging, build the client, serve ``/metrics``, ``/healthz`` and ``/readyz``, register the CRD unless
told not to, build and start the controller. ``/readyz`` turns 200 once the controller's caches have
synced, and back to 503 when shutdown begins.

Shutdown: the first SIGTERM or SIGINT stops the controller gracefully: no new keys, in-flight reconciles
get ``--shutdown-grace-period`` seconds to finish, then the informers stop, and the process exits 0 (or 1
if the controller did not stop in time). A second signal exits 1 at once. A signal during startup (for
example while waiting for the CRD) ends it promptly with exit code 0.

Exit codes: 0 clean stop (and ``--help``), 1 startup failure or forced exit, 2 configuration error.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Protocol

from taskset.config import PROG, Config, ConfigError, HelpRequested, load_config
from taskset.constants import CRD_NAME
from taskset.crd import CRDRegistrationError, ensure_crd
from taskset.http import ObservabilityServer, parse_bind_address
from taskset.kube import ApiClient, KubeClient, build_api_client
from taskset.logs import configure_logging, get_logger
from taskset.metrics import new_registry

__all__ = ["CRD_MANIFEST", "EXIT_CONFIG", "EXIT_FAILURE", "EXIT_OK", "main"]

EXIT_OK: Final = 0
EXIT_FAILURE: Final = 1
EXIT_CONFIG: Final = 2  # the usual code for a usage error (argparse, Go's flag package)

CRD_MANIFEST: Final = Path(__file__).resolve().parents[1] / "manifests" / "crd" / f"{CRD_NAME}.yaml"
# Connections beyond one per worker: three informer watches, the event recorder, and a spare or two.
# Fewer than the threads using the client and urllib3 discards and reopens connections (pool full).
EXTRA_CONNECTIONS: Final = 8
# Seconds beyond the grace period that the controller's stop() may take before we give up on it.
STOP_SLACK: Final = 5.0
# Seconds between checks of the stop flag in the main thread; signals wake it sooner anyway.
WAIT_SLICE: Final = 1.0


class Controller(Protocol):
    """What ``taskset.controller.build_controller`` returns."""

    def start(self) -> None:
        """Start informers and workers without blocking."""

    def has_synced(self) -> bool: ...

    def stop(self, timeout: float) -> None:
        """Stop taking keys, let in-flight reconciles finish within ``timeout`` seconds, stop informers."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the controller until a signal stops it; returns the process exit code."""
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


class _Daemon:
    def __init__(self, config: Config) -> None:
        self._config = config
        self._log = get_logger()
        self._controller: Controller | None = None
        self._signals = _Signals(self._log)

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
                pool_size=config.workers + EXTRA_CONNECTIONS,
            )
        except (OSError, ValueError) as err:
            log.error("cannot configure the Kubernetes client", error=str(err))
            return EXIT_FAILURE
        log.info("Kubernetes client configured", host=api_client.configuration.host, credentials=source)
        try:
            server = ObservabilityServer(
                metrics_address=parse_bind_address(config.metrics_bind_address),
                probe_address=parse_bind_address(config.health_probe_bind_address),
                registry=registry,
                ready=self._ready,
                not_ready_reason=self._not_ready_reason,
            )
        except OSError as err:
            log.error("cannot bind the HTTP endpoints", error=str(err))
            api_client.close()  # type: ignore[no-untyped-call]
            return EXIT_FAILURE
        self._signals.install()
        server.start()
        log.info("serving HTTP endpoints", metrics_port=server.metrics_port, probe_port=server.probe_port)
        try:
            return self._run_controller(api_client, registry)
        finally:
            server.stop()
            self._signals.restore()
            api_client.close()  # type: ignore[no-untyped-call]
            log.info("TaskSet controller stopped")

    def _run_controller(self, api_client: ApiClient, registry: Any) -> int:
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
        from taskset.controller import build_controller  # noqa: PLC0415  (keeps --help and config errors fast)

        try:
            controller: Controller = build_controller(
                config=config, api_client=api_client, registry=registry, logger=log
            )
            controller.start()
        except Exception as err:
            log.exception("cannot start the controller", error=str(err))
            return EXIT_FAILURE
        self._controller = controller
        log.info("controller started, waiting for caches to sync", workers=config.workers)
        while not self._signals.stop.wait(WAIT_SLICE):
            pass
        return self._shutdown(controller)

    def _shutdown(self, controller: Controller) -> int:
        grace = self._config.shutdown_grace_period
        self._log.info("shutting down", signal=self._signals.received, grace_period=grace)
        stopper = threading.Thread(target=controller.stop, args=(grace,), name="controller-stop", daemon=True)
        stopper.start()
        stopper.join(grace + STOP_SLACK)
        if stopper.is_alive():
            self._log.error("controller did not stop within the grace period", grace_period=grace)
            return EXIT_FAILURE
        return EXIT_OK

    def _ready(self) -> bool:
        controller = self._controller
        return controller is not None and not self._signals.stop.is_set() and controller.has_synced()

    def _not_ready_reason(self) -> str:
        if self._signals.stop.is_set():
            return "shutting down"
        if self._controller is None:
            return "starting: controller not built yet"
        return "caches not synced yet"


if __name__ == "__main__":
    sys.exit(main())
