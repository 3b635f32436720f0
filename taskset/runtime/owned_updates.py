"""Writing an owned object's data over (the live membership ConfigMap).

One JSON patch: a ``test`` of the object's UID (so a namesake made meanwhile is never written), then
``add /data`` (which replaces it whole). Nothing else of the object changes, so its creation proof
(an annotation, ``taskset.observed.proof``) stays valid; and nothing is read back from it first: the data is
what the pass computed from the TaskSet.
"""

from __future__ import annotations

from taskset.decide.plan import ActionResult, ResultKind, UpdateOwned
from taskset.runtime.kube import KubeClient, namespaced_path

JSON_PATCH = "application/json-patch+json"


def update_owned_data(client: KubeClient, namespace: str, intent: UpdateOwned) -> ActionResult:
    """Write ``intent.data`` over the object's data; a ``KubeError`` goes to the caller's failure rules."""
    kind = intent.kind
    patch = [
        {"op": "test", "path": "/metadata/uid", "value": intent.uid},
        {"op": "add", "path": "/data", "value": dict(intent.data)},
    ]
    path = namespaced_path(kind.group, kind.version, kind.plural, namespace, intent.name)
    client.request("PATCH", path, resource=kind.plural, body=patch, content_type=JSON_PATCH)
    return ActionResult(ResultKind.OK)
