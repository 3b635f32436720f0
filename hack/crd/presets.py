"""``spec.framework`` and ``spec.frameworkOptions`` (``taskset.integrations.framework_env``): a preset
that gives every container the environment a distributed framework expects, built from the replicas'
DNS names. The frameworks, ports and patterns come from that integration.
"""

from __future__ import annotations

from hack.crd.fields import Schema
from taskset.api import constants as c
from taskset.integrations import framework_env as fw


def properties() -> Schema:
    return {
        "framework": {
            "type": "string",
            "enum": list(fw.FRAMEWORKS),
            "description": "A framework preset, built from the replicas' DNS names: "
            "tensorflow gives every container TF_CONFIG; pytorch MASTER_ADDR, MASTER_PORT, WORLD_SIZE, "
            "RANK and torchrun's PET_*; jax JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID; "
            "mpi a hostfile mounted at /etc/mpi.",
        },
        "frameworkOptions": _options_schema(),
    }


def _options_schema() -> Schema:
    """``spec.frameworkOptions``: which role is the master, its port, and the per-replica process counts."""
    return {
        "type": "object",
        "description": "Tunes the framework preset.",
        "properties": {
            "masterRole": {
                "type": "string",
                "maxLength": c.DNS1123_LABEL_MAX_LENGTH,
                "description": "The role that plays master, chief, coordinator or launcher (default: the "
                "first role named master, chief, launcher or coordinator, else the first role).",
            },
            "port": {
                "type": "integer",
                "format": "int32",
                "minimum": 1,
                "maximum": fw.PORT_MAX,
                "description": "The master's port (default: the master role's first container port, else "
                f"{fw.DEFAULT_PYTORCH_PORT} for pytorch, {fw.DEFAULT_JAX_PORT} for jax).",
            },
            "nprocPerNode": {
                "type": "string",
                "pattern": fw.NPROC_PATTERN,
                "description": "torchrun's processes per replica: auto, cpu, gpu or a number (default auto).",
            },
            "slotsPerWorker": {
                "type": "integer",
                "format": "int32",
                "minimum": 1,
                "maximum": fw.MAX_SLOTS,
                "description": "MPI slots per replica in the hostfile (default 1).",
            },
        },
    }


def rules() -> list[Schema]:
    """CEL on the spec: the master role is one of the roles; a preset needs the replicas' names."""
    return [
        {
            "rule": "!has(self.frameworkOptions) || !has(self.frameworkOptions.masterRole) || "
            "(has(self.roles) && self.roles.exists(r, r.name == self.frameworkOptions.masterRole))",
            "message": "must name one of the roles",
            "fieldPath": ".frameworkOptions.masterRole",
            "reason": "FieldValueInvalid",
        },
        {
            "rule": "!has(self.framework) || !has(self.network) || !has(self.network.enableDNSHostnames) || "
            "self.network.enableDNSHostnames",
            "message": "a framework preset needs the replicas' DNS names",
            "fieldPath": ".network.enableDNSHostnames",
            "reason": "FieldValueInvalid",
        },
    ]
