"""The TLS context of /metrics: the self-signed certificate made at start, and a
mounted one. A handshake over a socket pair proves the context serves what it was given. The certificate
is made by a child process, so the daemon never loads ``cryptography`` (its memory at rest)."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import ssl
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

from taskset.daemon.tls import CERT_FILE, KEY_FILE, server_context
from taskset.daemon.tls_mint import VALIDITY, SelfSigned, self_signed

pytestmark = pytest.mark.unit

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)


def test_the_self_signed_certificate_names_the_local_host_and_lasts_a_year() -> None:
    cert = self_signed(NOW, hostname="taskset-controller-7d9f").certificate
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost", "taskset-controller-7d9f"]
    assert names.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("::1"),
    ]
    assert cert.issuer == cert.subject
    assert cert.not_valid_before_utc < NOW < cert.not_valid_after_utc == NOW + VALIDITY
    assert cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False


def test_every_start_makes_a_new_key() -> None:
    assert self_signed(NOW).key_pem != self_signed(NOW).key_pem


def _served_certificate(context: ssl.SSLContext, trusted: bytes | None) -> bytes:
    """Handshake over a socket pair with a client that trusts only ``trusted`` (None: anything); the
    server's certificate (DER)."""
    server_side, client_side = socket.socketpair()

    def serve() -> None:
        try:
            with context.wrap_socket(server_side, server_side=True) as tls:
                tls.recv(1)
        except ssl.SSLError:  # the client refused the certificate: its side of the test raises
            server_side.close()

    thread = threading.Thread(target=serve)
    thread.start()
    client = ssl.create_default_context(cadata=trusted.decode() if trusted else None)
    if trusted is None:
        client.check_hostname, client.verify_mode = False, ssl.CERT_NONE
    try:
        with client.wrap_socket(client_side, server_hostname="localhost") as tls:
            der = tls.getpeercert(binary_form=True)
            tls.sendall(b"x")
    finally:
        client_side.close()
        thread.join(10)
    assert der is not None
    return der


def test_a_mounted_certificate_is_served(tmp_path: Path) -> None:
    pair = self_signed(NOW)
    (tmp_path / CERT_FILE).write_bytes(pair.cert_pem)
    (tmp_path / KEY_FILE).write_bytes(pair.key_pem)
    der = _served_certificate(server_context(str(tmp_path)), trusted=pair.cert_pem)
    assert der == pair.certificate.public_bytes(Encoding.DER)


def test_without_a_mounted_certificate_a_self_signed_one_is_served_and_left_nowhere(tmp_path: Path) -> None:
    import tempfile  # noqa: PLC0415

    before = set(Path(tempfile.gettempdir()).glob("taskset-metrics-tls-*"))
    context = server_context()
    assert set(Path(tempfile.gettempdir()).glob("taskset-metrics-tls-*")) == before  # the key is not on disk
    der = _served_certificate(context, trusted=None)
    pinned = ssl.DER_cert_to_PEM_cert(der).encode()
    assert _served_certificate(context, trusted=pinned) == der  # valid for localhost once trusted
    with pytest.raises(ssl.SSLCertVerificationError):  # and not trusted otherwise
        _served_certificate(context, trusted=self_signed(NOW).cert_pem)


@pytest.mark.parametrize(
    ("files", "error"),
    [
        pytest.param({}, FileNotFoundError, id="an empty directory"),
        pytest.param({CERT_FILE: b"not a certificate", KEY_FILE: b"not a key"}, ssl.SSLError, id="garbage"),
    ],
)
def test_an_unusable_certificate_directory_is_an_error(
    tmp_path: Path, files: dict[str, bytes], error: type[Exception]
) -> None:
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    with pytest.raises(error):
        server_context(str(tmp_path))


def test_a_pair_holds_pem() -> None:
    pair = self_signed(NOW)
    assert isinstance(pair, SelfSigned)
    assert pair.cert_pem.startswith(b"-----BEGIN CERTIFICATE-----")
    assert pair.key_pem.startswith(b"-----BEGIN PRIVATE KEY-----")


def test_the_daemon_serves_a_self_signed_certificate_without_loading_the_certificate_library() -> None:
    """In a fresh interpreter: the daemon's modules and a self-signed context leave ``cryptography``
    unimported (its bindings are 8 MiB of RSS for the daemon's whole life)."""
    probe = (
        "import sys, taskset.daemon.main\n"
        "from taskset.daemon.tls import server_context\n"
        "server_context()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('cryptography', '_cffi_backend')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]"


def test_a_failing_certificate_maker_is_an_os_error_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "executable", "/bin/false")  # the child the context runs
    with pytest.raises(OSError, match="making the self-signed /metrics certificate failed"):
        server_context()
