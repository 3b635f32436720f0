"""Shards by namespace hash: FNV-1a as the API server computes it, buckets, selectors, the client-side
filter and the bucket plan that moves the fewest buckets."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from informers.shards import HASH_SPACE, Buckets, ShardFilter, assign, fnv1a_64, selector_for

pytestmark = [pytest.mark.unit, pytest.mark.timeout(60)]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("", 0xCBF29CE484222325, id="the empty string hashes to the offset basis"),
        pytest.param("a", 0xAF63DC4C8601EC8C, id="the FNV reference vector for 'a'"),
        pytest.param("foobar", 0x85944171F73967E8, id="the FNV reference vector for 'foobar'"),
        # The next four were checked on kube-apiserver v1.36.3 with ShardedListAndWatch on: a list of
        # ConfigMaps and of TaskSets by shardRange(object.metadata.namespace, '0x0000000000000000',
        # '0x8000000000000000') held beta, gamma and delta and not alpha; by [0, 4) || [8, 10) (in units of
        # 2^60) alpha and gamma only.
        pytest.param("alpha", 0x8AC625BB85ED202B, id="namespace alpha, as the server placed it"),
        pytest.param("beta", 0x7627619B954620A7, id="namespace beta, as the server placed it"),
        pytest.param("gamma", 0x229176BD1F6BA96A, id="namespace gamma, as the server placed it"),
        pytest.param("delta", 0x52076675EC13A0C1, id="namespace delta, as the server placed it"),
        pytest.param("ns-é", fnv1a_64("ns-\u00e9"), id="a non-ASCII name hashes its UTF-8 bytes"),
    ],
)
def test_fnv1a_64_is_the_servers_hash(value: str, expected: int) -> None:
    assert fnv1a_64(value) == expected


def test_a_non_ascii_name_hashes_its_utf8_bytes_not_its_code_points() -> None:
    # 'é' is two bytes in UTF-8: hashing the code point 0xe9 as one byte would give another value.
    one_byte = ((0xCBF29CE484222325 ^ 0xE9) * 0x100000001B3) % HASH_SPACE
    assert fnv1a_64("\u00e9") != one_byte


@pytest.mark.parametrize(
    ("count", "held", "selector"),
    [
        pytest.param(
            2,
            [0],
            "shardRange(object.metadata.namespace, '0x0000000000000000', '0x8000000000000000')",
            id="the lower half, bounds padded to sixteen digits as the server's parser demands",
        ),
        pytest.param(
            4,
            [3],
            "shardRange(object.metadata.namespace, '0xc000000000000000', '0x10000000000000000')",
            id="the top bucket ends at 2^64, the one seventeen-digit bound the server accepts",
        ),
        pytest.param(
            16,
            [0, 1, 2, 3, 8, 9],
            "shardRange(object.metadata.namespace, '0x0000000000000000', '0x4000000000000000')"
            " || shardRange(object.metadata.namespace, '0x8000000000000000', '0xa000000000000000')",
            id="adjacent buckets merge into one range, the rest are OR-ed",
        ),
        pytest.param(4, [], "", id="no bucket, no selector"),
    ],
)
def test_selector_for_held_buckets(count: int, held: list[int], selector: str) -> None:
    assert selector_for(Buckets(count), held) == selector


@pytest.mark.parametrize("count", [1, 3, 7, 32, 1000])
def test_buckets_tile_the_hash_space(count: int) -> None:
    buckets = Buckets(count)
    edges = [buckets.bounds(b) for b in range(count)]
    assert edges[0][0] == 0
    assert edges[-1][1] == HASH_SPACE
    assert all(a[1] == b[0] for a, b in itertools.pairwise(edges))


@given(st.integers(min_value=0, max_value=HASH_SPACE - 1), st.integers(min_value=1, max_value=1024))
def test_a_hash_falls_in_exactly_the_bucket_whose_range_holds_it(value: int, count: int) -> None:
    buckets = Buckets(count)
    start, end = buckets.bounds(buckets.of_hash(value))
    assert start <= value < end


@given(st.text(max_size=63), st.sets(st.integers(min_value=0, max_value=31)))
def test_the_client_filter_agrees_with_the_selector_ranges(namespace: str, held: set[int]) -> None:
    buckets = Buckets(32)
    value = fnv1a_64(namespace)
    in_ranges = any(start <= value < end for start, end in buckets.ranges(held))
    assert ShardFilter(buckets, held).admits(namespace) == in_ranges


def test_a_bucket_count_out_of_bounds_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="bucket count"):
        Buckets(0)


members_strategy = st.sets(st.sampled_from(["r-a", "r-b", "r-c", "r-d", "r-e"]), min_size=1)
holders_strategy = st.dictionaries(
    st.integers(min_value=0, max_value=31), st.sampled_from(["r-a", "r-b", "r-c", "r-d", "r-e", "gone"])
)


def _fewest_moves(count: int, current: dict[int, str], members: set[str]) -> int:
    """The lower bound by brute force over which members get the extra bucket."""
    holding = {m: sum(1 for h in current.values() if h == m) for m in members}
    free = count - sum(holding.values())
    base, extra = divmod(count, len(members))
    best = None
    for favoured in itertools.combinations(sorted(members), extra):
        surplus = sum(max(0, holding[m] - (base + (m in favoured))) for m in members)
        best = surplus if best is None else min(best, surplus)
    assert best is not None
    return free + best


@settings(max_examples=300)
@given(holders_strategy, members_strategy)
def test_assign_balances_and_moves_the_fewest_buckets(current: dict[int, str], members: set[str]) -> None:
    count = 32
    plan = assign(count, current, members)
    assert set(plan) == set(range(count))
    assert set(plan.values()) <= members
    held = [sum(1 for h in plan.values() if h == m) for m in members]
    assert max(held) - min(held) <= 1
    moved = sum(1 for b in range(count) if current.get(b) != plan[b])
    assert moved == _fewest_moves(count, current, members)


@given(members_strategy, st.sampled_from(["r-f", "r-g"]))
def test_a_replica_joining_takes_buckets_only_from_those_above_the_new_quota(
    members: set[str], joining: str
) -> None:
    before = assign(32, {}, members)
    after = assign(32, before, members | {joining})
    moved = [b for b in range(32) if before[b] != after[b]]
    assert all(after[b] == joining for b in moved)
    assert len(moved) == sum(1 for h in after.values() if h == joining) >= 32 // (len(members) + 1)


@given(members_strategy)
def test_every_replica_computes_the_same_plan(members: set[str]) -> None:
    current = {b: sorted(members)[b % len(members)] for b in range(0, 32, 3)}
    assert assign(32, current, members) == assign(32, dict(reversed(list(current.items()))), list(members))


def test_no_member_means_no_holder() -> None:
    assert assign(32, {0: "r-a"}, []) == {}
