"""The event correlator (client-go's, for TaskSets): similar events combined, repeats counted on the Event
already sent, a token bucket per TaskSet, and a batch's writes to one Event folded into one."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from taskset.runtime.event_correlator import (
    AGGREGATE_AFTER,
    AGGREGATE_WINDOW,
    COMBINED_PREFIX,
    SPAM_BURST,
    SPAM_REFILL_SECONDS,
    Correlator,
    EventTarget,
    Occurrence,
)

START = datetime(2026, 1, 1, tzinfo=UTC)


def target(name: str = "job") -> EventTarget:
    return EventTarget(name, "ns", f"uid-{name}")


def occurrence(
    message: str, at: float = 0.0, *, reason: str = "ReplicaFailure", name: str = "job"
) -> Occurrence:
    return Occurrence(target(name), "Warning", reason, message, at, START + timedelta(seconds=at))


@dataclass(frozen=True)
class Step:
    message: str
    at: float
    create: bool  # a new Event, else a count update of one already sent
    count: int
    combined: bool  # the message is the combined one
    same_as: int | None = None  # the step whose Event this one updates


CASES = [
    pytest.param(
        [("a", 0), ("a", 1), ("a", 2)],
        [Step("a", 0, True, 1, False), Step("a", 1, False, 2, False, 0), Step("a", 2, False, 3, False, 0)],
        id="a repeat raises the count of the Event already sent",
    ),
    pytest.param(
        [("a", 0), ("b", 1), ("a", 2)],
        [Step("a", 0, True, 1, False), Step("b", 1, True, 1, False), Step("a", 2, False, 2, False, 0)],
        id="another message is another Event until enough are similar",
    ),
    pytest.param(
        [(f"m{i}", i) for i in range(AGGREGATE_AFTER + 2)],
        [Step(f"m{i}", i, True, 1, False) for i in range(AGGREGATE_AFTER - 1)]
        + [
            Step(f"m{AGGREGATE_AFTER - 1}", AGGREGATE_AFTER - 1, True, 1, True),
            Step(f"m{AGGREGATE_AFTER}", AGGREGATE_AFTER, False, 2, True, AGGREGATE_AFTER - 1),
            Step(f"m{AGGREGATE_AFTER + 1}", AGGREGATE_AFTER + 1, False, 3, True, AGGREGATE_AFTER - 1),
        ],
        id="the tenth similar message starts one combined Event, which the next ones count on",
    ),
    pytest.param(
        [(f"m{i}", i * (AGGREGATE_WINDOW + 1)) for i in range(AGGREGATE_AFTER + 1)],
        [Step(f"m{i}", i * (AGGREGATE_WINDOW + 1), True, 1, False) for i in range(AGGREGATE_AFTER + 1)],
        id="similar messages further apart than the window are never combined",
    ),
]


@pytest.mark.parametrize(("said", "expected"), CASES)
def test_aggregation_and_counting(said: list[tuple[str, float]], expected: list[Step]) -> None:
    correlator = Correlator(burst=1000)
    writes = [correlator.correlate(occurrence(message, at)) for message, at in said]
    for write, step in zip(writes, expected, strict=True):
        assert write.create == step.create, step
        assert write.count == step.count, step
        assert write.message == (COMBINED_PREFIX + step.message if step.combined else step.message), step
        assert write.last == (START + timedelta(seconds=step.at)).strftime("%Y-%m-%dT%H:%M:%SZ")
        if step.same_as is not None:
            assert write.name == writes[step.same_as].name
            assert write.first == writes[step.same_as].first
    assert len({w.name for w in writes}) == sum(step.create for step in expected)


def test_other_taskset_type_or_reason_is_another_event() -> None:
    correlator = Correlator()
    first = correlator.correlate(occurrence("a"))
    assert correlator.correlate(occurrence("a", name="other")).create
    assert correlator.correlate(occurrence("a", reason="PodCreationFailed")).create
    normal = Occurrence(target(), "Normal", "ReplicaFailure", "a", 0.0, START)
    assert correlator.correlate(normal).create
    assert not correlator.correlate(occurrence("a")).create
    assert correlator.correlate(occurrence("a")).name == first.name


def test_the_spam_filter_allows_a_burst_then_one_write_per_refill() -> None:
    correlator = Correlator()
    assert all(correlator.admit(target(), 0.0) for _ in range(SPAM_BURST))
    assert not correlator.admit(target(), 0.0)
    assert correlator.admit(target("other"), 0.0), "each TaskSet has its own bucket"
    assert not correlator.admit(target(), SPAM_REFILL_SECONDS - 1)
    assert correlator.admit(target(), SPAM_REFILL_SECONDS)
    assert not correlator.admit(target(), SPAM_REFILL_SECONDS)


def test_a_batch_folds_the_writes_to_one_event_into_one() -> None:
    correlator = Correlator()
    batch = correlator.correlate_batch(
        [occurrence("a", 0), occurrence("b", 1), occurrence("a", 2), occurrence("a", 3)], 3
    )
    assert [(w.message, w.count, w.create) for w in batch.writes] == [("a", 3, True), ("b", 1, True)]
    assert batch.coalesced == 2
    assert batch.writes[0].last == "2026-01-01T00:00:03Z"
    later = correlator.correlate_batch([occurrence("a", 4)], 4)
    assert [(w.name, w.count, w.create) for w in later.writes] == [(batch.writes[0].name, 4, False)]


def test_a_filtered_write_keeps_its_count_for_the_next() -> None:
    correlator = Correlator(burst=1, refill_seconds=100)
    assert len(correlator.correlate_batch([occurrence("a", 0)], 0).writes) == 1
    held = correlator.correlate_batch([occurrence("a", 1)], 1)
    assert (held.writes, held.filtered) == ([], 1)
    after = correlator.correlate_batch([occurrence("a", 101)], 101)
    assert [(w.count, w.create) for w in after.writes] == [(3, False)], "the held occurrence is counted"


@pytest.mark.parametrize("reason", ["TaskSet Failed", "TaskSet Succeeded"])
def test_the_taskset_end_is_never_held_back(reason: str) -> None:
    """A TaskSet that spent its budget on failures still says how it ended, once."""
    correlator = Correlator(burst=2, refill_seconds=1000)
    spent = correlator.correlate_batch([occurrence(f"fail {i}", i) for i in range(5)], 5)
    assert (len(spent.writes), spent.filtered) == (2, 3)
    end = correlator.correlate_batch([occurrence("ended", 6, reason=reason), occurrence("x", 6)], 6)
    assert [(w.reason, w.create) for w in end.writes] == [(reason, True)]
    assert end.filtered == 1


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="burst"):
        Correlator(burst=0)


# (TaskSet, message index, seconds since the previous occurrence), in order
OCCURRENCES = st.lists(
    st.tuples(
        st.sampled_from("ab"),
        st.integers(0, 30),
        st.one_of(st.just(0.0), st.floats(0, 5), st.floats(0, 2 * SPAM_REFILL_SECONDS)),
    ),
    max_size=300,
)


@settings(max_examples=150, deadline=None)
@given(OCCURRENCES, st.integers(1, 40))
@example([("a", 0, 0.0)] * 60, 1)  # a burst of one repeat, each alone in its batch
@example([("ab"[i % 2], i % 13, 2.0) for i in range(300)], 3)  # two TaskSets, similar and repeated
def test_never_more_writes_than_the_bucket_allows(said: list[tuple[str, int, float]], batch: int) -> None:
    """Whatever is recorded, however batched: in any span of time, the writes about one TaskSet are at
    most the burst plus one per refill period; and the counts the API server holds add up to what was
    recorded, once every write went out."""
    correlator = Correlator()
    at, occurrences = 0.0, []
    for name, message, gap in said:
        at += gap
        occurrences.append(occurrence(f"m{message}", at, name=name))
    sent, filtered = [], 0
    for start in range(0, len(occurrences), batch):
        chunk = occurrences[start : start + batch]
        result = correlator.correlate_batch(chunk, chunk[-1].at)
        sent += [(w, chunk[-1].at) for w in result.writes]
        filtered += result.filtered
    for name in "ab":
        times = sorted(at for w, at in sent if w.target.name == name)
        for i, begin in enumerate(times):
            for j in range(i, len(times)):
                allowed = SPAM_BURST + (times[j] - begin) / SPAM_REFILL_SECONDS
                assert j - i + 1 <= allowed + 1e-9, (name, begin, times[j], j - i + 1)
        latest: dict[str, int] = {}
        for write, _ in sent:
            if write.target.name == name:
                latest[write.name] = write.count
        recorded = sum(1 for o in occurrences if o.target.name == name)
        assert sum(latest.values()) <= recorded
        if not filtered:
            assert sum(latest.values()) == recorded, "with no write held back, every occurrence is counted"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=60))
def test_a_repeat_updates_the_count(messages: list[int]) -> None:
    """Identical occurrences (no aggregation with four messages) each raise their one Event's count."""
    correlator = Correlator(burst=1000)
    names: dict[int, str] = {}
    for i, m in enumerate(messages):
        write = correlator.correlate(occurrence(f"m{m}", float(i)))
        assert write.create == (m not in names)
        names.setdefault(m, write.name)
        assert write.name == names[m]
        assert write.count == messages[: i + 1].count(m)
