"""Kueue beside the embedded control plane, as a local process (recipe in
``../shared/research/testcluster.md`` 6.1).

Started only by the tests that need it (``Kueue(cluster).start()``, then ``stop()``): it
applies Kueue's CRDs from the pinned module (``devcluster/go/kueue``; they ship in its zip), writes a
configuration that names the TaskSet an external framework, and runs the controller manager:

* **No webhooks are registered with the API server.** Kueue's webhooks default and check its own objects
  and suspend the jobs of the frameworks it knows; for an external framework the job's own controller
  creates the Workload and keeps the job suspended until admission, so the API server never needs to call
  Kueue. The webhook server still listens (Kueue cannot run without it), on loopback, with the API
  server's serving certificate.
* **Kueue's own certificate management is off** (it would rewrite the CRDs' conversion settings to call a
  Service). Kueue then reads its metrics certificate from the hard-coded ``/etc/kueue/metrics/certs``;
  rather than write there, the process runs in a mount namespace of its own whose ``/etc`` is a private
  tmpfs holding only that certificate, so nothing is left on the machine. (Kueue reads nothing else from
  ``/etc``: it talks to the API server by a loopback IP, with the kubeconfig's CA.)
* ``VisibilityOnDemand`` is off: with it, Kueue wants a certificate of its visibility API server too.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import yaml

from devcluster import build
from devcluster.addon import Addon
from devcluster.ports import free_port

NAMESPACE = "kueue-system"
# The TaskSet as Kueue names an external framework: Kind.version.group.
EXTERNAL_FRAMEWORK = "TaskSet.v1alpha1.octopus.openi.pcl.cn"
_METRICS_CERTS = "/etc/kueue/metrics/certs"


def configuration(webhook_port: int, health_port: int, cert_dir: Path) -> dict[str, object]:
    """Kueue's configuration file: no leader election, no certificate management, loopback only, and
    the TaskSet as its one framework."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": "0"},
        "integrations": {"frameworks": [], "externalFrameworks": [EXTERNAL_FRAMEWORK]},
    }


def _private_etc(command: list[str], certs: Path) -> list[str]:
    """``command`` in a mount namespace whose /etc is a private tmpfs with only Kueue's metrics
    certificate in it (unprivileged: in a user namespace too)."""
    script = (
        f"mount -t tmpfs kueue-etc /etc && mkdir -p {_METRICS_CERTS} && "
        f"cp {shlex.quote(str(certs))}/tls.crt {shlex.quote(str(certs))}/tls.key {_METRICS_CERTS}/ && "
        f"exec {shlex.join(command)}"
    )
    unshare = ["unshare", "--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        unshare[1:1] = ["--user", "--map-root-user"]
    return [*unshare, "sh", "-c", script]


class Kueue(Addon):
    """Kueue's controller manager for one control plane."""

    name = "kueue"

    def prepare(self) -> list[str]:
        binary = build.build(build.KUEUE) / "kueue"
        self.apply_crds(build.module_dir(build.KUEUE, "sigs.k8s.io/kueue") / "config/components/crd/bases")
        self.cluster.kubectl("create", "namespace", NAMESPACE, check=False)
        certs = self.directory / "certs"
        certs.mkdir(parents=True, exist_ok=True)
        pki = self.cluster.pki
        for source, target in ((pki.serving_cert, "tls.crt"), (pki.serving_key, "tls.key")):
            (certs / target).write_bytes(source.read_bytes())
        self.port = free_port()
        config = self.directory / "config.yaml"
        config.write_text(yaml.safe_dump(configuration(free_port(), self.port, certs)))
        command = [
            str(binary),
            f"--config={config}",
            f"--kubeconfig={self.cluster.kubeconfig}",
            "--feature-gates=VisibilityOnDemand=false",
        ]
        return _private_etc(command, certs)

    def ready(self) -> bool:
        return self.answers(f"http://127.0.0.1:{self.port}/readyz")
