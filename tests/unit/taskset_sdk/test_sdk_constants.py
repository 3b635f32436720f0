"""The SDK copies the wire strings it needs instead of importing the controller; these must stay equal."""

from __future__ import annotations

import pytest

from taskset.api import constants as controller
from taskset_sdk import constants as sdk


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        pytest.param(sdk.GROUP, controller.GROUP, id="group"),
        pytest.param(sdk.VERSION, controller.VERSION, id="version"),
        pytest.param(sdk.API_VERSION, controller.API_VERSION, id="apiVersion"),
        pytest.param(sdk.KIND, controller.KIND, id="kind"),
        pytest.param(sdk.PLURAL, controller.PLURAL, id="plural"),
        pytest.param(sdk.POD_NAME_FORMAT, controller.POD_NAME_FORMAT, id="Pod name"),
        pytest.param(sdk.LABEL_TASKSET, controller.LABEL_TASKSET, id="TaskSet label"),
        pytest.param(sdk.LABEL_ROLE, controller.LABEL_ROLE, id="role label"),
        pytest.param(sdk.ANNOTATION_REPLICA_INDEX, controller.ANNOTATION_REPLICA_INDEX, id="index"),
        pytest.param(
            sdk.ANNOTATION_TASKSET_ATTEMPT_ID, controller.ANNOTATION_TASKSET_ATTEMPT_ID, id="attempt"
        ),
        pytest.param(
            sdk.ANNOTATION_REPLICA_ATTEMPT_ID,
            controller.ANNOTATION_REPLICA_ATTEMPT_ID,
            id="replica attempt",
        ),
        pytest.param(sdk.STATES, tuple(controller.State), id="states, in order"),
        pytest.param(sdk.ROLE_EVENTS, tuple(controller.RoleEvent), id="role events"),
        pytest.param(sdk.TASKSET_ACTIONS, tuple(controller.TaskSetAction), id="actions"),
    ],
)
def test_the_sdk_speaks_the_controllers_words(ours: object, theirs: object) -> None:
    assert ours == theirs
