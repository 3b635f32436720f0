"""The registry of integrations: which are built in, in the order their hooks are asked.

Order matters only where two integrations add the same thing (the first one's environment variables
come first in every container; see ``taskset.objects.decorations``). A controller may be built with
more (``Controller(integrations=...)``); tests register one of their own that way.
"""

from __future__ import annotations

from collections.abc import Sequence

from taskset.api.spec import Role, SpecCheck
from taskset.integrations.base import Attempt, CheckFailure, Integration
from taskset.integrations.framework_env import FrameworkEnv
from taskset.integrations.headless_service import HeadlessService
from taskset.integrations.identity_env import IdentityEnv
from taskset.integrations.membership import Membership
from taskset.integrations.peer_env import PeerEnv
from taskset.integrations.start_order import StartOrder
from taskset.objects.decorations import PodDecoration
from taskset.objects.pods import PodIdentity
from taskset.observed.views import Observed

BUILT_IN: tuple[Integration, ...] = (
    IdentityEnv(),
    HeadlessService(),
    PeerEnv(),
    FrameworkEnv(),
    StartOrder(),
    Membership(),
)


def spec_checks(integrations: Sequence[Integration]) -> tuple[SpecCheck, ...]:
    """The integrations' checks of their own parts of a spec, in order, as ``parse_taskset`` runs them."""
    return tuple(integration.check for integration in integrations)


def pod_decorations(
    integrations: Sequence[Integration],
    attempt: Attempt,
    role: Role,
    identity: PodIdentity,
    observed: Observed,
) -> tuple[PodDecoration, ...]:
    """What each integration adds to one replica's Pod, in registration order (each one's own additions,
    then what it adds to the whole role from what the pass observed): the controller's Pods, and the
    bench's raw copies of them, are decorated by this one function."""
    return tuple(
        decoration
        for integration in integrations
        for decoration in (
            integration.decorate_pod(attempt, role, identity),
            integration.decorate_role(attempt, role, observed),
        )
        if decoration is not None
    )


__all__ = ["BUILT_IN", "Attempt", "CheckFailure", "Integration", "pod_decorations", "spec_checks"]
