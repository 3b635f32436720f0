"""The key of the Pods' creation proofs (``taskset.observed.proof``), kept in a Secret.

Every replica of the controller, and every restart, must prove and check with the same key: a Pod
created by one leader is adopted by the next after a lost status write (W-1). The key therefore lives
in the cluster, in a Secret beside the leader-election Lease in the controller's own namespace, which
tenants cannot read (``manifests/base/leader-election-rbac.yaml`` grants the controller only this Secret). The
first controller to start creates it with a random key; a racing replica's create loses and reads the
winner's. Anyone who can read the Secret can forge a proof: guard it like the controller's token.
"""

from __future__ import annotations

import base64
import binascii
import secrets
from typing import Any, Final

from taskset.runtime.kube import KubeClient, KubeError, core_path

KEY_FIELD: Final = "key"
KEY_BYTES: Final = 32
_RESOURCE: Final = "secrets"


class ProofKeyError(Exception):
    """The key's Secret exists but holds no usable key, or it cannot be read or created."""


def load_proof_key(client: KubeClient, namespace: str, name: str) -> bytes:
    """The proof key from Secret ``namespace/name``, creating the Secret with a new random key if it
    does not exist yet."""
    path = core_path(namespace, _RESOURCE, name)
    try:
        for _ in range(2):  # get, or create; a lost create race means the Secret is there to get
            secret = client.get(path, resource=_RESOURCE)
            if secret is not None:
                return key_of(secret, f"{namespace}/{name}")
            try:
                created = client.create(core_path(namespace, _RESOURCE), new_secret(name), resource=_RESOURCE)
            except KubeError as err:
                if not err.already_exists:
                    raise
                continue
            return key_of(created, f"{namespace}/{name}")
    except KubeError as err:
        raise ProofKeyError(f"Secret {namespace}/{name}: {err}") from err
    raise ProofKeyError(f"Secret {namespace}/{name}: created by someone else, then gone")


def new_secret(name: str) -> dict[str, Any]:
    """A Secret holding a fresh random key."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "taskset-controller"}},
        "type": "Opaque",
        "data": {KEY_FIELD: base64.b64encode(secrets.token_bytes(KEY_BYTES)).decode()},
    }


def key_of(secret: dict[str, Any], where: str) -> bytes:
    """The key in a Secret's ``data.key``: at least ``KEY_BYTES`` bytes, or a ``ProofKeyError`` that says
    what is wrong (a key made short by hand would make proofs guessable)."""
    data = secret.get("data")
    encoded = data.get(KEY_FIELD) if isinstance(data, dict) else None
    if not isinstance(encoded, str):
        raise ProofKeyError(f"Secret {where}: data.{KEY_FIELD} is missing")
    try:
        key = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError) as err:
        raise ProofKeyError(f"Secret {where}: data.{KEY_FIELD} is not base64") from err
    if len(key) < KEY_BYTES:
        raise ProofKeyError(
            f"Secret {where}: data.{KEY_FIELD} holds {len(key)} bytes, at least {KEY_BYTES} needed"
        )
    return key
