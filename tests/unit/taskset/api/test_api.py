"""parse_taskset: defaults (D4, spec 2.3), validation in the spec's order with its exact messages (2.4),
shape errors that name the field, and totality on arbitrary input."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taskset.api.constants import (
    MAX_REPLICAS,
    MAX_RETRY_COUNT,
    MAX_RETRY_DELAY_SECONDS,
    MAX_ROLES,
    POD_NAME_FORMAT,
    ReplicaPhase,
    RoleEvent,
    RolePhase,
    TaskSetAction,
)
from taskset.api.names import control_unit_name, is_dns1123_label, longest_pod_name_length, pod_name
from taskset.api.spec import (
    DEFAULT_EVENT_POLICIES,
    IMPLICIT_FAILURE_POLICY,
    NO_RETRY,
    CompletionPolicy,
    EventPolicy,
    ParsedTaskSet,
    RetryPolicy,
    Role,
    RoleOutline,
    ValidationFailure,
    parse_taskset,
)
from taskset.api.status import ReplicaStatus, RoleStatus, TaskSetStatus
from taskset.api.thresholds import THRESHOLD_PROBLEM
from tests.builders import TaskSetBuilder, pod_template

pytestmark = pytest.mark.unit

Obj = dict[str, Any]


def parsed(obj: object) -> ParsedTaskSet:
    result = parse_taskset(obj)
    assert isinstance(result, ParsedTaskSet), result
    return result


def failure(obj: object) -> ValidationFailure:
    result = parse_taskset(obj)
    assert isinstance(result, ValidationFailure), result
    return result


def one_role(**kwargs: Any) -> Obj:
    return TaskSetBuilder("ts").role("r", **kwargs).obj()


def mutate(obj: Obj, change: Callable[[Obj], None]) -> Obj:
    change(obj)
    return obj


def role0(obj: Obj) -> Obj:
    role: Obj = obj["spec"]["roles"][0]
    return role


# ======================================================================================================
# Defaults
# ======================================================================================================


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(
            one_role(replicas=3, max_failed=2),
            CompletionPolicy(min_succeeded=3, max_failed=2),
            id="absent minSucceeded means replicas, so every replica must succeed (D4)",
        ),
        pytest.param(
            one_role(replicas=3, min_succeeded=2),
            CompletionPolicy(min_succeeded=2, max_failed=1),
            id="absent maxFailed means 1, so one final failure fails the role (D4)",
        ),
        pytest.param(
            one_role(replicas=4),
            CompletionPolicy(min_succeeded=4, max_failed=1),
            id="absent completionPolicy behaves like minSucceeded replicas and maxFailed 1",
        ),
        pytest.param(
            mutate(one_role(replicas=2), lambda o: role0(o).update(completionPolicy=None)),
            CompletionPolicy(min_succeeded=2, max_failed=1),
            id="a null completionPolicy counts as absent",
        ),
        pytest.param(
            mutate(
                one_role(replicas=2),
                lambda o: role0(o).update(completionPolicy={"minSucceeded": None, "maxFailed": None}),
            ),
            CompletionPolicy(min_succeeded=2, max_failed=1),
            id="null thresholds count as absent",
        ),
        pytest.param(
            one_role(replicas=5, min_succeeded=5, max_failed=5),
            CompletionPolicy(min_succeeded=5, max_failed=5),
            id="explicit thresholds equal to replicas are kept",
        ),
    ],
)
def test_completion_policy_defaults(obj: Obj, expected: CompletionPolicy) -> None:
    assert parsed(obj).spec.roles[0].completion_policy == expected


@pytest.mark.parametrize(
    ("event_policy", "declared", "effective"),
    [
        pytest.param(
            None,
            DEFAULT_EVENT_POLICIES,
            DEFAULT_EVENT_POLICIES,
            id="absent eventPolicy is RoleFailed to TaskSetFailed then RoleSucceeded to NoAction",
        ),
        pytest.param(
            [],
            DEFAULT_EVENT_POLICIES,
            DEFAULT_EVENT_POLICIES,
            id="an empty eventPolicy takes the default too",
        ),
        pytest.param(
            [("RoleSucceeded", "TaskSetSucceeded")],
            (EventPolicy(RoleEvent.ROLE_SUCCEEDED, TaskSetAction.TASKSET_SUCCEEDED),),
            (EventPolicy(RoleEvent.ROLE_SUCCEEDED, TaskSetAction.TASKSET_SUCCEEDED), IMPLICIT_FAILURE_POLICY),
            id="a list without RoleFailed or RoleCompleted gets RoleFailed to TaskSetFailed appended",
        ),
        pytest.param(
            [("RoleCompleted", "NoAction")],
            (EventPolicy(RoleEvent.ROLE_COMPLETED, TaskSetAction.NO_ACTION),),
            (EventPolicy(RoleEvent.ROLE_COMPLETED, TaskSetAction.NO_ACTION),),
            id="a RoleCompleted entry replaces the implicit failure rule",
        ),
        pytest.param(
            [("RoleFailed", "NoAction"), ("RoleCompleted", "TaskSetSucceeded")],
            (
                EventPolicy(RoleEvent.ROLE_FAILED, TaskSetAction.NO_ACTION),
                EventPolicy(RoleEvent.ROLE_COMPLETED, TaskSetAction.TASKSET_SUCCEEDED),
            ),
            (
                EventPolicy(RoleEvent.ROLE_FAILED, TaskSetAction.NO_ACTION),
                EventPolicy(RoleEvent.ROLE_COMPLETED, TaskSetAction.TASKSET_SUCCEEDED),
            ),
            id="a declared RoleFailed entry keeps the list as written, in order",
        ),
    ],
)
def test_event_policy_defaults(
    event_policy: list[tuple[str, str]] | None,
    declared: tuple[EventPolicy, ...],
    effective: tuple[EventPolicy, ...],
) -> None:
    role = parsed(one_role(event_policy=event_policy)).spec.roles[0]
    assert role.event_policies == declared
    assert role.effective_event_policies == effective


@pytest.mark.parametrize(
    ("obj", "taskset_level", "role_level"),
    [
        pytest.param(
            one_role(), NO_RETRY, NO_RETRY, id="absent retry policies mean no retry at either level"
        ),
        pytest.param(
            TaskSetBuilder("ts").retry(True, 2, 10).role("r", retry=(True, 3, 5)).obj(),
            RetryPolicy(retry=True, max_retry_count=2, delay_seconds=10),
            RetryPolicy(retry=True, max_retry_count=3, delay_seconds=5),
            id="explicit retry policies are read at both levels",
        ),
        pytest.param(
            TaskSetBuilder("ts").role("r", retry={"retry": True}).obj(),
            NO_RETRY,
            RetryPolicy(retry=True, max_retry_count=0, delay_seconds=0),
            id="absent retry fields are false and zero",
        ),
        pytest.param(
            TaskSetBuilder("ts").role("r", retry={"maxRetryCount": 3, "delay": 1}).obj(),
            NO_RETRY,
            RetryPolicy(retry=False, max_retry_count=3, delay_seconds=1),
            id="maxRetryCount without retry true is kept but allows nothing",
        ),
    ],
)
def test_retry_policy_defaults(obj: Obj, taskset_level: RetryPolicy, role_level: RetryPolicy) -> None:
    result = parsed(obj)
    assert result.spec.retry_policy == taskset_level
    assert result.spec.roles[0].retry_policy == role_level


@pytest.mark.parametrize(
    ("policy", "retried", "allowed"),
    [
        pytest.param(RetryPolicy(retry=False, max_retry_count=3), 0, False, id="retry false forbids retries"),
        pytest.param(
            RetryPolicy(retry=True, max_retry_count=0), 0, False, id="maxRetryCount 0 means no retry"
        ),
        pytest.param(
            RetryPolicy(retry=True, max_retry_count=2), 1, True, id="fewer retries than the maximum"
        ),
        pytest.param(RetryPolicy(retry=True, max_retry_count=2), 2, False, id="the maximum reached"),
    ],
)
def test_retry_policy_allows_retry(policy: RetryPolicy, retried: int, allowed: bool) -> None:
    assert policy.allows_retry(retried) is allowed


def test_a_taskset_without_spec_or_roles_is_legal_and_empty() -> None:
    for obj in ({"metadata": {"name": "noroles"}}, TaskSetBuilder("noroles").no_roles().obj()):
        result = parsed(obj)
        assert result.spec.roles == ()
        assert result.spec.retry_policy == NO_RETRY


def test_reserved_queue_and_priority_are_accepted_and_carried() -> None:
    result = parsed(TaskSetBuilder("ts").queue("default").priority(5).role("r").obj())
    assert (result.spec.queue, result.spec.priority) == ("default", 5)


def test_identity_fields_are_read_from_metadata() -> None:
    result = parsed(TaskSetBuilder("ts", namespace="ns").uid("u-1").generation(4).obj())
    assert (result.name, result.namespace, result.uid, result.generation) == ("ts", "ns", "u-1", 4)


def test_identity_fields_missing_or_mistyped_read_as_empty() -> None:
    obj = {"metadata": {"name": "ts", "namespace": 3, "uid": None, "generation": "1"}}
    result = parsed(obj)
    assert (result.namespace, result.uid, result.generation) == ("", "", 0)


def test_the_template_is_the_callers_object_and_absent_means_empty() -> None:
    obj = TaskSetBuilder("ts").role("a").role("b").obj()
    del obj["spec"]["roles"][1]["template"]
    roles = parsed(obj).spec.roles
    assert roles[0].template is obj["spec"]["roles"][0]["template"]
    assert roles[1].template == {}


def test_parsing_does_not_modify_the_input() -> None:
    obj = TaskSetBuilder("ts").role("r", replicas=2).obj()
    before = TaskSetBuilder("ts").role("r", replicas=2).obj()
    parsed(obj)
    assert obj == before


def test_roles_keep_spec_order_and_can_be_looked_up_by_name() -> None:
    result = parsed(TaskSetBuilder("ts").role("zeta").role("alpha").obj())
    assert [role.name for role in result.spec.roles] == ["zeta", "alpha"]
    alpha = result.spec.role("alpha")
    assert isinstance(alpha, Role)
    assert alpha.name == "alpha"
    assert result.spec.role("missing") is None


# ======================================================================================================
# Controller validation (spec 2.4): order and exact messages
# ======================================================================================================

LONG = "a" * 59  # with role "r", replicas 10 gives a 63-character pod name, 11 gives 64 (S24, S25)


@pytest.mark.parametrize(
    ("obj", "message", "field"),
    [
        pytest.param(
            TaskSetBuilder("dupnames").role("role1").role("role1").obj(),
            "TaskRole naming conflicts,name:role1",
            "spec.roles[1].name",
            id="duplicate role names (S23)",
        ),
        pytest.param(
            TaskSetBuilder("ts").role("a").role("b").role("c").role("b").role("a").obj(),
            "TaskRole naming conflicts,name:b",
            "spec.roles[3].name",
            id="the first repeated occurrence is reported",
        ),
        pytest.param(
            TaskSetBuilder("ts").role("x", min_succeeded=0).role("x").obj(),
            "TaskRole naming conflicts,name:x",
            "spec.roles[1].name",
            id="duplicate names are checked before any completion policy",
        ),
        pytest.param(
            one_role(min_succeeded=1, max_failed=0),
            "MaxFailed cannot be smaller than 1 for TaskRole:r",
            "spec.roles[0].completionPolicy.maxFailed",
            id="maxFailed 0 (S24, unit)",
        ),
        pytest.param(
            one_role(min_succeeded=1, max_failed=-1),
            "MaxFailed cannot be smaller than 1 for TaskRole:r",
            "spec.roles[0].completionPolicy.maxFailed",
            id="maxFailed -1 (S24, unit)",
        ),
        pytest.param(
            one_role(min_succeeded=0, max_failed=1),
            "MinSucceeded cannot be smaller than 1 for TaskRole:r",
            "spec.roles[0].completionPolicy.minSucceeded",
            id="minSucceeded 0 (S24, unit)",
        ),
        pytest.param(
            one_role(min_succeeded=0, max_failed=0),
            "MaxFailed cannot be smaller than 1 for TaskRole:r",
            "spec.roles[0].completionPolicy.maxFailed",
            id="maxFailed below 1 is checked before minSucceeded below 1",
        ),
        pytest.param(
            one_role(min_succeeded=1, max_failed=2),
            "MaxFailed cannot be bigger than replica amount for TaskRole:r",
            "spec.roles[0].completionPolicy.maxFailed",
            id="maxFailed above replicas (S24)",
        ),
        pytest.param(
            one_role(min_succeeded=2, max_failed=1),
            "MinSucceeded cannot be bigger than replica amount for TaskRole:r",
            "spec.roles[0].completionPolicy.minSucceeded",
            id="minSucceeded above replicas (S24)",
        ),
        pytest.param(
            one_role(min_succeeded=2, max_failed=2),
            "MaxFailed cannot be bigger than replica amount for TaskRole:r",
            "spec.roles[0].completionPolicy.maxFailed",
            id="maxFailed above replicas is checked before minSucceeded above replicas",
        ),
        pytest.param(
            one_role(min_succeeded=0, max_failed=2),
            "MinSucceeded cannot be smaller than 1 for TaskRole:r",
            "spec.roles[0].completionPolicy.minSucceeded",
            id="both lower bounds are checked before the upper bounds",
        ),
        pytest.param(
            one_role(replicas=None),
            "MinSucceeded cannot be smaller than 1 for TaskRole:r",
            "spec.roles[0].completionPolicy.minSucceeded",
            id="absent replicas reads as 0, so the defaulted minSucceeded 0 is rejected",
        ),
        pytest.param(
            one_role(replicas=0, min_succeeded=1, max_failed=1),
            "MaxFailed cannot be bigger than replica amount for TaskRole:r",
            "spec.roles[0].completionPolicy.maxFailed",
            id="replicas 0 with explicit thresholds fails the upper bound",
        ),
        pytest.param(
            one_role(replicas=-3),
            "MinSucceeded cannot be smaller than 1 for TaskRole:r",
            "spec.roles[0].completionPolicy.minSucceeded",
            id="negative replicas are rejected through the defaulted minSucceeded",
        ),
        pytest.param(
            TaskSetBuilder(LONG).role("r", replicas=11).obj(),
            "Pod name cannot be longer than 63 characters for TaskRole:r",
            "spec.roles[0].name",
            id="the longest pod name would have 64 characters (S24, D2)",
        ),
        pytest.param(
            TaskSetBuilder("ts").role("ok").role("b" * 59, replicas=10).obj(),
            "Pod name cannot be longer than 63 characters for TaskRole:" + "b" * 59,
            "spec.roles[1].name",
            id="the pod-name check names the offending role",
        ),
        pytest.param(
            TaskSetBuilder("t" * 51)
            .role("r" * 10, replicas=2, min_succeeded=3)
            .role("s", max_failed=0)
            .obj(),
            "MinSucceeded cannot be bigger than replica amount for TaskRole:" + "r" * 10,
            "spec.roles[0].completionPolicy.minSucceeded",
            id="check 2 runs role by role, so the first role's failure wins",
        ),
        pytest.param(
            TaskSetBuilder("t" * 51).role("r" * 10, replicas=2).role("s", max_failed=0).obj(),
            "Pod name cannot be longer than 63 characters for TaskRole:" + "r" * 10,
            "spec.roles[0].name",
            id="the pod-name check of a role comes before the next role's completion checks",
        ),
        pytest.param(
            one_role(event_policy=[("RoleFail", "NoAction")]),
            "Unknown event 'RoleFail' in eventPolicy of TaskRole:r",
            "spec.roles[0].eventPolicy[0].event",
            id="unknown event (W-19)",
        ),
        pytest.param(
            one_role(event_policy=[("RoleFailed", "NoAction"), ("RoleFailed", "TaskSetSucceed")]),
            "Unknown action 'TaskSetSucceed' in eventPolicy of TaskRole:r",
            "spec.roles[0].eventPolicy[1].action",
            id="unknown action (W-19)",
        ),
        pytest.param(
            one_role(event_policy=[("Bogus", "Bogus")]),
            "Unknown event 'Bogus' in eventPolicy of TaskRole:r",
            "spec.roles[0].eventPolicy[0].event",
            id="the event of an entry is checked before its action",
        ),
        pytest.param(
            one_role(event_policy=[("", "NoAction")]),
            "Unknown event '' in eventPolicy of TaskRole:r",
            "spec.roles[0].eventPolicy[0].event",
            id="an empty event string is unknown",
        ),
        pytest.param(
            TaskSetBuilder("ts")
            .role("a", event_policy=[("RoleFail", "NoAction")])
            .role("b", max_failed=0)
            .obj(),
            "MaxFailed cannot be smaller than 1 for TaskRole:b",
            "spec.roles[1].completionPolicy.maxFailed",
            id="every role's completion policy is checked before any event policy",
        ),
        pytest.param(
            TaskSetBuilder("ts").role("a", event_policy=[("rolefailed", "NoAction")]).obj(),
            "Unknown event 'rolefailed' in eventPolicy of TaskRole:a",
            "spec.roles[0].eventPolicy[0].event",
            id="event names are case-sensitive",
        ),
    ],
)
def test_controller_validation(obj: Obj, message: str, field: str) -> None:
    result = failure(obj)
    assert (result.message, result.field) == (message, field)


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(
            TaskSetBuilder(LONG).role("r", replicas=10).obj(), id="a 63-character pod name is fine (S24)"
        ),
        pytest.param(
            TaskSetBuilder("my-job").role("ps-a").obj(),
            id="hyphenated names that O rejected are accepted (S25, D2)",
        ),
        pytest.param(TaskSetBuilder("0").role("9").obj(), id="single-digit names are DNS labels"),
        pytest.param(
            TaskSetBuilder("ts")
            .role("r", replicas=MAX_REPLICAS, min_succeeded=1, max_failed=MAX_REPLICAS)
            .obj(),
            id="the largest replica count with extreme thresholds",
        ),
        pytest.param(
            TaskSetBuilder("ts").retry(True, MAX_RETRY_COUNT, MAX_RETRY_DELAY_SECONDS).obj(),
            id="retry bounds are inclusive",
        ),
        pytest.param(
            TaskSetBuilder("ts")
            .role("r", event_policy=[(e, a) for e in RoleEvent for a in TaskSetAction])
            .obj(),
            id="every event with every action",
        ),
        pytest.param(
            {
                "metadata": {"name": "ts"},
                "spec": {"roles": [{"name": f"r{i}", "replicas": 1} for i in range(MAX_ROLES)]},
            },
            id="the maximum number of roles",
        ),
    ],
)
def test_legal_taskset(obj: Obj) -> None:
    parsed(obj)


def test_an_illegal_taskset_still_outlines_its_roles_for_the_initial_status() -> None:
    result = failure(TaskSetBuilder("dupnames").role("role1", replicas=2).role("role1", replicas=3).obj())
    assert result.roles == (RoleOutline("role1", 2), RoleOutline("role1", 3))


def test_the_outline_of_a_malformed_object_is_best_effort() -> None:
    obj = {
        "metadata": {"name": "ts"},
        "spec": {"roles": [{"name": "a", "replicas": "2"}, 7, {"replicas": 3}]},
    }
    result = failure(obj)
    assert result.roles == (RoleOutline("a", 0), RoleOutline("", 0), RoleOutline("", 3))


# ======================================================================================================
# Shape errors: the message names the field
# ======================================================================================================

DNS_PROBLEM = (
    "must be a DNS-1123 label (at most 63 lower-case alphanumerics or '-', starting and ending alphanumeric)"
)


def _with_role_field(key: str, value: Any) -> Obj:
    obj = one_role()
    role0(obj)[key] = value
    return obj


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        pytest.param(None, "TaskSet: must be an object", id="None is not a TaskSet"),
        pytest.param([1, 2], "TaskSet: must be an object", id="a list is not a TaskSet"),
        pytest.param({}, "metadata.name: required", id="a TaskSet without a name"),
        pytest.param({"metadata": "x"}, "metadata: must be an object", id="metadata that is not an object"),
        pytest.param(
            {"metadata": {"name": "MyJob"}}, f"metadata.name: {DNS_PROBLEM}", id="upper-case TaskSet name"
        ),
        pytest.param({"metadata": {"name": "-job"}}, f"metadata.name: {DNS_PROBLEM}", id="leading hyphen"),
        pytest.param({"metadata": {"name": "job-"}}, f"metadata.name: {DNS_PROBLEM}", id="trailing hyphen"),
        pytest.param(
            {"metadata": {"name": "my.job"}}, f"metadata.name: {DNS_PROBLEM}", id="a dot in the name"
        ),
        pytest.param(
            {"metadata": {"name": "job\n"}}, f"metadata.name: {DNS_PROBLEM}", id="a trailing newline"
        ),
        pytest.param(
            {"metadata": {"name": "a" * 64}}, f"metadata.name: {DNS_PROBLEM}", id="a 64-character name"
        ),
        pytest.param({"metadata": {"name": 5}}, f"metadata.name: {DNS_PROBLEM}", id="a numeric name"),
        pytest.param(
            {"metadata": {"name": "ts"}, "spec": []}, "spec: must be an object", id="spec that is a list"
        ),
        pytest.param(
            {"metadata": {"name": "ts"}, "spec": {"roles": {"name": "r"}}},
            "spec.roles: must be a list",
            id="roles that is an object",
        ),
        pytest.param(
            {
                "metadata": {"name": "ts"},
                "spec": {"roles": [{"name": f"r{i}"} for i in range(MAX_ROLES + 1)]},
            },
            f"spec.roles: must have at most {MAX_ROLES} roles",
            id="more roles than the CRD allows",
        ),
        pytest.param(
            {"metadata": {"name": "ts"}, "spec": {"roles": [None]}},
            "spec.roles[0]: must be an object",
            id="a null role",
        ),
        pytest.param(
            TaskSetBuilder("ts").role("a").obj() | {"spec": {"roles": [{"name": "a"}, {"replicas": 1}]}},
            "spec.roles[1].name: required",
            id="a role without a name",
        ),
        pytest.param(
            TaskSetBuilder("ts").role("Ps").obj(), f"spec.roles[0].name: {DNS_PROBLEM}", id="role Ps"
        ),
        pytest.param(
            TaskSetBuilder("ts").role("ps_0").obj(), f"spec.roles[0].name: {DNS_PROBLEM}", id="role ps_0"
        ),
        pytest.param(
            TaskSetBuilder("ts").role("ps-").obj(), f"spec.roles[0].name: {DNS_PROBLEM}", id="role ps-"
        ),
        pytest.param(
            one_role(replicas=MAX_REPLICAS + 1),
            "spec.roles[0].replicas: must be an integer between 1 and 10000",
            id="replicas 10001",
        ),
        pytest.param(
            _with_role_field("replicas", "3"),
            "spec.roles[0].replicas: must be an integer between 1 and 10000",
            id="replicas as a string",
        ),
        pytest.param(
            _with_role_field("replicas", True),
            "spec.roles[0].replicas: must be an integer between 1 and 10000",
            id="replicas as a boolean",
        ),
        pytest.param(
            _with_role_field("replicas", 2.0),
            "spec.roles[0].replicas: must be an integer between 1 and 10000",
            id="replicas as a float",
        ),
        pytest.param(
            _with_role_field("completionPolicy", [1]),
            "spec.roles[0].completionPolicy: must be an object",
            id="completionPolicy that is a list",
        ),
        pytest.param(
            _with_role_field("completionPolicy", {"minSucceeded": "1"}),
            "spec.roles[0].completionPolicy.minSucceeded: " + THRESHOLD_PROBLEM,
            id="minSucceeded as a string",
        ),
        pytest.param(
            _with_role_field("completionPolicy", {"maxFailed": 1.5}),
            "spec.roles[0].completionPolicy.maxFailed: " + THRESHOLD_PROBLEM,
            id="maxFailed as a float",
        ),
        pytest.param(
            one_role(retry={"retry": "yes"}),
            "spec.roles[0].retryPolicy.retry: must be a boolean",
            id="retry as a string",
        ),
        pytest.param(
            one_role(retry=(True, 1, -1)),
            f"spec.roles[0].retryPolicy.delay: must be an integer between 0 and {MAX_RETRY_DELAY_SECONDS}",
            id="a negative role retry delay",
        ),
        pytest.param(
            one_role(retry=(True, -1, 0)),
            f"spec.roles[0].retryPolicy.maxRetryCount: must be an integer between 0 and {MAX_RETRY_COUNT}",
            id="a negative role maxRetryCount",
        ),
        pytest.param(
            TaskSetBuilder("ts").retry(True, 1, MAX_RETRY_DELAY_SECONDS + 1).obj(),
            f"spec.retryPolicy.delay: must be an integer between 0 and {MAX_RETRY_DELAY_SECONDS}",
            id="a TaskSet retry delay above the maximum",
        ),
        pytest.param(
            TaskSetBuilder("ts").retry(True, MAX_RETRY_COUNT + 1, 0).obj(),
            f"spec.retryPolicy.maxRetryCount: must be an integer between 0 and {MAX_RETRY_COUNT}",
            id="a TaskSet maxRetryCount above the maximum",
        ),
        pytest.param(
            TaskSetBuilder("ts").obj() | {"spec": {"retryPolicy": "always"}},
            "spec.retryPolicy: must be an object",
            id="a TaskSet retryPolicy that is a string",
        ),
        pytest.param(
            _with_role_field("eventPolicy", {"event": "RoleFailed"}),
            "spec.roles[0].eventPolicy: must be a list",
            id="eventPolicy that is an object",
        ),
        pytest.param(
            _with_role_field("eventPolicy", ["RoleFailed"]),
            "spec.roles[0].eventPolicy[0]: must be an object",
            id="an eventPolicy entry that is a string",
        ),
        pytest.param(
            _with_role_field("eventPolicy", [{"action": "NoAction"}]),
            "spec.roles[0].eventPolicy[0].event: required",
            id="an eventPolicy entry without event",
        ),
        pytest.param(
            _with_role_field("eventPolicy", [{"event": "RoleFailed", "action": 3}]),
            "spec.roles[0].eventPolicy[0].action: must be a string",
            id="an eventPolicy action that is a number",
        ),
        pytest.param(
            _with_role_field("template", ["spec"]),
            "spec.roles[0].template: must be an object",
            id="a template that is a list",
        ),
        pytest.param(
            TaskSetBuilder("ts").queue("Default").obj(),
            "spec.queue: must match ^[a-z0-9]{1,63}$",
            id="a queue name with upper case",
        ),
        pytest.param(
            TaskSetBuilder("ts").obj() | {"spec": {"priority": "high"}},
            "spec.priority: must be an integer",
            id="a priority that is a string",
        ),
        pytest.param(
            TaskSetBuilder("ts").role("Bad", min_succeeded=0).role("Bad").obj(),
            f"spec.roles[0].name: {DNS_PROBLEM}",
            id="shape errors come before the spec's checks",
        ),
    ],
)
def test_shape_errors_name_the_field(obj: object, message: str) -> None:
    result = failure(obj)
    assert result.message == message
    assert message.startswith(result.field) or result.field == ""


# ======================================================================================================
# Names and summary
# ======================================================================================================


def test_pod_and_control_unit_names() -> None:
    assert pod_name("tensorflowdemo", "worker", 2) == "tensorflowdemo-worker-2"
    for ts, name, index in (("a", "b", 0), ("job-1", "ps", 9999), (LONG, "r", 10)):
        assert pod_name(ts, name, index) == POD_NAME_FORMAT.format(taskset=ts, role=name, index=index)
    assert control_unit_name("tsretry", 1) == "c-tsretry-1"
    assert longest_pod_name_length(LONG, "r", 10) == 63
    role = parsed(one_role(replicas=3)).spec.roles[0]
    assert role.pod_name("ts", 2) == "ts-r-2"


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        pytest.param("a", True, id="one letter"),
        pytest.param("my-job", True, id="inner hyphen"),
        pytest.param("a" * 63, True, id="63 characters"),
        pytest.param("", False, id="empty"),
        pytest.param("a" * 64, False, id="64 characters"),
        pytest.param("a.b", False, id="dot"),
        pytest.param("A", False, id="upper case"),
        pytest.param("a\n", False, id="trailing newline"),
    ],
)
def test_dns1123_label(name: str, valid: bool) -> None:
    assert is_dns1123_label(name) is valid


def test_status_summary_counts_completed_roles_and_replicas() -> None:
    done, running = ReplicaPhase.COMPLETED, ReplicaPhase.ATTEMPT_RUNNING
    status = TaskSetStatus(
        roles=[
            RoleStatus("a", [ReplicaStatus(0, "a", phase=running)], phase=RolePhase.RUNNING),
            RoleStatus(
                "b",
                [ReplicaStatus(i, "b", phase=phase) for i, phase in enumerate((done, done, running))],
                phase=RolePhase.COMPLETED,
            ),
        ]
    )
    counts = {"waiting": 0, "running": 2, "succeeded": 0, "failed": 2, "retrying": 0, "stopped": 0}
    assert status.summary() == {"roles": "1/2", "replicas": "2/4", **counts}
    nothing = dict.fromkeys(counts, 0)
    assert TaskSetStatus().summary() == {"roles": "0/0", "replicas": "0/0", **nothing}


# ======================================================================================================
# Properties
# ======================================================================================================

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)
FIELD_NAMES = st.sampled_from(
    [
        "metadata", "name", "spec", "roles", "replicas", "completionPolicy", "minSucceeded", "maxFailed",
        "retryPolicy", "retry", "maxRetryCount", "delay", "eventPolicy", "event", "action", "template",
        "queue", "priority", "uid", "generation",
    ]
)  # fmt: skip
# JSON whose keys are mostly real field names, so the junk reaches deep into the parser.
TASKSET_LIKE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 12)
    | st.text(alphabet="ab-R", max_size=4)
    | st.sampled_from([str(e) for e in RoleEvent] + [str(a) for a in TaskSetAction]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(FIELD_NAMES, inner, max_size=6),
    max_leaves=40,
)


def assert_invariants(result: object) -> None:
    if isinstance(result, ValidationFailure):
        assert result.message
        return
    assert isinstance(result, ParsedTaskSet)
    assert is_dns1123_label(result.name)
    names = [role.name for role in result.spec.roles]
    assert len(names) == len(set(names))
    for role in result.spec.roles:
        assert is_dns1123_label(role.name)
        assert 1 <= role.replicas <= MAX_REPLICAS
        assert 1 <= role.completion_policy.min_succeeded <= role.replicas
        assert 1 <= role.completion_policy.max_failed <= role.replicas
        assert longest_pod_name_length(result.name, role.name, role.replicas) <= 63
        assert role.event_policies


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_arbitrary_json_never_raises(obj: object) -> None:
    assert_invariants(parse_taskset(obj))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(FIELD_NAMES, TASKSET_LIKE, max_size=4))
def test_taskset_shaped_junk_never_raises_and_every_accepted_view_is_sound(obj: dict[str, Any]) -> None:
    obj.setdefault("metadata", {"name": "ts"})
    assert_invariants(parse_taskset(obj))


@st.composite
def legal_tasksets(draw: st.DrawFn) -> Obj:
    builder = TaskSetBuilder(draw(st.sampled_from(["ts", "my-job", "a" * 40])))
    names = draw(st.lists(st.sampled_from(["ps", "worker", "w-1", "r"]), unique=True, max_size=4))
    for name in names:
        replicas = draw(st.integers(1, 200))
        builder.role(
            name,
            replicas=replicas,
            min_succeeded=draw(st.none() | st.integers(1, replicas)),
            max_failed=draw(st.none() | st.integers(1, replicas)),
            retry=draw(st.none() | st.tuples(st.booleans(), st.integers(0, 5), st.integers(0, 60))),
            event_policy=draw(
                st.none()
                | st.lists(st.tuples(st.sampled_from(list(RoleEvent)), st.sampled_from(list(TaskSetAction))))
            ),
            template=pod_template(draw(st.sampled_from(["exit 0", "exit 1"]))),
        )
    return builder.obj()


@settings(max_examples=200, deadline=None)
@given(legal_tasksets())
def test_every_legal_taskset_parses_with_its_values(obj: Obj) -> None:
    result = parsed(obj)
    assert_invariants(result)
    for role, raw in zip(result.spec.roles, obj["spec"].get("roles", []), strict=True):
        assert role.replicas == raw["replicas"]
        raw_cp = raw.get("completionPolicy", {})
        assert role.completion_policy.min_succeeded == raw_cp.get("minSucceeded", raw["replicas"])
        assert role.completion_policy.max_failed == raw_cp.get("maxFailed", 1)
