"""Writing declared fields of an owned object back (the live membership's data, a Service's selector).

One JSON patch: a ``test`` of the object's UID (so a namesake made meanwhile is never written), then
one ``add`` per field (which replaces what is there, or adds it where a stranger removed it). Nothing
else of the object changes, so its creation proof (an annotation, ``taskset.observed.proof``) stays
valid; and nothing is read back from it first: the values are what the integration declares.
"""

from __future__ import annotations

import copy

from taskset.decide.plan import ActionResult, ResultKind, UpdateOwned
from taskset.runtime.kube import KubeClient, namespaced_path, read_nothing

JSON_PATCH = "application/json-patch+json"


def pointer(path: tuple[str, ...]) -> str:
    """A JSON pointer (RFC 6901) to ``path``."""
    return "".join("/" + step.replace("~", "~0").replace("/", "~1") for step in path)


def update_owned_data(client: KubeClient, namespace: str, intent: UpdateOwned) -> ActionResult:
    """Write ``intent.fields`` over the object's; a ``KubeError`` goes to the caller's failure rules."""
    kind = intent.kind
    patch = [{"op": "test", "path": "/metadata/uid", "value": intent.uid}]
    for field, value in intent.fields:
        patch.append({"op": "add", "path": pointer(field), "value": copy.deepcopy(value)})
    path = namespaced_path(kind.group, kind.version, kind.plural, namespace, intent.name)
    client.request(
        "PATCH", path, resource=kind.plural, body=patch, content_type=JSON_PATCH, read=read_nothing
    )
    return ActionResult(ResultKind.OK)
