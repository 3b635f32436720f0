"""Content bounds, in the in-memory world: whole lifecycles whose Pods say far too much still leave a status
of bounded size, with the controller's own words intact."""

from __future__ import annotations

import orjson

from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import State
from taskset.api.constants import TaskSetPhase as T
from taskset.api.status import EXIT_MESSAGE_MAX, MESSAGE_MAX, QUOTED_MAX, REASON_MAX, TaskSetStatus, clip
from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import World, replica

REPLICAS = 400
TERMINATION_MESSAGE = ("the worker says something at length here\n" * 100)[:4096]  # the kubelet's limit
STATUS_BOUND = 512 * 1024  # bytes: a third of etcd's 1.5 MiB request limit


def finished(world: World) -> TaskSetStatus:
    world.settle(40)
    assert world.status is not None and world.status.phase == T.COMPLETED
    return world.status


def test_400_replicas_ending_with_4_kib_termination_messages_succeed_with_a_bounded_status() -> None:
    world = World(TaskSetBuilder("loud").role("w", REPLICAS).obj())
    world.settle()
    for name in list(world.pods):
        world.exit(name, 0, message=TERMINATION_MESSAGE)

    status = finished(world)

    written = status.to_json()
    size = len(orjson.dumps(written))
    print(f"{REPLICAS} replicas x 4 KiB termination messages: status of {size} bytes")
    assert status.state == State.SUCCEEDED
    replicas = written["roleStatus"][0]["replicaStatus"]
    assert {r["terminatedInfo"]["exitMessage"] for r in replicas} == {
        clip(TERMINATION_MESSAGE, EXIT_MESSAGE_MAX)
    }
    assert size < STATUS_BOUND
    # The log records of the Pods' history carry the same bounded text as the status.
    exit_messages = {
        record.fields["ContainerExitMessage"]
        for plan in world.plans
        for record in plan.records
        if "ContainerExitMessage" in record.fields
    }
    assert exit_messages == {clip(TERMINATION_MESSAGE, EXIT_MESSAGE_MAX)}


def test_a_pod_lost_with_a_huge_message_keeps_the_retry_decision_after_it() -> None:
    world = World(TaskSetBuilder("job").role("r").obj())
    world.settle()
    world.run("job-r-0")
    world.settle()
    reason, said = "NodeLost" * 100, "the node said " + "m" * 20_000
    world.pods["job-r-0"]["status"] = {"phase": "Unknown", "reason": reason, "message": said}

    status = finished(world)

    message = replica(world, "r").phase_message
    assert replica(world, "r").phase == P.COMPLETED
    # The Pod's texts, each clipped to its bound, then our words, whole.
    exit_text = (
        f"PodPhase:Unknown ,PodMessage:{clip(said, QUOTED_MAX)} ,PodReason: {clip(reason, REASON_MAX)}"
    )
    assert message == f"{exit_text}; Retry is forbidden"
    assert len(message) <= MESSAGE_MAX
    assert replica(world, "r").pod_reason == clip(reason, REASON_MAX)
    assert status.state == State.FAILED


def test_a_replica_that_exits_with_a_short_message_keeps_it_whole() -> None:
    world = World(TaskSetBuilder("job").role("r").obj())
    world.settle()
    world.exit("job-r-0", 2, message="boom")

    finished(world)

    info = replica(world, "r").terminated_info
    assert info is not None and (info.exit_code, info.exit_message) == (2, "boom")
