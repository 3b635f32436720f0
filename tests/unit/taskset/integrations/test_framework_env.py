"""Framework presets: TensorFlow's TF_CONFIG, exactly as TFConfigClusterResolver
parses it; PyTorch's and torchrun's variables; JAX's coordinator; MPI's hostfiles; and the checks of
spec.framework and spec.frameworkOptions."""

from __future__ import annotations

import json
from typing import Any

import pytest

from taskset.api.spec import ParsedTaskSet, ValidationFailure, parse_taskset
from taskset.integrations import BUILT_IN, Framework
from taskset.integrations.base import Attempt
from taskset.integrations.framework_env import HOSTFILE_DIR, FrameworkEnv, tf_config
from taskset.objects.decorations import PodDecoration
from taskset.objects.pods import PodIdentity
from tests.builders import TaskSetBuilder, pod_template

pytestmark = pytest.mark.unit


def attempt_of(builder: TaskSetBuilder) -> Attempt:
    ts = parse_taskset(builder.namespace("ml").uid("u").obj(), Framework(BUILT_IN).spec_checks())
    assert isinstance(ts, ParsedTaskSet), ts
    return Attempt(ts.name, ts.namespace, ts.uid, 0, ts.spec)


def decoration_of(attempt: Attempt, role: str, index: int) -> PodDecoration | None:
    spec_role = attempt.spec.role(role)
    assert spec_role is not None
    who = PodIdentity(
        attempt.taskset, "ml", "u", role, index, f"{attempt.taskset}-{role}-{index}", "c", "", 0, 0, "0" * 64
    )
    return FrameworkEnv().decorate_pod(attempt, spec_role, who)


def tf_config_of(attempt: Attempt, role: str, index: int) -> str | None:
    decoration = decoration_of(attempt, role, index)
    return None if decoration is None else dict(decoration.env)["TF_CONFIG"]


def env_of(attempt: Attempt, role: str, index: int) -> dict[str, str]:
    decoration = decoration_of(attempt, role, index)
    assert decoration is not None
    return dict(decoration.env)


def with_port(port: int) -> dict[str, Any]:
    template = pod_template()
    template["spec"]["containers"][0]["ports"] = [{"containerPort": port}]
    return template


def test_tf_config_for_the_seed_ps_worker_example() -> None:
    ps = pod_template()
    ps["spec"]["containers"][0]["ports"] = [{"containerPort": 5000}]
    attempt = attempt_of(
        TaskSetBuilder("tf")
        .role("ps", 1, template=ps)
        .role("worker", 2)
        .spec_field("framework", "tensorflow")
    )
    assert tf_config_of(attempt, "worker", 1) == (
        '{"cluster":{"ps":["tf-ps-0.tf.ml.svc:5000"],'
        '"worker":["tf-worker-0.tf.ml.svc:2222","tf-worker-1.tf.ml.svc:2222"]},'
        '"task":{"type":"worker","index":1}}'
    )
    assert tf_config_of(attempt, "ps", 0) == (
        '{"cluster":{"ps":["tf-ps-0.tf.ml.svc:5000"],'
        '"worker":["tf-worker-0.tf.ml.svc:2222","tf-worker-1.tf.ml.svc:2222"]},'
        '"task":{"type":"ps","index":0}}'
    )


def test_tf_config_is_the_json_tensorflow_reads() -> None:
    """TFConfigClusterResolver: json.loads(TF_CONFIG)['cluster'] is the ClusterSpec dict, 'task' gives
    type and index."""
    text = tf_config({"chief": ["a:1"], "worker": ["b:1", "c:1"]}, "worker", 0)
    parsed = json.loads(text)
    assert parsed["cluster"] == {"chief": ["a:1"], "worker": ["b:1", "c:1"]}
    assert (parsed["task"]["type"], parsed["task"]["index"]) == ("worker", 0)


def test_no_framework_no_tf_config() -> None:
    assert tf_config_of(attempt_of(TaskSetBuilder("tf").role("worker", 1)), "worker", 0) is None


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        pytest.param(
            {"framework": "caffe"},
            "spec.framework",
            "must be one of tensorflow, pytorch, jax, mpi",
            id="unknown",
        ),
        pytest.param({"framework": 1}, "spec.framework", "must be one of tensorflow", id="a number"),
        pytest.param({"frameworkOptions": []}, "spec.frameworkOptions", "must be an object", id="options"),
        pytest.param(
            {"frameworkOptions": {"masterRole": "boss"}},
            "spec.frameworkOptions.masterRole",
            "must name one of the roles",
            id="unknown master",
        ),
        pytest.param(
            {"frameworkOptions": {"port": 0}},
            "spec.frameworkOptions.port",
            "between 1 and 65535",
            id="port 0",
        ),
        pytest.param(
            {"frameworkOptions": {"port": True}},
            "spec.frameworkOptions.port",
            "between 1 and",
            id="port bool",
        ),
        pytest.param(
            {"frameworkOptions": {"nprocPerNode": "many"}},
            "spec.frameworkOptions.nprocPerNode",
            "must be auto, cpu, gpu or a number",
            id="nproc word",
        ),
        pytest.param(
            {"frameworkOptions": {"nprocPerNode": 2}},
            "spec.frameworkOptions.nprocPerNode",
            "must be auto",
            id="nproc integer",
        ),
        pytest.param(
            {"frameworkOptions": {"slotsPerWorker": 0}},
            "spec.frameworkOptions.slotsPerWorker",
            "between 1 and 1024",
            id="no slots",
        ),
        pytest.param(
            {"framework": "tensorflow", "network": {"enableDNSHostnames": False}},
            "spec.network.enableDNSHostnames",
            "needs the replicas' DNS names",
            id="names switched off",
        ),
    ],
)
def test_a_bad_framework_is_illegal_naming_the_field(
    fields: dict[str, Any], field: str, message: str
) -> None:
    builder = TaskSetBuilder("tf").role("worker", 1)
    for name, value in fields.items():
        builder.spec_field(name, value)
    result = parse_taskset(builder.obj(), Framework(BUILT_IN).spec_checks())
    assert isinstance(result, ValidationFailure)
    assert result.field == field and message in result.message


# ----- PyTorch ------------------------------------------------------------------------------------------


def pytorch(**options: Any) -> Attempt:
    """A worker role declared before its master: ranks put the master first all the same."""
    builder = TaskSetBuilder("pt").role("worker", 2).role("master", 1).spec_field("framework", "pytorch")
    if options:
        builder.spec_field("frameworkOptions", options)
    return attempt_of(builder)


@pytest.mark.parametrize(
    ("role", "index", "options", "expected"),
    [
        pytest.param(
            "master",
            0,
            {},
            {
                "MASTER_ADDR": "pt-master-0.pt.ml.svc",
                "MASTER_PORT": "23456",
                "WORLD_SIZE": "3",
                "RANK": "0",
                "PET_MASTER_ADDR": "pt-master-0.pt.ml.svc",
                "PET_MASTER_PORT": "23456",
                "PET_NNODES": "3",
                "PET_NODE_RANK": "0",
                "PET_NPROC_PER_NODE": "auto",
            },
            id="master, defaults",
        ),
        pytest.param(
            "worker",
            1,
            {"port": 29500, "nprocPerNode": "4"},
            {
                "MASTER_ADDR": "pt-master-0.pt.ml.svc",
                "MASTER_PORT": "29500",
                "WORLD_SIZE": "12",
                "RANK": "2",
                "PET_MASTER_ADDR": "pt-master-0.pt.ml.svc",
                "PET_MASTER_PORT": "29500",
                "PET_NNODES": "3",
                "PET_NODE_RANK": "2",
                "PET_NPROC_PER_NODE": "4",
            },
            id="second worker, 4 processes a node",
        ),
        pytest.param(
            "master",
            0,
            {"masterRole": "worker", "nprocPerNode": "gpu"},
            {
                "MASTER_ADDR": "pt-worker-0.pt.ml.svc",
                "MASTER_PORT": "23456",
                "WORLD_SIZE": "3",
                "RANK": "2",
                "PET_MASTER_ADDR": "pt-worker-0.pt.ml.svc",
                "PET_MASTER_PORT": "23456",
                "PET_NNODES": "3",
                "PET_NODE_RANK": "2",
                "PET_NPROC_PER_NODE": "gpu",
            },
            id="the master chosen by masterRole",
        ),
    ],
)
def test_pytorch_variables(role: str, index: int, options: dict[str, Any], expected: dict[str, str]) -> None:
    """The exact strings torch.distributed's env:// (MASTER_*, WORLD_SIZE, RANK) and torchrun (PET_<OPTION>)
    parse; as Kubeflow's PyTorchJob sets them."""
    assert env_of(pytorch(**options), role, index) == expected


@pytest.mark.parametrize(
    ("bounds", "scale", "nnodes"),
    [
        pytest.param({}, None, "3", id="no bounds: the count"),
        pytest.param({"minReplicas": 1, "maxReplicas": 6}, None, "2:7", id="bounds: min:max, master counted"),
        pytest.param({"maxReplicas": 4}, None, "2:5", id="only a maximum: the minimum is 1"),
        pytest.param({"maxReplicas": 4}, 3, "2:5", id="spec.scale: the same range"),
    ],
)
def test_pytorch_nnodes_is_a_range_for_an_elastic_role(
    bounds: dict[str, int], scale: int | None, nnodes: str
) -> None:
    """torchrun reads ``--nnodes`` as ``N`` or ``MIN:MAX``: an elastic role's bounds make it a
    range, as they bound how many nodes may join its rendezvous."""
    builder = (
        TaskSetBuilder("pt").role("worker", 2, **bounds).role("master", 1).spec_field("framework", "pytorch")
    )
    if scale is not None:
        builder.spec_field("scale", {"role": "worker", "replicas": scale})
    assert env_of(attempt_of(builder), "worker", 0)["PET_NNODES"] == nnodes


def test_pytorch_port_from_the_master_container_else_the_first_role() -> None:
    attempt = attempt_of(
        TaskSetBuilder("pt")
        .role("a", 1, template=with_port(7777))
        .role("b", 2)
        .spec_field("framework", "pytorch")
    )
    env = env_of(attempt, "b", 1)
    assert (env["MASTER_ADDR"], env["MASTER_PORT"], env["RANK"]) == ("pt-a-0.pt.ml.svc", "7777", "2")


# ----- JAX ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("role", "index", "expected"),
    [
        pytest.param("coordinator", 0, ("jx-coordinator-0.jx.ml.svc:6666", "3", "0"), id="coordinator"),
        pytest.param("worker", 1, ("jx-coordinator-0.jx.ml.svc:6666", "3", "2"), id="a worker"),
    ],
)
def test_jax_variables(role: str, index: int, expected: tuple[str, str, str]) -> None:
    """jax.distributed.initialize reads JAX_COORDINATOR_ADDRESS (host:port) itself; the other two are
    its num_processes and process_id."""
    attempt = attempt_of(
        TaskSetBuilder("jx").role("worker", 2).role("coordinator", 1).spec_field("framework", "jax")
    )
    names = ("JAX_COORDINATOR_ADDRESS", "JAX_NUM_PROCESSES", "JAX_PROCESS_ID")
    assert env_of(attempt, role, index) == dict(zip(names, expected, strict=True))


# ----- MPI ----------------------------------------------------------------------------------------------


def mpi(**options: Any) -> Attempt:
    builder = TaskSetBuilder("mp").role("launcher", 1).role("worker", 2).spec_field("framework", "mpi")
    if options:
        builder.spec_field("frameworkOptions", options)
    return attempt_of(builder)


def test_mpi_hostfiles_list_the_workers_with_their_slots() -> None:
    (hostfile,) = FrameworkEnv().owned_objects(mpi(slotsPerWorker=4))
    assert (hostfile.kind.kind, hostfile.name, str(hostfile.scope)) == (
        "ConfigMap",
        "mp-hostfile-0",
        "Attempt",
    )
    assert hostfile.body == {
        "data": {
            "hostfile": "mp-worker-0.mp.ml.svc slots=4\nmp-worker-1.mp.ml.svc slots=4\n",
            "hostfile.hydra": "mp-worker-0.mp.ml.svc:4\nmp-worker-1.mp.ml.svc:4\n",
        }
    }
    assert hostfile.holds  # the Pods mount it: they wait for it


def test_a_launcher_alone_runs_its_ranks_on_its_own_replicas() -> None:
    attempt = attempt_of(TaskSetBuilder("mp").role("launcher", 2).spec_field("framework", "mpi"))
    (hostfile,) = FrameworkEnv().owned_objects(attempt)
    assert hostfile.body["data"]["hostfile"] == (
        "mp-launcher-0.mp.ml.svc slots=1\nmp-launcher-1.mp.ml.svc slots=1\n"
    )


def test_every_mpi_replica_mounts_the_attempts_hostfile() -> None:
    decoration = decoration_of(mpi(), "worker", 0)
    assert decoration is not None
    assert dict(decoration.env) == {
        "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
        "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
        "I_MPI_HYDRA_HOST_FILE": "/etc/mpi/hostfile.hydra",
        "HYDRA_HOST_FILE": "/etc/mpi/hostfile.hydra",
    }
    assert decoration.volumes == ({"name": "taskset-mpi-hostfile", "configMap": {"name": "mp-hostfile-0"}},)
    assert decoration.volume_mounts == (
        {"name": "taskset-mpi-hostfile", "mountPath": HOSTFILE_DIR, "readOnly": True},
    )


def test_no_framework_no_hostfile_and_no_variables() -> None:
    attempt = attempt_of(TaskSetBuilder("mp").role("launcher", 1).role("worker", 2))
    assert FrameworkEnv().owned_objects(attempt) == ()
    assert decoration_of(attempt, "worker", 0) is None
