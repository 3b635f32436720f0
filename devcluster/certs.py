"""Certificates and keys for a throwaway loopback control plane.

One CA signs the API server's serving certificate and the admin client certificate (group
``system:masters``); a separate RSA pair signs service-account tokens. Everything is valid for
a week, which outlives any test run or demo.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = dt.timedelta(days=7)
# kube-apiserver's cluster service IP (first address of --service-cluster-ip-range) must be in the SANs
# for in-cluster clients; loopback names cover everything else we run.
SERVING_IPS = ("127.0.0.1", "10.96.0.1")
SERVING_NAMES = ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")


@dataclass(frozen=True)
class PKI:
    """Paths of the PEM files a control plane needs."""

    ca_cert: Path
    ca_key: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    sa_public: Path
    sa_private: Path


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attrs)


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    path.chmod(0o600)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _sign(
    subject: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
    *,
    is_ca: bool = False,
    usages: list[x509.ObjectIdentifier] | None = None,
    sans: list[x509.GeneralName] | None = None,
) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=is_ca, path_length=None), critical=True)
    )
    if is_ca:
        builder = builder.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    if usages:
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def generate(directory: Path) -> PKI:
    """Write a fresh CA, serving and admin certificates and service-account keys into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    pki = PKI(
        ca_cert=directory / "ca.crt",
        ca_key=directory / "ca.key",
        serving_cert=directory / "apiserver.crt",
        serving_key=directory / "apiserver.key",
        admin_cert=directory / "admin.crt",
        admin_key=directory / "admin.key",
        sa_public=directory / "sa.pub",
        sa_private=directory / "sa.key",
    )
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("devcluster-ca")
    ca = _sign(ca_name, ca_key.public_key(), ca_name, ca_key, is_ca=True)
    _write_key(pki.ca_key, ca_key)
    _write_cert(pki.ca_cert, ca)

    serving_key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [x509.IPAddress(ipaddress.ip_address(ip)) for ip in SERVING_IPS]
    sans += [x509.DNSName(name) for name in SERVING_NAMES]
    serving = _sign(
        _name("kube-apiserver"),
        serving_key.public_key(),
        ca_name,
        ca_key,
        usages=[ExtendedKeyUsageOID.SERVER_AUTH],
        sans=sans,
    )
    _write_key(pki.serving_key, serving_key)
    _write_cert(pki.serving_cert, serving)

    admin_key = ec.generate_private_key(ec.SECP256R1())
    admin = _sign(
        _name("devcluster-admin", "system:masters"),
        admin_key.public_key(),
        ca_name,
        ca_key,
        usages=[ExtendedKeyUsageOID.CLIENT_AUTH],
    )
    _write_key(pki.admin_key, admin_key)
    _write_cert(pki.admin_cert, admin)

    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_key(pki.sa_private, sa_key)
    pki.sa_public.write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return pki
