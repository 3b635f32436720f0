"""The profile summary of ``python -m bench --profile``: self and inclusive shares from collapsed stacks."""

from __future__ import annotations

from bench.profile import summarise

STACKS = [
    "run (threading.py:982);reconcile (reconciler.py:150);decide (decide.py:230) 6",
    "run (threading.py:982);reconcile (reconciler.py:160);request (kube.py:140) 3",
    "run (threading.py:982);_watch (informer.py:40) 1",
    "garbage without a count",
]


def test_self_share_is_the_leaf_frame_only() -> None:
    summary = summarise(STACKS)
    assert summary["samples"] == 10
    assert summary["self"] == [
        ("decide (decide.py)", 0.6),
        ("request (kube.py)", 0.3),
        ("_watch (informer.py)", 0.1),
    ]


def test_inclusive_share_counts_a_function_once_per_stack_whatever_the_line() -> None:
    inclusive = dict(summarise(STACKS)["inclusive"])
    assert inclusive["run (threading.py)"] == 1.0
    assert inclusive["reconcile (reconciler.py)"] == 0.9  # two lines of one function, one entry


def test_recursion_is_not_counted_twice() -> None:
    summary = summarise(["f (m.py:1);f (m.py:2);g (m.py:3) 4"])
    assert dict(summary["inclusive"]) == {"f (m.py)": 1.0, "g (m.py)": 1.0}


def test_no_samples_gives_empty_rankings() -> None:
    assert summarise([]) == {"samples": 0, "self": [], "inclusive": []}


def test_top_bounds_the_rankings() -> None:
    lines = [f"f{i} (m.py:1) 1" for i in range(30)]
    assert len(summarise(lines, top=5)["self"]) == 5
