"""The ``/scale`` subresource's field and who asked for a scale (issue 26, items 2 and 4).

**``spec.scale``.** A CRD's scale subresource reads and writes one plain field path: the API server
refuses a list index in ``specReplicasPath`` (``.spec.roles[0].replicas`` is not a "simple JSON path"),
so ``kubectl scale`` and an HPA cannot reach a role's ``replicas``. A TaskSet that wants them names one
role in ``spec.scale``::

    spec:
      scale: {role: worker, replicas: 4}   # the scale subresource's specReplicasPath: .spec.scale.replicas

and for that role ``spec.scale.replicas`` is the count: its ``roles[].replicas`` is what it was created
with and is otherwise ignored (``scaled_roles``, read before any check, so every rule on a role's replicas
applies to it). CEL rules (``hack/gen_crd.py``) make ``scale.role`` name a role and keep
``scale.replicas`` within that role's ``minReplicas``/``maxReplicas``. The status exposes
``status.scale.replicas`` (the role's current count) and ``status.scale.selector`` (its Pods' label
selector, as an HPA reads it).

**Who asked.** The TaskSet's ``metadata.managedFields`` say which manager last wrote a role's
``replicas`` or ``spec.scale.replicas`` (and through which subresource). Best effort: a manager's entry
carries only the time of its latest change to the object, to the second, so a manager that wrote both
the count and another field later is still named, and two scales in one second may name either. The
TaskSet cache keeps only those entries, reduced (``scale_entries``), so the pass can read them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from taskset.api.constants import LABEL_ROLE, LABEL_TASKSET

SCALE_FIELD: Final = "scale"
SCALE_ROLE: Final = "role"
SCALE_REPLICAS: Final = "replicas"
BOUND_FIELDS: Final = ("minReplicas", "maxReplicas")
# Of the TaskSet's managedFields, how many entries touching a count the cache keeps (newest first).
SCALE_ENTRIES_MAX: Final = 8
MANAGER_MAX: Final = 128  # the API server's own limit on a field manager's name
_SCALE_MARK: Final[Mapping[str, Any]] = {"f:spec": {"f:scale": {"f:replicas": {}}}}
_ROLES_MARK: Final[Mapping[str, Any]] = {"f:spec": {"f:roles": {"f:replicas": {}}}}


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


def _touches_count(fields: object) -> Mapping[str, Any] | None:
    """The reduced mark of a managedFields ``fieldsV1`` that owns a count, or None."""
    spec = fields.get("f:spec") if isinstance(fields, Mapping) else None
    if not isinstance(spec, Mapping):
        return None
    scale = spec.get("f:scale")
    if isinstance(scale, Mapping) and "f:replicas" in scale:
        return _SCALE_MARK
    roles = spec.get("f:roles")
    if isinstance(roles, Mapping) and any(
        key == "f:replicas" or (isinstance(item, Mapping) and "f:replicas" in item)
        for key, item in roles.items()
    ):
        return _ROLES_MARK
    return None


def scale_entries(managed: object) -> list[dict[str, Any]]:
    """The managedFields entries that own a count, newest first, at most ``SCALE_ENTRIES_MAX``, each
    reduced to its manager, operation, subresource, time and a mark of what it owns. Idempotent (a reduced
    entry keeps its mark), so the TaskSet cache's transform may see its own output again."""
    kept: list[dict[str, Any]] = []
    for entry in managed if isinstance(managed, list) else ():
        mark = _touches_count(entry.get("fieldsV1")) if isinstance(entry, Mapping) else None
        if mark is None:
            continue
        reduced = {
            key: entry[key] for key in ("operation", "subresource", "time") if isinstance(entry.get(key), str)
        }
        reduced["manager"] = str(entry.get("manager", ""))[:MANAGER_MAX]
        kept.append({**reduced, "fieldsV1": mark})
    kept.sort(key=lambda entry: str(entry.get("time", "")), reverse=True)
    return kept[:SCALE_ENTRIES_MAX]


def scale_requester(metadata: Mapping[str, Any]) -> str:
    """Who last wrote a count (best effort, see the module docstring): the manager, with ``/scale`` when
    it wrote through the scale subresource; "" when no entry says."""
    entries: Sequence[Mapping[str, Any]] = scale_entries(metadata.get("managedFields"))
    if not entries:
        return ""
    newest = entries[0]
    via = " via /scale" if newest.get("subresource") == SCALE_FIELD else ""
    return f"{newest.get('manager', '')}{via}"
