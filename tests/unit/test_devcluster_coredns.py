"""The tests' DNS client (``devcluster.coredns``): the query it sends and the answers it reads, against
a response as CoreDNS encodes it (the answer's name compressed to a pointer at the question)."""

from __future__ import annotations

import socket
import struct
from pathlib import Path

import pytest

from devcluster.build import ADDONS, COMPONENTS, COREDNS
from devcluster.coredns import answers, corefile, query

pytestmark = pytest.mark.unit


def response(ident: int, name: str, addresses: list[str]) -> bytes:
    asked = query(name, ident)[12:]
    header = struct.pack(">HHHHHH", ident, 0x8400, 1, len(addresses), 0, 0)
    records = b"".join(
        struct.pack(">HHHIH", 0xC00C, 1, 1, 0, 4) + socket.inet_aton(address) for address in addresses
    )
    return header + asked + records


def test_a_query_asks_for_the_a_records_of_the_name() -> None:
    assert query("a.b", 7) == bytes.fromhex("000700000001000000000000") + b"\x01a\x01b\x00\x00\x01\x00\x01"


@pytest.mark.parametrize(
    ("ident", "addresses", "expected"),
    [
        pytest.param(7, ["10.0.0.9"], ["10.0.0.9"], id="one replica"),
        pytest.param(7, ["10.0.0.9", "10.0.0.2"], ["10.0.0.2", "10.0.0.9"], id="two, sorted"),
        pytest.param(7, [], [], id="no such name"),
        pytest.param(8, ["10.0.0.9"], [], id="an answer to another query"),
    ],
)
def test_the_answers_are_the_a_records(ident: int, addresses: list[str], expected: list[str]) -> None:
    assert answers(response(ident, "tf-ps-0.tf.ml.svc.cluster.local", addresses), 7) == expected


def test_coredns_is_built_with_the_control_plane_but_started_only_on_demand() -> None:
    assert COREDNS in ADDONS and COREDNS not in COMPONENTS
    config = corefile(5353, Path("/k/admin.kubeconfig"))
    assert ".:5353 {" in config and "bind 127.0.0.1" in config and "kubeconfig /k/admin.kubeconfig" in config
