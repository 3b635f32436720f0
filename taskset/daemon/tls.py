"""The TLS context of ``/metrics``: a mounted certificate, or a self-signed one made at start.

A mounted one (``--metrics-cert-dir``) is ``tls.crt`` and ``tls.key`` in that directory, the names of a
``kubernetes.io/tls`` Secret and cert-manager's Certificates, as in controller-runtime. It is read once at
start: a renewed certificate takes effect when the Pod restarts.

Without one, an ECDSA P-256 key and a certificate for ``localhost``, the host name, 127.0.0.1 and ::1,
valid for a year, are made in memory. Scrapers then skip verification (``insecureSkipVerify`` in the
ServiceMonitor): the channel is encrypted and the scraper's token does not travel in clear text, but the
scraper does not know whom it talks to. Mount a certificate from a CA the scraper trusts to close that.

``ssl`` loads certificates only from files, so the generated pair is written to a private temporary
directory (0700, under ``$TMPDIR``, ``/tmp`` in the Deployment, an ``emptyDir``), loaded, and deleted at
once. ``cryptography`` makes them: Python's ``ssl`` cannot, and the image has no ``openssl`` program.
"""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import tempfile
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["CERT_FILE", "KEY_FILE", "VALIDITY", "SelfSigned", "self_signed", "server_context"]

CERT_FILE: Final = "tls.crt"
KEY_FILE: Final = "tls.key"
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


def server_context(cert_dir: str = "") -> ssl.SSLContext:
    """A TLS 1.2+ server context with the certificate of ``cert_dir``, or a new self-signed one.

    Raises ``OSError`` when the directory's files are missing or unreadable, ``ssl.SSLError`` when they
    do not hold a certificate and its key.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_dir:
        directory = Path(cert_dir)
        context.load_cert_chain(directory / CERT_FILE, directory / KEY_FILE)
        return context
    pair = self_signed()
    with tempfile.TemporaryDirectory(prefix="taskset-metrics-tls-") as private:  # created 0700
        cert_path, key_path = Path(private) / CERT_FILE, Path(private) / KEY_FILE
        cert_path.write_bytes(pair.cert_pem)
        key_path.touch(mode=0o600)
        key_path.write_bytes(pair.key_pem)
        context.load_cert_chain(cert_path, key_path)
    return context
