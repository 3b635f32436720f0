"""Node pools: simulated nodes of one shape (labels, taints, CPU), as ``python -m devcluster up --pool``
asks for them, so that a user can try node selectors, tolerations and quota flavors without writing a
Node by hand.

A pool is written as comma-separated fields, each ``field=value``::

    name=gpu,count=2,label=pool=gpu,taint=gpu:NoSchedule,cpu=4

``name`` (required) names the nodes ``<name>-0`` ... ``<name>-<count-1>``; ``count`` defaults to 1;
``label=KEY=VALUE`` and ``taint=KEY[=VALUE]:EFFECT`` (kubectl's taint syntax) may repeat; ``cpu`` is each
node's CPU capacity (default the plain nodes' size, so only a pool meant to be small is small). Commas
cannot appear in a label or taint value, so the form is unambiguous.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The plain nodes' prefix (``Cluster.create_nodes``); a pool of that name would collide with them.
PLAIN_PREFIX = "kwok-node"
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
MAX_COUNT = 100  # simulated nodes are cheap, but a typo of 10000 would make start-up crawl
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_NAME_PART = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?")
_CPU = re.compile(r"[0-9]+(\.[0-9]+)?m?")
FIELDS = ("name", "count", "label", "taint", "cpu")
EXAMPLE = "name=gpu,count=2,label=pool=gpu,taint=gpu:NoSchedule"


class PoolError(ValueError):
    """A node pool written wrongly; the message says which field and what is allowed."""


@dataclass(frozen=True)
class NodePool:
    name: str
    count: int = 1
    labels: tuple[tuple[str, str], ...] = ()
    taints: tuple[tuple[str, str, str], ...] = ()  # key, value ("" for none), effect
    cpu: str | None = None

    def node_names(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.count)]

    def taint_objects(self) -> tuple[dict[str, str], ...]:
        """The taints as a Node's ``spec.taints`` holds them."""
        return tuple(
            {"key": key, "effect": effect, **({"value": value} if value else {})}
            for key, value, effect in self.taints
        )

    def spec(self) -> str:
        """The written form ``parse_pool`` reads back into this pool."""
        fields = [f"name={self.name}", f"count={self.count}"]
        fields += [f"label={k}={v}" for k, v in self.labels]
        fields += [f"taint={k}{'=' + v if v else ''}:{e}" for k, v, e in self.taints]
        if self.cpu is not None:
            fields.append(f"cpu={self.cpu}")
        return ",".join(fields)

    def describe(self) -> str:
        """One line for the user: the nodes and what sets them apart."""
        parts = [f"{self.count} node{'s' if self.count != 1 else ''} {self.name}-0..{self.count - 1}"]
        parts += [f"label {k}={v}" for k, v in self.labels]
        parts += [f"taint {k}{'=' + v if v else ''}:{e}" for k, v, e in self.taints]
        if self.cpu is not None:
            parts.append(f"cpu {self.cpu}")
        return ", ".join(parts)


def _qualified_key(key: str, what: str) -> str:
    """A label or taint key: ``[prefix/]name``, name at most 63 characters (Kubernetes' rule)."""
    prefix, _, name = key.rpartition("/")
    if (
        not name
        or len(name) > 63
        or not _NAME_PART.fullmatch(name)
        or (prefix and (len(prefix) > 253 or not all(_DNS_LABEL.fullmatch(p) for p in prefix.split("."))))
        or "/" in prefix
    ):
        raise PoolError(f"{what} key {key!r} is not a valid Kubernetes key ([prefix/]name, name <= 63)")
    return key


def _value(value: str, what: str) -> str:
    if len(value) > 63 or not _LABEL_VALUE.fullmatch(value):
        raise PoolError(f"{what} value {value!r} is not a valid Kubernetes label value")
    return value


def _label(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep:
        raise PoolError(f"label {text!r} needs the form KEY=VALUE")
    return _qualified_key(key, "label"), _value(value, "label")


def _taint(text: str) -> tuple[str, str, str]:
    body, sep, effect = text.rpartition(":")
    if not sep or effect not in TAINT_EFFECTS:
        raise PoolError(f"taint {text!r} needs the form KEY[=VALUE]:EFFECT, EFFECT one of {TAINT_EFFECTS}")
    key, _, value = body.partition("=")
    return _qualified_key(key, "taint"), _value(value, "taint"), effect


def parse_pool(text: str) -> NodePool:
    """A pool from its written form (see the module's docstring); ``PoolError`` names what is wrong."""
    name: str | None = None
    count = 1
    cpu: str | None = None
    labels: list[tuple[str, str]] = []
    taints: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for field in text.split(","):
        key, sep, value = field.strip().partition("=")
        if not sep or key not in FIELDS:
            expected = ", ".join(f + "=" for f in FIELDS)
            raise PoolError(f"node pool field {field!r}: expected one of {expected}")
        if key in seen and key not in ("label", "taint"):
            raise PoolError(f"node pool field {key!r} given twice")
        seen.add(key)
        if key == "name":
            if len(value) > 50 or not _DNS_LABEL.fullmatch(value):
                raise PoolError(f"pool name {value!r} must be a DNS label of at most 50 characters")
            if value == PLAIN_PREFIX:
                raise PoolError(f"pool name {value!r} is the plain nodes' prefix; choose another")
            name = value
        elif key == "count":
            if not value.isdigit() or not 1 <= int(value) <= MAX_COUNT:
                raise PoolError(f"pool count {value!r} must be a whole number from 1 to {MAX_COUNT}")
            count = int(value)
        elif key == "cpu":
            if not _CPU.fullmatch(value) or float(value.rstrip("m") or 0) == 0:
                raise PoolError(f"pool cpu {value!r} must be a positive quantity such as 2 or 500m")
            cpu = value
        elif key == "label":
            labels.append(_label(value))
        else:
            taints.append(_taint(value))
    if name is None:
        raise PoolError(f"node pool {text!r} has no name=; for example {EXAMPLE}")
    return NodePool(name, count, tuple(labels), tuple(taints), cpu)


def check_pools(pools: tuple[NodePool, ...]) -> None:
    """Pools of one cluster must have distinct names (their nodes would otherwise be the same)."""
    names = [p.name for p in pools]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise PoolError(f"node pool names given more than once: {', '.join(twice)}")
