"""The ``/scale`` subresource's field and who asked for a scale.

**``spec.scale``.** A CRD's scale subresource reads and writes one plain field path, with no list index:
the API server (1.36) accepts ``.spec.roles[0].replicas`` as ``specReplicasPath`` but reads ``roles[0]``
as the name of a field, so a scale writes ``spec["roles[0]"].replicas`` and no role's count changes
(``tests/integration/test_elastic_scale.py``). ``kubectl scale`` and an HPA cannot reach a role's
``replicas``; a TaskSet that wants them names one role in ``spec.scale``::

    spec:
      scale: {role: worker, replicas: 4}   # the scale subresource's specReplicasPath: .spec.scale.replicas

and for that role ``spec.scale.replicas`` is the count: its ``roles[].replicas`` is what it was created
with and is otherwise ignored (``scaled_roles``, read before any check, so every rule on a role's replicas
applies to it). CEL rules (``hack/gen_crd.py``) make ``scale.role`` name a role and keep
``scale.replicas`` within that role's ``minReplicas``/``maxReplicas``. The status exposes
``status.scale.replicas`` (the role's current count) and ``status.scale.selector`` (its Pods' label
selector, as an HPA reads it).

**Who asked.** The TaskSet's ``metadata.managedFields`` say which manager owns the field a role's count
is read from (a role's ``replicas``, or ``spec.scale.replicas`` for the role it names) and through which
subresource it wrote: an Update that changes a field's value takes its ownership, so its owner is who
changed it last. Best effort: a server-side apply may share a field among several managers (the newest
entry is named), a manager that writes the same value again takes nothing, and the status may record the
scale a pass after a later write. The TaskSet cache keeps only those entries, reduced to the counts they
own (``scale_entries``), so the pass can read them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from taskset.api.constants import LABEL_ROLE, LABEL_TASKSET

SCALE_FIELD: Final = "scale"
SCALE_ROLE: Final = "role"
SCALE_REPLICAS: Final = "replicas"
BOUND_FIELDS: Final = ("minReplicas", "maxReplicas")
# Of the TaskSet's managedFields, how many entries touching a count the cache keeps (newest first).
SCALE_ENTRIES_MAX: Final = 8
MANAGER_MAX: Final = 128  # the API server's own limit on a field manager's name
ROLE_KEY_MAX: Final = 96  # k:{"name":"<a DNS label>"}: longer keys name no role


def scale_of(spec: Mapping[str, Any]) -> tuple[str, int] | None:
    """``(role, replicas)`` of ``spec.scale``, or None when absent or not of that shape."""
    scale = spec.get(SCALE_FIELD)
    if not isinstance(scale, Mapping):
        return None
    role, replicas = scale.get(SCALE_ROLE), scale.get(SCALE_REPLICAS)
    if not isinstance(role, str) or isinstance(replicas, bool) or not isinstance(replicas, int):
        return None
    return role, replicas


def scaled_roles(spec: Mapping[str, Any]) -> object:
    """``spec.roles`` with the role ``spec.scale`` names at ``spec.scale.replicas`` (the raw list itself
    when nothing is named): what the spec's parse reads, so the count meets every check a role's does."""
    roles, scale = spec.get("roles"), scale_of(spec)
    if scale is None or not isinstance(roles, list | tuple):
        return roles
    name, replicas = scale
    return [
        {**raw, SCALE_REPLICAS: replicas} if isinstance(raw, Mapping) and raw.get("name") == name else raw
        for raw in roles
    ]


def elastic_roles(spec: Mapping[str, Any]) -> frozenset[str]:
    """The roles that declare a bound (``minReplicas`` or ``maxReplicas``) or that ``spec.scale`` names:
    the elastic ones, which the live membership and torchrun's ``min:max`` follow."""
    roles = spec.get("roles")
    declared = {
        raw["name"]
        for raw in (roles if isinstance(roles, list | tuple) else ())
        if isinstance(raw, Mapping)
        and isinstance(raw.get("name"), str)
        and any(b in raw for b in BOUND_FIELDS)
    }
    scale = scale_of(spec)
    return frozenset(declared | ({scale[0]} if scale else set()))


def scale_selector(taskset: str, role: str) -> str:
    """The label selector of a role's Pods, as ``status.scale.selector`` gives it to an HPA."""
    return f"{LABEL_TASKSET}={taskset},{LABEL_ROLE}={role}"


def _counts_owned(fields: object) -> dict[str, Any] | None:
    """Of a managedFields ``fieldsV1``, the counts it owns (``spec.scale.replicas``, each role's
    ``replicas`` by its list key), in the same form; None when it owns none."""
    spec = fields.get("f:spec") if isinstance(fields, Mapping) else None
    if not isinstance(spec, Mapping):
        return None
    kept: dict[str, Any] = {}
    scale, roles = spec.get("f:scale"), spec.get("f:roles")
    if isinstance(scale, Mapping) and "f:replicas" in scale:
        kept["f:scale"] = {"f:replicas": {}}
    owned: dict[str, Any] = {
        key: {"f:replicas": {}}
        for key, item in (roles.items() if isinstance(roles, Mapping) else ())
        if _role_of(key) is not None and isinstance(item, Mapping) and "f:replicas" in item
    }
    if owned:
        kept["f:roles"] = owned
    return {"f:spec": kept} if kept else None


def _role_of(key: object) -> str | None:
    """The role name of a list-map key of ``spec.roles`` in managedFields: ``k:{"name":"w"}``."""
    if not isinstance(key, str) or not key.startswith("k:") or len(key) > ROLE_KEY_MAX:
        return None
    try:
        value = json.loads(key[2:])
    except ValueError:
        return None
    name = value.get("name") if isinstance(value, dict) else None
    return name if isinstance(name, str) else None


def scale_entries(managed: object) -> list[dict[str, Any]]:
    """The managedFields entries that own a count, newest first (an entry without a time, as the scale
    subresource's are, counts as newest: it is only ever written by a scale), at most
    ``SCALE_ENTRIES_MAX``, each reduced to its manager, operation, subresource, time and the counts it
    owns. Idempotent (a reduced entry keeps what it owns), so the TaskSet cache's transform may see its own
    output again."""
    kept: list[dict[str, Any]] = []
    for entry in managed if isinstance(managed, list) else ():
        owned = _counts_owned(entry.get("fieldsV1")) if isinstance(entry, Mapping) else None
        if owned is None:
            continue
        reduced = {
            key: entry[key] for key in ("operation", "subresource", "time") if isinstance(entry.get(key), str)
        }
        reduced["manager"] = str(entry.get("manager", ""))[:MANAGER_MAX]
        kept.append({**reduced, "fieldsV1": owned})
    kept.sort(key=lambda entry: str(entry.get("time", "~")), reverse=True)  # "~" sorts after digits
    return kept[:SCALE_ENTRIES_MAX]


def scale_requesters(obj: Mapping[str, Any]) -> dict[str, str]:
    """Who last wrote each role's count (best effort, see the module docstring), by role name: the
    manager that owns the field the count is read from (``spec.scale.replicas`` for the role
    ``spec.scale`` names, else the role's ``replicas``), with " via /scale" when it wrote through the scale
    subresource. An Update takes a field's ownership from its previous owner when it changes the value,
    so the owner is who changed it last."""
    metadata, spec = obj.get("metadata"), obj.get("spec")
    entries = scale_entries(metadata.get("managedFields") if isinstance(metadata, Mapping) else None)
    scaled = scale_of(spec) if isinstance(spec, Mapping) else None
    owners: dict[str, str] = {}
    for entry in entries:
        who = f"{entry['manager']}{' via /scale' if entry.get('subresource') == SCALE_FIELD else ''}"
        owned = entry["fieldsV1"]["f:spec"]
        if scaled is not None and "f:scale" in owned:
            owners.setdefault(scaled[0], who)
        for key in owned.get("f:roles", {}):
            role = _role_of(key)
            if role is not None and (scaled is None or role != scaled[0]):
                owners.setdefault(role, who)
    return owners
