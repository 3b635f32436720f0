"""CoreDNS beside the embedded control plane: the cluster DNS a real cluster runs, so tests
can resolve a replica's name the way a Pod would.

It is an add-on, not part of every ``Cluster``: built by ``make binaries`` with the control plane
(``devcluster.build.COREDNS``), started only by the tests that ask for it, on a free loopback port,
its ``kubernetes`` plugin reading the embedded API server through the admin kubeconfig. Answers are
given with TTL 0, so a name that moves to a new Pod is seen at once. ``resolve`` is a minimal DNS
client (A records over UDP), enough for the tests and the demo without another dependency.
"""

from __future__ import annotations

import random
import socket
import struct
import time
from pathlib import Path

from devcluster import build
from devcluster.cluster import Cluster, ClusterError, _Process
from devcluster.ports import free_port

CLUSTER_DOMAIN = "cluster.local"
START_TIMEOUT = 60.0  # seconds until it answers for the API server's own Service
_TYPE_A = 1
_CLASS_IN = 1


def corefile(port: int, kubeconfig: Path) -> str:
    return (
        f".:{port} {{\n"
        "    bind 127.0.0.1\n"
        "    errors\n"
        f"    kubernetes {CLUSTER_DOMAIN} {{\n"
        f"        kubeconfig {kubeconfig}\n"
        "        ttl 0\n"
        "    }\n"
        "}\n"
    )


class CoreDNS:
    """One CoreDNS process serving ``cluster``'s names on 127.0.0.1:``port``."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.port = 0
        self._process: _Process | None = None

    def start(self) -> CoreDNS:
        binary = build.build(build.COREDNS) / "coredns"
        self.port = free_port()
        config = self.cluster.directory / "Corefile"
        config.write_text(corefile(self.port, self.cluster.kubeconfig))
        log = self.cluster.directory / "logs" / "coredns.log"
        self._process = _Process("coredns", [str(binary), "-conf", str(config)], log)
        self._process.start()
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if not self._process.running():
                raise ClusterError(f"coredns exited:\n{self._process.tail()}")
            if self.resolve(f"kubernetes.default.svc.{CLUSTER_DOMAIN}"):
                return self
            time.sleep(0.5)
        self.stop()
        raise ClusterError(f"coredns did not answer within {START_TIMEOUT:.0f}s")

    def stop(self) -> None:
        if self._process is not None:
            self._process.stop()

    def resolve(self, name: str, timeout: float = 1.0) -> list[str]:
        """The A records CoreDNS gives for ``name`` now ([] for none, or no answer in time)."""
        return resolve(name, self.port, timeout)


def query(name: str, ident: int) -> bytes:
    """A DNS query for the A records of ``name``, recursion not asked for."""
    header = struct.pack(">HHHHHH", ident, 0, 1, 0, 0, 0)
    labels = b"".join(bytes([len(part)]) + part.encode() for part in name.rstrip(".").split("."))
    return header + labels + b"\0" + struct.pack(">HH", _TYPE_A, _CLASS_IN)


def _skip_name(message: bytes, offset: int) -> int:
    while True:
        length = message[offset]
        if length & 0xC0 == 0xC0:  # a compression pointer ends the name
            return offset + 2
        if length == 0:
            return offset + 1
        offset += 1 + length


def answers(message: bytes, ident: int) -> list[str]:
    """The addresses of the A records in a DNS response to query ``ident``."""
    got, _, questions, count = struct.unpack(">HHHH", message[:8])
    if got != ident:
        return []
    offset = 12
    for _ in range(questions):
        offset = _skip_name(message, offset) + 4
    found = []
    for _ in range(count):
        offset = _skip_name(message, offset)
        kind, _, _, length = struct.unpack(">HHIH", message[offset : offset + 10])
        offset += 10
        if kind == _TYPE_A and length == 4:
            found.append(socket.inet_ntoa(message[offset : offset + 4]))
        offset += length
    return sorted(found)


def resolve(name: str, port: int, timeout: float = 1.0) -> list[str]:
    ident = random.randrange(1 << 16)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(timeout)
        sock.sendto(query(name, ident), ("127.0.0.1", port))
        try:
            message, _ = sock.recvfrom(4096)
        except TimeoutError:
            return []
    return answers(message, ident)
