"""Restart in place: a ``RestartInPlace`` failure rule becomes the Pod API's container restart rules
(``restartPolicyRules`` with ``RestartAllContainers``, served by kube-apiserver 1.36 with the
``ContainerRestartRules`` and ``RestartAllContainersOnContainerExits`` gates, beta and on by default).
What the embedded control plane can prove is the API server's side: the Pod the controller creates
carries the rules and is accepted. kwok's simulated kubelet runs no containers, so the restart itself
is the kubelet's to show, not this test's."""

from __future__ import annotations

import pytest
from kubernetes import client

from devcluster import Cluster
from tests.builders import TaskSetBuilder
from tests.integration import harness as h
from tests.integration.harness import TaskSets

pytestmark = pytest.mark.integration


def test_a_restart_in_place_rule_is_set_on_the_pod_and_the_api_server_accepts_it(
    cluster: Cluster, ts: TaskSets, namespace: str
) -> None:
    rules = [
        {
            "name": "in-place",
            "action": "RestartInPlace",
            "onExitCodes": {"operator": "In", "values": [42, "50-52"]},
        },
        {"name": "elsewhere", "action": "RetryCounted", "onExitCodes": {"operator": "In", "values": [1]}},
    ]
    ts.create(TaskSetBuilder("inplace").role("r", 2, retry=(True, 1, 0), failureRules=rules).obj())
    core = client.CoreV1Api(cluster.api_client())

    def pods() -> list[client.V1Pod]:
        found: list[client.V1Pod] = core.list_namespaced_pod(namespace).items
        return found if len(found) == 2 else []

    for pod in h.eventually(pods, timeout=h.FINAL_TIMEOUT, what="both Pods created"):
        container = core.api_client.sanitize_for_serialization(pod)["spec"]["containers"][0]
        assert container["restartPolicy"] == pod.spec.restart_policy == "Never"
        assert container["restartPolicyRules"] == [
            {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42, 50, 51, 52]}}
        ]


def test_a_restart_in_place_rule_on_anything_but_exit_codes_is_refused(ts: TaskSets) -> None:
    rule = {"action": "RestartInPlace", "onTerminatedReasons": ["OOMKilled"]}
    with pytest.raises(client.ApiException) as refused:
        ts.create(TaskSetBuilder("notcodes").role("r", 1, failureRules=[rule]).obj())
    assert "a RestartInPlace rule matches exit codes only" in str(refused.value.body)
