"""Node health as a real cluster has it, switched on per control plane: a node can be lost.

Without it (the default) every simulated node is alive for ever: nothing watches heartbeats, and the Pod
terminator confirms every deletion as if it were every node's kubelet. With ``Settings.node_health``:

- kwok keeps a Lease per node in ``kube-node-lease``, renewed every quarter of its duration, as a
  kubelet does;
- the controller-manager runs the node lifecycle controller (a node whose Lease is not renewed for
  ``grace_seconds`` turns ``Ready=Unknown`` and gets the ``node.kubernetes.io/unreachable`` taints), the
  taint-eviction controller (a Pod that does not tolerate ``NoExecute`` taints is evicted: deleted, with
  ``DisruptionTarget`` / ``DeletionByTaintManager``) and the Pod garbage collector (which force-deletes
  the terminating Pods of a node tainted ``node.kubernetes.io/out-of-service``, the non-graceful
  shutdown fence);
- the API server gives every Pod the default ``unreachable``/``not-ready`` tolerations of
  ``toleration_seconds``.

``lose_node`` makes a node lost the way a dead kubelet does: it takes the node's Lease for a holder that
never renews it. kwok then treats the node as another kwok's (it neither renews the Lease nor moves the
node's Pods), the node lifecycle controller sees the heartbeats stop, and the Pod terminator, which
watches the same Leases, confirms no deletion on it. ``restore_node`` deletes that Lease: kwok takes the
node back, marks it Ready, and the terminator confirms the deletions that waited, as a kubelet coming
back does.

Off by default because heartbeats are work and timing: on a starved machine a late renewal would make a
node look lost in a test that never asked for it.
"""

from __future__ import annotations

import time
import urllib.error
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

LEASE_NAMESPACE = "kube-node-lease"
# The holder a lost node's Lease names: nobody, for as long as anyone cares to wait.
LOST_HOLDER = "devcluster/lost-node"
LOST_LEASE_SECONDS = 10**8
RESTORE_TIMEOUT = 60.0  # seconds for kwok to create the node's Lease again (it tries every quarter lease)
# The controller-manager's controllers node health adds to the always-on ones.
KCM_CONTROLLERS = (
    "node-lifecycle-controller",
    "taint-eviction-controller",
    "pod-garbage-collector-controller",
)


@dataclass(frozen=True)
class NodeHealth:
    """Timeouts of node health; the defaults are Kubernetes' own."""

    # --node-monitor-grace-period: how long a node may go without a heartbeat before it is Unknown.
    grace_seconds: int = 50
    # kwok's Lease duration; it renews every quarter of it (a kubelet's 40 s Lease, renewed every 10 s).
    lease_seconds: int = 40
    # The default tolerationSeconds of the unreachable/not-ready NoExecute taints every Pod is given.
    toleration_seconds: int = 300

    def __post_init__(self) -> None:
        if min(self.grace_seconds, self.lease_seconds) < 1 or self.toleration_seconds < 0:
            raise ValueError(f"node health timeouts must be positive: {self}")

    def kcm_args(self) -> list[str]:
        return [
            f"--node-monitor-grace-period={self.grace_seconds}s",
            "--node-monitor-period=1s",
            # Taint a lost node at once: the default 0.1 nodes/s would queue nodes lost together, and
            # a small cluster's default secondary rate of 0 would stop tainting when a zone is half lost.
            "--node-eviction-rate=100",
            "--secondary-node-eviction-rate=100",
            "--unhealthy-zone-threshold=1",
        ]

    def apiserver_args(self) -> list[str]:
        return [
            f"--default-not-ready-toleration-seconds={self.toleration_seconds}",
            f"--default-unreachable-toleration-seconds={self.toleration_seconds}",
        ]

    def kwok_args(self) -> list[str]:
        return [f"--node-lease-duration-seconds={self.lease_seconds}"]


class Requester(Protocol):
    def request(self, method: str, path: str, body: Any = None) -> Any: ...


class NodeHealthOffError(RuntimeError):
    """A node was to be lost on a control plane without node health: nothing would notice."""


def _lease_path(node: str) -> str:
    return f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases/{node}"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lose_node(api: Requester, node: str, attempts: int = 10) -> None:
    """Take ``node``'s Lease for ``LOST_HOLDER``: its heartbeats stop from now on. Retried when kwok
    renews the Lease between our read and our write (a conflict)."""
    api.request("GET", f"/api/v1/nodes/{node}")  # a clear 404 for a node that does not exist
    for attempt in range(attempts):
        try:
            lease = api.request("GET", _lease_path(node))
        except urllib.error.HTTPError as error:
            if error.code == 404:
                raise NodeHealthOffError(
                    f"node {node} has no Lease: start the control plane with node health "
                    "(Settings(node_health=NodeHealth()), or python -m devcluster up --node-health)"
                ) from None
            raise
        lease["spec"].update(
            holderIdentity=LOST_HOLDER, leaseDurationSeconds=LOST_LEASE_SECONDS, renewTime=_now()
        )
        try:
            api.request("PUT", _lease_path(node), lease)
            return
        except urllib.error.HTTPError as error:
            if error.code != 409 or attempt == attempts - 1:
                raise


def restore_node(api: Requester, node: str, timeout: float = RESTORE_TIMEOUT) -> None:
    """Give ``node`` its heartbeats back: delete the lost Lease, so kwok creates and renews its own;
    return once it has (a node lost again at once would otherwise have no Lease to take)."""
    lease = _lease(api, node)
    if lease is None or lease["spec"].get("holderIdentity") != LOST_HOLDER:
        return  # not lost: deleting kwok's own Lease would only make a heartbeat late
    try:
        options = {"preconditions": {"uid": lease["metadata"]["uid"]}}
        api.request("DELETE", _lease_path(node), options)
    except urllib.error.HTTPError as error:
        if error.code not in (404, 409):
            raise
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lease = _lease(api, node)
        if lease is not None and lease["spec"].get("holderIdentity") != LOST_HOLDER:
            return
        time.sleep(0.2)
    raise TimeoutError(f"node {node}: kwok did not take its Lease back within {timeout:.0f} s")


def _lease(api: Requester, node: str) -> Any:
    try:
        return api.request("GET", _lease_path(node))
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise


def lost_nodes(leases: list[dict[str, Any]]) -> set[str]:
    """The nodes whose Lease ``lose_node`` took, from a list of Leases."""
    return {
        lease["metadata"]["name"]
        for lease in leases
        if (lease.get("spec") or {}).get("holderIdentity") == LOST_HOLDER
    }
