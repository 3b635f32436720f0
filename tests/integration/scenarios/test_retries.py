"""Scenarios S15-S22 (spec 14.1): replica and TaskSet retry policies, and attempts that never overlap."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from devcluster import Cluster
from tests.builders import TaskSetBuilder, pod_template
from tests.integration.harness import (
    ObjectLog,
    Outcome,
    PodEntry,
    PodFacts,
    Recorder,
    SlowTermination,
    TaskSets,
    eventually,
    exits,
    never_overlapping,
    replica,
    role_status,
    run_forever,
    watching,
)
from tests.integration.scenarios.steps import Run, fails_first

# The pod log's times are when the test's watch saw each event, not when the API server acted; a gap
# measured between two of them may be short by the difference of two watch latencies.
WATCH_SLACK = 0.5


@pytest.fixture
def configmaps(cluster: Cluster, namespace: str) -> Iterator[ObjectLog]:
    with watching(cluster, namespace, "configmaps") as log:
        yield log


@dataclass
class Appearance:
    name: str
    uid: str
    created: float
    gone: float | None


def appearances(log: ObjectLog, prefix: str) -> list[Appearance]:
    """Each object of the log whose name starts with ``prefix``: when it was first and last seen."""
    found: dict[str, Appearance] = {}
    for version in log.versions():
        if not version.name.startswith(prefix):
            continue
        entry = found.setdefault(version.uid, Appearance(version.name, version.uid, version.time, None))
        if version.kind == "DELETED":
            entry.gone = version.time
    return sorted(found.values(), key=lambda e: e.created)


def named(entries: list[PodEntry], name: str) -> list[PodEntry]:
    return sorted((e for e in entries if e.name == name), key=lambda e: e.created)


def attempts(entries: list[PodEntry]) -> list[tuple[str, str]]:
    return [(e.taskset_attempt, e.replica_attempt) for e in entries]


def test_s15_replica_retries_until_exhausted_delay_honoured_never_two_pods(
    recorder: Recorder, run: Run
) -> None:
    status = run(TaskSetBuilder("rretry").role("r", 1, retry=(True, 2, 5)), script=lambda pod: exits(1))
    log = named(recorder.pod_log(), "rretry-r-0")
    assert len(recorder.pod_log()) == 3
    assert attempts(log) == [("0", "0"), ("0", "1"), ("0", "2")]
    assert never_overlapping(log)
    for previous, following in itertools.pairwise(log):
        assert previous.gone is not None
        gap = following.created - previous.gone
        assert gap >= 5 - WATCH_SLACK, (
            f"{following.replica_attempt} created {gap:.2f}s after the previous was gone"
        )
    done = replica(status, "r", 0)
    assert done["totalRetriedCount"] == 2
    assert done["phase"] == "TaskRoleReplicaCompleted"
    assert done["terminatedInfo"]["exitCode"] == 1
    assert status["state"] == "Failed"


def test_s16_replica_retry_succeeds(recorder: Recorder, run: Run) -> None:
    status = run(TaskSetBuilder("rretryok").role("r", 1, retry=(True, 2, 0)), script=fails_first)
    log = named(recorder.pod_log(), "rretryok-r-0")
    assert len(recorder.pod_log()) == 2
    assert attempts(log) == [("0", "0"), ("0", "1")]
    assert never_overlapping(log)
    done = replica(status, "r", 0)
    assert done["totalRetriedCount"] == 1
    assert done["terminatedInfo"]["exitCode"] == 0
    assert role_status(status, "r")["state"] == "Succeeded"
    assert status["state"] == "Succeeded"


def test_s17_retry_false_disables_retries_whatever_max_retry_count(recorder: Recorder, run: Run) -> None:
    status = run(
        TaskSetBuilder("retryoff").role("r", 1, retry={"retry": False, "maxRetryCount": 3}),
        script=lambda pod: exits(1),
    )
    assert status["state"] == "Failed"
    assert len(recorder.pod_log()) == 1
    assert replica(status, "r", 0)["totalRetriedCount"] == 0


def test_s18_retry_true_max_retry_count_zero_means_no_retry_at_both_levels(
    recorder: Recorder, run: Run, configmaps: ObjectLog
) -> None:
    status = run(
        TaskSetBuilder("zeroretry").retry(True, 0, 0).role("r", 1, retry=(True, 0, 0)),
        script=lambda pod: exits(1),
    )
    assert status["state"] == "Failed"
    assert status["totalRetriedCount"] == 0
    assert len(recorder.pod_log()) == 1
    assert [e.name for e in appearances(configmaps, "c-zeroretry-")] == ["c-zeroretry-0"]


def test_s19_taskset_retry_until_exhausted(
    ts: TaskSets, recorder: Recorder, run: Run, configmaps: ObjectLog
) -> None:
    status = run(TaskSetBuilder("tsretry").retry(True, 1, 10).role("r", 1), script=lambda pod: exits(1))
    assert status["state"] == "Failed"
    assert status["totalRetriedCount"] == 1

    units = appearances(configmaps, "c-tsretry-")
    assert [e.name for e in units] == ["c-tsretry-0", "c-tsretry-1"]
    assert units[0].gone is not None
    gap = units[1].created - units[0].gone
    assert gap >= 10 - WATCH_SLACK, f"c-tsretry-1 created {gap:.2f}s after c-tsretry-0 was gone"

    log = named(recorder.pod_log(), "tsretry-r-0")
    assert attempts(log) == [("0", "0"), ("1", "0")]
    assert never_overlapping(log)

    eventually(
        lambda: ("Retry Taskset", "Current Retried Count:0") in ts.events("tsretry"),
        30,
        "event Retry Taskset / Current Retried Count:0",
    )

    # Right after the retry starts: the first status showing totalRetriedCount 1.
    history = recorder.history("tsretry")
    retried = next(s for s in history if s.get("totalRetriedCount") == 1)
    first = replica(retried, "r", 0)
    assert first["totalRetriedCount"] == 0
    assert not first.get("podName") or (
        first["podName"] == "tsretry-r-0" and first["podUID"] != log[0].uid
    ), first


def test_s20_taskset_retry_succeeds_start_at_kept(
    recorder: Recorder, run: Run, configmaps: ObjectLog
) -> None:
    status = run(TaskSetBuilder("tsretryok").retry(True, 2, 0).role("r", 1), script=fails_first)
    assert status["state"] == "Succeeded"
    assert status["totalRetriedCount"] == 1
    attempt0 = [
        s for s in recorder.history("tsretryok") if s.get("totalRetriedCount") == 0 and s.get("startAt")
    ]
    assert attempt0, "startAt never observed during attempt 0"
    assert status["startAt"] == attempt0[0]["startAt"]
    units = [e for e in appearances(configmaps, "c-tsretryok-") if e.name == "c-tsretryok-1"]
    assert len(units) == 1
    assert status["controlUnitUID"] == units[0].uid


def test_s21_both_retry_levels_together(recorder: Recorder, run: Run) -> None:
    status = run(
        TaskSetBuilder("both").retry(True, 1, 0).role("r", 1, retry=(True, 1, 0)), script=lambda pod: exits(1)
    )
    assert status["state"] == "Failed"
    log = named(recorder.pod_log(), "both-r-0")
    assert len(recorder.pod_log()) == 4
    assert attempts(log) == [("0", "0"), ("0", "1"), ("1", "0"), ("1", "1")]
    assert never_overlapping(log)


# S22 uses terminationGracePeriodSeconds 15 and role b `sleep 5; exit 1`; shrunk to 6 s and 2 s.
S22_GRACE = 6


def test_s22_attempts_never_overlap(ts: TaskSets, recorder: Recorder) -> None:
    slow = SlowTermination(ts, recorder, S22_GRACE).start()

    def workload(pod: PodFacts) -> Outcome:
        if pod.role == "a":  # trap '' TERM; sleep 3600
            slow.hold(pod)
            return run_forever()
        return exits(1, after=2)

    recorder.script = workload
    try:
        ts.create(
            TaskSetBuilder("overlap")
            .retry(True, 1, 0)
            .role(
                "a",
                2,
                template=pod_template("trap '' TERM; sleep 3600", terminationGracePeriodSeconds=S22_GRACE),
            )
            .role("b", 1)
            .obj()
        )
        status = ts.final("overlap")
    finally:
        slow.stop()
    assert status["totalRetriedCount"] == 1
    log = recorder.pod_log()
    first = [e for e in log if e.taskset_attempt == "0"]
    second = [e for e in log if e.taskset_attempt == "1"]
    assert (
        sorted(e.name for e in first)
        == sorted(e.name for e in second)
        == [
            "overlap-a-0",
            "overlap-a-1",
            "overlap-b-0",
        ]
    )
    # The simulation did hold the role-a Pods of attempt 0 terminating for the grace period.
    for entry in first:
        if entry.name.startswith("overlap-a-"):
            assert entry.gone is not None and entry.deletion_seen is not None
            assert entry.gone - entry.deletion_seen >= S22_GRACE - WATCH_SLACK, entry
    last_gone = max(e.gone for e in first if e.gone is not None)
    assert all(e.gone is not None for e in first)
    for entry in second:
        assert entry.created > last_gone, (
            f"{entry.name} (1, {entry.replica_attempt}) created before attempt 0 was gone"
        )
