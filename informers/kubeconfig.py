"""Credentials from a kubeconfig or the Pod's service account, by the ``kubernetes`` package's own
loaders (kubeconfig merging, contexts, exec plugins, OIDC and token refresh, in-cluster tokens), without
its generated models.

The only module of ``informers`` that imports ``kubernetes``. The loaders need nothing of the client but
its small ``Configuration`` class, yet a plain ``import kubernetes.config`` runs the package's
``__init__``, which imports every API and, through ``ApiClient``, every one of the ~700 generated
models: about 30 MiB and a third of a second the daemon never uses. So the packages on the way down
(``kubernetes``, ``kubernetes.client``, ``kubernetes.config``) are put in ``sys.modules`` unexecuted,
only the modules the loaders import are run, and each deferred package runs its own ``__init__`` the
first time anything else is asked of it (PEP 562's module ``__getattr__``): code in the same process that
uses the whole client (the SDK, the tests) gets the whole client, unchanged. In-cluster, only the
in-cluster loader is imported; with a kubeconfig the kubeconfig loader too, and what it needs only to
refresh an OIDC token (oauthlib, requests-oauthlib, requests) waits for that the same way.
``tests/unit/informers/test_kubeconfig.py`` proves, in a fresh interpreter, that the
daemon loads no model.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import threading
from collections.abc import Mapping
from types import ModuleType
from typing import Any, Final

from .rest import Endpoint, endpoint_of

__all__ = ["CredentialsError", "load_endpoint", "loaders"]

# Re-entrant: a deferred package's ``__init__`` may import another deferred one.
_LOCK: Final = threading.RLock()
_WAITING: Final[set[str]] = set()  # packages deferred whose ``__init__`` has not run yet


class CredentialsError(ValueError):
    """No usable credentials: the message names the kubeconfig or what was tried."""


def _defer(name: str) -> ModuleType:
    """Put the package ``name`` in ``sys.modules`` without running its ``__init__``, which runs the first
    time an attribute it would have defined is asked for (its submodules import without it)."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"no module named {name!r}", name=name)
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader
    ran = False

    def __getattr__(attr: str) -> Any:  # noqa: N807  (PEP 562's name)
        nonlocal ran
        with _LOCK:
            if not ran:
                ran = True
                _WAITING.discard(name)
                del module.__dict__["__getattr__"]  # the package's own, if it defines one, takes over
                loader.exec_module(module)
        if attr in module.__dict__:
            return module.__dict__[attr]
        own = module.__dict__.get("__getattr__")
        if own is not None:
            return own(attr)
        raise AttributeError(f"module {name!r} has no attribute {attr!r}")

    module.__dict__["__getattr__"] = __getattr__
    _WAITING.add(name)
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(sys.modules[parent], child, module)
    return module


class _OnDemand:
    """What the kubeconfig loader sees under a name it imports but calls only to refresh an OIDC token
    (``kubernetes.client.ApiClient``, ``requests_oauthlib.OAuth2Session``): the real class, and what it
    imports (every model; requests), is imported on that call, not before."""

    def __init__(self, module: str, name: str) -> None:
        self._module = module
        self._name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return getattr(importlib.import_module(self._module), self._name)(*args, **kwargs)


def loaders(*, kubeconfig: bool) -> tuple[ModuleType | None, ModuleType]:
    """``kubernetes.config.kube_config`` (only if ``kubeconfig``, else None) and
    ``kubernetes.config.incluster_config``, imported without the generated models."""
    with _LOCK:
        if "kubernetes" not in sys.modules:
            _defer("kubernetes")
        client = sys.modules.get("kubernetes.client") or _defer("kubernetes.client")
        if "kubernetes.client" in _WAITING and "Configuration" not in client.__dict__:
            configuration = importlib.import_module("kubernetes.client.configuration")
            client.__dict__["Configuration"] = configuration.Configuration
        if "kubernetes.config" not in sys.modules:
            _defer("kubernetes.config")
        in_cluster = importlib.import_module("kubernetes.config.incluster_config")
        if not kubeconfig:
            return None, in_cluster
        if "kubernetes.config.kube_config" in sys.modules:
            return sys.modules["kubernetes.config.kube_config"], in_cluster
        # The OIDC refresh's dependencies (oauthlib, requests-oauthlib and through it requests: about
        # 5 MiB) wait for an OIDC token to refresh, as the generated client does.
        if "oauthlib" not in sys.modules:
            _defer("oauthlib")
            _defer("oauthlib.oauth2")
        if "requests_oauthlib" not in sys.modules:
            _defer("requests_oauthlib")
        lent = [
            (module, name)
            for module, name in (("kubernetes.client", "ApiClient"), ("requests_oauthlib", "OAuth2Session"))
            if module in _WAITING
        ]
        for module, name in lent:
            sys.modules[module].__dict__[name] = _OnDemand(module, name)
        try:
            kube_config = importlib.import_module("kubernetes.config.kube_config")
        finally:
            for module, name in lent:  # only the loader's own names keep the stand-ins
                sys.modules[module].__dict__.pop(name, None)
        return kube_config, in_cluster


def load_endpoint(
    *, kubeconfig: str, api_server: str, environ: Mapping[str, str] = os.environ
) -> tuple[Endpoint, str]:
    """The API server and the credentials to use, and where they came from (for the log).

    The kubeconfig if given; else the API server URL alone (no credentials: for ``kubectl proxy``); else
    in-cluster, else ``$KUBECONFIG`` / ``~/.kube/config``. ``api_server`` always overrides the host.
    Raises ``CredentialsError`` naming what could not be used.
    """
    kube_config, in_cluster = loaders(kubeconfig=bool(kubeconfig))
    from kubernetes.config.config_exception import ConfigException  # noqa: PLC0415  (once deferred)

    config_exception: Any = ConfigException
    configuration: Any = sys.modules["kubernetes.client"].Configuration()
    if kubeconfig:
        assert kube_config is not None
        try:
            kube_config.load_kube_config(config_file=kubeconfig, client_configuration=configuration)
        except config_exception as err:
            raise CredentialsError(f"unusable kubeconfig {kubeconfig}: {err}") from err
        except Exception as err:  # the loader parses the user's file: malformed YAML, a list for a map...
            raise CredentialsError(f"unusable kubeconfig {kubeconfig}: {type(err).__name__}: {err}") from err
        source = f"kubeconfig {kubeconfig}"
    elif api_server:
        source = "API server URL only, no credentials"
    else:
        try:
            in_cluster.load_incluster_config(client_configuration=configuration)
            source = "in-cluster service account"
        except config_exception:
            kube_config, _ = loaders(kubeconfig=True)
            assert kube_config is not None
            try:
                kube_config.load_kube_config(client_configuration=configuration)
            except config_exception as err:
                raise CredentialsError(f"no Kubernetes credentials: {err}") from err
            except Exception as err:  # as above: the default kubeconfig is the user's file too
                raise CredentialsError(f"unusable kubeconfig: {type(err).__name__}: {err}") from err
            source = f"kubeconfig {environ.get('KUBECONFIG') or '~/.kube/config'}"
    if api_server:
        configuration.host = api_server.rstrip("/")
    return endpoint_of(configuration), source
