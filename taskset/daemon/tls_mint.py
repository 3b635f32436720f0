"""The self-signed certificate of ``/metrics``, made by a process of its own.

An ECDSA P-256 key and a certificate for ``localhost``, the host name, 127.0.0.1 and ::1, valid for a
year. ``cryptography`` makes them: Python's ``ssl`` cannot, and the image has no ``openssl`` program.

``python -m taskset.daemon.tls_mint DIR`` writes the pair into ``DIR`` (``tls.crt``, and ``tls.key``
readable by its owner only) and exits. ``taskset.daemon.tls`` runs it so, instead of importing this
module: ``cryptography``'s bindings are 8 MiB of resident memory that the daemon would carry for the
rest of its life to make one certificate at start (the bench measured the daemon's RSS at rest).
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import sys
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from taskset.daemon.tls import CERT_FILE, KEY_FILE

__all__ = ["VALIDITY", "SelfSigned", "self_signed", "write_pair"]

VALIDITY: Final = datetime.timedelta(days=365)
_BACKDATE: Final = datetime.timedelta(minutes=5)  # a scraper whose clock lags a little still accepts it
_COMMON_NAME: Final = "taskset-controller"


class SelfSigned:
    """A PEM certificate and its PEM private key."""

    def __init__(self, cert_pem: bytes, key_pem: bytes) -> None:
        self.cert_pem = cert_pem
        self.key_pem = key_pem

    @property
    def certificate(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert_pem)


def self_signed(now: datetime.datetime | None = None, hostname: str | None = None) -> SelfSigned:
    """A new key and a self-signed server certificate for the local names (see the module's docstring)."""
    now = now or datetime.datetime.now(datetime.UTC)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, _COMMON_NAME)])
    dns_names = dict.fromkeys(["localhost", hostname or socket.gethostname()])
    alt_names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names if n]
    alt_names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ("127.0.0.1", "::1")]
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return SelfSigned(cert.public_bytes(serialization.Encoding.PEM), key_pem)


def write_pair(directory: Path, pair: SelfSigned) -> None:
    """``tls.crt`` and ``tls.key`` in ``directory``, the key created readable by its owner only."""
    (directory / CERT_FILE).write_bytes(pair.cert_pem)
    key_path = directory / KEY_FILE
    key_path.touch(mode=0o600)
    key_path.write_bytes(pair.key_pem)


if __name__ == "__main__":
    write_pair(Path(sys.argv[1]), self_signed())
