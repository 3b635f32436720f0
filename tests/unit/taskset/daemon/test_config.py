"""Configuration loading: precedence flags > env > file > defaults, the original's names, exact errors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from taskset.daemon.config import SETTINGS, Config, ConfigError, HelpRequested, load_config
from taskset.runtime.controller import pod_action_threads

FILE = "/etc/taskset/config.yaml"


def _reader(files: Mapping[str, str]) -> Any:
    def read(path: str) -> str:
        if path not in files:
            raise FileNotFoundError(2, "No such file or directory", path)
        return files[path]

    return read


def _load(
    argv: list[str] | None = None, env: Mapping[str, str] | None = None, file: str | None = None
) -> Config:
    files = {} if file is None else {FILE: file}
    return load_config(argv or [], env or {}, _reader(files))


@dataclass(frozen=True)
class Case:
    argv: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    file: str | None = None
    want: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)


PRECEDENCE = [
    pytest.param(
        Case(want={"workers": 10, "cache_creation_timeout": 300}), id="nothing set gives the defaults"
    ),
    pytest.param(
        Case(
            argv=["--config", FILE],
            file="workerAmount: 3\n",
            want={"workers": 3},
            sources={"workers": "file"},
        ),
        id="the file beats the default",
    ),
    pytest.param(
        Case(
            argv=["--config", FILE],
            env={"WorkerAmount": "4"},
            file="workerAmount: 3\n",
            want={"workers": 4},
            sources={"workers": "env"},
        ),
        id="the environment beats the file",
    ),
    pytest.param(
        Case(
            argv=["--config", FILE, "--workers", "5"],
            env={"WorkerAmount": "4"},
            file="workerAmount: 3\n",
            want={"workers": 5},
            sources={"workers": "flag"},
        ),
        id="a flag beats the environment and the file",
    ),
    pytest.param(
        Case(
            argv=["--config", FILE, "--cache-creation-timeout=60"],
            env={"CacheCreationTimeoutSec": "120"},
            file="cacheCreationTimeoutSec: 90\n",
            want={"cache_creation_timeout": 60},
        ),
        id="a flag beats env and file for the cache creation timeout too",
    ),
    pytest.param(
        Case(
            argv=["--config", FILE],
            env={"CacheCreationTimeoutSec": "120", "K8sAPIServer": "https://env:6443"},
            file=(
                "cacheCreationTimeoutSec: 90\n"
                "k8sApiServer: https://file:6443\n"
                "k8sConfigFile: /file/kubeconfig\n"
            ),
            want={
                "cache_creation_timeout": 120,
                "api_server": "https://env:6443",
                "kubeconfig": "/file/kubeconfig",
            },
        ),
        id="env and file mix, each setting from its best source",
    ),
    pytest.param(
        Case(
            argv=["--config", FILE, "--namespace", "flag-ns"],
            env={"TASKSET_NAMESPACE": "env-ns", "TASKSET_LOG_LEVEL": "DEBUG"},
            file="namespace: file-ns\nlogLevel: error\nqps: 5\n",
            want={"namespace": "flag-ns", "log_level": "debug", "qps": 5.0},
        ),
        id="new settings follow the same precedence",
    ),
    pytest.param(
        Case(
            argv=["--config", FILE],
            env={"WorkerAmount": ""},
            file="workerAmount: 7\nk8sApiServer:\n",
            want={"workers": 7, "api_server": ""},
        ),
        id="an empty env var and a null file key count as not set",
    ),
]


@pytest.mark.parametrize("case", PRECEDENCE)
def test_precedence(case: Case) -> None:
    config = _load(case.argv, case.env, case.file)
    assert {name: getattr(config, name) for name in case.want} == case.want
    assert {name: config.sources.get(name) for name in case.sources} == case.sources


ORIGINAL_NAMES = [
    pytest.param(
        Case(
            argv=["--config", FILE],
            file=(
                "workerAmount: 2\nk8sApiServer: https://10.0.0.1:6443\nk8sConfigFile: /k/config\n"
                "cacheCreationTimeoutSec: 30\ncontrollerName: TaskSetController\n"
            ),
            want={
                "workers": 2,
                "api_server": "https://10.0.0.1:6443",
                "kubeconfig": "/k/config",
                "cache_creation_timeout": 30,
                "warnings": (),
            },
        ),
        id="the original's file keys, controllerName accepted silently",
    ),
    pytest.param(
        Case(
            env={
                "WorkerAmount": "2",
                "K8sAPIServer": "https://10.0.0.1:6443",
                "K8sConfigFile": "/k/config",
                "CacheCreationTimeoutSec": "30",
            },
            want={"workers": 2, "api_server": "https://10.0.0.1:6443", "kubeconfig": "/k/config"},
        ),
        id="the original's env vars",
    ),
    pytest.param(
        Case(argv=["-config", FILE], file="workerAmount: 2\n", want={"workers": 2, "config_file": FILE}),
        id="-config with one dash, as the original allowed",
    ),
    pytest.param(
        Case(argv=[f"---config={FILE}", "-workers=6"], file="workerAmount: 2\n", want={"workers": 6}),
        id="any number of leading dashes, with = values",
    ),
    pytest.param(
        Case(argv=["--config", FILE], file="workerAmount: 2\n", want={"cache_creation_timeout": 300}),
        id="a file with only workerAmount leaves the rest at defaults (S61)",
    ),
    pytest.param(
        Case(argv=["--config", FILE], file="", want={"workers": 10}),
        id="an empty file is all defaults",
    ),
    pytest.param(
        Case(
            env={"WorkerAmount": "0"},
            want={"workers": 10, "warnings": ("WorkerAmount (env) is 0; using 10 workers, as the original",)},
        ),
        id="WorkerAmount below 1 means 10, with a warning (S61)",
    ),
    pytest.param(
        Case(argv=["--workers", "-3"], want={"workers": 10}),
        id="a negative worker flag means 10 too",
    ),
    pytest.param(
        Case(
            argv=["--config", FILE],
            file="workeramount: 3\n",
            want={
                "workers": 10,
                "warnings": (
                    f"config file '{FILE}': unknown key 'workeramount' ignored "
                    "(did you mean 'workerAmount'?)",
                ),
            },
        ),
        id="an unknown file key is a warning with a suggestion, not an error",
    ),
    pytest.param(
        Case(
            argv=["--config", FILE],
            file="controllerName: Other\n",
            want={
                "warnings": (
                    f"config file '{FILE}': controllerName is ignored; the name is TaskSetController",
                )
            },
        ),
        id="a different controllerName is ignored with a warning",
    ),
    pytest.param(
        Case(argv=["--kubeconfig", "/a", "--api-server", "https://h:1"], want={"kubeconfig": "/a"}),
        id="--kubeconfig is the flag of k8sConfigFile",
    ),
]


@pytest.mark.parametrize("case", ORIGINAL_NAMES)
def test_original_names_and_tolerances(case: Case) -> None:
    config = _load(case.argv, case.env, case.file)
    assert {name: getattr(config, name) for name in case.want} == case.want


BOOLEANS = [
    pytest.param([], {}, True, id="the CRD is registered by default, as the original does"),
    pytest.param(["--register-crd=false"], {}, False, id="--register-crd=false skips it"),
    pytest.param(["--register-crd"], {"TASKSET_REGISTER_CRD": "false"}, True, id="a bare flag means true"),
    pytest.param([], {"TASKSET_REGISTER_CRD": "0"}, False, id="the env var takes 0"),
    pytest.param(["-register-crd", "False"], {}, False, id="a separate value in any case"),
]


@pytest.mark.parametrize(("argv", "env", "want"), BOOLEANS)
def test_register_crd(argv: list[str], env: dict[str, str], want: bool) -> None:
    assert _load(argv, env).register_crd is want


ERRORS = [
    pytest.param(
        Case(env={"WorkerAmount": "ten"}),
        "invalid value 'ten' for WorkerAmount (env): must be an integer",
        id="an unparsable WorkerAmount names the env var",
    ),
    pytest.param(
        Case(argv=["--workers", "ten"]),
        "invalid value 'ten' for --workers (flag): must be an integer",
        id="an unparsable flag names the flag",
    ),
    pytest.param(
        Case(argv=["--config", FILE], file="workerAmount: ten\n"),
        f"invalid value 'ten' for workerAmount (file {FILE}): must be an integer",
        id="an unparsable file value names the key and the file",
    ),
    pytest.param(
        Case(argv=["--config", FILE], file="workerAmount: true\n"),
        f"invalid value 'True' for workerAmount (file {FILE}): must be an integer",
        id="a YAML boolean is not a count",
    ),
    pytest.param(
        Case(env={"CacheCreationTimeoutSec": "0"}),
        "invalid value '0' for CacheCreationTimeoutSec (env): must be a positive integer",
        id="a zero cache creation timeout is rejected",
    ),
    pytest.param(
        Case(env={"TASKSET_QPS": "-1"}),
        "invalid value '-1' for TASKSET_QPS (env): must not be negative",
        id="a negative qps is rejected",
    ),
    pytest.param(
        Case(argv=["--qps", "nan"]),
        "invalid value 'nan' for --qps (flag): must be a finite number",
        id="qps must be finite",
    ),
    pytest.param(
        Case(argv=["--burst", "0"]),
        "invalid value '0' for --burst (flag): must be a positive integer",
        id="a zero burst is rejected",
    ),
    pytest.param(
        Case(argv=["--log-level", "loud"]),
        "invalid value 'loud' for --log-level (flag): must be one of debug, info, warning, error",
        id="an unknown log level lists the levels",
    ),
    pytest.param(
        Case(env={"TASKSET_NAMESPACE": "Not_A_Name"}),
        "invalid value 'Not_A_Name' for TASKSET_NAMESPACE (env): "
        "must be a namespace name (a DNS-1123 label) or empty for all namespaces",
        id="a namespace must be a DNS-1123 label",
    ),
    pytest.param(
        Case(argv=["--metrics-bind-address", "8080"]),
        "invalid value '8080' for --metrics-bind-address (flag): must be host:port, :port, or 0 to disable",
        id="a bind address needs a colon",
    ),
    pytest.param(
        Case(env={"TASKSET_HEALTH_PROBE_BIND_ADDRESS": ":99999"}),
        "invalid value ':99999' for TASKSET_HEALTH_PROBE_BIND_ADDRESS (env): "
        "the port must be a number from 0 to 65535",
        id="a bind address port must fit in 16 bits",
    ),
    pytest.param(
        Case(argv=["--register-crd=maybe"]),
        "invalid value 'maybe' for --register-crd (flag): must be true or false",
        id="a boolean must be true or false",
    ),
    pytest.param(
        Case(env={"K8sAPIServer": "not a url"}),
        "invalid value 'not a url' for K8sAPIServer (env): must be a URL such as https://10.0.0.1:6443",
        id="the API server must be a URL",
    ),
    pytest.param(
        Case(env={"WorkerAmount": "1\n2"}),
        "invalid value '1\\n2' for WorkerAmount (env): must be an integer",
        id="a newline in a value is escaped so the message stays one line",
    ),
    pytest.param(
        Case(argv=["--config", "/missing.yaml"]),
        "cannot read config file '/missing.yaml': No such file or directory",
        id="a missing config file",
    ),
    pytest.param(
        Case(argv=["--config", FILE], file="workerAmount: [1\n"),
        f"config file '{FILE}' is not valid YAML at line 2, column 1: "
        "expected ',' or ']', but got '<stream end>'",
        id="a config file that is not YAML",
    ),
    pytest.param(
        Case(argv=["--config", FILE], file="- workerAmount\n"),
        f"config file '{FILE}' must hold a mapping of keys to values",
        id="a config file that is not a mapping",
    ),
    pytest.param(
        Case(argv=["--metrics-bind-address=:9000", "--health-probe-bind-address=:9000"]),
        "with --metrics-secure, /metrics needs its own address: probes stay plain HTTP",
        id="secure metrics cannot share the probes' plain-HTTP address",
    ),
    pytest.param(Case(argv=["--bogus"]), "unrecognized arguments: --bogus", id="an unknown flag"),
    pytest.param(
        Case(argv=["--workers"]), "argument --workers: expected one argument", id="a flag without value"
    ),
]


@pytest.mark.parametrize(("case", "message"), ERRORS)
def test_errors_are_one_line_naming_setting_and_source(case: Case, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        _load(case.argv, case.env, case.file)
    assert str(raised.value) == message
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("argv", "env", "want"),
    [
        pytest.param([], {}, (True, ""), id="secure by default, with a self-signed certificate"),
        pytest.param(["--metrics-secure=false"], {}, (False, ""), id="plain HTTP only when asked"),
        pytest.param([], {"TASKSET_METRICS_SECURE": "false"}, (False, ""), id="asked by env"),
        pytest.param(["--metrics-cert-dir", "/certs"], {}, (True, "/certs"), id="a mounted certificate"),
    ],
)
def test_metrics_security(argv: list[str], env: dict[str, str], want: tuple[bool, str]) -> None:
    config = _load(argv, env)
    assert (config.metrics_secure, config.metrics_cert_dir) == want


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["--metrics-secure=false", "--metrics-bind-address=:9000",
                      "--health-probe-bind-address=:9000"], id="plain metrics may share the probes' port"),
        pytest.param(["--metrics-bind-address=0", "--health-probe-bind-address=0"], id="both off"),
        pytest.param(["--metrics-bind-address=:0", "--health-probe-bind-address=:0"],
                     id="port 0 for both: two free ports never collide, secure or not"),
        pytest.param(["--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=127.0.0.1:0"],
                     id="port 0 on one host for both"),
    ],
)  # fmt: skip
def test_one_address_for_all_is_fine_without_tls_or_on_port_0(argv: list[str]) -> None:
    assert _load(argv).metrics_bind_address == _load(argv).health_probe_bind_address


def test_env_is_not_ignored_when_a_file_is_given() -> None:
    """The deliberate departure from the original, which read the file XOR the environment."""
    config = _load(["--config", FILE], {"TASKSET_LOG_LEVEL": "error"}, "workerAmount: 2\n")
    assert (config.workers, config.log_level) == (2, "error")


@pytest.mark.parametrize("flag", [pytest.param("--help", id="--help"), pytest.param("-h", id="-h")])
def test_help_documents_precedence_and_every_setting(flag: str) -> None:
    with pytest.raises(HelpRequested) as raised:
        _load([flag])
    text = " ".join(raised.value.text.split())  # argparse wraps to the terminal width
    assert "flags > environment > config file (--config) > defaults" in text
    assert "either the config file or the environment" in text
    for setting in SETTINGS:
        assert setting.flag in text
        assert setting.env in text
        assert setting.key in text


def test_every_setting_has_a_unique_flag_env_and_key_and_a_config_field() -> None:
    fields = set(Config.__dataclass_fields__)
    for attribute in ("field", "flag", "env", "key"):
        values = [getattr(s, attribute) for s in SETTINGS]
        assert len(values) == len(set(values)), attribute
    assert {s.field for s in SETTINGS} <= fields


def test_summary_masks_credentials_in_the_api_server_url() -> None:
    config = _load(["--api-server", "https://admin:s3cret@10.0.0.1:6443"])
    summary = config.summary()
    assert summary["api_server"] == "https://***@10.0.0.1:6443"
    assert "s3cret" not in repr(summary)
    assert config.api_server == "https://admin:s3cret@10.0.0.1:6443"


def test_defaults_match_the_documented_values() -> None:
    config = Config()
    assert (config.workers, config.cache_creation_timeout, config.qps, config.burst) == (10, 300, 0.0, 100)
    assert (config.metrics_bind_address, config.health_probe_bind_address) == (":8080", ":8081")
    assert (config.log_level, config.register_crd, config.shutdown_grace_period) == ("info", True, 30.0)
    assert (config.namespace, config.api_server, config.kubeconfig) == ("", "", "")


@pytest.mark.parametrize(("workers", "threads"), [(1, 40), (10, 40), (40, 40), (64, 64)])
def test_pod_requests_in_flight_are_forty_or_one_per_worker(workers: int, threads: int) -> None:
    """Not one per worker: with 10 the large benchmark's 2,000 creates trailed the raw client."""
    assert pod_action_threads(workers) == threads
