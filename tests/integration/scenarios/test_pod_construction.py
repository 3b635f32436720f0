"""Scenarios S27-S29 (spec 14.1): how Pods are built (section 3.2) and what the status captures of them."""

from __future__ import annotations

from typing import Any

from taskset.api import constants as c
from tests.builders import TaskSetBuilder
from tests.integration.harness import PodFacts, Recorder, TaskSets, eventually, exits, replica
from tests.integration.scenarios.steps import Run

INJECTED = list(c.INJECTED_ENV_ORDER)
_EXPECTED_ANNOTATION_KEYS = (
    "scheduling.k8s.io/group-name",
    "note",
    "RoleReplicaIndex",
    "TaskSet",
    "Namespace",
    "TSUID",
    "CID",
    "TaskSetAttemptID",
    "ReplicaAttemptID",
)


def _container(name: str, command: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "busybox", "command": ["sh", "-c", command], **extra}


def test_s27_pod_construction(ts: TaskSets, recorder: Recorder, namespace: str) -> None:
    template = {
        "metadata": {
            "labels": {"app": "demo"},
            "annotations": {"scheduling.k8s.io/group-name": "pg1", "note": "keep"},
        },
        "spec": {
            "restartPolicy": "Never",
            "terminationGracePeriodSeconds": 1,
            "schedulerName": "default-scheduler",
            "initContainers": [_container("init", "true")],
            "containers": [
                _container("main", "sleep 3600", env=[{"name": "USERVAR", "value": "x"}]),
                _container("side", "sleep 3600"),
            ],
        },
    }
    created = ts.create(
        TaskSetBuilder("podshape").role("r", 2, min_succeeded=1, max_failed=1, template=template).obj()
    )

    def both_running() -> list[dict[str, Any]] | None:
        pods = ts.pods("podshape")
        ok = len(pods) == 2 and all((p.get("status") or {}).get("phase") == "Running" for p in pods)
        return pods if ok else None

    eventually(both_running, 60, "both Pods Running")
    pod = ts.pod("podshape-r-1")
    assert pod is not None
    unit = ts.configmap("c-podshape-0")
    assert unit is not None
    meta = pod["metadata"]

    labels = meta["labels"]
    assert (labels["app"], labels["TaskSet"], labels["PodTaskRole"]) == ("demo", "podshape", "r")
    assert {key: meta["annotations"].get(key) for key in _EXPECTED_ANNOTATION_KEYS} == {
        "scheduling.k8s.io/group-name": "pg1",
        "note": "keep",
        "RoleReplicaIndex": "1",
        "TaskSet": "podshape",
        "Namespace": namespace,
        "TSUID": created["metadata"]["uid"],
        "CID": unit["metadata"]["uid"],
        "TaskSetAttemptID": "0",
        "ReplicaAttemptID": "0",
    }

    controllers = [o for o in meta.get("ownerReferences") or [] if o.get("controller")]
    assert [(o["kind"], o["name"], o["blockOwnerDeletion"]) for o in controllers] == [
        ("ConfigMap", "c-podshape-0", True)
    ]
    assert controllers[0]["uid"] == unit["metadata"]["uid"]

    expected_env = [
        ("TASKSET_NAMESPACE", namespace),
        ("TASKSET_NAME", "podshape"),
        ("TASKROLE_NAME", "r"),
        ("TASKROLE_REPLICA_INDEX", "1"),
        ("TASKSET_ATTEMPT_ID", "0"),
        ("TASKROLE_REPLICA_ATTEMPT_ID", "0"),
    ]
    spec = pod["spec"]
    every = spec["initContainers"] + spec["containers"]
    assert [x["name"] for x in every] == ["init", "main", "side"]
    for container in every:
        env = [(e["name"], e.get("value")) for e in container.get("env") or []]
        assert env[:6] == expected_env, (container["name"], env)
        assert container["terminationMessagePolicy"] == "FallbackToLogsOnError", container["name"]
    main_env = [(e["name"], e.get("value")) for e in spec["containers"][0]["env"]]
    # Then the peer lists (taskset.integrations.peer_env), then the user's own variables.
    assert main_env[-1] == ("USERVAR", "x")
    peers = [name for name, _ in main_env[6:-1]]
    assert "TASKSET_WORLD_SIZE" in peers
    assert all(name.startswith(("TASKSET_", "TASKROLE_")) for name in peers), peers
    assert [n for n, _ in expected_env] == INJECTED
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["restartPolicy"] == "Never"


def test_s28_env_values_seen_by_the_workload_and_termination_message_captured(
    run: Run, namespace: str
) -> None:
    def workload(pod: PodFacts) -> Any:
        # echo -n "$TASKSET_NAMESPACE ... $TASKROLE_REPLICA_ATTEMPT_ID" > /dev/termination-log; exit 0
        return exits(0, message=" ".join(pod.env.get(name, "") for name in INJECTED))

    status = run(TaskSetBuilder("envtest").role("r", 2, min_succeeded=2, max_failed=1), script=workload)
    assert status["state"] == "Succeeded"
    for index in (0, 1):
        info = replica(status, "r", index)["terminatedInfo"]
        assert info["exitMessage"] == f"{namespace} envtest r {index} 0 0"


def test_s29_log_fallback_for_failing_containers(run: Run) -> None:
    status = run(
        TaskSetBuilder("logfallback").role("r", 1),
        script=lambda pod: exits(2, message="boom"),  # echo boom; exit 2
    )
    info = replica(status, "r", 0)["terminatedInfo"]
    assert info["exitCode"] == 2
    assert info["reason"] == "Error"
    assert "boom" in info["exitMessage"]
