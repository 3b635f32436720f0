"""Fixtures of the chaos suite: the integration fixtures (control plane, CRD, namespace, controller).

They are imported by name from ``tests/integration/conftest.py`` rather than copied. Conftest files
without ``__init__.py`` are loaded by pytest as separate modules, and ``pytest_plugins`` is refused in a
non-top-level conftest, so these are separate fixture definitions: a session that runs both folders
starts a second control plane for ``tests/chaos`` (devcluster picks free ports, so two run side by
side). That is intended: faults injected here (restarting kube-apiserver, stopping etcd) never disturb
the integration tests' cluster.
"""

from __future__ import annotations

from tests.integration.conftest import cluster, controller, crd_installed, kueue, namespace

__all__ = ["cluster", "controller", "crd_installed", "kueue", "namespace"]
