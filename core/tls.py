"""The TLS settings of Piton's HTTP clients, made once per process.

Reading the machine's whole certificate bundle costs about 35 ms of CPU, a tenth of a `-p` run, and
an HTTP client given no settings reads it again each time one is made: for every session, subagent,
web fetch and MCP server. Piton makes the settings once, the first time an `https` address is used,
and a plain `http` address (a local gateway, a proxy on this machine) never needs them. Where the
system keeps its certificates in a hashed folder (`c_rehash`, as Debian and Ubuntu do), OpenSSL is
pointed at that folder and reads the one certificate a connection needs, when it needs it.
"""

from __future__ import annotations

import os
import re
import ssl
import sys
import threading

_lock = threading.Lock()
_trusted: list[ssl.SSLContext] = []  # filled once, on first use
_HASHED = re.compile(r"[0-9a-f]{8}\.\d+")


def trusted() -> ssl.SSLContext:
    """The settings for `https`, shared by every client of the process."""
    with _lock:
        if not _trusted:
            _trusted.append(load())
        return _trusted[0]


def for_url(url: str) -> ssl.SSLContext:
    """The settings for a client that talks to `url` alone. For `http` they trust no certificate,
    so a redirect to `https` fails its check rather than going on unverified."""
    if url.lower().startswith("http://"):
        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return trusted()


class CertificatesError(Exception):
    """The certificates to trust cannot be read; the message is one line for people."""


def load() -> ssl.SSLContext:
    """The certificates httpx2 trusts by default (`SSL_CERT_FILE`, `SSL_CERT_DIR`, else the
    system's), read from a hashed folder when there is one."""
    folder = os.environ.get("SSL_CERT_DIR") or ssl.get_default_verify_paths().openssl_capath
    try:
        if os.environ.get("SSL_CERT_FILE") or sys.platform in ("darwin", "win32") or not _hashed(folder):
            import httpcore2

            return httpcore2.default_ssl_context()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies names and chains by default
        context.load_verify_locations(capath=folder)
        return context
    except (OSError, ssl.SSLError) as e:
        named = f"SSL_CERT_FILE={os.environ['SSL_CERT_FILE']}" if os.environ.get("SSL_CERT_FILE") else folder
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise CertificatesError(f"cannot read the certificates to trust for https ({named}): {reason}") from e


def _hashed(folder: str) -> bool:
    """Whether `folder` holds certificates under their subject hashes, as OpenSSL looks them up."""
    try:
        with os.scandir(folder) as entries:
            return any(_HASHED.fullmatch(entry.name) for entry in entries)
    except OSError:
        return False
