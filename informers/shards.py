"""Shards by namespace hash: the arithmetic the API server's sharded list and watch uses, and the buckets
a fleet of replicas splits between them.

Kubernetes 1.36 (KEP-5866, alpha gate ``ShardedListAndWatch``) filters a LIST or WATCH by the query
parameter ``shardSelector``, an OR of ``shardRange(object.metadata.namespace, '0x<16 hex>', '0x<16 hex>')``
terms over the 64-bit FNV-1a hash of the field's UTF-8 bytes (apimachinery ``pkg/sharding``:
``HashField`` is ``hash/fnv.New64a`` over ``[]byte(value)``). A range is ``[start, end)``; its bounds
must be written with exactly sixteen lowercase hex digits, except the exclusive top of the space, 2^64,
written ``0x10000000000000000`` (the server's parser refuses ``'0x0'``, naming the padded form). A list
the server filtered echoes the selector in ``metadata.shardInfo.selector``; v1.36.3 does so for built-in
resources only, while custom resources are filtered without the echo, so a client never relies on the
echo for correctness: it always runs the same filter itself (``ShardFilter``), which costs one cached
hash per namespace and makes the controller work on servers without the gate.

The hash space is cut into ``bucket_count`` equal buckets (a fixed number, so a bucket's range never
changes while replicas come and go); a replica holds some buckets, and its selector is the OR of their
ranges, adjacent ones merged. ``assign`` spreads the buckets over the live replicas, each holding
``B // N`` or one more, moving the fewest buckets from whoever holds them now (the Knative bucket
elector's and the controller-sharding ControllerRing's aim, by a deterministic plan instead of a ring).

Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

__all__ = [
    "DEFAULT_BUCKET_COUNT",
    "FNV_OFFSET_BASIS",
    "FNV_PRIME",
    "HASH_SPACE",
    "NAMESPACE_FIELD",
    "Buckets",
    "ShardFilter",
    "assign",
    "fnv1a_64",
    "quotas",
    "selector_for",
]

# 64-bit FNV-1a constants (Go's hash/fnv offset64 and prime64).
FNV_OFFSET_BASIS: Final = 0xCBF29CE484222325
FNV_PRIME: Final = 0x100000001B3
HASH_SPACE: Final = 1 << 64
# The field the shards are cut by: every object a TaskSet owns lives in its namespace, so one namespace's
# objects all fall in one bucket and a replica never needs another's cache to decide.
NAMESPACE_FIELD: Final = "object.metadata.namespace"
# 32 buckets split evenly over 1, 2, 4, 8, 16 or 32 replicas and within one bucket over any other count
# up to 32; more buckets would only add Leases to renew.
DEFAULT_BUCKET_COUNT: Final = 32
_MASK: Final = HASH_SPACE - 1


def fnv1a_64(value: str) -> int:
    """The 64-bit FNV-1a hash of ``value``'s UTF-8 bytes, as the API server computes it."""
    h = FNV_OFFSET_BASIS
    for byte in value.encode("utf-8"):
        h = ((h ^ byte) * FNV_PRIME) & _MASK
    return h


def _hex(bound: int) -> str:
    """A range bound as the server's parser wants it: 16 hex digits, or 17 for the top of the space."""
    return f"0x{bound:016x}"


@dataclass(frozen=True)
class Buckets:
    """The hash space cut into ``count`` equal buckets; bucket ``i`` is ``[i * 2^64 / count, (i+1) ...)``."""

    count: int = DEFAULT_BUCKET_COUNT

    def __post_init__(self) -> None:
        if not 1 <= self.count <= 1024:
            raise ValueError(f"bucket count must be between 1 and 1024, got {self.count}")

    def bounds(self, bucket: int) -> tuple[int, int]:
        """``[start, end)`` of one bucket in the 64-bit hash space."""
        if not 0 <= bucket < self.count:
            raise ValueError(f"bucket {bucket} is outside 0..{self.count - 1}")
        return bucket * HASH_SPACE // self.count, (bucket + 1) * HASH_SPACE // self.count

    def of_hash(self, value: int) -> int:
        """The bucket whose range holds ``value`` (the inverse of ``bounds``, exact for any count)."""
        bucket = value * self.count // HASH_SPACE
        # Integer division of the bounds can put a boundary one off; correct it against ``bounds``.
        while value < self.bounds(bucket)[0]:
            bucket -= 1
        while value >= self.bounds(bucket)[1]:
            bucket += 1
        return bucket

    def of_namespace(self, namespace: str) -> int:
        return self.of_hash(fnv1a_64(namespace))

    def ranges(self, buckets: Iterable[int]) -> list[tuple[int, int]]:
        """The ranges of ``buckets``, adjacent ones merged, in ascending order."""
        merged: list[tuple[int, int]] = []
        for bucket in sorted(set(buckets)):
            start, end = self.bounds(bucket)
            if merged and merged[-1][1] == start:
                merged[-1] = (merged[-1][0], end)
            else:
                merged.append((start, end))
        return merged


def selector_for(buckets: Buckets, held: Iterable[int], field: str = NAMESPACE_FIELD) -> str:
    """The ``shardSelector`` of a set of buckets: an OR of ``shardRange`` terms; ``""`` for none.

    An empty set has no selector the server accepts (it refuses an empty one); a replica holding no
    bucket must not list at all, which the caller decides.
    """
    return " || ".join(
        f"shardRange({field}, '{_hex(start)}', '{_hex(end)}')" for start, end in buckets.ranges(held)
    )


class ShardFilter:
    """Whether an object's namespace falls in the held buckets: the client-side twin of the selector.

    Namespaces are few and their hashes are asked for on every event, so each is hashed once
    (bounded: a cluster with more namespaces than the cap simply hashes again).
    """

    CACHE_LIMIT: Final = 65536

    def __init__(self, buckets: Buckets, held: Iterable[int]) -> None:
        self.buckets: Final = buckets
        self.held: Final = frozenset(held)
        self._cache: dict[str, int] = {}

    def bucket(self, namespace: str) -> int:
        bucket = self._cache.get(namespace)
        if bucket is None:
            bucket = self.buckets.of_namespace(namespace)
            if len(self._cache) < self.CACHE_LIMIT:
                self._cache[namespace] = bucket
        return bucket

    def admits(self, namespace: str) -> bool:
        return self.bucket(namespace) in self.held


def quotas(
    bucket_count: int, members: Iterable[str], holding: Mapping[str, int] | None = None
) -> dict[str, int]:
    """How many buckets each member should hold: ``B // N``, and one more for ``B % N`` of them.

    The extra buckets go to the members holding the most now (so a balanced fleet stays as it is), ties
    broken by name: every replica computes the same plan from the same observation.
    """
    ordered = sorted(set(members))
    if not ordered:
        return {}
    held = holding or {}
    base, extra = divmod(bucket_count, len(ordered))
    favoured = set(sorted(ordered, key=lambda member: (-held.get(member, 0), member))[:extra])
    return {member: base + (1 if member in favoured else 0) for member in ordered}


def assign(bucket_count: int, current: Mapping[int, str], members: Iterable[str]) -> dict[int, str]:
    """A holder for every bucket, among ``members``, moving the fewest buckets from ``current``.

    ``current`` maps a bucket to its holder now (buckets absent or held by a non-member are free). Every
    member keeps what it holds up to its quota (its lowest-numbered buckets first), and the free and the
    surplus buckets go, lowest first, to the members below their quota, in name order. The quotas favour
    the members holding most, so a bucket moves only if its holder left or holds more than any balanced
    plan allows: the result is minimal (the property tests check it against the lower bound).
    With no member, no bucket has a holder.
    """
    member_set = set(members)
    holding: dict[str, int] = {}
    for bucket, holder in current.items():
        if 0 <= bucket < bucket_count and holder in member_set:
            holding[holder] = holding.get(holder, 0) + 1
    quota = quotas(bucket_count, member_set, holding)
    if not quota:
        return {}
    plan: dict[int, str] = {}
    kept: dict[str, int] = dict.fromkeys(quota, 0)
    for bucket in range(bucket_count):
        owner = current.get(bucket)
        if owner is not None and owner in quota and kept[owner] < quota[owner]:
            plan[bucket] = owner
            kept[owner] += 1
    hungry = (member for member in sorted(quota) for _ in range(quota[member] - kept[member]))
    for bucket in range(bucket_count):
        if bucket not in plan:
            plan[bucket] = next(hungry)
    return plan
