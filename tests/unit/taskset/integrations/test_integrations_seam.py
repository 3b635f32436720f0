"""The integration seam's pure parts: how decorations meet a template, how an owned object's manifest is
made, the seed's identity variables as the first integration, and integrations' spec checks."""

from __future__ import annotations

from typing import Any

import pytest

from taskset.api.constants import (
    ANNOTATION_CREATION_PROOF,
    ANNOTATION_NAMESPACE,
    ANNOTATION_TASKSET,
    LABEL_ROLE,
    LABEL_TASKSET,
)
from taskset.api.spec import CheckFailure, ParsedTaskSet, ValidationFailure, parse_taskset
from taskset.integrations import BUILT_IN
from taskset.integrations.framework_env import FrameworkEnv
from taskset.integrations.headless_service import HeadlessService
from taskset.integrations.identity_env import IdentityEnv, identity_decoration
from taskset.integrations.membership import Membership
from taskset.integrations.peer_env import PeerEnv
from taskset.integrations.start_order import StartOrder
from taskset.objects.decorations import PodDecoration
from taskset.objects.owned import (
    CONFIGMAPS,
    ObjectKind,
    OwnedObject,
    Scope,
    control_unit_owner,
    manifest,
    taskset_owner,
)
from taskset.objects.pods import PodIdentity, build_pod
from tests.builders import TaskSetBuilder, pod_template

pytestmark = pytest.mark.unit

WHO = PodIdentity(
    taskset="seam",
    namespace="ns1",
    taskset_uid="ts-uid",
    role="worker",
    index=2,
    name="seam-worker-2",
    control_unit_name="c-seam-0",
    control_unit_uid="cu-uid",
    taskset_attempt=0,
    replica_attempt=1,
    proof="0" * 64,
)


def template() -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": "demo", "shared": "template"}, "annotations": {"note": "keep"}},
        "spec": {
            "nodeSelector": {"zone": "a"},
            "volumes": [{"name": "own", "emptyDir": {}}],
            "containers": [
                {
                    "name": "main",
                    "image": "busybox",
                    "env": [{"name": "MASTER_ADDR", "value": "user-set"}],
                    "volumeMounts": [{"name": "own", "mountPath": "/own"}],
                },
                {"name": "side", "image": "busybox"},
            ],
        },
    }


FULL = PodDecoration(
    env=(("MASTER_ADDR", "decorated"), ("WORLD_SIZE", "4")),
    labels={"shared": "decoration", "added": "yes", LABEL_TASKSET: "forged"},
    annotations={"added": "yes"},
    hostname="seam-worker-2",
    subdomain="seam",
    volumes=({"name": "hostfile", "configMap": {"name": "seam-hosts"}},),
    volume_mounts=({"name": "hostfile", "mountPath": "/etc/mpi"},),
    node_selector={"zone": "b", "gpu": "yes"},
    tolerations=({"key": "gpu", "operator": "Exists"},),
    scheduling_gates=("kueue.x-k8s.io/admission",),
    scheduler_name="gang",
)


def test_a_decoration_adds_every_kind_of_field_with_the_documented_precedence() -> None:
    pod = build_pod(template(), WHO, (FULL,))
    meta, spec = pod["metadata"], pod["spec"]
    assert meta["labels"] == {
        "app": "demo",
        "shared": "decoration",
        "added": "yes",
        LABEL_TASKSET: "seam",  # identity is set last: no decoration can forge it
        LABEL_ROLE: "worker",
    }
    assert meta["annotations"]["added"] == "yes" and meta["annotations"]["note"] == "keep"
    assert (spec["hostname"], spec["subdomain"], spec["schedulerName"]) == ("seam-worker-2", "seam", "gang")
    assert spec["nodeSelector"] == {"zone": "b", "gpu": "yes"}
    assert [v["name"] for v in spec["volumes"]] == ["own", "hostfile"]
    assert spec["tolerations"] == [{"key": "gpu", "operator": "Exists"}]
    assert spec["schedulingGates"] == [{"name": "kueue.x-k8s.io/admission"}]
    main, side = spec["containers"]
    # The decoration's variables come first, so the user's own MASTER_ADDR (later) wins in the kubelet.
    assert [(v["name"], v["value"]) for v in main["env"]] == [
        ("MASTER_ADDR", "decorated"),
        ("WORLD_SIZE", "4"),
        ("MASTER_ADDR", "user-set"),
    ]
    assert [m["mountPath"] for m in main["volumeMounts"]] == ["/own", "/etc/mpi"]
    assert [m["mountPath"] for m in side["volumeMounts"]] == ["/etc/mpi"]


def test_a_template_value_is_kept_where_a_decoration_only_fills_blanks() -> None:
    own = template()
    own["spec"] |= {"hostname": "mine", "subdomain": "mine", "schedulerName": "kube-batch"}
    spec = build_pod(own, WHO, (FULL,))["spec"]
    assert (spec["hostname"], spec["subdomain"], spec["schedulerName"]) == ("mine", "mine", "kube-batch")


def test_decorations_never_change_the_template_they_are_built_from() -> None:
    before = template()
    shared = template()
    build_pod(shared, WHO, (FULL, identity_decoration(WHO)))
    assert shared == before


def test_without_decorations_a_pod_is_the_template_and_its_identity_only() -> None:
    pod = build_pod(template(), WHO)
    main = pod["spec"]["containers"][0]
    assert main["env"] == [{"name": "MASTER_ADDR", "value": "user-set"}]
    assert "hostname" not in pod["spec"] and "schedulingGates" not in pod["spec"]


def test_earlier_integrations_variables_come_first() -> None:
    first = PodDecoration(env=(("A", "1"),))
    second = PodDecoration(env=(("B", "2"),))
    env = build_pod(template(), WHO, (first, second))["spec"]["containers"][1]["env"]
    assert [v["name"] for v in env] == ["A", "B"]


def test_the_identity_variables_are_the_seeds_six_in_the_seeds_order() -> None:
    assert identity_decoration(WHO).env == (
        ("TASKSET_NAMESPACE", "ns1"),
        ("TASKSET_NAME", "seam"),
        ("TASKROLE_NAME", "worker"),
        ("TASKROLE_REPLICA_INDEX", "2"),
        ("TASKSET_ATTEMPT_ID", "0"),
        ("TASKROLE_REPLICA_ATTEMPT_ID", "1"),
    )


def test_the_built_in_integrations_in_their_order() -> None:
    assert [type(integration) for integration in BUILT_IN] == [
        IdentityEnv,
        HeadlessService,
        PeerEnv,
        FrameworkEnv,
        StartOrder,
        Membership,
    ]


@pytest.mark.parametrize(
    ("owner", "owner_kind"),
    [
        pytest.param(
            taskset_owner("seam", "ts-uid"), "TaskSet", id="a TaskSet-scoped object is owned by the TaskSet"
        ),
        pytest.param(
            control_unit_owner("c-seam-0", "cu-uid"),
            "ConfigMap",
            id="an attempt-scoped object by its ControlUnit",
        ),
    ],
)
def test_an_owned_objects_manifest_carries_its_owner_name_and_the_tasksets_label(
    owner: Any, owner_kind: str
) -> None:
    wanted = OwnedObject(
        kind=CONFIGMAPS,
        name="seam-hosts",
        scope=Scope.ATTEMPT,
        body={
            "metadata": {"labels": {"extra": "1", LABEL_TASKSET: "forged"}},
            "data": {"hostfile": "a\nb\n"},
        },
        integration="example",
    )
    made = manifest(wanted, taskset="seam", namespace="ns1", owner=owner, proof="p" * 64)
    assert (made["apiVersion"], made["kind"]) == ("v1", "ConfigMap")
    assert made["data"] == {"hostfile": "a\nb\n"}
    meta = made["metadata"]
    assert (meta["name"], meta["namespace"]) == ("seam-hosts", "ns1")
    assert meta["labels"] == {"extra": "1", LABEL_TASKSET: "seam"}
    assert meta["annotations"] == {
        ANNOTATION_TASKSET: "seam",
        ANNOTATION_NAMESPACE: "ns1",
        ANNOTATION_CREATION_PROOF: "p" * 64,
    }
    [ref] = meta["ownerReferences"]
    assert (ref["kind"], ref["uid"], ref["controller"], ref["blockOwnerDeletion"]) == (
        owner_kind,
        owner.uid,
        True,
        True,
    )


@pytest.mark.parametrize(
    ("kind", "api_version", "key"),
    [
        pytest.param(CONFIGMAPS, "v1", "configmaps", id="the core group has no group in its apiVersion"),
        pytest.param(
            ObjectKind("scheduling.x-k8s.io", "v1alpha1", "podgroups", "PodGroup"),
            "scheduling.x-k8s.io/v1alpha1",
            "podgroups.scheduling.x-k8s.io",
            id="another group is named in both",
        ),
    ],
)
def test_an_object_kind_names_its_api_version_and_key(kind: ObjectKind, api_version: str, key: str) -> None:
    assert (kind.api_version, kind.key) == (api_version, key)


def _no_gpu_field(spec: Any) -> CheckFailure | None:
    if "gpuPolicy" in spec:
        return CheckFailure("spec.gpuPolicy", "spec.gpuPolicy: not supported here")
    return None


@pytest.mark.parametrize(
    ("extra", "legal"),
    [
        pytest.param({}, True, id="a spec without the integration's field passes its check"),
        pytest.param({"gpuPolicy": "x"}, False, id="a spec its check refuses is illegal, naming the field"),
    ],
)
def test_an_integrations_check_makes_a_taskset_illegal(extra: dict[str, Any], legal: bool) -> None:
    raw = TaskSetBuilder("checked", "ns1").role("r", replicas=1, template=pod_template()).obj()
    raw["spec"] |= extra
    parsed = parse_taskset(raw, (_no_gpu_field,))
    if legal:
        assert isinstance(parsed, ParsedTaskSet)
        assert parsed.spec.raw is raw["spec"]
    else:
        assert isinstance(parsed, ValidationFailure)
        assert (parsed.field, parsed.message) == ("spec.gpuPolicy", "spec.gpuPolicy: not supported here")
        assert [outline.name for outline in parsed.roles] == ["r"]
