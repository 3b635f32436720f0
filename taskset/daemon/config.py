"""The daemon's configuration: flags, environment variables and a YAML file, merged into one ``Config``.

**Precedence: flags > environment > config file > defaults**, per setting. This departs on purpose from
the original controller (spec 9.1), which read *either* the file named by ``--config`` *or* the
environment, never both: merging lets a deployment keep a shared file and override one value with an
env var or a flag, and every setting the original accepted still means the same thing.

Names: the original's file keys (``workerAmount``, ``k8sApiServer``, ``k8sConfigFile``,
``cacheCreationTimeoutSec``, and ``controllerName``, which is ignored as it was) and env vars
(``WorkerAmount``, ``K8sAPIServer``, ``K8sConfigFile``, ``CacheCreationTimeoutSec``) are kept byte for
byte; settings the original did not have use ``TASKSET_<UPPER_SNAKE>`` env vars and camelCase file keys.
``SETTINGS`` below is the full table; ``--help`` prints it.

Decisions, each the original's behaviour unless it crashed:

* Flags take any number of leading dashes (``-config``, ``--config``), as the original allowed.
* A missing file key, a key set to null, and an empty env var all mean "not set here" (W-22: the
  original crashed on a missing key).
* ``workerAmount`` below 1 is replaced by 10, as the original did (spec S61), with a warning at startup.
* Unknown file keys are *warned about*, not fatal: the original ignored them, so existing files must keep
  loading, but a misspelt key silently falling back to its default is worth a line in the log.
* Any value that does not parse, and any other value out of range, stops startup with exit code 2 and a
  one-line message naming the setting and where it came from, e.g.
  ``invalid value 'ten' for WorkerAmount (env): must be an integer``.

``load_config`` is pure (argv, environment and the file reader are parameters), so every rule above is a
table-driven unit test.
"""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Final
from urllib.parse import urlsplit

from taskset.api.constants import DNS1123_LABEL_PATTERN
from taskset.daemon.config_file import ConfigError, read_config_file
from taskset.daemon.http import parse_bind_address
from taskset.daemon.leader import (
    DEFAULT_LEASE_DURATION,
    DEFAULT_LEASE_NAME,
    DEFAULT_RENEW_DEADLINE,
    DEFAULT_RETRY_PERIOD,
    Timings,
    timing_errors,
)
from taskset.daemon.values import mask_userinfo, show, show_default
from taskset.integrations.gang import parse_schedulers

__all__ = [
    "PROG",
    "SETTINGS",
    "Config",
    "ConfigError",
    "HelpRequested",
    "Setting",
    "load_config",
]

PROG: Final = "taskset-controller"
DEFAULT_WORKERS: Final = 10  # O's default, also what it used for values below 1
LOG_LEVELS: Final = ("debug", "info", "warning", "error")
SHARD_MODES: Final = ("auto", "off")
_LOG_LEVEL_ALIASES: Final = {"warn": "warning"}  # zap's spelling, which the original's users know


@dataclass(frozen=True, kw_only=True)
class Config:
    """Everything the daemon needs to start; see ``SETTINGS`` for the flag, env var and file key of each."""

    workers: int = DEFAULT_WORKERS
    """TaskSets reconciled in parallel (O: workerAmount)."""

    api_server: str = ""
    """API server URL; overrides the kubeconfig's server. Alone (no kubeconfig) it configures an
    unauthenticated client, e.g. for ``kubectl proxy``. "" = from the kubeconfig or in-cluster."""

    kubeconfig: str = ""
    """Kubeconfig path. With neither it nor ``api_server``: the in-cluster service account, falling back
    to ``$KUBECONFIG`` / ``~/.kube/config`` outside a cluster."""

    cache_creation_timeout: int = 300
    """Seconds a just-created ControlUnit or Pod may take to appear in the cache (spec 8.6)."""

    gang_scheduling: tuple[str, ...] = ()
    """Gang schedulers served for ``spec.gang`` (``taskset.integrations.gang``)."""

    kueue: bool = False
    """Queue labelled TaskSets through Kueue (``taskset.integrations.kueue``)."""

    stuck_terminating_after: float = 300.0
    """Seconds a Pod of a TaskSet may stay after its deletion time (grace period included) before the
    TaskSet's ``PodsStuckTerminating`` condition and a Warning event name it and what holds it."""

    watch_nodes: bool = True
    """Watch Nodes (their Ready condition and health taints only) to name the replicas waiting on a lost
    node and act on ``spec.nodeLossPolicy``; needs get/list/watch on Nodes, which a namespaced install
    (a Role) cannot grant, so the namespaced overlay turns it off."""

    namespace: str = ""
    """The one namespace to watch; "" = all namespaces, as O does."""

    qps: float = 0.0
    """Client-side limit on the reconciler's requests per second to the API server; 0 = unlimited, the
    default: the API server's priority and fairness protects it, as SIG API Machinery
    recommends and controller-runtime does by default; a limit of 50 halved the Pods created per second
    (bench/README.md). The informers' lists and watches are never limited (a handful of long-lived
    requests)."""

    burst: int = 100
    """Requests that may exceed ``qps`` momentarily (token-bucket size); unused while ``qps`` is 0."""

    metrics_bind_address: str = ":8080"
    """Where ``/metrics`` is served: ``:port``, ``host:port`` (port 0: a free port the kernel picks),
    or ``0`` to disable."""

    metrics_secure: bool = True
    """``/metrics`` over HTTPS, for bearer tokens the API server authenticates (TokenReview) and allows
    to get ``/metrics`` (SubjectAccessReview); false = plain HTTP without authentication."""

    metrics_cert_dir: str = ""
    """Directory with ``tls.crt`` and ``tls.key`` for ``/metrics``; "" = a self-signed one made at start."""

    health_probe_bind_address: str = ":8081"
    """Where ``/healthz`` and ``/readyz`` are served; same forms as the metrics address."""

    log_level: str = "info"
    """Lowest level written: debug, info, warning or error."""

    register_crd: bool = True
    """Create or update the TaskSet CRD at startup, as O does; off when a manifest or chart installs it."""

    shutdown_grace_period: float = 30.0
    """Seconds in-flight reconciles get to finish after the first SIGTERM/SIGINT."""

    leader_elect: bool = False
    """Run workers only while holding a Lease, so that several replicas can run (``taskset.daemon.leader``).
    Off by default, for a single local process; the Deployment turns it on."""

    leader_elect_lease_duration: float = DEFAULT_LEASE_DURATION
    """Seconds a standby waits, after the last renewal it saw, before it takes the lease over."""

    leader_elect_renew_deadline: float = DEFAULT_RENEW_DEADLINE
    """Seconds the leader keeps retrying a failed renewal before it gives up leading (and exits)."""

    leader_elect_retry_period: float = DEFAULT_RETRY_PERIOD
    """Seconds between attempts to acquire or renew the lease."""

    leader_elect_namespace: str = ""
    """Namespace of the Lease; "" = the pod's own namespace (from its service account), else ``default``."""

    leader_elect_id: str = DEFAULT_LEASE_NAME
    """Name of the Lease; replicas with the same namespace and name elect one leader among them."""

    shards: str = "off"
    """``auto``: every replica works on its share of the namespaces (``taskset.daemon.buckets``), using the
    leader election's Lease name, namespace and timings; ``off``: one process does all, as before."""

    proof_key_secret: str = "taskset-controller-proof"
    """Name of the Secret holding the key of the Pods' creation proofs, in the Lease's namespace (created
    with a random key if missing; ``taskset.daemon.proof_key``)."""

    config_file: str = ""
    """The YAML file the settings were read from, if any (for the startup log)."""

    warnings: tuple[str, ...] = ()
    """Problems tolerated while loading (e.g. an unknown file key), to be logged once logging is up."""

    sources: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)
    """For each setting not at its default, where its value came from: ``flag``, ``env`` or ``file``."""

    def summary(self) -> dict[str, Any]:
        """The settings for the startup log: no credentials (a URL's user:password is masked)."""
        shown: dict[str, Any] = {
            f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("warnings", "sources")
        }
        shown["api_server"] = mask_userinfo(self.api_server)
        shown["sources"] = dict(self.sources)
        return shown


class HelpRequested(Exception):  # noqa: N818  (not an error: the caller prints ``text`` and exits 0)
    """``-h``/``--help`` was given; ``text`` is the help to print."""

    def __init__(self, text: str) -> None:
        super().__init__("help requested")
        self.text = text


# ----- value parsers: raw value (str from flags/env, any YAML scalar from the file) -> typed value -------
class _ParseError(ValueError):
    """A value that does not parse; the message is the reason, without the setting's name."""


def _integer(raw: object) -> int:
    if isinstance(raw, bool):  # YAML `true` is an int subclass in Python, never a count
        raise _ParseError("must be an integer")
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str):
        try:
            return int(raw.strip())
        except ValueError:
            pass
    raise _ParseError("must be an integer")


def _number(raw: object) -> float:
    if isinstance(raw, bool):
        raise _ParseError("must be a number")
    if isinstance(raw, int | float):
        value = float(raw)
    elif isinstance(raw, str):
        try:
            value = float(raw.strip())
        except ValueError:
            raise _ParseError("must be a number") from None
    else:
        raise _ParseError("must be a number")
    if not math.isfinite(value):
        raise _ParseError("must be a finite number")
    return value


def _string(raw: object) -> str:
    if isinstance(raw, str):
        return raw.strip()
    if isinstance(raw, bool | int | float):  # YAML scalars that were meant as text
        return str(raw)
    raise _ParseError("must be a string")


_TRUE: Final = frozenset({"true", "t", "1", "yes", "y", "on"})
_FALSE: Final = frozenset({"false", "f", "0", "no", "n", "off"})


def _boolean(raw: object) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str):
        word = raw.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    raise _ParseError("must be true or false")


def _workers(raw: object) -> int:
    return _integer(raw)  # values below 1 are replaced by the default later, with a warning


def _positive_integer(raw: object) -> int:
    value = _integer(raw)
    if value < 1:
        raise _ParseError("must be a positive integer")
    return value


def _non_negative_number(raw: object) -> float:
    value = _number(raw)
    if value < 0:
        raise _ParseError("must not be negative")
    return value


_NAMESPACE_RE: Final = re.compile(DNS1123_LABEL_PATTERN)


def _namespace(raw: object) -> str:
    value = _string(raw)
    if value and (len(value) > 63 or not _NAMESPACE_RE.match(value)):
        raise _ParseError("must be a namespace name (a DNS-1123 label) or empty for all namespaces")
    return value


# Go's time.ParseDuration units that make sense here (kube components take --leader-elect-* as durations).
_DURATION_UNITS: Final = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_RE: Final = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h)")


def _duration(raw: object) -> float:
    """Seconds: a number (``15``, ``0.5``) or a Go duration (``15s``, ``1m30s``, ``500ms``); above zero."""
    text = raw.strip() if isinstance(raw, str) else ""
    if text and text[-1].isalpha():
        parts = _DURATION_RE.findall(text)
        if not parts or "".join(number + unit for number, unit in parts) != text:
            raise _ParseError("must be a number of seconds or a duration such as 15s, 1m or 500ms")
        value = sum(float(number) * _DURATION_UNITS[unit] for number, unit in parts)
    else:
        try:
            value = _number(raw)
        except _ParseError:
            raise _ParseError("must be a number of seconds or a duration such as 15s, 1m or 500ms") from None
    if value <= 0:
        raise _ParseError("must be greater than zero")
    return value


_SUBDOMAIN_RE: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _object_name(raw: object) -> str:
    value = _string(raw)
    if not value or len(value) > 253 or not _SUBDOMAIN_RE.match(value):
        raise _ParseError("must be an object name (a DNS-1123 subdomain, e.g. taskset-controller)")
    return value


def _bind_address(raw: object) -> str:
    value = _string(raw)
    try:
        parse_bind_address(value)
    except ValueError as err:
        raise _ParseError(str(err)) from None
    return value


def _log_level(raw: object) -> str:
    value = _string(raw).lower()
    value = _LOG_LEVEL_ALIASES.get(value, value)
    if value not in LOG_LEVELS:
        raise _ParseError(f"must be one of {', '.join(LOG_LEVELS)}")
    return value


def _shards(raw: object) -> str:
    value = _string(raw).lower()
    if value not in SHARD_MODES:
        raise _ParseError(f"must be one of {', '.join(SHARD_MODES)}")
    return value


def _url(raw: object) -> str:
    value = _string(raw)
    if value and not urlsplit(value).netloc:
        raise _ParseError("must be a URL such as https://10.0.0.1:6443")
    return value


# ----- the settings table -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Setting:
    field: str  # attribute of Config
    flag: str  # long flag, with two dashes
    env: str  # environment variable, exact case
    key: str  # config file key
    parse: Callable[[object], Any]
    metavar: str
    help: str


def _env(name: str) -> str:
    return f"TASKSET_{name}"


SETTINGS: Final[tuple[Setting, ...]] = (
    Setting("workers", "--workers", "WorkerAmount", "workerAmount", _workers, "N",
            "TaskSets reconciled in parallel; values below 1 mean 10, as in the original"),
    Setting("api_server", "--api-server", "K8sAPIServer", "k8sApiServer", _url, "URL",
            "API server URL; overrides the kubeconfig's server"),
    Setting("kubeconfig", "--kubeconfig", "K8sConfigFile", "k8sConfigFile", _string, "PATH",
            "kubeconfig file; without it and --api-server: in-cluster, else $KUBECONFIG or ~/.kube/config"),
    Setting("cache_creation_timeout", "--cache-creation-timeout", "CacheCreationTimeoutSec",
            "cacheCreationTimeoutSec", _positive_integer, "SECONDS",
            "how long a created ControlUnit or Pod may take to appear in the cache"),
    Setting("stuck_terminating_after", "--stuck-terminating-after", _env("STUCK_TERMINATING_AFTER"),
            "stuckTerminatingAfterSec", _non_negative_number, "SECONDS",
            "how long a Pod may stay terminating past its deletion time before the TaskSet warns about it"),
    Setting("gang_scheduling", "--gang-scheduling", _env("GANG_SCHEDULING"), "gangScheduling",
            parse_schedulers, "LIST", "gang schedulers served for spec.gang: coscheduling, volcano"),
    Setting("kueue", "--kueue", _env("KUEUE"), "kueue", _boolean, "BOOL",
            "queue TaskSets labelled kueue.x-k8s.io/queue-name through Kueue (needs Kueue's CRDs)"),
    Setting("watch_nodes", "--watch-nodes", _env("WATCH_NODES"), "watchNodes", _boolean, "BOOL",
            "watch Nodes to report replicas on lost nodes and serve spec.nodeLossPolicy (needs nodes: "
            "get, list, watch)"),
    Setting("namespace", "--namespace", _env("NAMESPACE"), "namespace", _namespace, "NAME",
            "watch only this namespace; empty = all namespaces"),
    Setting("qps", "--qps", _env("QPS"), "qps", _non_negative_number, "N",
            "client-side limit on the reconciler's requests per second; 0 = unlimited (the API server's "
            "priority and fairness protects it)"),
    Setting("burst", "--burst", _env("BURST"), "burst", _positive_integer, "N",
            "requests allowed above --qps in a burst"),
    Setting("metrics_bind_address", "--metrics-bind-address", _env("METRICS_BIND_ADDRESS"),
            "metricsBindAddress", _bind_address, "ADDR",
            "serve /metrics here (:port, host:port; port 0: any free one); 0 = off"),
    Setting("metrics_secure", "--metrics-secure", _env("METRICS_SECURE"), "metricsSecure", _boolean, "BOOL",
            "/metrics over HTTPS for callers allowed to get it (TokenReview, SubjectAccessReview); "
            "false = plain HTTP, no authentication"),
    Setting("metrics_cert_dir", "--metrics-cert-dir", _env("METRICS_CERT_DIR"), "metricsCertDir", _string,
            "DIR", "directory with tls.crt and tls.key for /metrics; empty = self-signed, made at start"),
    Setting("health_probe_bind_address", "--health-probe-bind-address", _env("HEALTH_PROBE_BIND_ADDRESS"),
            "healthProbeBindAddress", _bind_address, "ADDR", "serve /healthz and /readyz here; 0 = off"),
    Setting("log_level", "--log-level", _env("LOG_LEVEL"), "logLevel", _log_level, "LEVEL",
            "debug, info, warning or error"),
    Setting("register_crd", "--register-crd", _env("REGISTER_CRD"), "registerCRD", _boolean, "BOOL",
            "create or update the TaskSet CRD at startup (--register-crd=false to skip)"),
    Setting("shutdown_grace_period", "--shutdown-grace-period", _env("SHUTDOWN_GRACE_PERIOD"),
            "shutdownGracePeriodSec", _non_negative_number, "SECONDS",
            "time in-flight reconciles get to finish after SIGTERM"),
    Setting("leader_elect", "--leader-elect", _env("LEADER_ELECT"), "leaderElect", _boolean, "BOOL",
            "run workers only while holding a Lease, so that several replicas can run"),
    Setting("leader_elect_lease_duration", "--leader-elect-lease-duration",
            _env("LEADER_ELECT_LEASE_DURATION"), "leaderElectLeaseDurationSec", _duration, "DURATION",
            "how long a standby waits after the leader's last renewal before taking over (seconds or 15s)"),
    Setting("leader_elect_renew_deadline", "--leader-elect-renew-deadline",
            _env("LEADER_ELECT_RENEW_DEADLINE"), "leaderElectRenewDeadlineSec", _duration, "DURATION",
            "how long the leader retries a failed renewal before it stops leading and exits"),
    Setting("leader_elect_retry_period", "--leader-elect-retry-period", _env("LEADER_ELECT_RETRY_PERIOD"),
            "leaderElectRetryPeriodSec", _duration, "DURATION",
            "time between attempts to acquire or renew the lease"),
    Setting("leader_elect_namespace", "--leader-elect-namespace", _env("LEADER_ELECT_NAMESPACE"),
            "leaderElectNamespace", _namespace, "NAME",
            "namespace of the Lease; empty = the pod's namespace (service account), else default"),
    Setting("leader_elect_id", "--leader-elect-id", _env("LEADER_ELECT_ID"), "leaderElectID", _object_name,
            "NAME", "name of the Lease the replicas compete for"),
    Setting("shards", "--shards", _env("SHARDS"), "shards", _shards, "MODE",
            "auto = every replica works on its share of the namespaces (bucket Leases); off = one does all"),
    Setting("proof_key_secret", "--proof-key-secret", _env("PROOF_KEY_SECRET"), "proofKeySecret",
            _object_name, "NAME",
            "Secret (in the Lease's namespace) with the key of the Pods' creation proofs; made if missing"),
)  # fmt: skip

_CONFIG_FLAG: Final = "--config"
_HELP_FLAG: Final = "--help"
_LONG_FLAGS: Final = frozenset({s.flag[2:] for s in SETTINGS} | {_CONFIG_FLAG[2:], _HELP_FLAG[2:]})
_DASHED_FLAG_RE: Final = re.compile(r"^-+([A-Za-z][A-Za-z0-9-]*)(=.*)?$", re.DOTALL)

_EPILOG: Final = """\
Precedence, per setting: flags > environment > config file (--config) > defaults.
This departs from the original controller, which read either the config file or the environment,
never both. Flags take any number of leading dashes (-config works). Unknown config file keys are
logged as warnings; controllerName is accepted and ignored. Invalid values stop startup with exit
code 2 and a one-line message naming the setting and its source.
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would print usage and exit; we want one line
        raise ConfigError(message)


def _parser() -> _Parser:
    parser = _Parser(
        prog=PROG,
        add_help=False,
        allow_abbrev=False,
        description="Kubernetes controller for TaskSet jobs (octopus.openi.pcl.cn/v1alpha1).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-h", _HELP_FLAG, action="store_true", default=argparse.SUPPRESS, help="show this help"
    )
    parser.add_argument(
        _CONFIG_FLAG, dest="config", metavar="PATH", default=argparse.SUPPRESS, help="YAML config file"
    )
    defaults = Config()
    for s in SETTINGS:
        extra: dict[str, Any] = {"nargs": "?", "const": "true"} if s.parse is _boolean else {}
        parser.add_argument(
            s.flag,
            dest=s.field,
            metavar=s.metavar,
            default=argparse.SUPPRESS,
            help=_flag_help(s, getattr(defaults, s.field)),
            **extra,
        )
    return parser


def _flag_help(s: Setting, default: object) -> str:
    return f"{s.help} [env {s.env}, file key {s.key}, default {show_default(default)}]"


def help_text() -> str:
    return _parser().format_help()


# ----- loading ------------------------------------------------------------------------------------------
def load_config(argv: Sequence[str], environ: Mapping[str, str], read_file: Callable[[str], str]) -> Config:
    """Merge flags, environment and the ``--config`` file (read with ``read_file``) over the defaults.

    Raises ``ConfigError`` with a one-line message, or ``HelpRequested`` for ``-h``/``--help``.
    """
    parsed = vars(_parser().parse_args(_normalize_flags(argv)))
    if parsed.pop("help", False):
        raise HelpRequested(help_text())
    config_file: str = parsed.pop("config", "")
    warnings: list[str] = []
    known = {s.key for s in SETTINGS}
    file_values = read_config_file(config_file, read_file, known, warnings) if config_file else {}

    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for s in SETTINGS:
        raw, name, source = _pick(s, parsed, environ, file_values, config_file)
        if source is None:
            continue
        try:
            values[s.field] = s.parse(raw)
        except ValueError as err:  # a _ParseError, or an integration's parser's
            raise ConfigError(f"invalid value '{show(raw)}' for {name} ({source}): {err}") from None
        sources[s.field] = source.split(" ", 1)[0]
        if s.field == "workers" and values["workers"] < 1:
            warnings.append(
                f"{name} ({source}) is {values['workers']}; using {DEFAULT_WORKERS} workers, as the original"
            )
            values["workers"] = DEFAULT_WORKERS
    config = Config(**values, config_file=config_file, warnings=tuple(warnings), sources=sources)
    if config.metrics_secure and _same_port(config.metrics_bind_address, config.health_probe_bind_address):
        raise ConfigError("with --metrics-secure, /metrics needs its own address: probes stay plain HTTP")
    if config.shards == "auto" and config.leader_elect:
        raise ConfigError("--shards auto runs every replica's workers, so it replaces --leader-elect")
    if config.leader_elect or config.shards == "auto":
        timings = Timings(
            config.leader_elect_lease_duration,
            config.leader_elect_renew_deadline,
            config.leader_elect_retry_period,
        )
        errors = timing_errors(timings)
        if errors:
            raise ConfigError(f"invalid leader election timings: {'; '.join(errors)}")
    return config


def _same_port(metrics: str, probes: str) -> bool:
    """Whether the two addresses would bind one port: the same string naming a fixed port. Port 0
    asks the kernel for a free port each time it binds, and two such ports never collide."""
    address = parse_bind_address(metrics)
    return metrics == probes and address is not None and address.port != 0


def _pick(
    s: Setting,
    flags: Mapping[str, Any],
    environ: Mapping[str, str],
    file_values: Mapping[str, Any],
    path: str,
) -> tuple[object, str, str | None]:
    """The winning raw value of one setting, the name it was given under, and its source (None: default)."""
    if s.field in flags:
        return flags[s.field], s.flag, "flag"
    env_value = environ.get(s.env, "")
    if env_value != "":  # an empty variable is "not set", as templated manifests often render them
        return env_value, s.env, "env"
    file_value = file_values.get(s.key)
    if file_value is not None:  # a key with no value is "not set" too
        return file_value, s.key, f"file {path}"
    return None, "", None


def _normalize_flags(argv: Sequence[str]) -> list[str]:
    """``-config x`` / ``---config=x`` → ``--config x`` / ``--config=x`` for every known long flag."""
    out: list[str] = []
    for index, arg in enumerate(argv):
        if arg == "--":  # everything after is positional, which we do not take: let argparse say so
            out.extend(argv[index:])
            break
        match = _DASHED_FLAG_RE.match(arg)
        if match and match.group(1) in _LONG_FLAGS:
            out.append(f"--{match.group(1)}{match.group(2) or ''}")
        else:
            out.append(arg)
    return out
