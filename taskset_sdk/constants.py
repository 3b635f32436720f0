"""The wire strings the SDK needs, copied rather than imported: the SDK is a client and must install and
run without the controller's packages. ``tests/unit/taskset_sdk/test_sdk_constants.py`` keeps every value
equal to the controller's own (``taskset/api/constants.py``)."""

from __future__ import annotations

from typing import Final

GROUP: Final = "octopus.openi.pcl.cn"
VERSION: Final = "v1alpha1"
API_VERSION: Final = f"{GROUP}/{VERSION}"
KIND: Final = "TaskSet"
PLURAL: Final = "tasksets"

# A replica's Pod is named the same in every attempt; the attempt numbers are annotations on it.
POD_NAME_FORMAT: Final = "{taskset}-{role}-{index}"
LABEL_TASKSET: Final = "TaskSet"
LABEL_ROLE: Final = "PodTaskRole"
ANNOTATION_REPLICA_INDEX: Final = "RoleReplicaIndex"
ANNOTATION_TASKSET_ATTEMPT_ID: Final = "TaskSetAttemptID"
ANNOTATION_REPLICA_ATTEMPT_ID: Final = "ReplicaAttemptID"

# The human-facing states; the last two are final.
STATE_WAITING: Final = "Waiting"
STATE_RUNNING: Final = "Running"
STATE_SUCCEEDED: Final = "Succeeded"
STATE_FAILED: Final = "Failed"
STATES: Final = (STATE_WAITING, STATE_RUNNING, STATE_SUCCEEDED, STATE_FAILED)
FINAL_STATES: Final = frozenset({STATE_SUCCEEDED, STATE_FAILED})

ROLE_EVENTS: Final = ("RoleFailed", "RoleSucceeded", "RoleCompleted")
TASKSET_ACTIONS: Final = ("TaskSetFailed", "TaskSetSucceeded", "TaskSetCompleted", "NoAction")

# The words of the newer spec fields, as the CRD's enums spell them.
FAILURE_ACTIONS: Final = (
    "RetryNotCounted",
    "RetryCounted",
    "FailRole",
    "FailTaskSet",
    "RestartTaskSet",
    "RestartInPlace",
)
EXIT_CODE_OPERATORS: Final = ("In", "NotIn")
CONDITION_STATUSES: Final = ("True", "False", "Unknown")
CLEAN_POD_POLICIES: Final = ("None", "Running", "All")
NODE_LOSS_ACTIONS: Final = ("Wait", "Recover", "OutOfService")  # spec.nodeLossPolicy.action
FRAMEWORKS: Final = ("tensorflow", "pytorch", "jax", "mpi")
DEPENDS_ON_UNTIL: Final = ("Running", "Ready", "Succeeded")
GANG_SCHEDULERS: Final = ("coscheduling", "volcano")

# A sharded controller (``--shards=auto``): a namespace's 64-bit FNV-1a hash (its UTF-8 bytes, as the API
# server's shard selector hashes it) picks one of SHARD_BUCKETS equal buckets of the hash space, and the
# replica holding that bucket's Lease, ``<ring>-bucket-<i>`` in the controller's namespace, acts for it.
SHARD_BUCKETS: Final = 32
FNV_OFFSET_BASIS: Final = 0xCBF29CE484222325
FNV_PRIME: Final = 0x100000001B3
BUCKET_LEASE_FORMAT: Final = "{ring}-bucket-{bucket}"
DEFAULT_RING: Final = "taskset-controller"  # the controller's --leader-elect-id
DEFAULT_CONTROLLER_NAMESPACE: Final = "taskset-system"  # where manifests/ install it
