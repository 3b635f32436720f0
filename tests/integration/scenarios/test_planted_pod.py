"""A planted Pod: someone who may create Pods in the TaskSet's namespace plants one under a replica's
name while the replica waits for its retry. The Pod claims everything a Pod of the next replica attempt
carries (the ``TaskSet``, ``TSUID``, ``CID`` and ``ReplicaAttemptID`` annotations, the ControlUnit as
controlling owner) and succeeds, where the template fails. It lacks only the creation proof
(``taskset.observed.proof``), so the controller never takes it for the replica: it is a name conflict, as any
squatter is, and the TaskSet does not succeed through it.

Once the replica has moved past the attempt the Pod claims, the controller deletes it as an earlier
attempt's Pod: it names the attempt's ControlUnit as its controlling owner, so the garbage collector
would delete it with that ControlUnit anyway. A control in the same file shows that what the controller
creates does carry a proof that verifies with the key the controller runs with, so the test would pass
for the wrong reason if it did not."""

from __future__ import annotations

from typing import Any

from taskset.api import constants as c
from taskset.observed.proof import PROCESS_PROOF_KEY, ProofSubject, proves
from tests.builders import TaskSetBuilder
from tests.integration.harness import ObjectLog, Recorder, TaskSets, eventually, exits, replica
from tests.integration.scenarios.steps import RETRY_PENDING, replica_phase

RETRY_DELAY = 10  # seconds: the window in which the Pod is planted


def plant(ts: TaskSets, namespace: str, victim: dict[str, object]) -> str:
    """A Pod under replica r/0's name that claims to be its next attempt's; returns its UID."""
    unit = ts.configmap("c-victim-0")
    assert unit is not None
    annotations = {
        c.ANNOTATION_TASKSET: "victim",
        c.ANNOTATION_NAMESPACE: namespace,
        c.ANNOTATION_TASKSET_UID: str(victim["uid"]),
        c.ANNOTATION_CONTROL_UNIT_UID: unit["metadata"]["uid"],
        c.ANNOTATION_TASKSET_ATTEMPT_ID: "0",
        c.ANNOTATION_REPLICA_ATTEMPT_ID: "1",
        c.ANNOTATION_REPLICA_INDEX: "0",
    }
    owner = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "c-victim-0",
        "uid": unit["metadata"]["uid"],
        "controller": True,
    }
    body = {
        "metadata": {
            "name": "victim-r-0",
            "labels": {c.LABEL_TASKSET: "victim", c.LABEL_ROLE: "r"},
            "annotations": annotations,
            "ownerReferences": [owner],
        },
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "c0",
                    "image": "evil.example.com/miner:latest",
                    "env": [{"name": "PLANTED", "value": "1"}],
                }
            ],
        },
    }
    created = ts.core.create_namespaced_pod(namespace, body)
    return str(created.metadata.uid)


def test_a_pod_planted_as_the_next_attempt_is_a_conflict_not_the_replica(
    ts: TaskSets, recorder: Recorder, pods: ObjectLog, namespace: str
) -> None:
    recorder.script = lambda pod: exits(0 if pod.env.get("PLANTED") else 1)  # the template exits 1
    victim = ts.create(TaskSetBuilder("victim").role("r", 1, retry=(True, 2, RETRY_DELAY)).obj())
    eventually(lambda: replica_phase(ts.status("victim"), "r", 0) == RETRY_PENDING, 60, "retry delay")
    eventually(lambda: ts.pod("victim-r-0") is None, 60, "the failed attempt's Pod gone")
    planted = plant(ts, namespace, victim["metadata"])

    status = ts.final("victim")
    assert status["state"] == "Failed", status  # the template's exit 1, never the planted Pod's 0
    assert ("PodNameConflict", "Pod name conflict: victim-r-0") in ts.events("victim")
    # The replica's last Pod is one the controller made: it carries a proof for attempt 2.
    last = replica(status, "r", 0)
    assert last["podUID"] != planted
    assert last["totalRetriedCount"] == 2 and last["terminatedInfo"]["exitCode"] == 1
    ours = [v.obj for v in pods.versions() if v.uid == last["podUID"]]
    assert ours and has_proof(ours[0], namespace)
    # The planted Pod names the attempt's ControlUnit as its controller, which makes it the attempt's
    # for the garbage collector; once the replica moved past the attempt it claims, the controller
    # deleted it as an earlier attempt's Pod (with a UID precondition), before creating attempt 2's.
    assert [v.uid for v in pods.versions() if v.obj["metadata"].get("deletionTimestamp")].count(planted) >= 1
    assert not has_proof(next(v.obj for v in pods.versions() if v.uid == planted), namespace)


def has_proof(pod: dict[str, Any], namespace: str) -> bool:
    meta = pod["metadata"]
    subject = ProofSubject(
        namespace,
        meta["name"],
        meta["ownerReferences"][0]["uid"],
        int(meta["annotations"][c.ANNOTATION_REPLICA_ATTEMPT_ID]),
    )
    return proves(meta["annotations"].get(c.ANNOTATION_CREATION_PROOF, ""), PROCESS_PROOF_KEY, subject)


def test_the_pods_the_controller_creates_carry_a_proof_of_their_attempt(
    ts: TaskSets, recorder: Recorder, pods: ObjectLog, namespace: str
) -> None:
    recorder.script = lambda pod: exits(0 if pod.replica_attempt == 1 else 1)
    ts.create(TaskSetBuilder("proven").role("r", 1, retry=(True, 2, 1)).obj())
    assert ts.final("proven")["state"] == "Succeeded"
    versions = [v.obj for v in pods.versions() if v.obj["metadata"]["name"] == "proven-r-0"]
    assert versions and all(has_proof(pod, namespace) for pod in versions)
    attempts = {pod["metadata"]["annotations"][c.ANNOTATION_REPLICA_ATTEMPT_ID] for pod in versions}
    assert attempts == {"0", "1"}
