"""The integrations: which are built in, in the order they are asked, and the runner that asks them.

Order matters only where two integrations add the same thing (the first one's environment variables
come first in every container; see ``taskset.objects.decorations``). A controller may be built with
more (``Controller(integrations=...)``); tests register one of their own that way. The capabilities an
integration may implement are in ``taskset.integrations.base``; ``taskset.integrations.framework`` is the
only code that calls them.
"""

from __future__ import annotations

from typing import Final

from taskset.integrations.base import (
    Admission,
    Admits,
    AfterAttempt,
    Attempt,
    CheckFailure,
    ChecksSpec,
    DecoratesPods,
    FinishesAttempts,
    GatesRoles,
    Integration,
    OwnsObjects,
    ReadsObjects,
    RoleAdmission,
)
from taskset.integrations.framework import Admissions, Framework
from taskset.integrations.framework_env import FrameworkEnv
from taskset.integrations.headless_service import HeadlessService
from taskset.integrations.identity_env import IdentityEnv
from taskset.integrations.membership import Membership
from taskset.integrations.peer_env import PeerEnv
from taskset.integrations.start_order import StartOrder

BUILT_IN: Final[tuple[Integration, ...]] = (
    IdentityEnv(),
    HeadlessService(),
    PeerEnv(),
    FrameworkEnv(),
    StartOrder(),
    Membership(),
)
# The runner of the built-in integrations alone: what a controller runs with when it is given no other.
BUILT_IN_FRAMEWORK: Final = Framework(BUILT_IN)

__all__ = [
    "BUILT_IN",
    "BUILT_IN_FRAMEWORK",
    "Admission",
    "Admissions",
    "Admits",
    "AfterAttempt",
    "Attempt",
    "CheckFailure",
    "ChecksSpec",
    "DecoratesPods",
    "FinishesAttempts",
    "Framework",
    "GatesRoles",
    "Integration",
    "OwnsObjects",
    "ReadsObjects",
    "RoleAdmission",
]
