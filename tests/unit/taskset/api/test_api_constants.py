"""Wire strings are byte-identical to the spec (3.4), including O's kept typos and D3's two fixes."""

from __future__ import annotations

import pytest

from taskset.api import constants as c

pytestmark = pytest.mark.unit


def test_resource_identity() -> None:
    assert (c.GROUP, c.VERSION, c.API_VERSION) == (
        "octopus.openi.pcl.cn",
        "v1alpha1",
        "octopus.openi.pcl.cn/v1alpha1",
    )
    assert (c.KIND, c.LIST_KIND, c.PLURAL, c.SINGULAR) == ("TaskSet", "TaskSetList", "tasksets", "taskset")
    assert c.CRD_NAME == "tasksets.octopus.openi.pcl.cn"


@pytest.mark.parametrize(
    ("family", "values"),
    [
        pytest.param(
            c.TaskSetPhase,
            [
                "TaskSetValidation",
                "TaskSetAttemptPending",
                "TaskSetAttemptCreationRequested",
                "TaskSetAttemptPreparing",
                "TaskSetAttemptRunning",
                "TaskSetAttemptDeletionPending",
                "TaskSetAttemptDeletionRequested",
                "TaskSetAttemptCompleted",
                "TaskSetAttemptRetryPending",
                "TaskSetCompleted",
            ],
            id="TaskSet phases (5.1.1)",
        ),
        pytest.param(
            c.RolePhase,
            ["TaskRoleWaiting", "TaskRoleRunning", "TaskRoleCleaningPending", "TaskRoleCompleted"],
            id="role phases (5.2.1)",
        ),
        pytest.param(
            c.ReplicaPhase,
            [
                "TaskRoleReplicaAttemptPending",
                "TaskRoleReplicaAttemptCreationRequested",
                "TaskRoleReplicaAttemptPreparing",
                "TaskRoleReplicaAttemptAssigned",
                "TaskRoleReplicaAttemptRunning",
                "TaskRoleReplicaAttemptDeletionPending",
                "TaskRoleReplicaAttemptDeletionRequested",
                "TaskRoleReplicaAttemptCompleted",
                "TaskRoleReplicaAttemptRetryPending",
                "TaskRoleReplicaCompleted",
            ],
            id="replica phases (5.3.2), with D3's DeletionPending spelling",
        ),
        pytest.param(c.State, ["Waiting", "Running", "Succeeded", "Failed"], id="states (5.4)"),
        pytest.param(c.RoleEvent, ["RoleFailed", "RoleSucceeded", "RoleCompleted"], id="events (2.2)"),
        pytest.param(
            c.TaskSetAction,
            ["TaskSetFailed", "TaskSetSucceeded", "TaskSetCompleted", "NoAction"],
            id="actions (2.2)",
        ),
        pytest.param(
            c.ConditionType,
            [
                "Running",
                "Succeeded",
                "Failed",
                "ControlUnitTampered",
                "PodCreationRefused",
                "PodsStuckTerminating",
                "Suspended",
                "Preempted",
            ],
            id="condition types (2.5.1), and those of tenancy, suspension and preemption",
        ),
        pytest.param(
            c.ConditionReason,
            [
                "Running",
                "Waiting",
                "Succeeded",
                "Failed",
                "ValidationFailed",
                "Suspended",
                "Resumed",
                "DeadlineExceeded",
            ],
            id="condition reasons (2.5.1), and those of suspension and run bounds",
        ),
        pytest.param(
            c.EventReason,
            [
                "TaskSet State Transition",
                "TaskSet is running",
                "TaskSet Succeeded",
                "TaskSet Failed",
                "Retry Taskset",
                "TaskRole is running",
                "TaskRole Succeeded",
                "TaskRole Failed",
                "PodCreationFailed",
                "ControlUnitCreationFailed",
                "PodNameConflict",
                "ControlUnitNameConflict",
                "PodUnschedulable",
                "PodContainerWaiting",
                "TaskRoleHeld",
                "TaskRoleScaled",
                "OwnedObjectCreationFailed",
                "ControlUnitTampered",
                "StatusWriteRefused",
                "PodStuckTerminating",
                "OrphanedPodDeleted",
                "ReplicaFailure",
                "TaskSetSuspended",
                "TaskSetResumed",
                "OwnedObjectUpdateRefused",
                "OwnedObjectRestored",
                "OwnedObjectChanged",
                "NodeLost",
                "NodeLostPodDeleted",
                "TaskSetPreempted",
            ],
            id="event reasons (10.1), one space in TaskSet Succeeded and no TaskRole is waiting",
        ),
        pytest.param(
            c.QueryKey,
            [
                "TaskSetPhaseTransition",
                "TaskRoleTransition",
                "ReplicaTransition",
                "PodHistory",
                "UnhandleSitutation",
            ],
            id="log QueryKeys (10.2), O's typo kept",
        ),
    ],
)
def test_string_families(family: type, values: list[str]) -> None:
    assert [str(member) for member in family] == values  # type: ignore[attr-defined]


def test_pod_labels_annotations_and_env() -> None:
    assert (c.LABEL_TASKSET, c.LABEL_ROLE) == ("TaskSet", "PodTaskRole")
    annotations = (
        c.ANNOTATION_REPLICA_INDEX,
        c.ANNOTATION_TASKSET,
        c.ANNOTATION_NAMESPACE,
        c.ANNOTATION_TASKSET_UID,
        c.ANNOTATION_CONTROL_UNIT_UID,
        c.ANNOTATION_TASKSET_ATTEMPT_ID,
        c.ANNOTATION_REPLICA_ATTEMPT_ID,
    )
    assert annotations == (
        "RoleReplicaIndex",
        "TaskSet",
        "Namespace",
        "TSUID",
        "CID",
        "TaskSetAttemptID",
        "ReplicaAttemptID",
    )
    assert c.INJECTED_ENV_ORDER == (
        "TASKSET_NAMESPACE",
        "TASKSET_NAME",
        "TASKROLE_NAME",
        "TASKROLE_REPLICA_INDEX",
        "TASKSET_ATTEMPT_ID",
        "TASKROLE_REPLICA_ATTEMPT_ID",
    )


def test_warning_events_are_the_failure_reasons_and_the_stuck_pods() -> None:
    assert {str(reason) for reason in c.WARNING_EVENT_REASONS} == {
        "TaskSet Failed",
        "TaskRole Failed",
        "PodCreationFailed",
        "ControlUnitCreationFailed",
        "PodNameConflict",
        "ControlUnitNameConflict",
        "PodUnschedulable",  # a Pod that will not start by itself
        "PodContainerWaiting",
        "OwnedObjectCreationFailed",  # an integration's object refused for good
        "ControlUnitTampered",  # a ControlUnit snapshot someone else changed
        "StatusWriteRefused",  # a status the API server will never take
        "PodStuckTerminating",  # a Pod held in Terminating past the documented bound
        "OrphanedPodDeleted",  # a Pod left running by an orphaning delete of its ControlUnit
        "ReplicaFailure",  # a replica attempt failed, with the failure rule it matched
        "OwnedObjectUpdateRefused",  # the live membership not written: too large, or refused
        "OwnedObjectRestored",  # a stranger's edit of an owned object, written back
        "OwnedObjectChanged",  # a stranger's edit that cannot be written back: the attempt ends
        "NodeLost",  # replicas wait on a node that stopped answering
    }
    assert "TaskSet Failed" in c.WARNING_EVENT_REASONS  # plain strings find the StrEnum members


@pytest.mark.parametrize(
    ("template", "kwargs", "text"),
    [
        pytest.param(
            c.MSG_ROLE_NAME_CONFLICT, {"role": "role1"}, "TaskRole naming conflicts,name:role1", id="S23"
        ),
        pytest.param(
            c.MSG_MIN_SUCCEEDED_ABOVE_REPLICAS,
            {"role": "r"},
            "MinSucceeded cannot be bigger than replica amount for TaskRole:r",
            id="S24 minSucceeded",
        ),
        pytest.param(
            c.MSG_MAX_FAILED_BELOW_ONE,
            {"role": "r"},
            "MaxFailed cannot be smaller than 1 for TaskRole:r",
            id="D4",
        ),
        pytest.param(
            c.MSG_POD_NAME_TOO_LONG,
            {"role": "r"},
            "Pod name cannot be longer than 63 characters for TaskRole:r",
            id="D2",
        ),
        pytest.param(
            c.MSG_ROLE_MIN_SUCCEEDED_SATISFIED,
            {"count": 2},
            "Completion policy MinSucceeded satisfied,succeeded count:2",
            id="S24 completion reason",
        ),
        pytest.param(
            c.MSG_TASKSET_ROLE_SUCCEEDED,
            {"role": "worker"},
            "TaskSet completed beacause taskrole(worker) is succeeded ",
            id="S01 reason, O's spelling and trailing space",
        ),
        pytest.param(
            c.MSG_TASKSET_SOME_FAILED,
            {},
            "TaskSet failed beacause all taskrole are completed,but some TaskRole are failed",
            id="S06 reason",
        ),
    ],
)
def test_messages(template: str, kwargs: dict[str, object], text: str) -> None:
    assert template.format(**kwargs) == text
