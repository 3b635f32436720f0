"""The kubelet's last step for a deleted Pod: remove it from the API server once it is terminating.

kwok's pod-delete stage does this by *name* (no UID precondition). With stable Pod names a queued,
stale delete of an old Pod can then hit its successor that was created a moment later under the same
name — something a real kubelet never does, since it deletes with a UID precondition. This small
process plays that part instead: it watches Pods and deletes each terminating one with grace period 0
and a UID precondition, relisting whenever the watch breaks. Like a kubelet, it deletes each Pod once
(a terminating Pod's further updates are not new work) over one kept-alive connection: a new TLS
connection per delete, and deletes repeated on every update, were API-server work that only the TaskSet
scenarios of the benchmarks paid (the raw reference's create phase has no deletes).

With node health on (``--node-health``, ``devcluster.node_health``) it is only the kubelet of the nodes
that are alive: it also watches the node Leases, confirms no deletion on a node whose Lease
``lose_node`` took (nobody is there to stop the containers), and confirms the ones that waited when
the node comes back.

Run by ``devcluster.Cluster`` as ``python -m devcluster.terminator SERVER CA CERT KEY [--node-health]``.
"""

from __future__ import annotations

import http.client
import json
import ssl
import sys
import threading
import time
import urllib.request
from collections import OrderedDict
from typing import Any
from urllib.parse import quote, urlsplit

from devcluster.node_health import LEASE_NAMESPACE, lost_nodes

WATCH_TIMEOUT = 300  # seconds the server keeps one watch open
RETRY_PAUSE = 0.5  # seconds before relisting after an error
REMEMBERED = 65536  # UIDs of Pods already deleted, most recent kept


class Terminator:
    def __init__(self, server: str, context: ssl.SSLContext, node_health: bool = False) -> None:
        self._server = server
        self._context = context
        self._connection: http.client.HTTPSConnection | None = None
        self._finished: OrderedDict[str, None] = OrderedDict()
        self._node_health = node_health
        # Nodes whose kubelet is gone (their Lease taken by ``lose_node``), and the lock the Pod watch
        # and the Lease watch share for it, the connection and the UIDs deleted.
        self._lost: set[str] = set()
        self._lock = threading.Lock()

    def _open(self, method: str, path: str, timeout: float = 30) -> Any:
        request = urllib.request.Request(self._server + path, method=method)
        return urllib.request.urlopen(request, context=self._context, timeout=timeout)

    def _delete(self, path: str, options: dict[str, Any]) -> int:
        """DELETE over the kept-alive connection (opened again once if the server closed it); the status."""
        body = json.dumps(options).encode()
        for attempt in range(2):
            if self._connection is None:
                address = urlsplit(self._server)
                self._connection = http.client.HTTPSConnection(
                    address.hostname or "127.0.0.1", address.port, context=self._context, timeout=30
                )
            try:
                self._connection.request("DELETE", path, body, {"Content-Type": "application/json"})
                response = self._connection.getresponse()
                response.read()
                return response.status
            except (http.client.HTTPException, OSError):
                self._connection.close()
                self._connection = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def finish(self, pod: dict[str, Any]) -> None:
        with self._lock:
            self._finish(pod)

    def _finish(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        if not meta.get("deletionTimestamp") or meta.get("finalizers") or meta["uid"] in self._finished:
            return  # not terminating, something else still holds it, or already deleted
        if (pod.get("spec") or {}).get("nodeName") in self._lost:
            return  # its node is lost: no kubelet there confirms anything until it comes back
        options = {"gracePeriodSeconds": 0, "preconditions": {"uid": meta["uid"]}}
        status = self._delete(f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}", options)
        if status >= 300 and status not in (404, 409):  # gone already, or another Pod holds the name now
            raise OSError(f"deleting {meta['namespace']}/{meta['name']}: HTTP {status}")
        self._finished[meta["uid"]] = None
        if len(self._finished) > REMEMBERED:
            self._finished.popitem(last=False)

    def run_once(self) -> None:
        with self._open("GET", "/api/v1/pods") as response:
            listed = json.load(response)
        for pod in listed.get("items") or []:
            self.finish(pod)
        version = listed["metadata"]["resourceVersion"]
        path = f"/api/v1/pods?watch=true&resourceVersion={version}&timeoutSeconds={WATCH_TIMEOUT}"
        with self._open("GET", path, timeout=WATCH_TIMEOUT + 30) as stream:
            for line in stream:
                event = json.loads(line)
                if event.get("type") in ("ADDED", "MODIFIED"):
                    self.finish(event["object"])
                elif event.get("type") == "ERROR":
                    return  # e.g. 410 Gone: relist

    def _set_lost(self, lost: set[str]) -> None:
        """Take the lost nodes as the Leases now say; confirm what waited on each node that is back."""
        with self._lock:
            back = self._lost - lost
            self._lost = lost
        for node in sorted(back):
            selector = quote(f"spec.nodeName={node}")
            with self._open("GET", f"/api/v1/pods?fieldSelector={selector}") as response:
                for pod in json.load(response).get("items") or []:
                    self.finish(pod)

    def watch_leases_once(self) -> None:
        base = f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NAMESPACE}/leases"
        with self._open("GET", base) as response:
            listed = json.load(response)
        leases = {lease["metadata"]["name"]: lease for lease in listed.get("items") or []}
        self._set_lost(lost_nodes(list(leases.values())))
        version = listed["metadata"]["resourceVersion"]
        path = f"{base}?watch=true&resourceVersion={version}&timeoutSeconds={WATCH_TIMEOUT}"
        with self._open("GET", path, timeout=WATCH_TIMEOUT + 30) as stream:
            for line in stream:
                event = json.loads(line)
                lease = event.get("object") or {}
                if event.get("type") in ("ADDED", "MODIFIED"):
                    leases[lease["metadata"]["name"]] = lease
                elif event.get("type") == "DELETED":
                    leases.pop(lease["metadata"]["name"], None)
                else:
                    return  # e.g. 410 Gone: relist
                self._set_lost(lost_nodes(list(leases.values())))

    def watch_leases(self) -> None:
        while True:
            try:
                self.watch_leases_once()
            except (OSError, ValueError, KeyError, http.client.HTTPException) as err:
                print(f"terminator: leases: {err}; relisting", file=sys.stderr, flush=True)
                time.sleep(RETRY_PAUSE)

    def run(self) -> None:
        if self._node_health:
            threading.Thread(target=self.watch_leases, name="leases", daemon=True).start()
        while True:
            try:
                self.run_once()
            except (OSError, ValueError, KeyError, http.client.HTTPException) as err:
                print(f"terminator: {err}; relisting", file=sys.stderr, flush=True)
                time.sleep(RETRY_PAUSE)


def main(server: str, ca: str, cert: str, key: str, *flags: str) -> None:
    context = ssl.create_default_context(cafile=ca)
    context.load_cert_chain(cert, key)
    Terminator(server, context, node_health="--node-health" in flags).run()


if __name__ == "__main__":
    main(*sys.argv[1:])
