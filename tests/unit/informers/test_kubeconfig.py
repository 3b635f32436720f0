"""Credentials through the ``kubernetes`` package's loaders without its generated models: what the daemon
imports, proven in a fresh interpreter; a deferred package that completes itself for code that wants the
whole client; a token an exec plugin refreshes; client certificates; and the errors that name the file."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from informers.kubeconfig import CredentialsError, load_endpoint

pytestmark = [pytest.mark.unit, pytest.mark.timeout(120)]

ROOT = Path(__file__).resolve().parents[3]
# Modules of the full client the daemon must never load: the generated models, the API classes, the
# generated ApiClient (which imports every model) and pydantic, which the models are made of.
FORBIDDEN = ("kubernetes.client.models", "kubernetes.client.api.", "kubernetes.client.api_client", "pydantic")
CERT = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"
KEY = "-----BEGIN EC PRIVATE KEY-----\nMHcfake\n-----END EC PRIVATE KEY-----\n"


def write_kubeconfig(path: Path, user: dict[str, Any], server: str = "https://127.0.0.1:6443") -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }
    path.write_text(yaml.safe_dump(config))
    return path


def fresh(code: str, tmp_path: Path) -> dict[str, Any]:
    """Run ``code`` in a new interpreter at the project's root; it prints one JSON line, returned."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_the_daemon_builds_its_client_without_loading_the_models(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"token": "secret-token"})
    got = fresh(
        f"""
        import json, sys
        import taskset.daemon.main  # the entry module
        import taskset.daemon.wiring, taskset.runtime.controller  # what it imports once configured
        from taskset.runtime.kube import KubeClient, build_api_client

        transport, source = build_api_client(kubeconfig={str(kubeconfig)!r}, api_server="", pool_size=4)
        KubeClient(transport)
        identity = transport.endpoint.identity()
        rss = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS"))
        print(json.dumps({{
            "modules": sorted(sys.modules), "source": source, "host": transport.host,
            "authorization": identity.authorization, "rss_kib": rss,
        }}))
        """,
        tmp_path,
    )
    loaded = [name for name in got["modules"] if name.startswith(FORBIDDEN)]
    assert loaded == []
    assert "kubernetes.config.kube_config" in got["modules"]  # the package's own loader did the work
    assert (got["source"], got["host"]) == (f"kubeconfig {kubeconfig}", "https://127.0.0.1:6443")
    assert got["authorization"] == "Bearer secret-token"
    print(f"RSS with the daemon imported and its client built: {got['rss_kib'] / 1024:.1f} MiB")


def test_a_deferred_package_completes_itself_for_code_that_uses_the_whole_client(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", {"token": "t"})
    got = fresh(
        f"""
        import json, sys
        from informers.kubeconfig import load_endpoint
        load_endpoint(kubeconfig={str(kubeconfig)!r}, api_server="")
        before = any(name.startswith("kubernetes.client.models") for name in sys.modules)
        import kubernetes
        from kubernetes import client, config, watch
        api = config.new_client_from_config({str(kubeconfig)!r})
        print(json.dumps({{
            "before": before,
            "version": kubernetes.__version__,
            "api_client": isinstance(api, client.ApiClient),
            "pod": client.V1Pod(metadata=client.V1ObjectMeta(name="p")).metadata.name,
            "core": client.CoreV1Api(api).api_client is api,
            "watch": watch.Watch.__name__,
            "dynamic": kubernetes.dynamic.DynamicClient.__name__,
        }}))
        """,
        tmp_path,
    )
    assert got == {
        "before": False,
        "version": got["version"],
        "api_client": True,
        "pod": "p",
        "core": True,
        "watch": "Watch",
        "dynamic": "DynamicClient",
    }


def test_in_cluster_the_kubeconfig_loader_is_not_even_imported(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "ca.crt").write_text(CERT)
    got = fresh(
        f"""
        import json, os, sys
        from informers import kubeconfig
        os.environ.update({{"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}})
        _, in_cluster = kubeconfig.loaders(kubeconfig=False)
        in_cluster.SERVICE_TOKEN_FILENAME = {str(tmp_path / "token")!r}
        in_cluster.SERVICE_CERT_FILENAME = {str(tmp_path / "ca.crt")!r}
        endpoint, source = kubeconfig.load_endpoint(kubeconfig="", api_server="")
        print(json.dumps({{
            "modules": sorted(sys.modules), "source": source, "host": endpoint.host,
            "authorization": endpoint.identity().authorization, "ca": endpoint.ca_file,
        }}))
        """,
        tmp_path,
    )
    assert [name for name in got["modules"] if name.startswith(FORBIDDEN)] == []
    assert "kubernetes.config.kube_config" not in got["modules"]
    assert "requests" not in got["modules"]
    assert got["source"] == "in-cluster service account"
    assert (got["host"], got["authorization"], got["ca"]) == (
        "https://10.0.0.1:443",
        "bearer sa-token",
        str(tmp_path / "ca.crt"),
    )


def test_an_exec_plugins_expired_token_is_fetched_again_for_the_next_request(tmp_path: Path) -> None:
    counter = tmp_path / "count"
    counter.write_text("0")
    plugin = textwrap.dedent(
        f"""
        import json, pathlib
        path = pathlib.Path({str(counter)!r})
        n = int(path.read_text()) + 1
        path.write_text(str(n))
        status = {{"token": f"token-{{n}}", "expirationTimestamp": "2000-01-01T00:00:00Z"}}
        kind = {{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential"}}
        print(json.dumps({{**kind, "status": status}}))
        """
    )
    kubeconfig = write_kubeconfig(
        tmp_path / "kubeconfig",
        {
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1",
                "command": sys.executable,
                "args": ["-c", plugin],
                "interactiveMode": "Never",
            }
        },
    )
    endpoint, _ = load_endpoint(kubeconfig=str(kubeconfig), api_server="")
    first = endpoint.identity().authorization
    second = endpoint.identity().authorization
    assert (first, second) != (None, None)
    assert first != second  # expired at once, so every request asked the plugin anew
    assert second is not None and second.endswith(f"token-{counter.read_text()}")


def test_client_certificates_reach_the_transport_as_files(tmp_path: Path) -> None:
    kubeconfig = write_kubeconfig(
        tmp_path / "kubeconfig",
        {
            "client-certificate-data": base64.b64encode(CERT.encode()).decode(),
            "client-key-data": base64.b64encode(KEY.encode()).decode(),
        },
    )
    endpoint, _ = load_endpoint(kubeconfig=str(kubeconfig), api_server="https://override:6443/")
    identity = endpoint.identity()
    assert identity.authorization is None
    assert identity.cert_file is not None and Path(identity.cert_file).read_text() == CERT
    assert identity.key_file is not None and Path(identity.key_file).read_text() == KEY
    assert (endpoint.host, endpoint.verify) == ("https://override:6443", False)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param("", "unusable kubeconfig", id="an empty file"),
        pytest.param("apiVersion: v1\nkind: Config\ncontexts: []\n", "unusable kubeconfig", id="no context"),
        pytest.param("clusters: [\n", "unusable kubeconfig", id="malformed YAML"),
        pytest.param("users: 5\ncurrent-context: x\n", "unusable kubeconfig", id="a number for a list"),
    ],
)
def test_an_unusable_kubeconfig_is_an_error_naming_it(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(content)
    with pytest.raises(CredentialsError, match=f"{message} {path}"):
        load_endpoint(kubeconfig=str(path), api_server="")


def jwt(expires: int) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none'})}.{part({'exp': expires, 'sub': 'me'})}.c2ln"


class _IdentityProvider(BaseHTTPRequestHandler):
    """An OIDC provider in miniature: its discovery document and a token endpoint that refreshes."""

    protocol_version = "HTTP/1.1"
    fresh_token = jwt(4_000_000_000)

    def do_GET(self) -> None:
        host = self.headers["Host"]
        self._json({"issuer": f"http://{host}", "token_endpoint": f"http://{host}/token"})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self._json(
            {
                "access_token": "a",
                "token_type": "Bearer",
                "expires_in": 3600,
                "id_token": self.fresh_token,
                "refresh_token": "refreshed",
            }
        )

    def _json(self, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_an_expired_oidc_token_is_refreshed_and_only_then_are_its_libraries_imported(tmp_path: Path) -> None:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _IdentityProvider)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    try:

        def oidc(id_token: str, name: str) -> Path:
            config = {
                "client-id": "controller",
                "client-secret": "s",
                "id-token": id_token,
                "refresh-token": "r",
                "idp-issuer-url": f"http://127.0.0.1:{httpd.server_address[1]}",
            }
            return write_kubeconfig(tmp_path / name, {"auth-provider": {"name": "oidc", "config": config}})

        valid, expired = oidc(jwt(4_000_000_000), "valid"), oidc(jwt(1_000_000_000), "expired")
        got = fresh(
            f"""
            import json, os, sys
            os.environ["OAUTHLIB_INSECURE_TRANSPORT"] = "1"  # the provider in miniature speaks HTTP
            from informers.kubeconfig import load_endpoint
            endpoint, _ = load_endpoint(kubeconfig={str(valid)!r}, api_server="")
            loaded = ("requests.", "oauthlib.oauth2.rfc")  # requests_oauthlib itself waits, unexecuted
            untouched = sorted(m for m in sys.modules if m == "requests" or m.startswith(loaded))
            models = any(m.startswith("kubernetes.client.models") for m in sys.modules)
            refreshed, _ = load_endpoint(kubeconfig={str(expired)!r}, api_server="")
            print(json.dumps({{
                "untouched": untouched, "models": models,
                "valid": endpoint.identity().authorization,
                "refreshed": refreshed.identity().authorization,
            }}))
            """,
            tmp_path,
        )
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert (got["untouched"], got["models"]) == ([], False)
    assert got["valid"] == f"Bearer {jwt(4_000_000_000)}"
    assert got["refreshed"] == f"Bearer {_IdentityProvider.fresh_token}"
