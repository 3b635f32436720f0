"""The creation proof: a keyed digest that binds a Pod's namespace, name,
controlling ControlUnit and replica attempt, and that ``classify_pod`` requires before it believes an
unrecorded Pod's claim to be the controller's."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from taskset.observed.proof import PROOF_LENGTH, ProofSubject, creation_proof, proves
from taskset.observed.views import PodClass, classify_pod, pod_view
from tests.unit.taskset.world import PodBuilder

pytestmark = pytest.mark.unit

KEY = b"k" * 32
SUBJECT = ProofSubject(namespace="ns", name="job-r-0", controller_uid="cu-1", attempt=2)
PROOF = creation_proof(KEY, SUBJECT)


def test_a_proof_is_a_sha256_hex_digest_and_proves_its_subject() -> None:
    assert len(PROOF) == PROOF_LENGTH
    assert int(PROOF, 16) >= 0
    assert proves(PROOF, KEY, SUBJECT)


@pytest.mark.parametrize(
    ("proof", "key", "subject"),
    [
        pytest.param(PROOF, KEY, replace(SUBJECT, namespace="other"), id="another namespace"),
        pytest.param(PROOF, KEY, replace(SUBJECT, name="job-r-1"), id="another replica's name"),
        pytest.param(PROOF, KEY, replace(SUBJECT, controller_uid="cu-2"), id="another attempt's ControlUnit"),
        pytest.param(PROOF, KEY, replace(SUBJECT, attempt=3), id="the next replica attempt"),
        pytest.param(PROOF, b"x" * 32, SUBJECT, id="another key"),
        pytest.param("", KEY, SUBJECT, id="no proof"),
        pytest.param(PROOF[:-1], KEY, SUBJECT, id="truncated"),
        pytest.param(PROOF.upper(), KEY, SUBJECT, id="same digits, other case"),
        pytest.param(PROOF + "0", KEY, SUBJECT, id="too long"),
    ],
)
def test_a_proof_proves_nothing_else(proof: str, key: bytes, subject: ProofSubject) -> None:
    assert not proves(proof, key, subject)


def test_the_fields_are_separated_so_that_moving_a_boundary_changes_the_proof() -> None:
    # Whatever the fields hold, moving text from one field to the next is another subject.
    one = ProofSubject("ns", "a\nb", "cu", 0)
    two = ProofSubject("ns\na", "b", "cu", 0)
    three = ProofSubject("ns", "a", '", "cu', 0)
    assert len({creation_proof(KEY, subject) for subject in (one, two, three)}) == 3


def _classify(pod: dict[str, Any], recorded: str | None = None) -> PodClass:
    """How ``pod`` is classified for replica attempt 1 of a replica under the ControlUnit ``cu-1``."""
    return classify_pod(
        pod_view(pod),
        recorded_uid=recorded,
        control_unit_uid="cu-1",
        taskset_uid="ts-1",
        replica_attempt=1,
        proof_key=KEY,
        namespace="ns",
        taskset_name="job",
    )


def _claim(*, attempt: int, proven: bool, recorded: str | None = None, deleting: bool = False) -> PodClass:
    """How a Pod controlled by ``cu-1`` and claiming replica attempt ``attempt`` is classified, with or
    without its proof."""
    builder = PodBuilder("job-r-0").uid("pod-x").controlled_by("cu-1").taskset("ts-1").attempt(attempt)
    if proven:
        builder = builder.proven("ns", KEY)
    return _classify(builder.deleting(deleting).obj(), recorded)


@pytest.mark.parametrize(
    ("attempt", "recorded", "deleting", "with_proof", "without_proof"),
    [
        pytest.param(1, None, False, PodClass.ADOPTABLE, PodClass.FOREIGN, id="unrecorded, this attempt"),
        pytest.param(2, "pod-old", False, PodClass.NEXT, PodClass.FOREIGN, id="a later attempt's"),
        pytest.param(1, "pod-old", False, PodClass.DUPLICATE, PodClass.FOREIGN, id="a duplicate"),
        pytest.param(1, None, True, PodClass.PREVIOUS, PodClass.FOREIGN, id="unrecorded, going away"),
        pytest.param(0, None, False, PodClass.PREVIOUS, PodClass.PREVIOUS, id="an earlier attempt's: waited"),
    ],
)
def test_a_claim_on_this_or_a_later_attempt_needs_the_proof(
    attempt: int, recorded: str | None, deleting: bool, with_proof: PodClass, without_proof: PodClass
) -> None:
    assert _claim(attempt=attempt, recorded=recorded, deleting=deleting, proven=True) == with_proof
    assert _claim(attempt=attempt, recorded=recorded, deleting=deleting, proven=False) == without_proof


def test_the_recorded_pod_needs_no_proof() -> None:
    """A Pod whose UID the status recorded is the replica's whatever it carries (Pods made before the
    proof existed keep running through an upgrade)."""
    assert _claim(attempt=1, recorded="pod-x", proven=False) == PodClass.CURRENT


def test_a_proof_copied_from_the_previous_attempts_pod_proves_nothing() -> None:
    old = PodBuilder("job-r-0").controlled_by("cu-1").attempt(0).proven("ns", KEY).obj()
    copied = old["metadata"]["annotations"]["octopus.openi.pcl.cn/creation-proof"]
    forged = PodBuilder("job-r-0").uid("pod-x").controlled_by("cu-1").taskset("ts-1").attempt(1).obj()
    forged["metadata"]["annotations"]["octopus.openi.pcl.cn/creation-proof"] = copied
    kind = _classify(forged)
    assert kind == PodClass.FOREIGN
