"""What an integration may add to one replica's Pod, and how additions meet the template.

A decoration only adds: it never removes what the template says and never touches what identifies the
replica (name, namespace, the controlling owner, the identity labels and annotations), which
``build_pod`` sets last so that no integration, and no template, can forge them. Where a decoration and
the template name the same thing, the rule is written once here:

* env: the decorations' variables come first in every container, in registration order; a variable the
  user set in the template comes later and so wins (the kubelet keeps the last of duplicate names);
* labels, annotations, nodeSelector: the decoration's value wins over the template's for the same key;
* volumes: added after the template's; mounts are added to every container after its own;
* tolerations and scheduling gates: appended;
* hostname, subdomain, schedulerName: set when the template leaves them empty;
* avoided nodes: a required node anti-affinity (``kubernetes.io/hostname`` NotIn) added to every term
  of the template's required node affinity that matches some node, or a term of its own;
* restart rules: appended to the named container's ``restartPolicyRules`` (or every regular
  container's), which then gets a container ``restartPolicy``, the Pod's, if it has none;
* container memory: the one decoration that replaces what the template says, a retry's grown memory
  request and limit for the container it names (``taskset.decide.retry_effects``).

Values are plain JSON-shaped data, so a decision can carry them to the reconciler without any I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

EnvVar = tuple[str, str]


@dataclass(frozen=True)
class PodDecoration:
    """One integration's additions to one replica's Pod (see the module docstring for precedence)."""

    env: tuple[EnvVar, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    hostname: str | None = None
    subdomain: str | None = None
    volumes: tuple[Mapping[str, Any], ...] = ()
    volume_mounts: tuple[Mapping[str, Any], ...] = ()
    node_selector: Mapping[str, str] = field(default_factory=dict)
    tolerations: tuple[Mapping[str, Any], ...] = ()
    scheduling_gates: tuple[str, ...] = ()
    scheduler_name: str | None = None
    avoid_nodes: tuple[str, ...] = ()
    container_memory: tuple[tuple[str, str | None, str | None], ...] = ()  # (container, request, limit)
    # (container or None for every one, operator, exit codes): the kubelet restarts all the Pod's
    # containers in place when that container exits so (restartPolicyRules, RestartAllContainers).
    restart_rules: tuple[tuple[str | None, str, tuple[int, ...]], ...] = ()


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def decorate_metadata(metadata: dict[str, Any], decorations: Sequence[PodDecoration]) -> None:
    """Labels and annotations of ``decorations`` over the template's (``metadata`` is already a copy)."""
    labels = {key: value for d in decorations for key, value in d.labels.items()}
    annotations = {key: value for d in decorations for key, value in d.annotations.items()}
    if labels:
        metadata["labels"] = {**_dict(metadata.get("labels")), **labels}
    if annotations:
        metadata["annotations"] = {**_dict(metadata.get("annotations")), **annotations}


def decorate_spec(spec: dict[str, Any], decorations: Sequence[PodDecoration]) -> None:
    """The Pod-level fields of ``decorations`` over the template's (``spec`` is already a copy)."""
    for d in decorations:
        named = (("hostname", d.hostname), ("subdomain", d.subdomain), ("schedulerName", d.scheduler_name))
        for key, value in named:
            if value and not spec.get(key):
                spec[key] = value
        if d.node_selector:
            spec["nodeSelector"] = {**_dict(spec.get("nodeSelector")), **d.node_selector}
        if d.volumes:
            spec["volumes"] = [*_list(spec.get("volumes")), *(dict(v) for v in d.volumes)]
        if d.tolerations:
            spec["tolerations"] = [*_list(spec.get("tolerations")), *(dict(t) for t in d.tolerations)]
        if d.avoid_nodes:
            spec["affinity"] = _avoiding(_dict(spec.get("affinity")), d.avoid_nodes)
        if d.scheduling_gates:
            gates = [{"name": name} for name in d.scheduling_gates]
            spec["schedulingGates"] = [*_list(spec.get("schedulingGates")), *gates]


def container_env(decorations: Sequence[PodDecoration]) -> list[dict[str, str]]:
    """The variables every container gets in front of its own, in registration order."""
    return [{"name": name, "value": value} for d in decorations for name, value in d.env]


def container_mounts(decorations: Sequence[PodDecoration]) -> list[dict[str, Any]]:
    """The volume mounts every container gets after its own."""
    return [dict(mount) for d in decorations for mount in d.volume_mounts]


def _avoiding(affinity: dict[str, Any], nodes: Sequence[str]) -> dict[str, Any]:
    """``affinity`` (a copy is made) whose required node affinity also keeps the Pod off ``nodes``.

    Kubernetes ORs the terms and ANDs what one term requires (its ``matchExpressions`` and
    ``matchFields``), so (A or B) and not-X is (A and not-X) or (B and not-X): the expression joins
    every term. A term that requires nothing matches no node at all and is left so (joining it would
    let the Pod onto every other node); with no terms, the expression makes the only one."""
    avoid = {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": list(nodes)}
    node_affinity = dict(_dict(affinity.get("nodeAffinity")))
    required = dict(_dict(node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution")))
    terms = [_term_avoiding(term, avoid) for term in _list(required.get("nodeSelectorTerms"))]
    required["nodeSelectorTerms"] = terms or [{"matchExpressions": [avoid]}]
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required
    return {**affinity, "nodeAffinity": node_affinity}


def _term_avoiding(term: object, avoid: dict[str, Any]) -> object:
    if not isinstance(term, dict):
        return term  # no term at all: the API server's to refuse, unchanged
    expressions = _list(term.get("matchExpressions"))
    if not expressions and not _list(term.get("matchFields")):
        return term  # requires nothing, so matches no node: kept so
    return {**term, "matchExpressions": [*expressions, avoid]}


def container_memory(decorations: Sequence[PodDecoration]) -> dict[str, tuple[str | None, str | None]]:
    """Container name -> the (request, limit) memory that replaces the template's (None: unchanged)."""
    return {name: (request, limit) for d in decorations for name, request, limit in d.container_memory}


def with_memory(container: dict[str, Any], request: str | None, limit: str | None) -> dict[str, Any]:
    """``container`` (already a copy) with its memory request and limit replaced where given."""
    resources = dict(_dict(container.get("resources")))
    for key, value in (("requests", request), ("limits", limit)):
        if value is not None:
            resources[key] = {**_dict(resources.get(key)), "memory": value}
    container["resources"] = resources
    return container


def with_restart_rules(
    container: dict[str, Any], pod_policy: str, decorations: Sequence[PodDecoration]
) -> dict[str, Any]:
    """``container`` (already a copy) with the decorations' in-place restart rules that apply to it."""
    rules = [
        {"action": "RestartAllContainers", "exitCodes": {"operator": operator, "values": list(codes)}}
        for d in decorations
        for name, operator, codes in d.restart_rules
        if name in (None, container.get("name"))
    ]
    if rules:
        container.setdefault("restartPolicy", pod_policy)
        container["restartPolicyRules"] = [*_list(container.get("restartPolicyRules")), *rules]
    return container
