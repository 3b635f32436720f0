"""The bench's controller CPU by thread: the kernel's count per thread, named from py-spy's dump."""

from __future__ import annotations

import os
import threading
import time

import pytest

from bench import report
from bench.threads import UNNAMED, by_group, cpu_by_thread, cpu_now, cpu_since, group, parse_dump

DUMP = """Process 31917: /work/main/.venv/bin/python -m taskset.daemon.main --kubeconfig=x
Python v3.11.7 (/root/.pyenv/versions/3.11.7/bin/python3.11)

Thread 31917 (idle): "MainThread"
    wait (threading.py:324)
Thread 31924 (active): "handler-pods.v1 labels=TaskSet-1"
    _run (informers/listener.py:150)
Thread 31930 (idle): "worker-3"
    get (workqueue/queue.py:80)
Thread 31931 (active+gil): "worker-4"
    reconcile (taskset/runtime/reconciler.py:205)
Thread 31940 (idle): "pod-action_12"
    _worker (concurrent/futures/thread.py:81)
"""


def test_the_dump_names_each_thread_by_its_native_id() -> None:
    assert parse_dump(DUMP) == {
        31917: "MainThread",
        31924: "handler-pods.v1 labels=TaskSet-1",
        31930: "worker-3",
        31931: "worker-4",
        31940: "pod-action_12",
    }


@pytest.mark.parametrize(
    ("name", "grouped"),
    [
        ("worker-3", "worker"),
        ("pod-action_12", "pod-action"),
        ("handler-pods.v1 labels=TaskSet-1", "handler-pods.v1 labels=TaskSet"),
        ("event-recorder", "event-recorder"),
        ("MainThread", "MainThread"),
    ],
)
def test_a_pool_thread_counts_under_its_pool(name: str, grouped: str) -> None:
    assert group(name) == grouped


def test_groups_add_their_threads_spent_seconds_most_first() -> None:
    names = parse_dump(DUMP)
    before = {31917: 1.0, 31924: 2.0, 31930: 3.0, 31931: 0.5}
    after = {31917: 1.0, 31924: 2.25, 31930: 4.0, 31931: 2.5, 31940: 0.75, 40000: 0.3}
    # the workers 1.0 + 2.0; the pool thread started meanwhile counts from zero; an unnamed one has its
    # own line; a thread that spent nothing is left out
    assert by_group(before, after, names) == {
        "worker": 3.0,
        "pod-action": 0.75,
        UNNAMED: 0.3,
        "handler-pods.v1 labels=TaskSet": 0.25,
    }
    assert list(by_group(before, after, names)) == [
        "worker",
        "pod-action",
        UNNAMED,
        "handler-pods.v1 labels=TaskSet",
    ]


def test_the_kernel_counts_a_busy_thread_and_not_an_idle_one() -> None:
    ids: dict[str, int] = {}
    stop = threading.Event()

    def busy() -> None:
        ids["busy"] = threading.get_native_id()
        end = time.thread_time() + 0.3
        while time.thread_time() < end:
            pass
        stop.wait()

    def idle() -> None:
        ids["idle"] = threading.get_native_id()
        stop.wait()

    threads = [threading.Thread(target=busy), threading.Thread(target=idle)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            spent = cpu_by_thread(os.getpid())
            if spent.get(ids.get("busy", -1), 0.0) >= 0.25:
                break
            time.sleep(0.05)
        spent = cpu_by_thread(os.getpid())
        assert spent[ids["busy"]] >= 0.25
        assert spent[ids["idle"]] < 0.1
        assert cpu_by_thread(2**22 + 1) == {}  # no such process: nothing, not an error
    finally:
        stop.set()
        for t in threads:
            t.join()


def test_the_scenario_line_names_the_threads_that_spent_most() -> None:
    scenario = {
        "name": "large",
        "pods_created": 2000,
        "wall_seconds": 55.9,
        "pod_creation_rate": 162.5,
        "correctness": {"ok": True},
        "controller_cpu_by_thread": {"worker": 5.05, "reflector-pods.v1 labels=TaskSet": 3.79},
    }
    line = report.one_line(scenario)
    assert (
        line.splitlines()[1]
        == "    controller CPU s by thread: worker 5.05, reflector-pods.v1 labels=TaskSet 3.79"
    )


def test_a_scenario_s_cpu_is_what_was_spent_between_its_two_readings() -> None:
    me = os.getpid()
    before = cpu_now({"driver": me, "gone": 2**22 + 1}, me)
    end = time.thread_time() + 0.3
    while time.thread_time() < end:
        pass
    spent = cpu_since(before, {"driver": me, "gone": 2**22 + 1}, me)
    assert set(spent["cpu_seconds_by_process"]) == {"driver"}  # a process that is gone is left out
    assert spent["cpu_seconds_by_process"]["driver"] >= 0.25
    # named by py-spy where the bench's dependencies are installed, else counted as unnamed
    assert sum(spent["controller_cpu_by_thread"].values()) >= 0.25
