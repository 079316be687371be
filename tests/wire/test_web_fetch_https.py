"""`web_fetch` over https against a local TLS server with a throwaway CA made in the test:
the page is fetched and converted, a certificate that does not verify is one line naming the
host, and a redirect from https to a private address is refused (docs/tools.md#web-fetch).

The server is on 127.0.0.1, which web_fetch refuses by default: as in the plain-http tests,
`web.allow_networks = ["127.0.0.1/32"]` lets exactly it through. The test CA is trusted only
here, through `SSL_CERT_FILE`, which web_fetch honours as httpx does."""

from __future__ import annotations

import datetime
import ipaddress
import json
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from blitz_kernel.core.web_access import WebAccess
from blitz_kernel.tools.registry import ToolContext, ToolError
from blitz_kernel.tools.web import web_fetch

LOCAL = WebAccess(allow_networks=["127.0.0.1/32"])
ARTICLE = (
    b"<!doctype html><html><head><title>TLS notes</title></head><body><nav>Home</nav><article>"
    b"<h1>Certificates</h1><p>A server proves its name with a certificate its client's CAs signed; "
    b"read the <a href='https://docs.python.org/3/library/ssl.html'>ssl module</a> for the details.</p>"
    b"</article></body></html>"
)


@dataclass
class Authority:
    """A throwaway CA and a way to sign server certificates with it."""

    key: ec.EllipticCurvePrivateKey
    certificate: x509.Certificate

    @classmethod
    def make(cls, name: str = "blitz test CA") -> Authority:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.UTC)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
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
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256())
        )
        return cls(key, certificate)

    def pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    def issue(self, folder: Path, names: list[x509.GeneralName]) -> tuple[Path, Path]:
        """A server certificate for `names`, and its key, as PEM files in `folder`."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        certificate = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "blitz test server")]))
            .issuer_name(self.certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False)
            .sign(self.key, hashes.SHA256())
        )
        folder.mkdir(parents=True, exist_ok=True)
        cert_path, key_path = folder / "server.pem", folder / "server.key"
        cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        return cert_path, key_path


class Handler(BaseHTTPRequestHandler):
    requests: list[str]

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass

    def do_GET(self) -> None:
        self.requests.append(self.path)
        if self.path == "/page":
            self._send(200, ARTICLE, "text/html; charset=utf-8")
        elif self.path == "/to-private":
            self._send(302, b"", "text/plain", Location="https://10.1.2.3/admin")
        elif self.path == "/to-metadata":
            self._send(301, b"", "text/plain", Location="http://169.254.169.254/latest/meta-data/")
        elif self.path == "/to-page":
            self._send(302, b"", "text/plain", Location="/page")
        else:
            self._send(404, b"nope", "text/plain")

    def _send(self, status: int, body: bytes, media: str, **headers: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", media)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


@dataclass
class TlsSite:
    port: int
    requests: list[str]

    @property
    def base(self) -> str:
        return f"https://127.0.0.1:{self.port}"


@pytest.fixture
def authority() -> Authority:
    return Authority.make()


def serve(folder: Path, authority: Authority, names: list[x509.GeneralName]) -> Iterator[TlsSite]:
    cert_path, key_path = authority.issue(folder, names)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_path, key_path)
    requests: list[str] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("TlsHandler", (Handler,), {"requests": requests}))
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield TlsSite(server.server_address[1], requests)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def site(tmp_path: Path, authority: Authority) -> Iterator[TlsSite]:
    """A server whose certificate names 127.0.0.1, signed by the test CA."""
    yield from serve(tmp_path / "site", authority, [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])


@pytest.fixture
def trust_test_ca(tmp_path: Path, authority: Authority, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test CA, trusted through SSL_CERT_FILE for this test only."""
    bundle = tmp_path / "test-ca.pem"
    bundle.write_bytes(authority.pem())
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    return bundle


async def fetch(url: str, access: WebAccess = LOCAL) -> str:
    arguments = web_fetch.parse_arguments(json.dumps({"url": url}))
    return await web_fetch.func(arguments, ToolContext(Path("."), web=access))  # type: ignore[return-value]


async def refused(url: str, access: WebAccess = LOCAL) -> str:
    with pytest.raises(ToolError) as caught:
        await fetch(url, access)
    return str(caught.value)


async def test_a_page_is_fetched_over_https_and_converted(site: TlsSite, trust_test_ca: Path):
    text = await fetch(f"{site.base}/page")
    assert text.startswith(f"{site.base}/page (text/html, HTTP 200)")
    assert "proves its name with a certificate" in text
    assert "[ssl module](https://docs.python.org/3/library/ssl.html)" in text and "<p>" not in text
    followed = await fetch(f"{site.base}/to-page")
    assert followed.startswith(f"{site.base}/page (text/html, HTTP 200, after 1 redirect)")
    assert site.requests == ["/page", "/to-page", "/page"]


async def test_a_certificate_from_a_ca_that_is_not_trusted_is_one_line_naming_the_host(
    site: TlsSite, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    message = await refused(f"{site.base}/page")  # checked against certifi's bundle only
    assert message.startswith("the certificate of 127.0.0.1 does not verify: ")
    assert "unable to get local issuer certificate" in message or "self-signed" in message, message
    assert "\n" not in message and site.requests == []


async def test_a_certificate_for_another_name_does_not_verify(
    tmp_path: Path, authority: Authority, trust_test_ca: Path
):
    for other in serve(tmp_path / "other", authority, [x509.DNSName("other.example")]):
        message = await refused(f"{other.base}/page")
        assert message.startswith("the certificate of 127.0.0.1 does not verify: ")
        assert "mismatch" in message, message
        assert other.requests == []


async def test_a_redirect_from_https_to_a_private_address_is_refused_before_it_is_made(
    site: TlsSite, trust_test_ca: Path
):
    private = await refused(f"{site.base}/to-private")
    assert private.startswith("10.1.2.3 is a private address: web_fetch reaches public addresses only")
    metadata = await refused(f"{site.base}/to-metadata")
    assert metadata.startswith("169.254.169.254 is a link-local address")
    assert site.requests == ["/to-private", "/to-metadata"]


async def test_a_ca_bundle_that_cannot_be_read_is_one_line_naming_it(
    site: TlsSite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    missing = tmp_path / "no-such-bundle.pem"
    monkeypatch.setenv("SSL_CERT_FILE", str(missing))
    message = await refused(f"{site.base}/page")
    assert message.startswith(f"cannot read the CA certificates of SSL_CERT_FILE={missing}: ")
    assert site.requests == []
