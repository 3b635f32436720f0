"""Framework presets (issue 23, item 4), opted into per TaskSet with ``spec.framework``: the variables a
framework reads to find its cluster, built from the replicas' DNS names (``taskset.objects.network``).

Done so far: ``tensorflow``, which gives every container ``TF_CONFIG`` in the form TensorFlow's
``TFConfigClusterResolver`` (and Kubeflow's TFJob) use::

    {"cluster":{"ps":["tf-ps-0.tf.ml.svc:2222"],"worker":[...]},"task":{"type":"worker","index":1}}

one list per role, by role name in declared order, each replica as ``<fqdn>:<port>`` in index order. The
port is the first one the role's first container declares, else 2222 (TensorFlow's customary port).
A preset needs names: ``spec.network.enableDNSHostnames: false`` with a framework is refused, naming the
field. The other frameworks of the issue (pytorch, jax, mpi) are not built yet, and are refused.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from taskset.api.spec import CheckFailure, Role
from taskset.integrations.base import Attempt, Integration
from taskset.objects.decorations import PodDecoration
from taskset.objects.network import ENABLE_FIELD, NETWORK_FIELD, replica_fqdn, service_name
from taskset.objects.pods import PodIdentity

FRAMEWORK_FIELD: Final = "framework"
TENSORFLOW: Final = "tensorflow"
FRAMEWORKS: Final = (TENSORFLOW,)
ENV_TF_CONFIG: Final = "TF_CONFIG"
DEFAULT_TF_PORT: Final = 2222


class FrameworkEnv(Integration):
    name = "framework-env"

    def check(self, spec: Mapping[str, Any]) -> CheckFailure | None:
        framework = spec.get(FRAMEWORK_FIELD)
        path = f"spec.{FRAMEWORK_FIELD}"
        if framework is None:
            return None
        if framework not in FRAMEWORKS:
            return CheckFailure(path, f"{path}: must be one of {', '.join(FRAMEWORKS)}")
        network = spec.get(NETWORK_FIELD)
        if isinstance(network, Mapping) and network.get(ENABLE_FIELD) is False:
            field = f"spec.{NETWORK_FIELD}.{ENABLE_FIELD}"
            return CheckFailure(field, f"{field}: {path} {framework} needs the replicas' DNS names")
        return None

    def decorate_pod(self, attempt: Attempt, role: Role, identity: PodIdentity) -> PodDecoration | None:
        service = service_name(attempt.taskset, attempt.spec.raw)
        if attempt.spec.raw.get(FRAMEWORK_FIELD) != TENSORFLOW or service is None:
            return None
        cluster = {
            r.name: [
                f"{replica_fqdn(attempt.taskset, r.name, i, service, attempt.namespace)}:{role_port(r)}"
                for i in range(r.replicas)
            ]
            for r in attempt.spec.roles
        }
        return PodDecoration(env=((ENV_TF_CONFIG, tf_config(cluster, role.name, identity.index)),))


def tf_config(cluster: Mapping[str, list[str]], task_type: str, index: int) -> str:
    """``TF_CONFIG`` for replica ``index`` of role ``task_type``: compact JSON, roles in given order."""
    body = {"cluster": dict(cluster), "task": {"type": task_type, "index": index}}
    return json.dumps(body, separators=(",", ":"))


def role_port(role: Role) -> int:
    """The port a role's replicas listen on: its first container's first declared port, else 2222."""
    spec = role.template.get("spec")
    containers = spec.get("containers") if isinstance(spec, Mapping) else None
    first = containers[0] if isinstance(containers, list) and containers else None
    ports = first.get("ports") if isinstance(first, Mapping) else None
    entry = ports[0] if isinstance(ports, list) and ports else None
    port = entry.get("containerPort") if isinstance(entry, Mapping) else None
    usable = isinstance(port, int) and not isinstance(port, bool) and 1 <= port <= 65535
    return port if usable and isinstance(port, int) else DEFAULT_TF_PORT
