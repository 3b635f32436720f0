"""Peer lists in the environment: every container learns the TaskSet's layout, so a
replica finds its peers and its place among them with nothing written by hand.

The variables, in front of the container's own (a variable the user sets in the template wins, as for
the identity variables; ``taskset.objects.decorations``):

* ``TASKSET_ROLES``: the role names, comma-separated, in declared order;
* ``TASKSET_WORLD_SIZE``: the number of replicas over all roles;
* ``TASKSET_RANK``: this replica's place among them, counting role by role in declared order, then by
  index (the ps of a ps + 2 workers TaskSet is 0, its workers 1 and 2);
* per role, with the role's name upper-cased and ``-`` made ``_`` (``param-server`` gives
  ``PARAM_SERVER``): ``TASKROLE_<ROLE>_COUNT``, its replicas, and ``TASKROLE_<ROLE>_HOSTS``, their DNS
  names (``taskset.objects.network``), comma-separated in index order; the hosts only when the replicas
  have names (``spec.network``) and all the lists together stay within ``HOSTS_MAX`` characters (a Pod
  is an object of at most about 1.5 MB; a long list is better read from the names' pattern).

Role names are DNS-1123 labels (lower-case letters, digits, ``-``), so the mapping is one to one: two
roles can never map to the same variable (``tests/unit/taskset/integrations/test_peer_env.py`` shows it),
and no admission check is needed for it.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final

from taskset.api.spec import Role
from taskset.integrations.base import Attempt, DecoratesPods
from taskset.objects.decorations import EnvVar, PodDecoration
from taskset.objects.network import replica_fqdn, service_name
from taskset.objects.pods import PodIdentity

ENV_ROLES: Final = "TASKSET_ROLES"
ENV_WORLD_SIZE: Final = "TASKSET_WORLD_SIZE"
ENV_RANK: Final = "TASKSET_RANK"
ENV_ROLE_COUNT: Final = "TASKROLE_{role}_COUNT"
ENV_ROLE_HOSTS: Final = "TASKROLE_{role}_HOSTS"
HOSTS_MAX: Final = 64 * 1024  # characters of every role's hosts list together

Layout = tuple[tuple[str, int], ...]  # (role name, replicas), in declared order


def role_variable(role: str) -> str:
    """The part of a variable name that stands for ``role``: upper-case, ``-`` made ``_``."""
    return role.upper().replace("-", "_")


class PeerEnv(DecoratesPods):
    name = "peer-env"

    def decorate_pod(self, attempt: Attempt, role: Role, identity: PodIdentity) -> PodDecoration:
        layout = tuple((r.name, r.replicas) for r in attempt.spec.roles)
        service = service_name(attempt.taskset, attempt.spec.raw)
        shared = layout_env(attempt.taskset, attempt.namespace, service, layout)
        rank = rank_of(layout, role.name, identity.index)
        return PodDecoration(env=((ENV_RANK, str(rank)), *shared))


def rank_of(layout: Layout, role: str, index: int) -> int:
    """The replica's place over all replicas, role by role in declared order."""
    before = 0
    for name, replicas in layout:
        if name == role:
            return before + index
        before += replicas
    return before + index


@lru_cache(maxsize=64)
def layout_env(taskset: str, namespace: str, service: str | None, layout: Layout) -> tuple[EnvVar, ...]:
    """The variables every replica of the TaskSet shares; made once per attempt's layout, not per Pod
    (a role of thousands of replicas would otherwise build its hosts list thousands of times)."""
    env: list[EnvVar] = [
        (ENV_ROLES, ",".join(name for name, _ in layout)),
        (ENV_WORLD_SIZE, str(sum(replicas for _, replicas in layout))),
    ]
    env += [(ENV_ROLE_COUNT.format(role=role_variable(name)), str(replicas)) for name, replicas in layout]
    if service is not None:
        hosts = [
            (
                ENV_ROLE_HOSTS.format(role=role_variable(name)),
                ",".join(replica_fqdn(taskset, name, index, service, namespace) for index in range(replicas)),
            )
            for name, replicas in layout
        ]
        if sum(len(value) for _, value in hosts) <= HOSTS_MAX:
            env += hosts
    return tuple(env)
