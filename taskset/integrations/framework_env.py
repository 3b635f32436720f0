"""Framework presets, opted into per TaskSet with ``spec.framework``: the variables
(and, for MPI, the hostfile) a framework reads to find its cluster, built from the replicas' DNS names
(``taskset.objects.network``). Each preset is a pure function of the TaskSet's layout, table-tested
against the exact strings the framework parses (``tests/unit/taskset/integrations/test_framework_env.py``).

* ``tensorflow``: ``TF_CONFIG``, the JSON TensorFlow's ``TFConfigClusterResolver`` (and Kubeflow's TFJob)
  use, one list per role in declared order, each replica ``<fqdn>:<port>`` in index order::

      {"cluster":{"ps":["tf-ps-0.tf.ml.svc:2222"],"worker":[...]},"task":{"type":"worker","index":1}}

* ``pytorch``: what Kubeflow's PyTorchJob sets, for ``torch.distributed``'s ``env://`` rendezvous and for
  ``torchrun`` (which reads every ``--option`` from ``PET_<OPTION>``): ``MASTER_ADDR``, ``MASTER_PORT``,
  ``WORLD_SIZE``, ``RANK``, ``PET_MASTER_ADDR``, ``PET_MASTER_PORT``, ``PET_NNODES``, ``PET_NODE_RANK``,
  ``PET_NPROC_PER_NODE``. A node is a replica; the master role's replica 0 is rank 0 (it hosts the
  rendezvous store), then the master role's other replicas, then the other roles in declared order.
  ``WORLD_SIZE`` is nodes x processes per node when that is a number, else nodes (as Kubeflow: with
  ``auto``, torchrun sets each process's own ``WORLD_SIZE``);
* ``jax``: ``JAX_COORDINATOR_ADDRESS`` (``host:port``, which ``jax.distributed.initialize()`` reads
  itself), ``JAX_NUM_PROCESSES`` and ``JAX_PROCESS_ID`` (which it does not read: pass them as
  ``num_processes``/``process_id``), numbered as for PyTorch;
* ``mpi``: a hostfile ConfigMap per attempt (``<taskset>-hostfile-<attempt>``), mounted read-only at
  ``/etc/mpi`` in every container of every role: ``hostfile`` in Open MPI's form (``<fqdn> slots=<n>``)
  and ``hostfile.hydra`` in Hydra's (Intel MPI, MPICH: ``<fqdn>:<n>``), one line per replica of every
  role but the launcher (the launcher's own replicas when it is the only role), with
  ``OMPI_MCA_orte_default_hostfile``, ``OMPI_MCA_orte_keep_fqdn_hostnames``, ``I_MPI_HYDRA_HOST_FILE``
  and ``HYDRA_HOST_FILE`` pointing at them. The launcher waits for its workers with ``dependsOn``
  (``taskset.integrations.start_order``).

``spec.frameworkOptions`` tunes them: ``masterRole`` (the role that plays master, chief, coordinator
or launcher; default the first role named ``master``, ``chief``, ``launcher`` or ``coordinator``, else
the first role), ``port`` (the master's port; default the master role's first declared container port,
else 23456 for PyTorch, Kubeflow's default, and 6666 for JAX), ``nprocPerNode`` (``auto``, ``cpu``,
``gpu`` or a number; default ``auto``, Kubeflow PyTorchJob's default) and ``slotsPerWorker`` (MPI
slots per replica, default 1). A preset needs names: ``spec.network.enableDNSHostnames: false`` with
a framework is refused, naming the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from taskset.api.scale import elastic_roles
from taskset.api.spec import CheckFailure, Role, TaskSetSpec, spec_object
from taskset.integrations.base import Attempt, ChecksSpec, DecoratesPods, OwnsObjects
from taskset.objects.decorations import EnvVar, PodDecoration
from taskset.objects.network import ENABLE_FIELD, NETWORK_FIELD, replica_fqdn, service_name
from taskset.objects.owned import CONFIGMAPS, OwnedObject, Scope
from taskset.objects.pods import PodIdentity

FRAMEWORK_FIELD: Final = "framework"
OPTIONS_FIELD: Final = "frameworkOptions"
TENSORFLOW: Final = "tensorflow"
PYTORCH: Final = "pytorch"
JAX: Final = "jax"
MPI: Final = "mpi"
FRAMEWORKS: Final = (TENSORFLOW, PYTORCH, JAX, MPI)
MASTER_NAMES: Final = ("master", "chief", "launcher", "coordinator")

ENV_TF_CONFIG: Final = "TF_CONFIG"
DEFAULT_TF_PORT: Final = 2222
DEFAULT_PYTORCH_PORT: Final = 23456
DEFAULT_JAX_PORT: Final = 6666
DEFAULT_NPROC_PER_NODE: Final = "auto"
NPROC_PATTERN: Final = "^(auto|cpu|gpu|[1-9][0-9]{0,3})$"
MAX_SLOTS: Final = 1024
PORT_MAX: Final = 65535

HOSTFILE_DIR: Final = "/etc/mpi"
HOSTFILE_KEY: Final = "hostfile"
HYDRA_HOSTFILE_KEY: Final = "hostfile.hydra"
HOSTFILE_VOLUME: Final = "taskset-mpi-hostfile"
HOSTFILE_NAME_FORMAT: Final = "{taskset}-hostfile-{attempt}"

_NPROC: Final = re.compile(NPROC_PATTERN.removeprefix("^").removesuffix("$"))


@dataclass(frozen=True)
class Options:
    """``spec.frameworkOptions`` as the presets read it (absent fields: None)."""

    master_role: str | None = None
    port: int | None = None
    nproc_per_node: str = DEFAULT_NPROC_PER_NODE
    slots_per_worker: int = 1


@dataclass(frozen=True)
class Layout:
    """What every preset reads: where the replicas' names live, and the roles in declared order."""

    taskset: str
    namespace: str
    service: str
    roles: tuple[Role, ...]
    options: Options
    elastic: frozenset[str] = frozenset()  # the roles that declare bounds or spec.scale names

    def fqdn(self, role: str, index: int) -> str:
        return replica_fqdn(self.taskset, role, index, self.service, self.namespace)

    @property
    def master(self) -> Role:
        """The role that plays master, chief, coordinator or launcher (see the module docstring)."""
        chosen = self.options.master_role
        named = [r for r in self.roles if r.name == chosen] or [
            r for r in self.roles if r.name in MASTER_NAMES
        ]
        return (named or list(self.roles))[0]

    def master_port(self, default: int) -> int:
        return self.options.port or role_port(self.master, default)

    def node_rank(self, role: str, index: int) -> int:
        """The replica's place with the master role first, then the others in declared order."""
        before = 0
        for r in (self.master, *(r for r in self.roles if r.name != self.master.name)):
            if r.name == role:
                return before + index
            before += r.replicas
        return before + index

    @property
    def nodes(self) -> int:
        return sum(r.replicas for r in self.roles)

    @property
    def nodes_range(self) -> str:
        """torchrun's ``--nnodes``: the node count, or ``MIN:MAX`` when a role is elastic, its
        bounds counted for it and the other roles' replicas for them."""
        if not self.elastic:
            return str(self.nodes)
        low = sum(r.min_replicas if r.name in self.elastic else r.replicas for r in self.roles)
        high = sum(r.max_replicas if r.name in self.elastic else r.replicas for r in self.roles)
        return f"{low}:{high}"


class FrameworkEnv(ChecksSpec, OwnsObjects, DecoratesPods):
    name = "framework-env"

    def check(self, spec: Mapping[str, Any]) -> CheckFailure | None:
        framework = spec.get(FRAMEWORK_FIELD)
        path = f"spec.{FRAMEWORK_FIELD}"
        if framework is not None and framework not in FRAMEWORKS:
            return CheckFailure(path, f"{path}: must be one of {', '.join(FRAMEWORKS)}")
        network = spec.get(NETWORK_FIELD)
        if framework is not None and isinstance(network, Mapping) and network.get(ENABLE_FIELD) is False:
            field = f"spec.{NETWORK_FIELD}.{ENABLE_FIELD}"
            return CheckFailure(field, f"{field}: {path} {framework} needs the replicas' DNS names")
        return check_options(spec)

    def owned_objects(self, attempt: Attempt) -> Sequence[OwnedObject]:
        layout = layout_of(attempt)
        if layout is None or attempt.spec.raw.get(FRAMEWORK_FIELD) != MPI:
            return ()
        body = {"data": {HOSTFILE_KEY: mpi_hostfile(layout), HYDRA_HOSTFILE_KEY: hydra_hostfile(layout)}}
        name = hostfile_name(attempt.taskset, attempt.attempt)
        return (OwnedObject(CONFIGMAPS, name, Scope.ATTEMPT, body, self.name),)

    def decorate_pod(self, attempt: Attempt, role: Role, identity: PodIdentity) -> PodDecoration | None:
        layout = layout_of(attempt)
        framework = attempt.spec.raw.get(FRAMEWORK_FIELD)
        if layout is None:
            return None
        if framework == TENSORFLOW:
            return PodDecoration(
                env=((ENV_TF_CONFIG, tf_config(tf_cluster(layout), role.name, identity.index)),)
            )
        if framework == PYTORCH:
            return PodDecoration(env=pytorch_env(layout, role.name, identity.index))
        if framework == JAX:
            return PodDecoration(env=jax_env(layout, role.name, identity.index))
        if framework == MPI:
            return mpi_decoration(hostfile_name(attempt.taskset, attempt.attempt))
        return None


def layout_of(attempt: Attempt) -> Layout | None:
    """The layout of a TaskSet with a framework and names, else None (no preset applies)."""
    service = service_name(attempt.taskset, attempt.spec.raw)
    if attempt.spec.raw.get(FRAMEWORK_FIELD) not in FRAMEWORKS or service is None or not attempt.spec.roles:
        return None
    roles, elastic = attempt.spec.roles, elastic_roles(attempt.spec.raw)
    return Layout(attempt.taskset, attempt.namespace, service, roles, options_of(attempt.spec), elastic)


# ----- spec.frameworkOptions ----------------------------------------------------------------------------


def _int_in(value: object, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def check_options(spec: Mapping[str, Any]) -> CheckFailure | None:
    """``spec.frameworkOptions``: an object whose fields each name what is wrong with them."""
    raw = spec_object(spec, OPTIONS_FIELD)
    path = f"spec.{OPTIONS_FIELD}"
    if raw is None or isinstance(raw, CheckFailure):
        return raw
    roles = spec.get("roles")
    names = {r.get("name") for r in roles if isinstance(r, Mapping)} if isinstance(roles, list) else set()
    master, port, nproc, slots = (
        raw.get(k) for k in ("masterRole", "port", "nprocPerNode", "slotsPerWorker")
    )
    problems = (
        (master is not None and master not in names, "masterRole", "must name one of the roles"),
        (
            port is not None and not _int_in(port, 1, PORT_MAX),
            "port",
            f"must be an integer between 1 and {PORT_MAX}",
        ),
        (
            nproc is not None and (not isinstance(nproc, str) or _NPROC.fullmatch(nproc) is None),
            "nprocPerNode",
            "must be auto, cpu, gpu or a number of processes (1-9999)",
        ),
        (
            slots is not None and not _int_in(slots, 1, MAX_SLOTS),
            "slotsPerWorker",
            f"must be an integer between 1 and {MAX_SLOTS}",
        ),
    )
    for wrong, key, problem in problems:
        if wrong:
            return CheckFailure(f"{path}.{key}", f"{path}.{key}: {problem}")
    return None


def options_of(spec: TaskSetSpec) -> Options:
    """The options of a spec that passed ``check_options``; anything else reads as the default."""
    raw = spec.raw.get(OPTIONS_FIELD)
    raw = raw if isinstance(raw, Mapping) else {}
    master, port, nproc, slots = (
        raw.get(k) for k in ("masterRole", "port", "nprocPerNode", "slotsPerWorker")
    )
    return Options(
        master_role=master if isinstance(master, str) else None,
        port=port if _int_in(port, 1, PORT_MAX) else None,
        nproc_per_node=nproc
        if isinstance(nproc, str) and _NPROC.fullmatch(nproc)
        else DEFAULT_NPROC_PER_NODE,
        slots_per_worker=slots if isinstance(slots, int) and _int_in(slots, 1, MAX_SLOTS) else 1,
    )


def role_port(role: Role, default: int = DEFAULT_TF_PORT) -> int:
    """The port a role's replicas listen on: its first container's first declared port, else ``default``."""
    spec = role.template.get("spec")
    containers = spec.get("containers") if isinstance(spec, Mapping) else None
    first = containers[0] if isinstance(containers, list) and containers else None
    ports = first.get("ports") if isinstance(first, Mapping) else None
    entry = ports[0] if isinstance(ports, list) and ports else None
    port = entry.get("containerPort") if isinstance(entry, Mapping) else None
    return port if isinstance(port, int) and _int_in(port, 1, PORT_MAX) else default


# ----- TensorFlow ---------------------------------------------------------------------------------------


def tf_cluster(layout: Layout) -> dict[str, list[str]]:
    return {
        r.name: [f"{layout.fqdn(r.name, i)}:{role_port(r)}" for i in range(r.replicas)] for r in layout.roles
    }


def tf_config(cluster: Mapping[str, list[str]], task_type: str, index: int) -> str:
    """``TF_CONFIG`` for replica ``index`` of role ``task_type``: compact JSON, roles in given order."""
    body = {"cluster": dict(cluster), "task": {"type": task_type, "index": index}}
    return json.dumps(body, separators=(",", ":"))


# ----- PyTorch ------------------------------------------------------------------------------------------


def pytorch_env(layout: Layout, role: str, index: int) -> tuple[EnvVar, ...]:
    """The variables of ``torch.distributed``'s env:// rendezvous and torchrun's ``PET_*``, as Kubeflow's
    PyTorchJob sets them (one node per replica, the master's replica 0 is node 0)."""
    address = layout.fqdn(layout.master.name, 0)
    port = str(layout.master_port(DEFAULT_PYTORCH_PORT))
    nproc = layout.options.nproc_per_node
    rank = str(layout.node_rank(role, index))
    world = layout.nodes * (int(nproc) if nproc.isdigit() else 1)
    return (
        ("MASTER_ADDR", address),
        ("MASTER_PORT", port),
        ("WORLD_SIZE", str(world)),
        ("RANK", rank),
        ("PET_MASTER_ADDR", address),
        ("PET_MASTER_PORT", port),
        ("PET_NNODES", layout.nodes_range),
        ("PET_NODE_RANK", rank),
        ("PET_NPROC_PER_NODE", nproc),
    )


# ----- JAX ----------------------------------------------------------------------------------------------


def jax_env(layout: Layout, role: str, index: int) -> tuple[EnvVar, ...]:
    """``jax.distributed.initialize``'s three parameters; it reads the first from the environment."""
    address = f"{layout.fqdn(layout.master.name, 0)}:{layout.master_port(DEFAULT_JAX_PORT)}"
    return (
        ("JAX_COORDINATOR_ADDRESS", address),
        ("JAX_NUM_PROCESSES", str(layout.nodes)),
        ("JAX_PROCESS_ID", str(layout.node_rank(role, index))),
    )


# ----- MPI ----------------------------------------------------------------------------------------------


def hostfile_name(taskset: str, attempt: int) -> str:
    return HOSTFILE_NAME_FORMAT.format(taskset=taskset, attempt=attempt)


def mpi_hosts(layout: Layout) -> list[str]:
    """The replicas MPI runs ranks on: every role's but the launcher's, or the launcher's own when it is
    the only role; in declared order, then by index."""
    workers = [r for r in layout.roles if r.name != layout.master.name] or [layout.master]
    return [layout.fqdn(r.name, i) for r in workers for i in range(r.replicas)]


def mpi_hostfile(layout: Layout) -> str:
    """Open MPI's hostfile: ``<host> slots=<n>`` a line."""
    slots = layout.options.slots_per_worker
    return "".join(f"{host} slots={slots}\n" for host in mpi_hosts(layout))


def hydra_hostfile(layout: Layout) -> str:
    """Hydra's (Intel MPI, MPICH) hostfile: ``<host>:<n>`` a line."""
    slots = layout.options.slots_per_worker
    return "".join(f"{host}:{slots}\n" for host in mpi_hosts(layout))


def mpi_decoration(configmap: str) -> PodDecoration:
    """The hostfile mounted at ``HOSTFILE_DIR`` and the variables that point each MPI at its form."""
    return PodDecoration(
        env=(
            ("OMPI_MCA_orte_default_hostfile", f"{HOSTFILE_DIR}/{HOSTFILE_KEY}"),
            ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
            ("I_MPI_HYDRA_HOST_FILE", f"{HOSTFILE_DIR}/{HYDRA_HOSTFILE_KEY}"),
            ("HYDRA_HOST_FILE", f"{HOSTFILE_DIR}/{HYDRA_HOSTFILE_KEY}"),
        ),
        volumes=({"name": HOSTFILE_VOLUME, "configMap": {"name": configmap}},),
        volume_mounts=({"name": HOSTFILE_VOLUME, "mountPath": HOSTFILE_DIR, "readOnly": True},),
    )
