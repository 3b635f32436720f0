"""What the decide tests share: worlds settled into a phase, and short readings of a plan.

Most cases settle an in-memory World into some phase, edit it by hand, and look at one pass."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from taskset.api.constants import ReplicaPhase as P
from taskset.api.constants import TaskSetPhase as T
from taskset.api.status import TaskSetStatus
from taskset.decide import (
    CreateOwned,
    CreatePod,
    Intent,
    Plan,
)
from tests.builders import TaskSetBuilder
from tests.unit.taskset.world import (
    World,
    replica,
)

START = datetime(2026, 1, 1, tzinfo=UTC)
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
TRANSITION = "TaskSet State Transition"


def events(plan: Plan) -> list[tuple[str, str]]:
    return [(str(event.reason), event.message) for event in plan.events]


def reasons(plan: Plan) -> list[str]:
    return [str(event.reason) for event in plan.events]


def transitions(plan: Plan) -> list[str]:
    return [message for reason, message in events(plan) if reason == TRANSITION]


def creates(plan: Plan) -> list[Intent]:
    return [intent for intent in plan.intents if isinstance(intent, CreateOwned | CreatePod)]


def stamp_at(seconds: float) -> str:
    return (START + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def the_status(world: World) -> TaskSetStatus:
    assert world.status is not None
    return world.status


def uid_of(obj: dict[str, Any]) -> str:
    uid: str = obj["metadata"]["uid"]
    return uid


def single(name: str = "r", **role: Any) -> World:
    """A World for TaskSet ``job`` with one role."""
    return World(TaskSetBuilder("job").role(name, **role).obj())


def preparing(world: World) -> World:
    """Settle until the attempt is Preparing and every Pod is created (still Pending)."""
    world.settle()
    assert the_status(world).phase == T.ATTEMPT_PREPARING
    return world


def running(world: World) -> World:
    """Settle until every Pod of the world runs."""
    preparing(world)
    for name in list(world.pods):
        world.run(name)
    world.settle()
    assert the_status(world).phase == T.ATTEMPT_RUNNING
    return world


def unit_uid(world: World) -> str:
    uid = the_status(world).control_unit_uid
    assert uid is not None
    return uid


def pod_uid(world: World, name: str) -> str:
    return uid_of(world.pods[name])


def retrying_replica(delay: int) -> World:
    """Role r with [retry 2 delay]: its first Pod failed and is gone; the replica waits for its retry."""
    world = running(single(retry=(True, 2, delay)))
    world.exit("job-r-0", 1)
    world.reconcile()
    world.reconcile()
    if delay:
        assert replica(world, "r").phase == P.ATTEMPT_RETRY_PENDING
    return world
