"""The proof key's Secret: what counts as a usable key, and the Secret made when
there is none. Loading it from the API server is tested with the real daemon
(``tests/integration/test_daemon.py``)."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from taskset.daemon.proof_key import KEY_BYTES, KEY_FIELD, ProofKeyError, key_of, new_secret

pytestmark = pytest.mark.unit


def _encoded(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


@pytest.mark.parametrize(
    ("secret", "error"),
    [
        pytest.param({}, "Secret ns/s: data.key is missing", id="no data"),
        pytest.param(
            {"data": {"other": _encoded(b"k" * 32)}}, "Secret ns/s: data.key is missing", id="no key"
        ),
        pytest.param({"data": {KEY_FIELD: 42}}, "Secret ns/s: data.key is missing", id="not a string"),
        pytest.param(
            {"data": {KEY_FIELD: "not base64!"}}, "Secret ns/s: data.key is not base64", id="garbage"
        ),
        pytest.param(
            {"data": {KEY_FIELD: _encoded(b"k" * 31)}},
            "Secret ns/s: data.key holds 31 bytes, at least 32 needed",
            id="one byte short",
        ),
    ],
)
def test_a_secret_without_a_usable_key_is_an_error_that_says_what_is_wrong(
    secret: dict[str, Any], error: str
) -> None:
    with pytest.raises(ProofKeyError) as raised:
        key_of(secret, "ns/s")
    assert str(raised.value) == error


@pytest.mark.parametrize("length", [KEY_BYTES, 64])
def test_a_key_of_at_least_32_bytes_is_used_as_it_is(length: int) -> None:
    raw = bytes(range(length))
    assert key_of({"data": {KEY_FIELD: _encoded(raw)}}, "ns/s") == raw


def test_a_new_secret_holds_a_fresh_random_key_under_its_name() -> None:
    one, two = new_secret("proof"), new_secret("proof")
    assert (one["kind"], one["metadata"]["name"], one["type"]) == ("Secret", "proof", "Opaque")
    assert len(key_of(one, "one")) == KEY_BYTES
    assert key_of(one, "one") != key_of(two, "two")
