"""Lost nodes under a gang: the 20-replica TaskSet of ``test_node_loss`` with ``spec.gang`` and
``nodeLossPolicy: Recover``, gang-scheduled by scheduler-plugins' coscheduling scheduler (the one the user
manual names for ``spec.gang``) with a PodGroup of ``minMember`` 20, all of the gang.

A node is lost under the running gang: its Pods are evicted and never confirmed, the controller
force-deletes them after the policy's grace and creates their replacements in the same attempt, so they
join the same PodGroup, whose other members still run. The coscheduling plugin lets a member through its
Permit stage only once the members bound and waiting reach ``minMember``: the replacements are placed
together, as soon as all of them are there. The gang must run again within the graces plus 30 s, with no
replacement on the lost node (its ``unreachable`` NoSchedule taint keeps the scheduler away) and, in the
history of every Pod version, never two live Pods of one replica.

The cluster (4 nodes with node health on), the namespace and the helpers are ``test_node_loss``'s,
imported, not copied; the coscheduling scheduler runs beside that cluster for this module.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any, cast

import pytest
from kubernetes import client

from devcluster import Cluster
from devcluster.coscheduling import SCHEDULER_NAME, Coscheduler
from taskset.integrations import BUILT_IN
from taskset.integrations.gang import COSCHEDULING_LABEL, COSCHEDULING_PODGROUPS, gang_integrations
from taskset.runtime.controller import Controller
from tests.builders import TaskSetBuilder
from tests.chaos.history import History
from tests.chaos.test_node_loss import (  # the module's cluster and namespace fixtures, by import
    NODE_GRACE,
    RECOVER_GRACE,
    REPLICAS,
    SLACK,
    TOLERATION,
    all_running,
    busiest,
    lossy,  # noqa: F401
    pods_on,
    running_message,
    space,  # noqa: F401
    template,
)
from tests.integration.conftest import start_controller
from tests.integration.harness import TaskSets, eventually

GROUP = "taskset-gang-0"  # the first attempt's PodGroup: recovery replaces replicas, not the attempt


@pytest.fixture(scope="module")
def coscheduler(lossy: Cluster) -> Iterator[Coscheduler]:  # noqa: F811
    """The coscheduling scheduler beside this module's cluster (a missing build fails, never skips)."""
    running = Coscheduler(lossy).start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def gang_controller(lossy: Cluster, space: str, coscheduler: Coscheduler) -> Iterator[Controller]:  # noqa: F811
    integrations = (*BUILT_IN, *gang_integrations(("coscheduling",)))
    running = start_controller(lossy, space, integrations, workers=4)
    yield running
    running.stop(5)


def gang_taskset(name: str) -> dict[str, Any]:
    """``test_node_loss``'s TaskSet, every Pod of it one gang (``minAvailable`` absent: all 20)."""
    pods = template()
    pods["spec"]["schedulerName"] = SCHEDULER_NAME
    obj = TaskSetBuilder(name).role("worker", REPLICAS, template=pods).obj()
    obj["spec"]["gang"] = {"scheduler": "coscheduling"}
    obj["spec"]["nodeLossPolicy"] = {"action": "Recover", "graceSeconds": RECOVER_GRACE}
    return obj


def podgroup(cluster: Cluster, namespace: str, name: str) -> dict[str, Any]:
    kind = COSCHEDULING_PODGROUPS
    api = client.CustomObjectsApi(cluster.api_client())
    found = api.get_namespaced_custom_object(kind.group, kind.version, namespace, kind.plural, name)
    return cast("dict[str, Any]", found)


def test_with_recover_the_gang_runs_again_within_the_graces_and_never_on_the_lost_node(
    lossy: Cluster,  # noqa: F811
    space: str,  # noqa: F811
    gang_controller: Controller,
) -> None:
    history = History(lossy, space).start()
    try:
        ts = TaskSets(lossy, space)
        ts.create(gang_taskset("gang"))
        eventually(lambda: all_running(ts, "gang", REPLICAS), 120, "the whole gang runs")
        assert podgroup(lossy, space, GROUP)["spec"]["minMember"] == REPLICAS
        assert {p["metadata"]["labels"][COSCHEDULING_LABEL] for p in ts.pods("gang")} == {GROUP}
        node = busiest(ts, "gang")
        stranded = {p["metadata"]["name"] for p in pods_on(ts, "gang", node)}
        lost_at = time.monotonic()
        lossy.lose_node(node)
        bound = NODE_GRACE + max(TOLERATION, RECOVER_GRACE) + SLACK

        def recovered() -> dict[str, Any] | None:
            status = all_running(ts, "gang", REPLICAS)
            return status if status and not pods_on(ts, "gang", node) else None

        status = eventually(recovered, bound + 60, "the gang runs again off the lost node")
        took = time.monotonic() - lost_at
        print(f"the gang ran again {took:.1f} s after its node was lost (bound {bound} s)")
        assert took <= bound, f"the gang ran again after {took:.0f} s, bound {bound} s"
        assert status["totalRetriedCount"] == 0, "the replicas were replaced, the attempt kept"
        records = status["nodeRecoveries"]["recoveries"]
        assert {r["pod"] for r in records} <= stranded and all(r["node"] == node for r in records)
        assert not running_message(status).startswith("NodeLost")
        pods = ts.pods("gang")
        assert {p["metadata"]["labels"][COSCHEDULING_LABEL] for p in pods} == {GROUP}, "one gang"
        assert all(p["spec"]["schedulerName"] == SCHEDULER_NAME for p in pods)
    finally:
        history.stop()
    verdict = history.verdict()
    assert not verdict.violations, verdict.violations
