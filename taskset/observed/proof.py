"""The creation proof: what lets the controller tell a Pod it created from one planted under its name.

A Pod that the status has not recorded (its create's status write was lost, W-1) is adopted as a replica
only if it carries this proof. Every field a Pod writer controls can be copied from
what the controller writes, except a keyed digest: the proof is an HMAC-SHA256, under a key only the
controller reads (a Secret in its own namespace, ``taskset.daemon.proof_key``), of what the Pod is for:
its namespace and name, the ControlUnit that controls it (one per TaskSet attempt) and its replica
attempt. Integrations' objects carry one too (their kind and name, their controlling owner), so that a
planted object claiming the TaskSet as its owner is not taken for the wanted one. A Pod writer who can
read every other Pod still cannot make the proof for a replica attempt the controller has not created a
Pod for yet; a proof copied from another Pod names another Pod, attempt or ControlUnit, so it proves
nothing here.

Why a key and not a record in the status: a write-ahead record would cost a status write (and a pass)
before every wave of creates, and the status is readable by every TaskSet reader, so it cannot hold a
secret; why not compare the Pod's containers with what the attempt builds: admission (ServiceAccount
volumes, LimitRanges, webhooks) changes a created Pod, so equality would fail the honest Pod and a loose
comparison would pass a forged one. Pure: the key comes in with the decision's settings.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from typing import Final

# Length of a proof: SHA-256 in hex. Anything else in the annotation is not a proof.
PROOF_LENGTH: Final = 64
# A key made for this process, for a controller not given the cluster's (unit tests, a library user).
PROCESS_PROOF_KEY: Final = secrets.token_bytes(32)


@dataclass(frozen=True)
class ProofSubject:
    """What an object is for: the fields its proof binds together. A Pod's ``name`` is its own, its
    controller the attempt's ControlUnit, its ``attempt`` the replica attempt; an integration's object
    is named ``<kind key>/<name>`` (``owned_subject``), under the TaskSet or the ControlUnit."""

    namespace: str
    name: str
    controller_uid: str
    attempt: int


def owned_subject(namespace: str, kind_key: str, name: str, controller_uid: str) -> ProofSubject:
    """The subject of an integration's object: one per kind, name and controlling owner."""
    return ProofSubject(namespace, f"{kind_key}/{name}", controller_uid, 0)


def creation_proof(key: bytes, subject: ProofSubject) -> str:
    """The proof the controller writes on the object it creates for ``subject``."""
    # A JSON array: unambiguous whatever the fields hold, so no two subjects sign the same bytes.
    fields = [subject.namespace, subject.name, subject.controller_uid, subject.attempt]
    return hmac.new(key, json.dumps(fields).encode(), hashlib.sha256).hexdigest()


def proves(proof: str, key: bytes, subject: ProofSubject) -> bool:
    """Whether ``proof`` is the one the controller writes for ``subject`` (compared in constant time)."""
    return len(proof) == PROOF_LENGTH and hmac.compare_digest(proof, creation_proof(key, subject))
