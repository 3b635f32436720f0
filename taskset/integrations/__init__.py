"""The registry of integrations: which are built in, in the order their hooks are asked.

Order matters only where two integrations add the same thing (the first one's environment variables
come first in every container; see ``taskset.objects.decorations``). A controller may be built with
more (``Controller(integrations=...)``); tests register one of their own that way.
"""

from __future__ import annotations

from collections.abc import Sequence

from taskset.api.spec import SpecCheck
from taskset.integrations.base import Attempt, CheckFailure, Integration
from taskset.integrations.framework_env import FrameworkEnv
from taskset.integrations.headless_service import HeadlessService
from taskset.integrations.identity_env import IdentityEnv
from taskset.integrations.membership import Membership
from taskset.integrations.peer_env import PeerEnv
from taskset.integrations.start_order import StartOrder

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


__all__ = ["BUILT_IN", "Attempt", "CheckFailure", "Integration", "spec_checks"]
