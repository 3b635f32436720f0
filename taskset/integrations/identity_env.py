"""The seed's six environment variables: every container learns which replica of which attempt it is.

The original controller put them in front of every container's own variables (spec 3.2, D1 adds the two
attempt ids); a variable of the same name that the user set in the template comes later and so wins.
This was the controller's first Pod decoration, and it is the seam's first user.
"""

from __future__ import annotations

from taskset.api.constants import (
    ENV_TASKROLE_NAME,
    ENV_TASKROLE_REPLICA_ATTEMPT_ID,
    ENV_TASKROLE_REPLICA_INDEX,
    ENV_TASKSET_ATTEMPT_ID,
    ENV_TASKSET_NAME,
    ENV_TASKSET_NAMESPACE,
)
from taskset.api.spec import Role
from taskset.integrations.base import Attempt, DecoratesPods
from taskset.objects.decorations import PodDecoration
from taskset.objects.pods import PodIdentity


class IdentityEnv(DecoratesPods):
    name = "identity-env"

    def decorate_pod(self, attempt: Attempt, role: Role, identity: PodIdentity) -> PodDecoration:
        return identity_decoration(identity)


def identity_decoration(identity: PodIdentity) -> PodDecoration:
    """The six variables of ``identity``, in the seed's order."""
    return PodDecoration(
        env=(
            (ENV_TASKSET_NAMESPACE, identity.namespace),
            (ENV_TASKSET_NAME, identity.taskset),
            (ENV_TASKROLE_NAME, identity.role),
            (ENV_TASKROLE_REPLICA_INDEX, str(identity.index)),
            (ENV_TASKSET_ATTEMPT_ID, str(identity.taskset_attempt)),
            (ENV_TASKROLE_REPLICA_ATTEMPT_ID, str(identity.replica_attempt)),
        )
    )
