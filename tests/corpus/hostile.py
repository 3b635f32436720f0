"""A corpus of hostile TaskSets, as data: malformed, huge, null-riddled, unicode and unknown-field
variations of one good TaskSet, each with the outcome it must have on a real API server.

* ``Rejected``: the API server refuses the create (HTTP 4xx) and its message names the offending field;
  nothing is stored. ``schema_only`` marks a case the controller's own parse would let through: for
  those the CRD's schema is the only guard (unknown fields, the Pod template's and the metadata's
  shapes, fields only an optional integration reads).
* ``Fails``: the schema accepts it, and the TaskSet ends ``Failed`` with a message that names the field:
  either the controller's own verdict (``pod_creation=False``: the message is the TaskSet's
  ``stateMessage``), or the API server's refusal of the Pod (``podReason: PodCreationFailed`` and the API
  error in the replica's ``phaseMessage``).
* ``Succeeds``: accepted and harmless once the API server has normalised it (no roles at all, a generated
  name, nulls pruned).

Three levels read it: the controller's parse (``tests/unit/taskset/api/test_parse_hostile_input.py``),
the API server and a running controller (``tests/integration/test_hostile_input.py``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import pytest

from devcluster import sim
from tests.builders import TaskSetBuilder, pod_template

NAME = "bad-00"  # every case's name unless the name is the point; renamed to bad-NN when sharing a namespace
GOOD = pod_template(annotations=sim.outcome(duration=1))
MB = 1024 * 1024


@dataclass(frozen=True)
class Rejected:
    texts: tuple[str, ...]  # each appears in the API server's message
    status: int = 422
    schema_only: bool = False  # the controller's parse accepts it: only the CRD's schema refuses it


@dataclass(frozen=True)
class Fails:
    texts: tuple[str, ...]  # each appears in the failure message
    pod_creation: bool = True  # the message is a replica's PodCreationFailed phaseMessage


@dataclass(frozen=True)
class Succeeds:
    why: str


Expectation = Rejected | Fails | Succeeds


def rejected(*texts: str, status: int = 422, schema_only: bool = False) -> Rejected:
    return Rejected(texts, status, schema_only)


def fails(*texts: str) -> Fails:
    return Fails(texts)


# ----- building the corpus ----------------------------------------------------------------------------------


def good_role(name: str = "r", **fields: Any) -> dict[str, Any]:
    role: dict[str, Any] = {"name": name, "replicas": 1, "template": copy.deepcopy(GOOD)}
    role.update(fields)
    return role


def taskset(spec: Any = None, *, name: str | None = NAME, **top: Any) -> dict[str, Any]:
    """A TaskSet whose spec defaults to one good role; ``top`` replaces top-level keys."""
    obj = TaskSetBuilder(name or NAME).obj()
    if name is None:
        del obj["metadata"]["name"]
    obj["spec"] = {"roles": [good_role()]} if spec is None else spec
    obj.update(top)
    return obj


def with_role(**fields: Any) -> dict[str, Any]:
    """One role: the good role with ``fields`` replaced (a value of ``...`` deletes the field)."""
    role = good_role()
    for key, value in fields.items():
        if value is ...:
            role.pop(key, None)
        else:
            role[key] = value
    return taskset({"roles": [role]})


def with_pod_spec(**fields: Any) -> dict[str, Any]:
    template = copy.deepcopy(GOOD)
    template["spec"].update(fields)
    return with_role(template=template)


def with_container(**fields: Any) -> dict[str, Any]:
    template = copy.deepcopy(GOOD)
    container = template["spec"]["containers"][0]
    for key, value in fields.items():
        if value is ...:
            container.pop(key, None)
        else:
            container[key] = value
    return with_role(template=template)


def with_template_metadata(**fields: Any) -> dict[str, Any]:
    template = copy.deepcopy(GOOD)
    template.setdefault("metadata", {}).update(fields)
    return with_role(template=template)


def nested(depth: int, leaf: Any = "x") -> Any:
    value: Any = leaf
    for level in range(depth):
        value = {f"k{level}": value}
    return value


def nested_list(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def roles(count: int) -> dict[str, Any]:
    return taskset({"roles": [{"name": f"r{i}", "replicas": 1} for i in range(count)]})


R0 = "spec.roles[0]"
INT = "must be of type integer"
OBJ = "must be of type object"
ARR = "must be of type array"
GE = "should be greater than or equal to"
DNS = "should match '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$'"
ALL_NULL_ROLE = {
    "name": "r",
    "replicas": 1,
    "completionPolicy": None,
    "retryPolicy": None,
    "eventPolicy": None,
    "template": None,
}

CORPUS = [
    # ----- wrong types ----------------------------------------------------------------------------------
    pytest.param(with_role(replicas="1"), rejected(f"{R0}.replicas", INT), id="replicas is the string 1"),
    pytest.param(with_role(replicas="abc"), rejected(f"{R0}.replicas", INT), id="replicas is a word"),
    pytest.param(
        with_role(replicas=True),
        rejected(f"{R0}.replicas", "must be of type int32"),
        id="replicas is a boolean",
    ),
    pytest.param(with_role(replicas=[1]), rejected(f"{R0}.replicas", INT), id="replicas is a list"),
    pytest.param(
        with_role(replicas={"n": 1}),
        rejected(f'unknown field "{R0}.replicas.n"', status=400),
        id="replicas is an object",
    ),
    pytest.param(
        taskset({"roles": {"r": good_role()}}),
        rejected('unknown field "spec.roles.r"', status=400),
        id="roles is an object",
    ),
    pytest.param(taskset({"roles": "r"}), rejected("spec.roles", ARR), id="roles is a string"),
    pytest.param(
        taskset({"roles": [[good_role()]]}),
        rejected('unknown field "spec.roles[0][0].name"', status=400),
        id="a role is a list",
    ),
    pytest.param(taskset({"roles": ["r"]}), rejected(R0, OBJ), id="a role is a string"),
    pytest.param(
        with_role(template=[GOOD]),
        rejected(f'unknown field "{R0}.template[0].spec"', status=400),
        id="template is a list",
    ),
    pytest.param(with_role(template="busybox"), rejected(f"{R0}.template", OBJ), id="template is a string"),
    pytest.param(
        with_role(completionPolicy=[1, 1]),
        rejected(f"{R0}.completionPolicy", OBJ),
        id="completionPolicy is a list",
    ),
    pytest.param(
        with_role(completionPolicy={"minSucceeded": "1"}),
        rejected(f"{R0}.completionPolicy.minSucceeded", "should match '^(100|[1-9][0-9]?)%$'"),
        id="minSucceeded is a string that is no percentage",
    ),
    pytest.param(
        with_role(retryPolicy={"retry": "yes", "maxRetryCount": 1}),
        rejected(f"{R0}.retryPolicy.retry", "must be of type boolean"),
        id="retry is a string",
    ),
    pytest.param(
        with_role(retryPolicy=[True, 1, 0]), rejected(f"{R0}.retryPolicy", OBJ), id="retryPolicy is a list"
    ),
    pytest.param(
        with_role(eventPolicy={"event": "RoleFailed", "action": "NoAction"}),
        rejected(f'unknown field "{R0}.eventPolicy.event"', status=400),
        id="eventPolicy is an object",
    ),
    pytest.param(
        with_role(eventPolicy=["RoleFailed"]),
        rejected(f"{R0}.eventPolicy[0]", OBJ),
        id="an eventPolicy entry is a string",
    ),
    pytest.param(
        taskset({"roles": [good_role()], "priority": "high"}),
        rejected("spec.priority", INT),
        id="priority is a string",
    ),
    pytest.param(
        taskset({"roles": [good_role()], "queue": 5}),
        rejected("spec.queue", "must be of type string"),
        id="queue is a number",
    ),
    # ----- network and framework presets ----------------------------------------------------------------
    pytest.param(
        taskset({"roles": [good_role()], "network": "on"}),
        rejected("spec.network", OBJ),
        id="network is a string",
    ),
    pytest.param(
        taskset({"roles": [good_role()], "network": {"enableDNSHostnames": "yes"}}),
        rejected("spec.network.enableDNSHostnames", "must be of type boolean"),
        id="enableDNSHostnames is a string",
    ),
    pytest.param(
        taskset({"roles": [good_role()], "network": {"subdomain": "9-lives"}}),
        rejected("spec.network.subdomain", "should match"),
        id="subdomain starts with a digit",
    ),
    pytest.param(
        taskset({"roles": [good_role()], "network": {"subdomain": "s" * 64}}),
        rejected("spec.network.subdomain", "Too long"),
        id="subdomain of 64 characters",
    ),
    pytest.param(
        taskset({"roles": [good_role()], "framework": "caffe"}),
        rejected("spec.framework", "Unsupported value"),
        id="an unknown framework",
    ),
    pytest.param(
        taskset({"roles": [good_role()], "framework": "pytorch", "frameworkOptions": {"masterRole": "boss"}}),
        rejected("spec.frameworkOptions.masterRole", "must name one of the roles"),
        id="a master role that is not a role",
    ),
    pytest.param(
        taskset({"roles": [good_role()], "frameworkOptions": {"port": 70000}}),
        rejected("spec.frameworkOptions.port", "should be less than or equal to 65535"),
        id="a port beyond 65535",
    ),
    pytest.param(
        taskset({"roles": [good_role()], "frameworkOptions": {"nprocPerNode": "lots"}}),
        rejected("spec.frameworkOptions.nprocPerNode", "should match"),
        id="nprocPerNode is a word",
    ),
    pytest.param(
        taskset({"roles": [good_role()], "frameworkOptions": {"slotsPerWorker": 0}}),
        rejected("spec.frameworkOptions.slotsPerWorker", "should be greater than or equal to 1"),
        id="no MPI slots",
    ),
    pytest.param(
        taskset({"roles": [good_role()], "framework": "jax", "network": {"enableDNSHostnames": False}}),
        rejected("spec.network.enableDNSHostnames", "needs the replicas' DNS names"),
        id="a preset without names",
    ),
    pytest.param(
        taskset({"roles": [good_role("a", dependsOn=[{"role": "a"}])]}),
        rejected("spec.roles[0].dependsOn", "a role cannot depend on itself"),
        id="a role that depends on itself",
    ),
    pytest.param(
        taskset({"roles": [good_role("a", dependsOn=[{"role": "ghost"}])]}),
        rejected("spec.roles", "dependsOn must name roles of the TaskSet"),
        id="a dependency on no role",
    ),
    pytest.param(
        taskset({"roles": [good_role("a"), good_role("b", dependsOn=[{"role": "a", "until": "Started"}])]}),
        rejected("spec.roles[1].dependsOn[0].until", "Unsupported value"),
        id="an unknown point to wait for",
    ),
    pytest.param(
        taskset({"roles": [good_role("a"), good_role("b", dependsOn=[{"role": "a", "minReplicas": 0}])]}),
        rejected("spec.roles[1].dependsOn[0].minReplicas", "should be greater than or equal to 1"),
        id="minReplicas 0",
    ),
    pytest.param(
        taskset(
            {"roles": [good_role("a", dependsOn=[{"role": "b"}]), good_role("b", dependsOn=[{"role": "a"}])]}
        ),
        Fails(("spec.roles[0].dependsOn: the roles a -> b -> a depend on one another in a cycle",), False),
        id="a cycle",
    ),
    pytest.param(
        taskset({"roles": [good_role("a"), good_role("b", dependsOn=[{"role": "a", "minReplicas": 2}])]}),
        Fails(
            (
                "spec.roles[1].dependsOn[0].minReplicas: must be an integer between 1 and the replicas of "
                "role a",
            ),
            False,
        ),
        id="minReplicas beyond the role",
    ),
    pytest.param(taskset([]), rejected("spec", OBJ), id="spec is a list"),
    pytest.param(taskset("run everything"), rejected("spec", OBJ), id="spec is a string"),
    pytest.param(taskset(42), rejected("spec", OBJ), id="spec is a number"),
    pytest.param(
        with_container(command="exit 0"),
        rejected(f"{R0}.template.spec.containers[0].command", ARR, schema_only=True),
        id="container command is a string",
    ),
    pytest.param(
        with_pod_spec(containers={"name": "c0", "image": "busybox"}),
        rejected(f'unknown field "{R0}.template.spec.containers.image"', status=400, schema_only=True),
        id="containers is an object",
    ),
    pytest.param(
        taskset(metadata={"name": NAME, "labels": ["a", "b"]}),
        rejected("Go struct field ObjectMeta.labels", status=400, schema_only=True),
        id="TaskSet labels are a list",
    ),
    pytest.param(
        taskset(metadata={"name": 5}),
        rejected("Go struct field ObjectMeta.name", status=400),
        id="TaskSet name is a number",
    ),
    # ----- suspend, managedBy and gang ------------------------------------------------------------------
    *(
        pytest.param(
            taskset({"roles": [good_role()], field: value}),
            rejected(f"spec.{field}", problem, schema_only=schema_only),
            id=f"{field} is {what}",
        )
        for field, value, problem, what, schema_only in (
            ("suspend", "yes", "must be of type boolean", "a string", False),
            ("suspend", 1, "must be of type boolean", "a number", False),
            ("managedBy", 7, "must be of type string", "a number", True),
            ("managedBy", "no-domain", "should match", "without a domain prefix", True),
            ("managedBy", "example.com/" + "x" * 100, "Too long", "too long", True),
        )
    ),
    *(
        pytest.param(
            taskset({"roles": [good_role()], "gang": gang}),
            rejected(f"spec.gang{where}", problem, schema_only=True),
            id=f"gang {what}",
        )
        for gang, where, problem, what in (
            ("all", "", "must be of type object", "is a string"),
            ({}, ".scheduler", "Required value", "names no scheduler"),
            ({"scheduler": "slurm"}, ".scheduler", "Unsupported value", "names an unknown scheduler"),
            (
                {"scheduler": "volcano", "minAvailable": 0},
                ".minAvailable",
                "should be greater than or equal to 1",
                "wants no Pod",
            ),
            (
                {"scheduler": "volcano", "queue": "Not A Queue"},
                ".queue",
                "should match",
                "names a malformed queue",
            ),
        )
    ),
    pytest.param(
        taskset({"roles": [good_role()], "suspend": None, "managedBy": None}),
        Succeeds("null suspend and managedBy are absent: run here, not suspended"),
        id="suspend and managedBy are null",
    ),
    # ----- nulls, one at a time and all at once ---------------------------------------------------------
    pytest.param({**taskset(), "spec": None}, Succeeds("a null spec is no roles"), id="spec is null"),
    pytest.param(taskset({"roles": None}), Succeeds("null roles are no roles"), id="roles is null"),
    pytest.param(taskset({"roles": [None]}), rejected(R0, OBJ), id="a role is null"),
    pytest.param(with_role(name=None), rejected(f"{R0}.name", "Required value"), id="role name is null"),
    pytest.param(
        with_role(replicas=None), rejected(f"{R0}.replicas", "Required value"), id="replicas is null"
    ),
    pytest.param(with_role(template=None), fails("spec.containers", "Required value"), id="template is null"),
    pytest.param(
        with_role(completionPolicy={"minSucceeded": None, "maxFailed": None}),
        Succeeds("null thresholds are the defaults"),
        id="completion thresholds are null",
    ),
    pytest.param(
        with_role(retryPolicy={"retry": None, "maxRetryCount": None, "delay": None}),
        Succeeds("a retry policy of nulls is no retry"),
        id="retry policy fields are null",
    ),
    pytest.param(
        with_role(eventPolicy=[{"event": None, "action": "NoAction"}]),
        rejected(f"{R0}.eventPolicy[0].event", "Required value"),
        id="event is null",
    ),
    pytest.param(
        with_pod_spec(containers=None),
        rejected(f"{R0}.template.spec.containers: Required value", schema_only=True),
        id="containers is null",
    ),
    pytest.param(
        with_role(template={"metadata": None, "spec": None}),
        fails("spec.containers", "Required value"),
        id="template metadata and spec are null",
    ),
    pytest.param(
        taskset({"roles": [ALL_NULL_ROLE], "retryPolicy": None, "queue": None, "priority": None}),
        fails("spec.containers", "Required value"),
        id="every optional field is null at once",
    ),
    pytest.param(
        taskset(
            {"roles": [{key: None for key in ALL_NULL_ROLE}], "retryPolicy": None, "queue": None},
        ),
        rejected(f"{R0}.name", f"{R0}.replicas", "Required value"),
        id="every role field is null at once",
    ),
    pytest.param(
        taskset(name=None, metadata={"name": None}),
        rejected("metadata.name", "Required value"),
        id="TaskSet name is null",
    ),
    # ----- huge and odd numbers ------------------------------------------------------------------------
    pytest.param(
        with_role(replicas=10001),
        rejected(f"{R0}.replicas", "should be less than or equal to 10000"),
        id="10001 replicas (S25)",
    ),
    pytest.param(
        with_role(replicas=2**31),
        rejected(f"{R0}.replicas", "should be less than or equal to 10000"),
        id="2 to the 31 replicas",
    ),
    pytest.param(
        with_role(replicas=2**63),
        rejected(f"{R0}.replicas", INT),
        id="2 to the 63 replicas",
    ),
    pytest.param(with_role(replicas=2**64 + 1), rejected(f"{R0}.replicas", INT), id="2 to the 64 replicas"),
    pytest.param(
        with_role(replicas=-1),
        rejected(f"{R0}.replicas", "should be greater than or equal to 1"),
        id="negative replicas",
    ),
    pytest.param(with_role(replicas=1.5), rejected(f"{R0}.replicas", INT), id="fractional replicas"),
    pytest.param(
        with_role(retryPolicy={"retry": True, "maxRetryCount": 2**63 - 1, "delay": 10**12}),
        rejected(f"{R0}.retryPolicy.maxRetryCount", f"{R0}.retryPolicy.delay"),
        id="huge role retry count and delay",
    ),
    pytest.param(
        taskset({"roles": [good_role()], "retryPolicy": {"retry": True, "maxRetryCount": -1, "delay": -5}}),
        rejected("spec.retryPolicy.maxRetryCount", "spec.retryPolicy.delay"),
        id="negative TaskSet retry count and delay",
    ),
    pytest.param(
        with_role(retryPolicy={"retry": True, "maxRetryCount": 1000001, "delay": 31622401}),
        rejected(f"{R0}.retryPolicy.maxRetryCount", f"{R0}.retryPolicy.delay"),
        id="retry count and delay one above the maximum",
    ),
    pytest.param(
        with_role(retryPolicy={"retry": True, "maxRetryCount": 1, "delay": 0.5}),
        rejected(f"{R0}.retryPolicy.delay", INT),
        id="fractional retry delay",
    ),
    pytest.param(
        taskset({"roles": [good_role()], "activeDeadlineSeconds": 0}),
        rejected("spec.activeDeadlineSeconds", "should be greater than or equal to 1"),
        id="zero activeDeadlineSeconds",
    ),
    pytest.param(
        taskset({"roles": [good_role()], "activeDeadlineSeconds": "1h"}),
        rejected("spec.activeDeadlineSeconds", INT),
        id="activeDeadlineSeconds is a duration string",
    ),
    pytest.param(
        taskset({"roles": [good_role()], "ttlSecondsAfterFinished": -1}),
        rejected("spec.ttlSecondsAfterFinished", "should be greater than or equal to 0"),
        id="negative ttlSecondsAfterFinished",
    ),
    *(
        pytest.param(obj, rejected(path, problem), id=why)
        for obj, path, problem, why in (
            (
                taskset({"roles": [good_role()], "startDeadlineSeconds": 0}),
                "spec.startDeadlineSeconds",
                "should be greater than or equal to 1",
                "zero startDeadlineSeconds",
            ),
            (
                with_role(startDeadlineSeconds="30s"),
                f"{R0}.startDeadlineSeconds",
                INT,
                "a role's startDeadlineSeconds is a duration string",
            ),
            (
                with_role(startDeadlineSeconds=-5),
                f"{R0}.startDeadlineSeconds",
                "should be greater than or equal to 1",
                "negative startDeadlineSeconds of a role",
            ),
            (
                with_role(startDeadlineSeconds=10**12),
                f"{R0}.startDeadlineSeconds",
                "should be less than or equal to",
                "startDeadlineSeconds above a year",
            ),
            (
                taskset({"roles": [good_role()], "cleanPodPolicy": "none"}),
                "spec.cleanPodPolicy",
                'Unsupported value: "none"',
                "cleanPodPolicy in the wrong case",
            ),
            (
                taskset({"roles": [good_role()], "cleanPodPolicy": ["All"]}),
                "spec.cleanPodPolicy",
                "must be of type string",
                "cleanPodPolicy is a list",
            ),
        )
    ),
    pytest.param(
        with_role(replicas=4, completionPolicy={"minSucceeded": "0%", "maxFailed": "50"}),
        rejected(f"{R0}.completionPolicy.minSucceeded", f"{R0}.completionPolicy.maxFailed", "should match"),
        id="threshold percentages out of range or without the sign",
    ),
    pytest.param(
        with_role(replicas=4, completionPolicy={"maxFailed": "12.5%"}),
        rejected(f"{R0}.completionPolicy.maxFailed", "Too long"),
        id="a fractional threshold percentage",
    ),
    pytest.param(roles(1001), rejected("spec.roles", "must have at most 100 items"), id="1001 roles"),
    pytest.param(roles(10000), rejected("spec.roles", "must have at most 100 items"), id="10000 roles"),
    # ----- deep and big junk ----------------------------------------------------------------------------
    pytest.param(
        with_template_metadata(annotations={"deep": nested(200)}),
        rejected(
            f'unknown field "{R0}.template.metadata.annotations.deep.k199"', status=400, schema_only=True
        ),
        id="200-level nested object as a template annotation",
    ),
    pytest.param(
        with_template_metadata(labels={"deep": nested_list(200)}),
        rejected(f"{R0}.template.metadata.labels.deep", "must be of type string", schema_only=True),
        id="200-level nested list as a template label",
    ),
    pytest.param(
        taskset({"roles": [good_role()], "junk": nested(200)}),
        rejected('unknown field "spec.junk"', status=400, schema_only=True),
        id="200-level nested unknown field in the spec",
    ),
    pytest.param(
        with_pod_spec(junk=nested(200)),
        rejected(f'unknown field "{R0}.template.spec.junk"', status=400, schema_only=True),
        id="200-level nested unknown field in the Pod spec",
    ),
    pytest.param(
        taskset(metadata={"name": NAME, "annotations": {"big": "x" * MB}}),
        rejected("metadata.annotations", "Too long", schema_only=True),
        id="1 MB annotation on the TaskSet",
    ),
    pytest.param(
        with_template_metadata(annotations={"big": "x" * MB}),
        fails("metadata.annotations", "Too long"),
        id="1 MB annotation in the template",
    ),
    # ----- unicode names ---------------------------------------------------------------------------------
    pytest.param(taskset(name="jöb"), rejected("metadata.name", DNS), id="non-ASCII TaskSet name"),
    pytest.param(taskset(name="🚀"), rejected("metadata.name", DNS), id="emoji TaskSet name"),
    pytest.param(taskset(name="שלום"), rejected("metadata.name", DNS), id="right-to-left TaskSet name"),
    pytest.param(
        taskset(name="job\u200b"), rejected("metadata.name", DNS), id="TaskSet name with a zero-width space"
    ),
    pytest.param(with_role(name="rôle"), rejected(f"{R0}.name", DNS), id="non-ASCII role name"),
    pytest.param(with_role(name="🔥"), rejected(f"{R0}.name", DNS), id="emoji role name"),
    pytest.param(
        with_role(name="r\u202eab"), rejected(f"{R0}.name", DNS), id="role name with an RTL override"
    ),
    pytest.param(
        with_template_metadata(labels={"who": "日本語"}),
        fails("metadata.labels", "Invalid value"),
        id="non-ASCII template label value",
    ),
    pytest.param(
        with_container(name="conteneur-é"),
        fails("spec.containers[0].name", "Invalid value"),
        id="non-ASCII container name",
    ),
    # ----- long strings ----------------------------------------------------------------------------------
    pytest.param(
        taskset(name="a" * 64), rejected("metadata.name", "may not be more than 63"), id="64-character name"
    ),
    pytest.param(
        taskset(name="a" * 253), rejected("metadata.name", "may not be more than 63"), id="253-character name"
    ),
    pytest.param(
        taskset(name="a" * 10000),
        rejected("metadata.name", "may not be more than 63"),
        id="10000-character name",
    ),
    pytest.param(
        with_role(name="r" * 64),
        rejected(f"{R0}.name", "may not be more than 63"),
        id="64-character role name",
    ),
    pytest.param(
        with_role(name="r" * 10000),
        rejected(f"{R0}.name", "may not be more than 63"),
        id="10000-character role name",
    ),
    pytest.param(
        taskset({"roles": [good_role("r" * 57)]}),
        rejected("spec.roles", "Pod name cannot be longer than 63 characters for TaskRole:" + "r" * 57),
        id="Pod name of 64 characters",
    ),
    pytest.param(
        taskset({"roles": [good_role()], "queue": "q" * 10000}),
        rejected("spec.queue", "should match"),
        id="10000-character queue",
    ),
    pytest.param(
        with_role(eventPolicy=[{"event": "E" * 10000, "action": "NoAction"}]),
        rejected(f"{R0}.eventPolicy[0].event", "Unsupported value"),
        id="10000-character event",
    ),
    pytest.param(
        with_container(env=[{"name": "V" * 10000, "value": "1"}]),
        Succeeds("Kubernetes puts no length limit on environment variable names"),
        id="10000-character environment variable name",
    ),
    # ----- unknown fields at every level -----------------------------------------------------------------
    pytest.param(
        taskset(junk=1),
        rejected('unknown field "junk"', status=400, schema_only=True),
        id="unknown top-level field",
    ),
    pytest.param(
        taskset(metadata={"name": NAME, "junk": 1}),
        rejected('unknown field "metadata.junk"', status=400, schema_only=True),
        id="unknown metadata field",
    ),
    pytest.param(
        with_role(junk=1),
        rejected(f'unknown field "{R0}.junk"', status=400, schema_only=True),
        id="unknown role field",
    ),
    pytest.param(
        with_role(completionPolicy={"junk": 1}),
        rejected(f'unknown field "{R0}.completionPolicy.junk"', status=400, schema_only=True),
        id="unknown completionPolicy field",
    ),
    pytest.param(
        with_role(retryPolicy={"junk": 1}),
        rejected(f'unknown field "{R0}.retryPolicy.junk"', status=400, schema_only=True),
        id="unknown retryPolicy field",
    ),
    pytest.param(
        with_role(eventPolicy=[{"event": "RoleFailed", "action": "NoAction", "junk": 1}]),
        rejected(f'unknown field "{R0}.eventPolicy[0].junk"', status=400, schema_only=True),
        id="unknown eventPolicy field",
    ),
    pytest.param(
        with_role(template={**GOOD, "junk": 1}),
        rejected(f'unknown field "{R0}.template.junk"', status=400, schema_only=True),
        id="unknown template field",
    ),
    pytest.param(
        with_container(junk=1),
        rejected(f'unknown field "{R0}.template.spec.containers[0].junk"', status=400, schema_only=True),
        id="unknown container field",
    ),
    # ----- duplicates, empties, bad enums, junk event policies ---------------------------------------------
    pytest.param(
        taskset({"roles": [good_role(), good_role()]}),
        rejected("spec.roles[1]", "Duplicate value"),
        id="duplicate role names",
    ),
    pytest.param(with_role(name=""), rejected(f"{R0}.name"), id="empty role name"),
    pytest.param(
        with_role(eventPolicy=[{"event": "RoleFail", "action": "NoAction"}]),
        rejected(f'{R0}.eventPolicy[0].event: Unsupported value: "RoleFail"'),
        id="unknown event (S25)",
    ),
    pytest.param(
        with_role(eventPolicy=[{"event": "RoleFailed", "action": "Explode"}]),
        rejected(f"{R0}.eventPolicy[0].action", 'Unsupported value: "Explode"'),
        id="unknown action",
    ),
    pytest.param(
        with_role(eventPolicy=[{"event": "", "action": ""}]),
        rejected(f"{R0}.eventPolicy[0].event", f"{R0}.eventPolicy[0].action"),
        id="empty event and action",
    ),
    pytest.param(
        with_role(eventPolicy=[{}]),
        rejected(f"{R0}.eventPolicy[0].event", f"{R0}.eventPolicy[0].action", "Required value"),
        id="empty eventPolicy entry",
    ),
    pytest.param(
        with_role(eventPolicy=[{"event": 7, "action": ["NoAction"]}]),
        rejected(f"{R0}.eventPolicy[0].event", f"{R0}.eventPolicy[0].action"),
        id="eventPolicy entry of wrong types",
    ),
    # ----- templates the schema accepts and Pod validation refuses ------------------------------------------
    pytest.param(
        with_container(name="Bad_Name"),
        fails("spec.containers[0].name", "Bad_Name"),
        id="container name Bad_Name",
    ),
    pytest.param(
        with_pod_spec(restartPolicy="Sometimes"),
        fails("spec.restartPolicy", "Sometimes"),
        id="restartPolicy Sometimes",
    ),
    pytest.param(
        with_container(resources={"limits": {"cpu": "lots"}}),
        rejected(f"{R0}.template.spec.containers[0].resources.limits.cpu", schema_only=True),
        id="resource quantity that is a word",
    ),
    pytest.param(
        with_container(resources={"requests": {"memory": "-1Gi"}}),
        fails("spec.containers[0].resources.requests[memory]", "must be greater than or equal to 0"),
        id="negative memory request",
    ),
    pytest.param(with_role(template=...), fails("spec.containers", "Required value"), id="no template"),
    pytest.param(
        with_pod_spec(containers=[]), fails("spec.containers", "Required value"), id="no containers"
    ),
    pytest.param(
        with_container(image=...),
        fails("spec.containers[0].image", "Required value"),
        id="container without image",
    ),
    pytest.param(
        with_pod_spec(activeDeadlineSeconds=0),
        fails("spec.activeDeadlineSeconds", "Invalid value"),
        id="activeDeadlineSeconds 0",
    ),
    pytest.param(
        with_template_metadata(labels={"bad key!": "v"}),
        fails("metadata.labels", "Invalid value"),
        id="template label key with a space",
    ),
    # ----- no spec, no name, generated names ----------------------------------------------------------------
    pytest.param(
        {k: v for k, v in taskset().items() if k != "spec"}, Succeeds("no spec is no roles"), id="no spec"
    ),
    pytest.param(
        taskset(name=None), rejected("metadata.name", "Required value"), id="no name and no generateName"
    ),
    pytest.param(
        taskset(name=None, metadata={"generateName": "gen-"}),
        Succeeds("the API server generates a legal name"),
        id="generateName instead of name",
    ),
    pytest.param(
        taskset(name=None, metadata={"generateName": "Gen_"}),
        rejected("metadata.generateName"),
        id="illegal generateName",
    ),
    # ----- the spec's illegal names and values (S25): HTTP 422 naming the field ------------------------
    *(
        pytest.param(taskset(name=name), rejected("metadata.name", DNS), id=f"TaskSet name {name} (S25)")
        for name in ("MyJob", "-job", "job-", "my.job")
    ),
    *(
        pytest.param(with_role(name=name), rejected(f"{R0}.name", DNS), id=f"role name {name} (S25)")
        for name in ("Ps", "ps_0", "ps-")
    ),
    pytest.param(with_role(replicas=0), rejected(f"{R0}.replicas", f"{GE} 1"), id="replicas 0 (S25)"),
    pytest.param(
        with_role(retryPolicy={"retry": True, "maxRetryCount": 1, "delay": -1}),
        rejected(f"{R0}.retryPolicy.delay", f"{GE} 0"),
        id="a negative role retry delay (S25)",
    ),
    *(
        pytest.param(
            with_role(completionPolicy={"minSucceeded": min_succeeded, "maxFailed": max_failed}),
            rejected(f"{R0}.completionPolicy.{field}", f"{GE} 1"),
            id=f"{field} {value} (S25)",
        )
        for min_succeeded, max_failed, field, value in (
            (0, 1, "minSucceeded", 0),
            (1, 0, "maxFailed", 0),
            (1, -1, "maxFailed", -1),
        )
    ),
    pytest.param(
        with_role(eventPolicy=[{"event": "RoleFailed", "action": "TaskSetSucceed"}]),
        rejected(f'{R0}.eventPolicy[0].action: Unsupported value: "TaskSetSucceed"'),
        id="an action the spec does not name (S25)",
    ),
    pytest.param(
        taskset({"roles": [good_role(replicas=11)]}, name="a" * 59),
        rejected("Pod name cannot be longer than 63 characters for TaskRole:r"),
        id="a TaskSet and role whose last Pod name has 64 characters (S25)",
    ),
]


def as_strangers_objects(obj: Any) -> list[Any]:
    """A hostile TaskSet as a cache sees it from a stranger: the object itself, and each of its roles' Pod
    templates as a running Pod."""
    found = [obj]
    roles = (
        obj.get("spec", {}).get("roles")
        if isinstance(obj, dict) and isinstance(obj.get("spec"), dict)
        else None
    )
    for role in roles if isinstance(roles, list) else []:
        template = role.get("template") if isinstance(role, dict) else None
        if isinstance(template, dict):
            found.append({"apiVersion": "v1", "kind": "Pod", **template, "status": {"phase": "Running"}})
    return found
