"""Framework presets on the real control plane: MPI's hostfile is a ConfigMap of the
attempt that the launcher and the workers mount, the launcher starting after its workers run
(``dependsOn``); PyTorch's variables reach every container."""

from __future__ import annotations

from typing import Any

import pytest

from devcluster import Cluster
from tests.builders import TaskSetBuilder, pod_template
from tests.integration.harness import TaskSets, eventually, recording

pytestmark = pytest.mark.integration


def env_of(pod: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in pod["spec"]["containers"][0].get("env") or []}


def test_the_mpi_hostfile_is_mounted_and_the_launcher_waits_for_its_workers(
    cluster: Cluster, namespace: str, controller: object
) -> None:
    ts = TaskSets(cluster, namespace)
    with recording(cluster, namespace) as recorder:
        ts.create(
            TaskSetBuilder("mpi")
            .spec_field("framework", "mpi")
            .spec_field("frameworkOptions", {"slotsPerWorker": 2})
            .role("launcher", 1, template=pod_template(), dependsOn=[{"role": "worker"}])
            .role("worker", 2, template=pod_template())
            .obj()
        )
        launcher = eventually(lambda: ts.pod("mpi-launcher-0"), 60, "the launcher, once the workers run")
        made = {entry.name: entry.created for entry in recorder.pod_log("mpi-")}
    assert made["mpi-worker-0"] < made["mpi-launcher-0"] and made["mpi-worker-1"] < made["mpi-launcher-0"]

    hostfile = ts.configmap("mpi-hostfile-0")
    assert hostfile is not None
    assert hostfile["data"] == {
        "hostfile": f"mpi-worker-0.mpi.{namespace}.svc slots=2\nmpi-worker-1.mpi.{namespace}.svc slots=2\n",
        "hostfile.hydra": f"mpi-worker-0.mpi.{namespace}.svc:2\nmpi-worker-1.mpi.{namespace}.svc:2\n",
    }
    [owner] = hostfile["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"]) == ("ConfigMap", "c-mpi-0")  # goes with the attempt
    volumes = {v["name"]: v for v in launcher["spec"]["volumes"]}
    assert volumes["taskset-mpi-hostfile"]["configMap"]["name"] == "mpi-hostfile-0"
    mounts = launcher["spec"]["containers"][0]["volumeMounts"]
    assert {"name": "taskset-mpi-hostfile", "mountPath": "/etc/mpi", "readOnly": True} in mounts
    assert env_of(launcher)["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile"


def test_pytorch_variables_reach_every_container(
    cluster: Cluster, namespace: str, controller: object
) -> None:
    ts = TaskSets(cluster, namespace)
    ts.create(
        TaskSetBuilder("pt")
        .spec_field("framework", "pytorch")
        .role("master", 1, template=pod_template())
        .role("worker", 2, template=pod_template())
        .obj()
    )
    worker = eventually(lambda: ts.pod("pt-worker-1"), 60, "the second worker")
    env = env_of(worker)
    assert {k: env[k] for k in ("MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "RANK", "PET_NODE_RANK")} == {
        "MASTER_ADDR": f"pt-master-0.pt.{namespace}.svc",
        "MASTER_PORT": "23456",
        "WORLD_SIZE": "3",
        "RANK": "2",
        "PET_NODE_RANK": "2",
    }
