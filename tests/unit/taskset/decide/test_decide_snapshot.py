"""The ControlUnit's spec snapshot is used only while its digest matches the status: the
verdict table, and whole passes in the in-memory World where someone else edits the snapshot."""

from __future__ import annotations

import re

import orjson
import pytest

from taskset.api.constants import ConditionStatus, ConditionType, State
from taskset.api.constants import TaskSetPhase as T
from taskset.decide.snapshot import UNVERIFIED, Verdict, check_snapshot
from taskset.objects.controlunit import build_control_unit, snapshot_of
from taskset.observed.slim import snapshot_digest
from tests.builders import TaskSetBuilder
from tests.unit.taskset.decide.scenes import retrying_replica, running, single, the_status
from tests.unit.taskset.world import World, adopted_unseen_control_unit, new_uid

pytestmark = pytest.mark.unit

OURS = '{"roles":[{"name":"r"}]}'
EVIL = '{"roles":[{"name":"r","template":{"metadata":{"labels":{"evil":"1"}}}}]}'
TAMPERED = "ControlUnitTampered"
EVIL_IMAGE = "evil.example.com/miner:latest"


# ----- the pure rule --------------------------------------------------------------------------------------


def test_a_digest_is_the_sha256_of_the_exact_snapshot_bytes() -> None:
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", snapshot_digest(OURS))
    assert snapshot_digest(OURS) != snapshot_digest(OURS + " ")
    assert snapshot_digest(None) == snapshot_digest("")  # no snapshot digests as the empty text


def test_the_snapshot_the_controller_builds_is_what_its_control_unit_holds() -> None:
    spec = {"roles": [{"name": "r", "replicas": 1}]}
    unit = build_control_unit({"metadata": {"name": "x", "namespace": "ns", "uid": "u"}, "spec": spec}, "c")
    assert unit["data"]["spec.json"] == snapshot_of(spec)


@pytest.mark.parametrize(
    ("snapshot", "recorded", "expected", "verdict"),
    [
        pytest.param(OURS, snapshot_digest(OURS), None, Verdict.TRUSTED, id="the recorded digest is trusted"),
        pytest.param(EVIL, snapshot_digest(OURS), OURS, Verdict.CHANGED, id="an edited snapshot is a change"),
        pytest.param(
            EVIL,
            snapshot_digest(OURS),
            EVIL,
            Verdict.CHANGED,
            id="a recorded digest wins over a live spec the edit happens to equal",
        ),
        pytest.param(
            EVIL, snapshot_digest(None), None, Verdict.CHANGED, id="a snapshot added to a unit without one"
        ),
        pytest.param(None, snapshot_digest(OURS), OURS, Verdict.CHANGED, id="a snapshot removed is a change"),
        pytest.param(
            None,
            snapshot_digest(None),
            None,
            Verdict.TRUSTED,
            id="a unit built without a snapshot is trusted",
        ),
        pytest.param(
            OURS, None, OURS, Verdict.ADOPTED, id="no digest: the snapshot the live spec builds is adopted"
        ),
        pytest.param(
            None,
            None,
            "",
            Verdict.ADOPTED,
            id="no digest: a spec too large for a snapshot is adopted without",
        ),
        pytest.param(
            EVIL, None, OURS, Verdict.UNVERIFIABLE, id="no digest: a snapshot the live spec does not build"
        ),
        pytest.param(OURS, None, None, Verdict.UNVERIFIABLE, id="no digest and an illegal live spec"),
        pytest.param(
            OURS,
            UNVERIFIED,
            OURS,
            Verdict.UNVERIFIABLE,
            id="once unverifiable, always (the status remembers)",
        ),
    ],
)
def test_the_verdict_on_a_snapshot(
    snapshot: str | None, recorded: str | None, expected: str | None, verdict: Verdict
) -> None:
    assert check_snapshot(snapshot_digest(snapshot), recorded, expected) == verdict


# ----- whole passes -------------------------------------------------------------------------------------


def tamper(world: World, unit: str = "c-job-0") -> None:
    """What a ConfigMap writer does: another image and command that exit 0, and an injected label."""
    data = world.units[unit]["data"]
    spec = orjson.loads(data["spec.json"])
    template = spec["roles"][0]["template"]
    template.setdefault("metadata", {}).setdefault("labels", {})["injected"] = "yes"
    template["spec"]["containers"][0].update(image=EVIL_IMAGE, command=["true"])
    data["spec.json"] = orjson.dumps(spec).decode()


def evil_pods(world: World) -> list[str]:
    return [
        pod["metadata"]["name"]
        for pod in world.created_pods
        if pod["metadata"].get("labels", {}).get("injected")
        or any(c.get("image") == EVIL_IMAGE for c in pod["spec"]["containers"])
    ]


def tampered_events(world: World) -> list[str]:
    return [event for event in world.events if event.startswith(TAMPERED)]


def test_the_first_pass_records_the_digest_of_the_control_unit_it_creates() -> None:
    world = running(single())
    assert the_status(world).spec_digest == snapshot_digest(world.units["c-job-0"]["data"]["spec.json"])
    assert the_status(world).to_json()["attemptSpecDigest"] == the_status(world).spec_digest
    assert tampered_events(world) == []


def test_a_snapshot_edited_during_a_retry_delay_is_never_used_and_fails_the_taskset_naming_it() -> None:
    world = retrying_replica(delay=30)
    tamper(world)
    world.tick(31)
    world.settle()
    status = the_status(world)
    assert evil_pods(world) == []
    assert (status.phase, status.state) == (T.COMPLETED, State.FAILED)
    message = "ControlUnit c-job-0's spec snapshot was changed by someone else; it is not used"
    assert status.state_message == message
    condition = status.condition(ConditionType.CONTROL_UNIT_TAMPERED)
    assert condition is not None and (condition.status, condition.message) == (ConditionStatus.TRUE, message)
    assert tampered_events(world) == [f"{TAMPERED}: {message}"]  # once, though many passes saw it
    assert "c-job-0" not in world.units  # the attempt ended: its ControlUnit (and Pods) went


def test_a_snapshot_edited_mid_run_ends_the_attempt_and_the_retry_runs_the_taskset_s_own_spec() -> None:
    world = World(TaskSetBuilder("job").retry(True, 1, 0).role("r").obj())
    running(world)
    tamper(world)
    world.exit("job-r-0", 0)
    world.settle()
    status = the_status(world)
    assert status.total_retried_count == 1
    assert status.spec_digest == snapshot_digest(world.units["c-job-1"]["data"]["spec.json"])
    assert world.units["c-job-1"]["data"]["spec.json"] == snapshot_of(world.taskset["spec"])
    assert evil_pods(world) == []
    assert len(world.created_pods) == 2  # the first attempt's Pod, and the retry's from the live spec
    assert len(tampered_events(world)) == 1
    world.exit("job-r-0", 0)
    world.settle()
    assert the_status(world).state == State.SUCCEEDED


def test_an_edit_that_only_adds_a_label_is_refused_too() -> None:
    world = retrying_replica(delay=0)
    before = len(world.created_pods)
    data = world.units["c-job-0"]["data"]
    data["spec.json"] = data["spec.json"].replace(
        '"template":{', '"template":{"metadata":{"labels":{"x":"1"}},'
    )
    world.settle()
    assert the_status(world).state == State.FAILED
    assert len(world.created_pods) == before and len(tampered_events(world)) == 1


def test_a_control_unit_adopted_after_a_lost_status_write_is_trusted_when_the_live_spec_builds_it() -> None:
    world = single()
    uid = adopted_unseen_control_unit(world)
    assert the_status(world).spec_digest is None  # the create did not make it: not this pass's manifest
    world.settle()
    status = the_status(world)
    assert status.control_unit_uid == uid
    assert status.spec_digest == snapshot_digest(world.units["c-job-0"]["data"]["spec.json"])
    assert status.phase == T.ATTEMPT_PREPARING and len(world.created_pods) == 1
    assert tampered_events(world) == []


def test_a_found_control_unit_whose_snapshot_the_live_spec_does_not_build_is_unverifiable() -> None:
    world = World(TaskSetBuilder("job").role("r").obj())
    unit = build_control_unit(world.taskset, "c-job-0")
    unit["metadata"]["uid"] = new_uid()
    world.units["c-job-0"] = unit  # created by a pass whose status write was lost, then edited
    tamper(world)
    world.settle()
    status = the_status(world)
    assert world.created_pods == []
    assert status.state == State.FAILED and status.spec_digest == UNVERIFIED
    assert "ControlUnit c-job-0's spec snapshot cannot be verified" in status.state_message
    assert len(tampered_events(world)) == 1


def test_a_status_without_a_digest_adopts_a_snapshot_the_live_spec_builds_and_says_nothing() -> None:
    world = running(single())
    recorded = the_status(world).spec_digest
    the_status(world).spec_digest = None  # as an older controller left it
    world.reconcile()
    assert the_status(world).spec_digest == recorded
    assert the_status(world).phase == T.ATTEMPT_RUNNING and tampered_events(world) == []


def test_a_retry_records_the_digest_of_its_own_control_unit() -> None:
    world = World(TaskSetBuilder("job").retry(True, 1, 60).role("r").obj())
    running(world)
    first = the_status(world).spec_digest
    world.taskset["spec"]["roles"][0]["template"]["metadata"] = {"labels": {"edited": "yes"}}  # W-18
    world.exit("job-r-0", 1)
    world.settle()
    assert the_status(world).phase == T.ATTEMPT_RETRY_PENDING
    world.tick(61)
    world.settle()
    status = the_status(world)
    assert status.total_retried_count == 1 and status.phase == T.ATTEMPT_PREPARING
    assert status.spec_digest == snapshot_digest(world.units["c-job-1"]["data"]["spec.json"]) != first
    assert world.created_pods[-1]["metadata"]["labels"]["edited"] == "yes"
    assert tampered_events(world) == []


def test_a_refusal_is_reported_once_while_the_tampered_control_unit_is_still_around() -> None:
    world = retrying_replica(delay=30)
    tamper(world)
    world.tick(31)
    world.reconcile()  # refused: the attempt ends and asks to delete its ControlUnit
    assert "deletionTimestamp" in world.units["c-job-0"]["metadata"]  # foreground: still there
    world.reconcile()
    world.reconcile()
    assert len(tampered_events(world)) == 1
    assert evil_pods(world) == []


def test_a_leftover_under_the_attempt_s_name_is_not_judged_by_the_attempt_s_digest() -> None:
    world = running(single())
    tamper(world)
    leftover = world.units["c-job-0"]["metadata"]
    leftover.update(uid=new_uid(), deletionTimestamp="2026-01-01T00:00:05Z")  # not the recorded one
    world.reconcile()
    assert tampered_events(world) == [] and evil_pods(world) == []
