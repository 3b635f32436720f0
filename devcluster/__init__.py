"""An embedded Kubernetes control plane for the demo and the integration tests.

``devcluster.Cluster`` starts etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok
(simulated nodes and pods) on loopback from binaries built out of pinned Go modules; ``python -m
devcluster`` drives it from the shell. See ``devcluster/stages/stages.yaml`` for the pod simulation
annotations.
"""

from devcluster.cluster import Cluster, ClusterError, Settings, running
from devcluster.ports import free_port

__all__ = ["Cluster", "ClusterError", "Settings", "free_port", "running"]
