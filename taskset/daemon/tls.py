"""The TLS context of ``/metrics``: a mounted certificate, or a self-signed one made at start.

A mounted one (``--metrics-cert-dir``) is ``tls.crt`` and ``tls.key`` in that directory, the names of a
``kubernetes.io/tls`` Secret and cert-manager's Certificates, as in controller-runtime. It is read once at
start: a renewed certificate takes effect when the Pod restarts.

Without one, a key and a certificate for the local names are made at start (``taskset.daemon.tls_mint``).
Scrapers then skip verification (``insecureSkipVerify`` in the ServiceMonitor): the channel is encrypted
and the scraper's token does not travel in clear text, but the scraper does not know whom it talks to.
Mount a certificate from a CA the scraper trusts to close that.

``ssl`` loads certificates only from files, so the pair is made in a child process into a private
temporary directory (0700, under ``$TMPDIR``, ``/tmp`` in the Deployment, an ``emptyDir``), loaded, and
deleted at once. A child, not an import: the certificate library would otherwise stay resident in the
daemon for good (see ``tls_mint``).
"""

from __future__ import annotations

import ssl
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Final

__all__ = ["CERT_FILE", "KEY_FILE", "MINT_TIMEOUT", "server_context"]

CERT_FILE: Final = "tls.crt"
KEY_FILE: Final = "tls.key"
MINT_TIMEOUT: Final = 60.0  # seconds; the child takes about 0.2 s


def server_context(cert_dir: str = "") -> ssl.SSLContext:
    """A TLS 1.2+ server context with the certificate of ``cert_dir``, or a new self-signed one.

    Raises ``OSError`` when the directory's files are missing or unreadable, ``ssl.SSLError`` when they
    do not hold a certificate and its key, ``OSError`` too when the self-signed one cannot be made.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if cert_dir:
        directory = Path(cert_dir)
        context.load_cert_chain(directory / CERT_FILE, directory / KEY_FILE)
        return context
    with tempfile.TemporaryDirectory(prefix="taskset-metrics-tls-") as private:  # created 0700
        _mint_into(private)
        context.load_cert_chain(Path(private) / CERT_FILE, Path(private) / KEY_FILE)
    return context


def _mint_into(directory: str) -> None:
    """Run ``taskset.daemon.tls_mint`` with this interpreter to write a new pair into ``directory``."""
    command = [sys.executable, "-m", "taskset.daemon.tls_mint", directory]
    try:
        subprocess.run(command, check=True, capture_output=True, timeout=MINT_TIMEOUT)
    except subprocess.CalledProcessError as error:
        detail = error.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        raise OSError(f"making the self-signed /metrics certificate failed: {detail[0]}") from error
    except subprocess.TimeoutExpired as error:
        raise OSError(f"making the self-signed /metrics certificate took over {MINT_TIMEOUT:g} s") from error
