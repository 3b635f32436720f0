"""What Kueue's admission gives a queued TaskSet's Pods: per role, its flavors' node
labels and tolerations and its admission checks' pod set updates, as Kueue's jobframework injects them;
an admission that contradicts the Pod template ends the attempt, naming the key; and what the caches
keep of a Workload and a ResourceFlavor to decide it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from taskset.api.spec import ParsedTaskSet, parse_taskset
from taskset.decide import Settings
from taskset.integrations import BUILT_IN, Framework
from taskset.integrations.kueue import (
    QUEUE_LABEL,
    RESOURCE_FLAVORS,
    WORKLOADS,
    KueueWorkload,
    admitted_role,
)
from taskset.objects.decorations import PodDecoration
from taskset.observed.slim import KEPT_FIELD_MAX, slim_owned
from taskset.observed.views import OwnedView, owned_view
from tests.builders import TaskSetBuilder, pod_template
from tests.unit.taskset.world import World

pytestmark = pytest.mark.unit

GPU_TAINT = {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
SPOT = {"key": "spot", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}


def flavor(name: str, labels: dict[str, Any], tolerations: list[Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeLabels": labels}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    return {"metadata": {"name": name}, "spec": spec}


FLAVORS = {
    (RESOURCE_FLAVORS.key, f["metadata"]["name"]): f
    for f in (
        flavor("a100", {"gpu": "a100", "zone": "z1"}, [GPU_TAINT]),
        flavor("spot", {"zone": "z1", "market": "spot"}, [SPOT, GPU_TAINT]),
        flavor("odd", {"zone": 7, "ok": "yes"}, ["not a toleration", SPOT]),
    )
}


def role(node_selector: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> Any:
    template = pod_template()
    if node_selector is not None:
        template["spec"]["nodeSelector"] = node_selector
    if labels is not None:
        template["metadata"] = {"labels": labels}
    parsed = parse_taskset(TaskSetBuilder("job").role("worker", 2, template=template).obj())
    assert isinstance(parsed, ParsedTaskSet)
    return parsed.spec.roles[0]


def workload(flavors: dict[str, str] | None, checks: list[dict[str, Any]] | None = None) -> OwnedView:
    assignment: dict[str, Any] = {"name": "worker"}
    if flavors is not None:
        assignment["flavors"] = flavors
    status: dict[str, Any] = {"admission": {"podSetAssignments": [{"name": "ps"}, assignment]}}
    if checks is not None:
        status["admissionChecks"] = checks
    return OwnedView(
        "taskset-job-0", "w", False, "cu", true_conditions=frozenset({"Admitted"}), status=status
    )


def update(**fields: Any) -> dict[str, Any]:
    return {"name": "check", "state": "Ready", "podSetUpdates": [{"name": "worker", **fields}]}


@pytest.mark.parametrize(
    ("template", "admitted", "expected"),
    [
        pytest.param(
            role(),
            workload({"cpu": "a100", "nvidia.com/gpu": "a100"}),
            PodDecoration(node_selector={"gpu": "a100", "zone": "z1"}, tolerations=(GPU_TAINT,)),
            id="one flavor for two resources: its node labels and tolerations, once",
        ),
        pytest.param(
            role(),
            workload({"cpu": "a100", "memory": "spot"}),
            PodDecoration(
                node_selector={"gpu": "a100", "zone": "z1", "market": "spot"}, tolerations=(GPU_TAINT, SPOT)
            ),
            id="two flavors: both, a toleration they share once",
        ),
        pytest.param(
            role(node_selector={"zone": "z1"}),
            workload({"cpu": "a100"}),
            PodDecoration(node_selector={"gpu": "a100"}, tolerations=(GPU_TAINT,)),
            id="a key the template already sets to the same value: not repeated",
        ),
        pytest.param(
            role(),
            workload({"cpu": "odd"}),
            PodDecoration(node_selector={"ok": "yes"}, tolerations=(SPOT,)),
            id="entries not of Kueue's shape are left out",
        ),
        pytest.param(
            role(),
            workload(None, [update(labels={"l": "1"}, annotations={"a": "2"}, nodeSelector={"n": "3"})]),
            PodDecoration(labels={"l": "1"}, annotations={"a": "2"}, node_selector={"n": "3"}),
            id="no flavors: the admission checks' updates alone",
        ),
        pytest.param(
            role(labels={"l": "1"}),
            workload({"cpu": "a100"}, [update(labels={"l": "1"}, tolerations=[SPOT, GPU_TAINT])]),
            PodDecoration(node_selector={"gpu": "a100", "zone": "z1"}, tolerations=(GPU_TAINT, SPOT)),
            id="a flavor and a check's update: merged, nothing twice",
        ),
        pytest.param(
            role(),
            workload({}, [{"name": "other", "podSetUpdates": [{"name": "ps", "labels": {"x": "y"}}]}]),
            PodDecoration(),
            id="another pod set's update is not this role's",
        ),
    ],
)
def test_an_admission_gives_the_roles_pods_what_kueues_jobframework_would(
    template: Any, admitted: OwnedView, expected: PodDecoration
) -> None:
    found = admitted_role(admitted, template, FLAVORS)
    assert (found.held, found.conflict) == (None, None)
    assert found.decoration == expected


@pytest.mark.parametrize(
    ("template", "admitted", "said"),
    [
        pytest.param(
            role(node_selector={"zone": "z2"}),
            workload({"cpu": "a100"}),
            "ResourceFlavor a100 sets nodeSelector zone=z1, but the Pod template has zone=z2",
            id="a flavor's node label against the template's node selector",
        ),
        pytest.param(
            role(labels={"team": "a"}),
            workload({}, [update(labels={"team": "b"})]),
            "admission check check sets labels team=b, but the Pod template has team=a",
            id="a check's label against the template's",
        ),
        pytest.param(
            role(),
            workload({"cpu": "a100"}, [update(nodeSelector={"gpu": "h100"})]),
            "admission check check sets nodeSelector gpu=h100, but the Pod template has gpu=a100",
            id="a check's node selector against a flavor's",
        ),
    ],
)
def test_an_admission_that_contradicts_the_template_is_a_conflict(
    template: Any, admitted: OwnedView, said: str
) -> None:
    found = admitted_role(admitted, template, FLAVORS)
    assert (found.decoration, found.held, found.conflict) == (None, None, said)


@pytest.mark.parametrize(
    ("admitted", "said"),
    [
        pytest.param(
            workload({"cpu": "h100"}),
            "waiting for ResourceFlavor h100 (Workload taskset-job-0 admitted with it) to be cached",
            id="a flavor the cache does not show yet",
        ),
        pytest.param(
            OwnedView("taskset-job-0", "w", False, "cu", true_conditions=frozenset({"Admitted"})),
            "Workload taskset-job-0 is admitted, but not yet readably for pod set worker",
            id="no admission in the cache",
        ),
    ],
)
def test_what_the_cache_does_not_show_yet_holds_the_role(admitted: OwnedView, said: str) -> None:
    found = admitted_role(admitted, role(), FLAVORS)
    assert (found.decoration, found.held, found.conflict) == (None, said, None)


def test_the_caches_keep_a_workloads_admission_and_a_flavors_node_labels_bounded() -> None:
    admission = {"clusterQueue": "q", "podSetAssignments": [{"name": "w", "flavors": {"cpu": "a"}}]}
    obj = {
        "metadata": {"name": "w", "uid": "u", "labels": {"stranger": "x" * 100}},
        "spec": {"podSets": [{"name": "w", "template": {"spec": {"containers": []}}}]},
        "status": {
            "conditions": [{"type": "Admitted", "status": "True", "message": "m"}],
            "admission": admission,
            "admissionChecks": [{"name": "c", "message": "x" * (KEPT_FIELD_MAX + 1)}],
            "resourceRequests": [{"name": "w"}],
        },
    }
    slim = slim_owned(obj, WORKLOADS.kept)
    admitted = {"type": "Admitted", "status": "True", "message": "m"}
    assert slim["status"] == {"conditions": [admitted], "admission": admission}
    assert "spec" not in slim and slim["metadata"].get("labels") == {}
    assert owned_view(slim).status == {"admission": admission}, "an oversized field is dropped whole"
    assert slim_owned(slim, WORKLOADS.kept) == slim, "idempotent"
    big = flavor("f", {f"k{i}": "v" for i in range(8)}, [SPOT] * 8)
    big["spec"]["nodeTaints"] = [{"key": "t"}]
    kept = slim_owned(big, RESOURCE_FLAVORS.kept)
    assert kept["spec"] == {"nodeLabels": big["spec"]["nodeLabels"], "tolerations": [SPOT] * 8}
    assert len(json.dumps(kept)) < 1024


def queued_world(node_selector: dict[str, str] | None = None) -> World:
    template = pod_template()
    if node_selector is not None:
        template["spec"]["nodeSelector"] = node_selector
    obj = TaskSetBuilder("job").role("worker", 2, template=template).obj()
    obj["metadata"]["labels"] = {QUEUE_LABEL: "team"}
    world = World(obj, settings=Settings(framework=Framework((*BUILT_IN, KueueWorkload()))))
    world.read.update(FLAVORS)
    world.settle()
    world.owned[(WORKLOADS.key, "taskset-job-0")]["status"] = {
        "conditions": [{"type": "Admitted", "status": "True"}],
        "admission": {"podSetAssignments": [{"name": "worker", "flavors": {"cpu": "a100"}}]},
        "admissionChecks": [update(labels={"checked": "yes"})],
    }
    world.settle()
    return world


def test_an_admitted_taskset_creates_its_pods_with_the_admission_injected() -> None:
    world = queued_world(node_selector={"disk": "ssd"})
    assert sorted(world.pods) == ["job-worker-0", "job-worker-1"]
    for pod in world.pods.values():
        assert pod["spec"]["nodeSelector"] == {"disk": "ssd", "gpu": "a100", "zone": "z1"}
        assert pod["spec"]["tolerations"] == [GPU_TAINT]
        assert pod["metadata"]["labels"]["checked"] == "yes"


def test_an_admission_that_contradicts_the_template_fails_the_attempt_naming_the_key() -> None:
    world = queued_world(node_selector={"zone": "z9"})
    assert world.pods == {}, "no Pod is created against the admission"
    assert world.status is not None and world.status.state == "Failed"
    assert world.status.state_message == (
        "Kueue's admission of Workload taskset-job-0 conflicts with role worker: ResourceFlavor a100 "
        "sets nodeSelector zone=z1, but the Pod template has zone=z9"
    )
