"""Requests over https: the certificates a user's settings name are trusted, a hashed folder of them
is read only as a connection needs it, and a server no certificate vouches for is one line."""

from __future__ import annotations

import datetime
import ipaddress
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from piton.core import tls
from piton.testing.script import reply
from tests.fakes.fake_api import FakeAnthropicAPI
from tests.helpers import piton


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _authority(folder: Path, common: str) -> tuple[Path, ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common))
        .issuer_name(_name(common))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
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
        .sign(key, hashes.SHA256())
    )
    path = folder / f"{common}.pem"
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path, key, cert


def _server_settings(
    folder: Path, key: ec.EllipticCurvePrivateKey, issuer: x509.Certificate
) -> ssl.SSLContext:
    """A certificate for 127.0.0.1 that `issuer` signed, as the fake API's server settings."""
    own = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("fake api"))
        .issuer_name(issuer.subject)
        .public_key(own.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .sign(key, hashes.SHA256())
    )
    chain, secret = folder / "server.pem", folder / "server.key"
    chain.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    secret.write_bytes(
        own.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    settings = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    settings.load_cert_chain(chain, secret)
    return settings


@pytest.fixture
def authority(tmp_path: Path) -> tuple[Path, ec.EllipticCurvePrivateKey, x509.Certificate]:
    return _authority(tmp_path, "piton test authority")


@pytest.fixture
def https_api(
    tmp_path: Path,
    authority: tuple[Path, ec.EllipticCurvePrivateKey, x509.Certificate],
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[FakeAnthropicAPI]:
    _, key, cert = authority
    with FakeAnthropicAPI(tls=_server_settings(tmp_path, key, cert)) as fake:
        assert fake.base_url.startswith("https://")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        monkeypatch.delenv("SSL_CERT_DIR", raising=False)
        yield fake


def _hashed_folder(tmp_path: Path, certificate: Path) -> Path:
    """A folder holding `certificate` under its subject hash, as `c_rehash` lays out /etc/ssl/certs."""
    openssl = shutil.which("openssl")
    assert openssl, "these tests need the openssl command (.ci/run installs it)"
    digest = subprocess.run(
        [openssl, "x509", "-hash", "-noout", "-in", str(certificate)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    folder = tmp_path / "certs"
    folder.mkdir()
    shutil.copy(certificate, folder / f"{digest}.0")
    return folder


def test_the_certificate_file_the_user_names_is_trusted(
    https_api: FakeAnthropicAPI,
    authority: tuple[Path, ec.EllipticCurvePrivateKey, x509.Certificate],
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    https_api.add(reply("over https"))
    monkeypatch.setenv("SSL_CERT_FILE", str(authority[0]))
    done = piton(project, "-p", "hello")
    assert (done.returncode, done.stdout.strip()) == (0, "over https"), done.stderr
    assert len(https_api.requests) == 1


def test_a_hashed_folder_is_trusted_and_read_only_when_a_connection_needs_it(
    https_api: FakeAnthropicAPI,
    authority: tuple[Path, ec.EllipticCurvePrivateKey, x509.Certificate],
    project: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SSL_CERT_DIR", str(_hashed_folder(tmp_path, authority[0])))
    settings = tls.load()
    assert settings.cert_store_stats()["x509_ca"] == 0  # nothing read before a connection
    assert (settings.verify_mode, settings.check_hostname) == (ssl.CERT_REQUIRED, True)

    https_api.add(reply("from the folder"))
    done = piton(project, "-p", "hello")
    assert (done.returncode, done.stdout.strip()) == (0, "from the folder"), done.stderr


def test_a_server_no_trusted_certificate_vouches_for_is_one_line_and_no_request(
    https_api: FakeAnthropicAPI, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stranger, _, _ = _authority(tmp_path, "someone else")
    monkeypatch.setenv("SSL_CERT_DIR", str(_hashed_folder(tmp_path, stranger)))
    done = piton(project, "-p", "hello")
    assert done.returncode != 0
    said = done.stderr.strip().splitlines()
    assert len(said) == 1 and "certificate" in said[0].lower(), done.stderr  # no retry lines either
    assert "SSL_CERT_FILE or SSL_CERT_DIR" in said[0], said[0]
    assert https_api.requests == []


def test_plain_http_trusts_no_certificate_and_https_settings_are_made_once() -> None:
    plain = tls.for_url("http://127.0.0.1:8080")
    assert plain.cert_store_stats()["x509_ca"] == 0
    assert (plain.verify_mode, plain.check_hostname) == (ssl.CERT_REQUIRED, True)  # fails closed
    assert tls.for_url("https://gateway.example") is tls.trusted() is tls.for_url("HTTPS://example.com")


def test_a_certificate_file_that_cannot_be_read_is_one_line_and_no_request(
    https_api: FakeAnthropicAPI, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "nowhere.pem"))
    done = piton(project, "-p", "hello")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"piton: cannot read the certificates to trust for https (SSL_CERT_FILE={tmp_path / 'nowhere.pem'}): "
        "No such file or directory"
    ]
    assert https_api.requests == []
