"""Reaching the API server: a kubeconfig (the argument, ``$KUBECONFIG``, or ``~/.kube/config``) or, with
none, the in-cluster ServiceAccount a Pod gets; and the namespace to use when a call names none (the
context's namespace, the Pod's own, else ``default``). The one module besides ``client`` that imports
``kubernetes``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from kubernetes import client as k8s
from kubernetes import config as k8s_config

__all__ = ["Connection", "connect", "line_stream"]

IN_CLUSTER_NAMESPACE_FILE: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
DEFAULT_NAMESPACE: Final = "default"


@dataclass(frozen=True)
class Connection:
    api_client: Any  # kubernetes.client.ApiClient
    namespace: str
    source: str  # where the credentials came from, for messages


def _kubeconfig_path(explicit: str | os.PathLike[str] | None) -> Path | None:
    if explicit is not None:
        return Path(explicit)
    for candidate in os.environ.get("KUBECONFIG", "").split(os.pathsep):
        if candidate and Path(candidate).expanduser().is_file():
            return Path(candidate).expanduser()
    default = Path("~/.kube/config").expanduser()
    return default if default.is_file() else None


def connect(kubeconfig: str | os.PathLike[str] | None = None, context: str | None = None) -> Connection:
    """A client from the kubeconfig, else the in-cluster configuration. Raises ``RuntimeError`` naming
    what was tried when neither is there."""
    path = _kubeconfig_path(kubeconfig)
    if path is not None:
        api_client = k8s_config.new_client_from_config(config_file=str(path), context=context)  # type: ignore[no-untyped-call]
        return Connection(api_client, _context_namespace(path, context), f"kubeconfig {path}")
    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        configuration = k8s.Configuration()
        k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        namespace = DEFAULT_NAMESPACE
        if IN_CLUSTER_NAMESPACE_FILE.is_file():
            namespace = IN_CLUSTER_NAMESPACE_FILE.read_text().strip() or DEFAULT_NAMESPACE
        return Connection(k8s.ApiClient(configuration), namespace, "in-cluster service account")
    raise RuntimeError(
        "no Kubernetes configuration: no kubeconfig ($KUBECONFIG, ~/.kube/config) and not in a Pod"
    )


def _context_namespace(path: Path, context: str | None) -> str:
    contexts, active = k8s_config.list_kube_config_contexts(config_file=str(path))  # type: ignore[no-untyped-call]
    chosen = next((c for c in contexts if c.get("name") == context), None) if context else active
    namespace = ((chosen or {}).get("context") or {}).get("namespace")
    return str(namespace) if namespace else DEFAULT_NAMESPACE


def line_stream(response: Any) -> Any:
    """The lines of a streamed HTTP response (urllib3), decoded, without their newline; empty lines
    are kept (a log's blank line is part of it)."""
    buffer = b""
    for chunk in response.stream(amt=None, decode_content=False):
        buffer += chunk if isinstance(chunk, bytes) else str(chunk).encode()
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            yield line.decode("utf-8", errors="replace")
    if buffer:
        yield buffer.decode("utf-8", errors="replace")
