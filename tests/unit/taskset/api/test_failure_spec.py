"""Parsing failure rules and backoff: what is accepted, and hostile input rejected with a
message naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.api.constants import ExitCodeOperator, FailureAction
from taskset.api.failures import ExitCodes, FailureRule, PodCondition
from taskset.api.spec import Backoff, ParsedTaskSet, ValidationFailure, parse_taskset
from tests.builders import TaskSetBuilder

pytestmark = pytest.mark.unit


def with_rules(rules: Any, *, backoff: Any = None) -> dict[str, Any]:
    role: dict[str, Any] = {"failureRules": rules}
    if backoff is not None:
        role["retryPolicy"] = {"retry": True, "maxRetryCount": 3, "backoff": backoff}
    return TaskSetBuilder("job").role("r", **role).obj()


def test_rules_parse_in_order_with_their_defaults() -> None:
    rules = [
        {"name": "oom", "action": "FailTaskSet", "onTerminatedReasons": ["OOMKilled"]},
        {
            "action": "FailRole",
            "onExitCodes": {"containerName": "main", "operator": "NotIn", "values": [0, "2-9"]},
        },
        {
            "action": "RetryNotCounted",
            "onPodConditions": [{"type": "DisruptionTarget"}],
            "onPodReasons": ["X"],
        },
    ]
    obj = with_rules(rules, backoff={"initialDelay": 5})
    obj["spec"]["failureRules"] = [{"action": "RetryCounted", "onPodReasons": ["Evicted"]}]
    parsed = parse_taskset(obj)
    assert isinstance(parsed, ParsedTaskSet)
    role = parsed.spec.roles[0]
    assert role.failure_rules == (
        FailureRule("oom", FailureAction.FAIL_TASKSET, terminated_reasons=frozenset({"OOMKilled"})),
        FailureRule(
            "roles[0].failureRules[1]",
            FailureAction.FAIL_ROLE,
            exit_codes=ExitCodes(ExitCodeOperator.NOT_IN, ((0, 0), (2, 9)), "main"),
        ),
        FailureRule(
            "roles[0].failureRules[2]",
            FailureAction.RETRY_NOT_COUNTED,
            pod_reasons=frozenset({"X"}),
            pod_conditions=(PodCondition("DisruptionTarget", "True"),),
        ),
    )
    assert parsed.spec.failure_rules[0].name == "failureRules[0]"
    assert role.retry_policy.backoff == Backoff(5, 2, 366 * 24 * 3600, 0)


R = "spec.roles[0].failureRules"
B = "spec.roles[0].retryPolicy.backoff"
BAD = [
    pytest.param(with_rules("x"), R, id="not a list"),
    pytest.param(with_rules([{"action": "FailRole", "onPodReasons": ["a"]}] * 21), R, id="too many rules"),
    pytest.param(with_rules(["x"]), f"{R}[0]", id="a rule not an object"),
    pytest.param(with_rules([{"action": "Explode", "onPodReasons": ["a"]}]), f"{R}[0].action", id="action"),
    pytest.param(with_rules([{"action": "FailRole"}]), f"{R}[0]", id="no criterion"),
    pytest.param(
        with_rules([{"action": "FailRole", "name": "a b", "onPodReasons": ["a"]}]), f"{R}[0].name", id="name"
    ),
    pytest.param(
        with_rules([{"action": "FailRole", "onExitCodes": {"operator": "Is", "values": [1]}}]),
        f"{R}[0].onExitCodes.operator",
        id="operator",
    ),
    pytest.param(
        with_rules([{"action": "FailRole", "onExitCodes": {"operator": "In", "values": []}}]),
        f"{R}[0].onExitCodes.values",
        id="no values",
    ),
    pytest.param(
        with_rules([{"action": "FailRole", "onExitCodes": {"operator": "In", "values": ["9-2"]}}]),
        f"{R}[0].onExitCodes.values[0]",
        id="an inverted range",
    ),
    pytest.param(
        with_rules([{"action": "FailRole", "onExitCodes": {"operator": "In", "values": [-1]}}]),
        f"{R}[0].onExitCodes.values[0]",
        id="a negative code",
    ),
    pytest.param(
        with_rules([{"action": "FailRole", "onExitCodes": {"operator": "In", "values": [True]}}]),
        f"{R}[0].onExitCodes.values[0]",
        id="a boolean code",
    ),
    pytest.param(
        with_rules([{"action": "FailRole", "onExitCodes": {"operator": "In", "values": [1] * 256}}]),
        f"{R}[0].onExitCodes.values",
        id="too many codes",
    ),
    pytest.param(
        with_rules([{"action": "FailRole", "onPodReasons": ["x" * 129]}]),
        f"{R}[0].onPodReasons[0]",
        id="a reason too long",
    ),
    pytest.param(
        with_rules([{"action": "FailRole", "onTerminatedReasons": [3]}]),
        f"{R}[0].onTerminatedReasons[0]",
        id="a reason not a string",
    ),
    pytest.param(
        with_rules([{"action": "FailRole", "onPodConditions": [{"type": "A", "status": "Yes"}]}]),
        f"{R}[0].onPodConditions[0].status",
        id="a condition status",
    ),
    pytest.param(
        with_rules([{"action": "FailRole", "onPodConditions": [{"status": "True"}]}]),
        f"{R}[0].onPodConditions[0].type",
        id="a condition without type",
    ),
    pytest.param(with_rules([], backoff={"factor": 2}), f"{B}.initialDelay", id="backoff without initial"),
    pytest.param(with_rules([], backoff={"initialDelay": 0}), f"{B}.initialDelay", id="initial 0"),
    pytest.param(with_rules([], backoff={"initialDelay": 1, "factor": 11}), f"{B}.factor", id="factor"),
    pytest.param(
        with_rules([], backoff={"initialDelay": 10, "maxDelay": 5}),
        f"{B}.maxDelay",
        id="cap below the initial delay",
    ),
    pytest.param(
        with_rules([], backoff={"initialDelay": 1, "jitterPercent": 101}), f"{B}.jitterPercent", id="jitter"
    ),
    pytest.param(with_rules([], backoff="fast"), B, id="backoff not an object"),
]


@pytest.mark.parametrize(("obj", "field"), BAD)
def test_hostile_input_is_rejected_naming_the_field(obj: dict[str, Any], field: str) -> None:
    result = parse_taskset(obj)
    assert isinstance(result, ValidationFailure)
    assert (result.field, result.message.split(": ")[0]) == (field, field)
