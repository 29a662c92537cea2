"""Test factories: accounts, principals and keys made in the app's own event loop, and an
API client that validates every response against the spec."""

from __future__ import annotations

import os
import subprocess
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from starlette.testclient import TestClient

from tests.openapi_check import SpecValidator
from tunnelgw.core import ids
from tunnelgw.models.principal import Kind
from tunnelgw.services import accounts
from tunnelgw.services.accounts import Credentials
from tunnelgw.storage import db

_UNSET: Any = object()


class ApiClient:
    """Sends API requests with a bearer token and `Service-Version: 2`, and checks every
    response with openapi-core."""

    def __init__(self, http: TestClient, validator: SpecValidator, token: str | None) -> None:
        self.http = http
        self.validator = validator
        self.token = token

    def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = _UNSET,
        content: bytes | str | None = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        token: str | None = _UNSET,
        version: str | None = "2",
    ) -> httpx.Response:
        sent: dict[str, str] = {}
        token = self.token if token is _UNSET else token
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        if version is not None:
            sent["Service-Version"] = version
        sent.update(headers or {})
        kwargs: dict[str, Any] = {"params": params, "headers": sent}
        if json is not _UNSET:
            kwargs["json"] = json
        if content is not None:
            kwargs["content"] = content
        response = self.http.request(method, path, **kwargs)
        self.validator.check(response)
        return response

    def get(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("GET", path, **kw)

    def post(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("POST", path, **kw)

    def patch(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("PATCH", path, **kw)

    def put(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("PUT", path, **kw)

    def delete(self, path: str, **kw: Any) -> httpx.Response:
        return self.request("DELETE", path, **kw)


@dataclass
class Session:
    """A client acting as one principal, with the credentials behind it."""

    client: ApiClient
    creds: Credentials

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


class Factory:
    def __init__(self, http: TestClient, validator: SpecValidator) -> None:
        self.http = http
        self.validator = validator

    def _run(self, fn: Any, *args: Any) -> Any:
        portal = self.http.portal
        assert portal is not None
        return portal.call(fn, *args)

    def client(self, token: str | None) -> ApiClient:
        return ApiClient(self.http, self.validator, token)

    def account(self) -> Session:
        """A fresh account; the client is its admin user's."""

        async def make() -> Credentials:
            async with db.write() as session:
                return await accounts.create_account_with_admin(session, "test")

        creds = self._run(make)
        return Session(self.client(creds.token), creds)

    def principal(self, account_id: str, kind: Kind = "user", *, admin: bool = False) -> Session:
        """Another principal of `account_id`, with a key of its own."""

        async def make() -> Credentials:
            async with db.write() as session:
                principal = await accounts.create_principal(
                    session, account_id, kind, name=kind, is_admin=admin
                )
                key, token = await accounts.issue_key(session, principal)
                return Credentials(account_id, principal.id, key.id, token)

        creds = self._run(make)
        return Session(self.client(creds.token), creds)

    def row(self, model: Any, account_id: str, **fields: Any) -> Any:
        """Insert a `model` row of `account_id` (fresh id unless `id` is given); the row.

        For what the API cannot create: referenced resources and read-only resources.
        """
        fields.setdefault("id", ids.new_id(model.PREFIX))
        row = model.new(account_id=account_id, **fields)

        async def insert() -> None:
            async with db.write() as session:
                session.add(row)

        self._run(insert)
        return row

    def query(self, fn: Any) -> Any:
        """Run `await fn(session)` in a read session on the app's database."""

        async def run() -> Any:
            async with db.read() as session:
                return await fn(session)

        return self._run(run)


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """Assert an error response's status and code; return its body."""
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["error_code"] == code, body
    assert body["status_code"] == status
    assert body["details"]["operation_id"] == response.headers["operation-id"]
    return body


# X.509 certificates and SSH keys for the CA tests, made with `cryptography` and `ssh-keygen`
# (independent of the code under test), and `ssh-keygen -L` to read issued certificates.

KEY_USAGE_FLAGS = (
    "digital_signature",
    "content_commitment",
    "key_encipherment",
    "data_encipherment",
    "key_agreement",
    "key_cert_sign",
    "crl_sign",
    "encipher_only",
    "decipher_only",
)


def x509_certificate(
    *,
    ca: bool | None = True,
    common_names: tuple[str, ...] = ("Test CA",),
    key_usages: tuple[str, ...] | None = ("key_cert_sign", "crl_sign"),
    extended_key_usages: tuple[x509.ObjectIdentifier, ...] = (),
    not_before: datetime = datetime(2026, 1, 1, tzinfo=UTC),
    not_after: datetime = datetime(2036, 1, 1, tzinfo=UTC),
) -> str:
    """A self-signed certificate as PEM. `ca=None` leaves out basic constraints and
    `key_usages=None` the key usage extension."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn) for cn in common_names])
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
    )
    if ca is not None:
        builder = builder.add_extension(x509.BasicConstraints(ca=ca, path_length=None), True)
    if key_usages is not None:
        flags = {flag: flag in key_usages for flag in KEY_USAGE_FLAGS}
        builder = builder.add_extension(x509.KeyUsage(**flags), critical=True)
    if extended_key_usages:
        builder = builder.add_extension(x509.ExtendedKeyUsage(extended_key_usages), False)
    cert = builder.sign(key, hashes.SHA256())
    return cert.public_bytes(serialization.Encoding.PEM).decode("ascii")


@dataclass
class TlsUpload:
    """A TLS certificate chain (leaf first) and the leaf's key, as PEM, with the objects."""

    chain_pem: str
    key_pem: str
    leaf: x509.Certificate
    key: Any


def tls_upload(
    *,
    key_type: str = "ecdsa",
    subject: tuple[tuple[x509.ObjectIdentifier, str], ...] = (
        (NameOID.COMMON_NAME, "app.example.com"),
    ),
    dns_names: tuple[str, ...] = ("app.example.com",),
    ips: tuple[str, ...] = (),
    intermediates: int = 1,
    not_before: datetime = datetime(2026, 1, 1, tzinfo=UTC),
    not_after: datetime = datetime(2036, 1, 1, tzinfo=UTC),
    serial: int | None = None,
) -> TlsUpload:
    """A leaf certificate of a new `key_type` key (`ecdsa` P-256, `rsa` 2048, `ed25519`)
    signed by a chain of `intermediates` CAs under a root (the root is not included), with
    serverAuth and digital_signature; made with `cryptography` alone."""
    import ipaddress

    from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

    def new_key() -> Any:
        if key_type == "rsa":
            return rsa.generate_private_key(public_exponent=65537, key_size=2048)
        if key_type == "ed25519":
            return ed25519.Ed25519PrivateKey.generate()
        return ec.generate_private_key(ec.SECP256R1())

    def sign(builder: Any, issuer_key: Any) -> x509.Certificate:
        algorithm = None if isinstance(issuer_key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
        return builder.sign(issuer_key, algorithm)

    issuer_key = ec.generate_private_key(ec.SECP256R1())
    issuer = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Test Root CA")])
    chain: list[x509.Certificate] = []
    for depth in range(intermediates):
        ca_key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"Test Intermediate {depth}")])
        ca = sign(
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(issuer)
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(not_before)
            .not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True),
            issuer_key,
        )
        chain.insert(0, ca)
        issuer, issuer_key = name, ca_key
    key = new_key()
    flags = {flag: flag == "digital_signature" for flag in KEY_USAGE_FLAGS}
    names: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips]
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(oid, value) for oid, value in subject]))
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(serial or x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.KeyUsage(**flags), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.ExtendedKeyUsageOID.SERVER_AUTH]), False)
    )
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), False)
    leaf = sign(builder, issuer_key)
    chain.insert(0, leaf)
    chain_pem = "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in chain)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    return TlsUpload(chain_pem, key_pem, leaf, key)


def ssh_keygen(directory: Path, key_type: str, bits: int | None = None) -> str:
    """A new key pair made by `ssh-keygen` in `directory`; its public key line."""
    path = directory / f"id_{key_type}_{uuid.uuid4().hex[:8]}"
    size = ["-b", str(bits)] if bits else []
    subprocess.run(
        ["ssh-keygen", "-q", "-t", key_type, *size, "-N", "", "-C", "test@host", "-f", str(path)],
        check=True,
        capture_output=True,
    )
    return path.with_suffix(".pub").read_text().strip()


def ssh_fingerprint(public_key_line: str, directory: Path) -> str:
    """`SHA256:...` of a public key, as `ssh-keygen -l` prints it."""
    path = directory / f"{uuid.uuid4().hex[:8]}.pub"
    path.write_text(public_key_line + "\n")
    out = subprocess.run(
        ["ssh-keygen", "-l", "-f", str(path)], check=True, capture_output=True, text=True
    ).stdout
    return out.split()[1]


_LISTS = ("Principals", "Critical Options", "Extensions")


def ssh_certificate_listing(certificate: str, directory: Path) -> dict[str, Any]:
    """`ssh-keygen -L` of a certificate line (times in UTC), as a dict: one string per
    field, a list per section (`Principals`, `Critical Options`, `Extensions`)."""
    path = directory / f"{uuid.uuid4().hex[:8]}-cert.pub"
    path.write_text(certificate + "\n")
    out = subprocess.run(
        ["ssh-keygen", "-L", "-f", str(path)],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "TZ": "UTC"},
    ).stdout
    info: dict[str, Any] = {}
    section = ""
    for line in out.splitlines()[1:]:
        if line.startswith(" " * 16):
            info[section].append(line.strip())
            continue
        key, _, value = line.strip().partition(":")
        if key in _LISTS:
            section, info[key] = key, []
        else:
            info[key] = value.strip()
    return info


def database_dump(settings: Any) -> bytes:
    """Everything the test database holds, as an attacker with a copy of it would see it:
    the SQLite file and its WAL, or `pg_dump` of the PostgreSQL database (the binaries of
    tests/pgcluster.py)."""
    url = settings.resolved_database_url()
    if url.startswith("sqlite"):
        database = settings.data_dir / "tunnelgw.db"
        return b"".join(
            path.read_bytes()
            for path in (database, database.with_name("tunnelgw.db-wal"))
            if path.exists()
        )
    from tests import pgcluster

    pg_dump = pgcluster.find_binaries().bin_dir / "pg_dump"
    conninfo = url.replace("postgresql+psycopg://", "postgresql://")
    return subprocess.run(
        [str(pg_dump), "--no-owner", conninfo], check=True, capture_output=True, timeout=120
    ).stdout


def in_dump(secret: bytes, dump: bytes) -> bool:
    """Whether `secret` appears in a database dump as itself, in hex (PostgreSQL's bytea
    text) or in base64 (PEM)."""
    import base64

    return any(form in dump for form in (secret, secret.hex().encode(), base64.b64encode(secret)))
