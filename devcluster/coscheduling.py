"""scheduler-plugins' kube-scheduler with the coscheduling plugin, beside the embedded control plane
(recipe in ``../shared/research/testcluster.md`` 6).

Started only by the tests that need it (``Coscheduler(cluster).start()``). It applies the PodGroup CRD
(``scheduling.x-k8s.io``) from the pinned module's zip and runs a second scheduler under its own name,
``SCHEDULER_NAME``, so that only Pods asking for it are gang-scheduled: the control plane's default
scheduler goes on placing everything else. A Pod joins a gang with the label ``POD_GROUP_LABEL`` naming
its PodGroup; none of a gang's Pods is bound until ``minMember`` of them fit at once. (PodGroups' status
stays empty: that is scheduler-plugins' separate controller, which scheduling does not need.)

The module is v0.34.7 built against Kubernetes v0.34.4 libraries (``devcluster/go/scheduler-plugins``),
two minor versions behind the control plane: outside kube-scheduler's supported skew, yet it schedules
here without unknown-API errors.
"""

from __future__ import annotations

import ssl

import yaml

from devcluster import build
from devcluster.addon import Addon
from devcluster.ports import free_port

SCHEDULER_NAME = "coscheduling"
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
# Seconds a gang's bound-for-a-node Pods wait at the Permit stage for the rest (upstream's example: 10).
PERMIT_WAITING_SECONDS = 10
# How long a Pod the scheduler parked as unschedulable stays parked before it is tried again anyway.
# The Coscheduling plugin wakes its rejected Pods only when a Pod or a PodGroup is added (or a PodGroup
# changes), not when capacity frees: a gang whose Pods it all rejected (the Permit rejections cascade
# through Unreserve) sleeps through the capacity freeing until this flush. kube-scheduler's default is
# 5 minutes, and its flush runs every 30 s, so a waiting gang was placed 0 to about 330 s after the
# capacity freed; with 5 s it is placed within about 35 s. It is a command-line flag, not a field of
# KubeSchedulerConfiguration (deprecated, still there in Kubernetes 1.34 and 1.36).
UNSCHEDULABLE_FLUSH = "5s"


def configuration(kubeconfig: str) -> dict[str, object]:
    """Upstream's ``manifests/coscheduling/scheduler-config.yaml``, under its own scheduler name."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "leaderElection": {"leaderElect": False},
        "clientConnection": {"kubeconfig": kubeconfig},
        "profiles": [
            {
                "schedulerName": SCHEDULER_NAME,
                "plugins": {
                    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                    "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
                },
                "pluginConfig": [
                    {"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": PERMIT_WAITING_SECONDS}}
                ],
            }
        ],
    }


class Coscheduler(Addon):
    """The coscheduling scheduler for one control plane."""

    name = "coscheduling"

    def prepare(self) -> list[str]:
        binary = build.build(build.SCHEDULER_PLUGINS) / "scheduler-plugins"
        module = build.module_dir(build.SCHEDULER_PLUGINS, "sigs.k8s.io/scheduler-plugins")
        self.apply_crds(module / "manifests" / "coscheduling" / "crd.yaml")
        config = self.directory / "config.yaml"
        config.write_text(yaml.safe_dump(configuration(str(self.cluster.kubeconfig))))
        self.port = free_port()
        return [
            str(binary),
            f"--config={config}",
            "--bind-address=127.0.0.1",
            f"--secure-port={self.port}",
            f"--cert-dir={self.directory / 'certs'}",
            f"--pod-max-in-unschedulable-pods-duration={UNSCHEDULABLE_FLUSH}",
        ]

    def ready(self) -> bool:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # its own self-signed serving certificate, on loopback
        return self.answers(f"https://127.0.0.1:{self.port}/healthz", context)
