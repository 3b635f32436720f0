"""Live membership: an elastic TaskSet's replicas learn who their peers are now, not
only who they were when their Pod was made.

A TaskSet is elastic when a role declares ``minReplicas`` or ``maxReplicas`` or ``spec.scale`` names
one (``taskset.api.scale.elastic_roles``). It then owns one ConfigMap for its whole life,
``<taskset>-membership``, mounted read-only at ``/etc/taskset/membership`` in every container of every
Pod (``TASKSET_MEMBERSHIP_DIR`` says where), with two files:

* ``membership.json``: ``{"generation": G, "attempt": A, "roles": {"<role>": {"replicas": N,
  "minReplicas": L, "maxReplicas": H, "peers": [...], "instances": [...]}}}``, each role in declared
  order with its current replicas; ``peers`` are their DNS names when the TaskSet has them
  (``spec.network``), else their Pod names, in index order; ``instances[i]`` is replica i's attempt
  number (its retries), so a peer that was replaced shows as a new instance under the same name;
* ``generation``: G alone, for a cheap poll.

The controller writes it over whenever that content changes (a scale, a replica retry, a new TaskSet
attempt), and G then goes up by one (``taskset.decide.membership_generation``): a process watches the
file (the kubelet swaps a ConfigMap volume's files atomically, within its sync period) and re-reads it when G
moves. The environment variables injected at a Pod's creation (``peer_env``, ``framework_env``) stay as
they were then: a Pod made before a scale still says the old count there; the file says the new one.

A TaskSet with no elastic role gets neither the ConfigMap nor the mount: its peers change only by
retries under the same names, and a 10,000-replica TaskSet is spared a 600 KB object rewritten on every
retry.

The API server refuses a ConfigMap whose data exceeds 1 MiB (``CONFIG_MAP_DATA_MAX``), which peers'
DNS names reach at some ten thousand replicas across the elastic TaskSet's roles; no bound on the spec
can say when, since it depends on the names. A content that would not fit is therefore not published:
its generation is not allocated, the file keeps the last content that fitted, and the status
(``status.membership.refused``) and a Warning event say why (``taskset.decide.membership_generation``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from taskset.api.names import pod_name
from taskset.api.scale import elastic_roles
from taskset.api.spec import Role
from taskset.api.status import TaskSetStatus
from taskset.integrations.base import Attempt, DecoratesPods, OwnsObjects
from taskset.objects.decorations import PodDecoration
from taskset.objects.network import replica_fqdn, service_name
from taskset.objects.owned import CONFIGMAPS, OwnedObject, Scope
from taskset.objects.pods import PodIdentity

MEMBERSHIP_NAME_FORMAT: Final = "{taskset}-membership"
MEMBERSHIP_DIR: Final = "/etc/taskset/membership"
MEMBERSHIP_FILE: Final = "membership.json"
GENERATION_FILE: Final = "generation"
MEMBERSHIP_VOLUME: Final = "taskset-membership"
ENV_MEMBERSHIP_DIR: Final = "TASKSET_MEMBERSHIP_DIR"
# The most a ConfigMap's data may hold, its values' bytes summed, as the API server validates it.
CONFIG_MAP_DATA_MAX: Final = 1024 * 1024


def membership_name(taskset: str) -> str:
    return MEMBERSHIP_NAME_FORMAT.format(taskset=taskset)


def is_elastic(attempt: Attempt) -> bool:
    return bool(elastic_roles(attempt.spec.raw))


def membership_content(attempt: Attempt) -> dict[str, Any]:
    """What the membership says but its generation: the attempt and, per role, its current replicas."""
    service = service_name(attempt.taskset, attempt.spec.raw)
    status = attempt.status
    return {
        "attempt": attempt.attempt,
        "roles": {role.name: _role(attempt, role, service, status) for role in attempt.spec.roles},
    }


def _role(attempt: Attempt, role: Role, service: str | None, status: TaskSetStatus | None) -> dict[str, Any]:
    def peer(index: int) -> str:
        if service is None:
            return pod_name(attempt.taskset, role.name, index)
        return replica_fqdn(attempt.taskset, role.name, index, service, attempt.namespace)

    known = status.role(role.name) if status is not None else None
    replicas = known.replicas if known is not None else []
    instances = [
        replicas[i].total_retried_count if i < len(replicas) and not replicas[i].stopped else 0
        for i in range(role.replicas)
    ]
    return {
        "replicas": role.replicas,
        "minReplicas": role.min_replicas,
        "maxReplicas": role.max_replicas,
        "peers": [peer(index) for index in range(role.replicas)],
        "instances": instances,
    }


def content_digest(content: Mapping[str, Any]) -> str:
    """What the generation follows: sha256 of the content as canonical JSON."""
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def membership_data(content: Mapping[str, Any], generation: int) -> dict[str, str]:
    """The ConfigMap's data: the JSON file (generation first) and the generation alone."""
    document = {"generation": generation, **content}
    return {MEMBERSHIP_FILE: json.dumps(document, separators=(",", ":")), GENERATION_FILE: str(generation)}


def data_size(data: Mapping[str, str]) -> int:
    """What the API server counts of a ConfigMap's data against ``CONFIG_MAP_DATA_MAX``: its values'
    bytes."""
    return sum(len(value.encode()) for value in data.values())


class Membership(OwnsObjects, DecoratesPods):
    name = "membership"
    updates_owned = True

    def owned_objects(self, attempt: Attempt) -> Sequence[OwnedObject]:
        if not is_elastic(attempt):
            return ()
        recorded = attempt.status.membership if attempt.status is not None else None
        content = membership_content(attempt)
        data = membership_data(content, recorded.generation if recorded else 0)
        # Followed only while the content is the one the status allocated its generation to: one it
        # refused (too large) is never written, so no generation shows two contents.
        follows = recorded is not None and recorded.digest == content_digest(content)
        # A content whose generation is not allocated (not yet, or refused) declares nothing once the
        # status has a generation: kept as declared under the old generation, one generation would show
        # two contents.
        body = {"data": data} if follows or recorded is None else {}
        name = membership_name(attempt.taskset)
        return (OwnedObject(CONFIGMAPS, name, Scope.TASKSET, body, self.name, updates=follows),)

    def decorate_pod(self, attempt: Attempt, role: Role, identity: PodIdentity) -> PodDecoration | None:
        if not is_elastic(attempt):
            return None
        return PodDecoration(
            env=((ENV_MEMBERSHIP_DIR, MEMBERSHIP_DIR),),
            volumes=({"name": MEMBERSHIP_VOLUME, "configMap": {"name": membership_name(attempt.taskset)}},),
            volume_mounts=({"name": MEMBERSHIP_VOLUME, "mountPath": MEMBERSHIP_DIR, "readOnly": True},),
        )
