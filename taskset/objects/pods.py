"""The Pod of one replica attempt, built from the role's template (spec 3.2 as amended by D1).

Everything the template says passes through (schedulerName, PodGroup annotations, affinity, ...: the
seed's kube-batch example relies on it) except what identifies the replica, which the controller owns:
name, namespace, the controlling owner, the identity labels and annotations. What integrations add (the
seed's six environment variables are the first, ``taskset.integrations.identity_env``) comes in as
``PodDecoration``s, decided beforehand; this module only applies them (``taskset.objects.decorations``).

The cached TaskSet is never touched: what differs from the template (the metadata, the spec's top level,
each container) is a new object, and the rest is shared with the template, since the Pod is only
serialised. A deep copy per Pod cost more than the rest of building it (2,000 Pods in a pass).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from taskset.api.constants import (
    ANNOTATION_CONTROL_UNIT_UID,
    ANNOTATION_CREATION_PROOF,
    ANNOTATION_NAMESPACE,
    ANNOTATION_REPLICA_ATTEMPT_ID,
    ANNOTATION_REPLICA_INDEX,
    ANNOTATION_TASKSET,
    ANNOTATION_TASKSET_ATTEMPT_ID,
    ANNOTATION_TASKSET_UID,
    DEFAULT_RESTART_POLICY,
    DEFAULT_TERMINATION_MESSAGE_POLICY,
    LABEL_ROLE,
    LABEL_TASKSET,
)
from taskset.objects.decorations import (
    PodDecoration,
    container_env,
    container_memory,
    container_mounts,
    decorate_metadata,
    decorate_spec,
    with_memory,
    with_restart_rules,
)


@dataclass(frozen=True)
class PodIdentity:
    """Who a Pod is: which replica of which attempt, under which ControlUnit."""

    taskset: str
    namespace: str
    taskset_uid: str
    role: str
    index: int
    name: str
    control_unit_name: str
    control_unit_uid: str
    taskset_attempt: int
    replica_attempt: int
    proof: str  # the creation proof (taskset.observed.proof), decided with the rest of the pass


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _items(value: object) -> list[Any]:
    """A list field of a template as written, or none (the CRD keeps a template's metadata as is)."""
    return value if isinstance(value, list) else []


def build_pod(
    template: Mapping[str, Any], identity: PodIdentity, decorations: Sequence[PodDecoration] = ()
) -> dict[str, Any]:
    """The Pod to create for ``identity`` from the role's PodTemplateSpec and the integrations'
    ``decorations`` (it shares the template's unchanged parts: serialise it, do not change it)."""
    metadata = dict(_dict(template.get("metadata")))
    spec = dict(_dict(template.get("spec")))
    for key in ("name", "namespace", "generateName", "uid", "resourceVersion", "creationTimestamp"):
        metadata.pop(key, None)
    decorate_metadata(metadata, decorations)
    decorate_spec(spec, decorations)
    metadata["name"] = identity.name
    metadata["namespace"] = identity.namespace
    metadata["labels"] = {
        **_dict(metadata.get("labels")),
        LABEL_TASKSET: identity.taskset,
        LABEL_ROLE: identity.role,
    }
    metadata["annotations"] = {
        **_dict(metadata.get("annotations")),
        ANNOTATION_REPLICA_INDEX: str(identity.index),
        ANNOTATION_TASKSET: identity.taskset,
        ANNOTATION_NAMESPACE: identity.namespace,
        ANNOTATION_TASKSET_UID: identity.taskset_uid,
        ANNOTATION_CONTROL_UNIT_UID: identity.control_unit_uid,
        ANNOTATION_TASKSET_ATTEMPT_ID: str(identity.taskset_attempt),
        ANNOTATION_REPLICA_ATTEMPT_ID: str(identity.replica_attempt),
        ANNOTATION_CREATION_PROOF: identity.proof,
    }
    owners = [ref for ref in _items(metadata.get("ownerReferences")) if isinstance(ref, dict)]
    owners.append(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "name": identity.control_unit_name,
            "uid": identity.control_unit_uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    )
    metadata["ownerReferences"] = owners
    env, mounts = container_env(decorations), container_mounts(decorations)
    memory = container_memory(decorations)
    for key in ("initContainers", "containers"):
        containers = spec.get(key)
        if isinstance(containers, list):
            spec[key] = [_decorated(c, env, mounts) if isinstance(c, dict) else c for c in containers]
    if memory and isinstance(spec.get("containers"), list):
        spec["containers"] = [
            with_memory(c, *memory[str(c.get("name"))])
            if isinstance(c, dict) and c.get("name") in memory
            else c
            for c in spec["containers"]
        ]
    if not spec.get("restartPolicy"):
        spec["restartPolicy"] = DEFAULT_RESTART_POLICY  # W-12
    if any(d.restart_rules for d in decorations) and isinstance(spec.get("containers"), list):
        policy = str(spec["restartPolicy"])
        spec["containers"] = [
            with_restart_rules(dict(c), policy, decorations) if isinstance(c, dict) else c
            for c in spec["containers"]
        ]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _decorated(
    container: dict[str, Any], env: list[dict[str, str]], mounts: list[dict[str, Any]]
) -> dict[str, Any]:
    """A container of the template with the decorations' variables first in its env and their mounts
    after its own."""
    container = dict(container)
    own = container.get("env") or []
    if env and isinstance(own, list):  # anything else is left for the API server to reject by name
        container["env"] = [*(dict(var) for var in env), *own]
    own_mounts = container.get("volumeMounts") or []
    if mounts and isinstance(own_mounts, list):
        container["volumeMounts"] = [*own_mounts, *(dict(m) for m in mounts)]
    container.setdefault("terminationMessagePolicy", DEFAULT_TERMINATION_MESSAGE_POLICY)
    return container
