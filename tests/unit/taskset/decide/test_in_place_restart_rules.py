"""Restart in place: a ``RestartInPlace`` rule is mapped onto the Pod API's container restart rules,
refused when that API could not hold it, and a Pod that ends anyway (the kubelet did not apply it) is
replaced as a counted retry."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.api.constants import FailureAction
from taskset.api.constants import TaskSetPhase as T
from taskset.api.failures import parse_failure_rules
from taskset.api.spec import ParsedTaskSet, ValidationFailure, parse_taskset
from taskset.decide.next_attempt import in_place_decoration
from taskset.objects.pods import PodIdentity, build_pod
from tests.builders import TaskSetBuilder, pod_template
from tests.unit.taskset.decide.scenes import running, the_status
from tests.unit.taskset.world import World, replica

pytestmark = pytest.mark.unit

IDENTITY = PodIdentity("job", "ns", "uid", "r", 0, "job-r-0", "c-job-0", "cu-uid", 0, 0, "proof")


def in_place(values: list[Any], container: str | None = None, **extra: Any) -> dict[str, Any]:
    codes: dict[str, Any] = {"operator": "In", "values": values}
    if container:
        codes["containerName"] = container
    return {"name": "in-place", "action": "RestartInPlace", "onExitCodes": codes, **extra}


@pytest.mark.parametrize(
    ("rule", "problem"),
    [
        pytest.param(
            in_place([42], onTerminatedReasons=["OOMKilled"]),
            "matches exit codes only",
            id="another criterion",
        ),
        pytest.param(
            {"action": "RestartInPlace", "onPodReasons": ["Evicted"]},
            "matches exit codes only",
            id="no exit codes",
        ),
        pytest.param(in_place(["0-255"]), "at most 255 exit codes, not 256", id="too many codes"),
    ],
)
def test_a_rule_the_pod_api_cannot_hold_is_refused_naming_it(rule: dict[str, Any], problem: str) -> None:
    obj = TaskSetBuilder("job").role("r", failureRules=[rule]).obj()
    parsed = parse_taskset(obj)
    assert isinstance(parsed, ValidationFailure)
    assert parsed.field.startswith("spec.roles[0].failureRules[0]") and problem in parsed.message


def pod_for(rules: list[dict[str, Any]], template: dict[str, Any]) -> dict[str, Any]:
    parsed = parse_failure_rules(rules, "spec.failureRules", "failureRules")
    return build_pod(template, IDENTITY, in_place_decoration(parsed))


def test_the_rule_becomes_restart_all_containers_on_every_container() -> None:
    template = pod_template()
    template["spec"]["containers"].append({"name": "side", "image": "busybox"})
    pod = pod_for(
        [in_place([42, "50-52"]), {"action": "FailRole", "onExitCodes": in_place([1])["onExitCodes"]}],
        template,
    )
    expected = [
        {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42, 50, 51, 52]}}
    ]
    for container in pod["spec"]["containers"]:
        assert (container["restartPolicy"], container["restartPolicyRules"]) == ("Never", expected)


def test_a_named_container_alone_gets_it_after_its_own_rules() -> None:
    template = pod_template(restart_policy="OnFailure")
    own = {"action": "Restart", "exitCodes": {"operator": "In", "values": [7]}}
    template["spec"]["containers"][0].update(restartPolicy="Never", restartPolicyRules=[own])
    template["spec"]["containers"].append({"name": "side", "image": "busybox"})
    before = repr(template)
    pod = pod_for([in_place([3], container="c0")], template)
    main, side = pod["spec"]["containers"]
    assert main["restartPolicy"] == "Never", "a container's own restartPolicy is kept"
    assert main["restartPolicyRules"] == [
        own,
        {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [3]}},
    ]
    assert "restartPolicyRules" not in side and "restartPolicy" not in side
    assert repr(template) == before


def test_no_rule_no_change() -> None:
    pod = pod_for([{"action": "FailRole", "onExitCodes": {"operator": "In", "values": [1]}}], pod_template())
    assert "restartPolicyRules" not in pod["spec"]["containers"][0]


def test_a_pod_that_ends_anyway_is_replaced_as_a_counted_retry() -> None:
    """Where the kubelet does not apply the rules (a cluster without the feature), the Pod fails."""
    builder = TaskSetBuilder("job").role("r", retry=(True, 1, 0), failureRules=[in_place([42])])
    world = running(World(builder.obj()))
    world.exit("job-r-0", 42)
    world.settle()
    rep = replica(world, "r")
    assert (rep.total_retried_count, rep.counted_retries) == (1, 1)
    world.run("job-r-0")
    world.exit("job-r-0", 42)
    world.settle()
    assert the_status(world).state == "Failed", "maxRetryCount 1: the second is past it"
    assert the_status(world).phase == T.COMPLETED


def test_the_world_s_pods_carry_the_rules() -> None:
    builder = TaskSetBuilder("job").role("r", failureRules=[in_place([42])])
    parsed = parse_taskset(builder.obj())
    assert isinstance(parsed, ParsedTaskSet)
    assert parsed.spec.roles[0].failure_rules[0].action == FailureAction.RESTART_IN_PLACE
    world = World(builder.obj())
    world.settle()
    assert (
        world.pods["job-r-0"]["spec"]["containers"][0]["restartPolicyRules"][0]["action"]
        == "RestartAllContainers"
    )
