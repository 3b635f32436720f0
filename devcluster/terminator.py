"""The kubelet's last step for a deleted Pod: remove it from the API server once it is terminating.

kwok's pod-delete stage does this by *name* (no UID precondition). With stable Pod names a queued,
stale delete of an old Pod can then hit its successor that was created a moment later under the same
name — something a real kubelet never does, since it deletes with a UID precondition. This small
process plays that part instead: it watches Pods and deletes each terminating one with grace period 0
and a UID precondition, relisting whenever the watch breaks.

Run by ``devcluster.Cluster`` as ``python -m devcluster.terminator SERVER CA CERT KEY``.
"""

from __future__ import annotations

import json
import ssl
import sys
import time
import urllib.error
import urllib.request
from typing import Any

WATCH_TIMEOUT = 300  # seconds the server keeps one watch open
RETRY_PAUSE = 0.5  # seconds before relisting after an error


class Terminator:
    def __init__(self, server: str, ca: str, cert: str, key: str) -> None:
        self._server = server
        self._context = ssl.create_default_context(cafile=ca)
        self._context.load_cert_chain(cert, key)

    def _open(self, method: str, path: str, body: Any = None, timeout: float = 30) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self._server + path, data=data, method=method)
        request.add_header("Content-Type", "application/json")
        return urllib.request.urlopen(request, context=self._context, timeout=timeout)

    def finish(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        if not meta.get("deletionTimestamp") or meta.get("finalizers"):
            return  # not terminating, or something else still holds it
        options = {"gracePeriodSeconds": 0, "preconditions": {"uid": meta["uid"]}}
        path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}"
        try:
            self._open("DELETE", path, options).close()
        except urllib.error.HTTPError as err:
            if err.code not in (404, 409):  # gone already, or another Pod holds the name now
                raise

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

    def run(self) -> None:
        while True:
            try:
                self.run_once()
            except (OSError, ValueError, KeyError) as err:
                print(f"terminator: {err}; relisting", file=sys.stderr, flush=True)
                time.sleep(RETRY_PAUSE)


if __name__ == "__main__":
    Terminator(*sys.argv[1:5]).run()
