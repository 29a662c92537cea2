"""tunnelgw.crypto.ssh: CA keys, user keys made by `ssh-keygen`, option and validity rules,
and certificates read back by `ssh-keygen -L` (which verifies their signatures)."""

from __future__ import annotations

import base64
import struct
from datetime import UTC, datetime, timedelta

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa, x25519

from tests.factories import ssh_certificate_listing, ssh_fingerprint, ssh_keygen
from tunnelgw.crypto import CryptoError, Rule, ssh

NOW = datetime(2026, 11, 21, 10, 11, 14, tzinfo=UTC)


def _raises(rule: Rule, fn, *args):  # type: ignore[no-untyped-def]
    with pytest.raises(CryptoError) as caught:
        fn(*args)
    assert caught.value.rule is rule, caught.value.msg
    return caught.value


# CA key specs and generation


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((None, None, None), ssh.CaKeySpec("ed25519")),
        (("", "", 0), ssh.CaKeySpec("ed25519")),
        (("ed25519", None, None), ssh.CaKeySpec("ed25519")),
        (("rsa", "", 0), ssh.CaKeySpec("rsa", key_size=4096)),
        (("rsa", None, 2048), ssh.CaKeySpec("rsa", key_size=2048)),
        (("ecdsa", None, None), ssh.CaKeySpec("ecdsa", curve="p256")),
        (("ecdsa", "p521", 0), ssh.CaKeySpec("ecdsa", curve="p521")),
    ],
)
def test_ca_key_spec_defaults(args, expected):
    assert ssh.ca_key_spec(*args) == expected


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (("dsa", None, None), "private_key_type"),
        (("ed25519", None, 2048), "key_size"),
        ((None, None, 4096), "key_size"),
        (("ecdsa", None, 2048), "key_size"),
        (("rsa", None, 1024), "key_size"),
        (("rsa", "p256", None), "elliptic_curve"),
        ((None, "p256", None), "elliptic_curve"),
        (("ecdsa", "p192", None), "elliptic_curve"),
    ],
)
def test_ca_key_spec_rejects(args, field):
    assert _raises(Rule.INVALID_FIELD, ssh.ca_key_spec, *args).field == field


@pytest.mark.parametrize(
    ("spec", "prefix"),
    [
        (ssh.CaKeySpec("ed25519"), "ssh-ed25519 "),
        (ssh.CaKeySpec("ecdsa", curve="p256"), "ecdsa-sha2-nistp256 "),
        (ssh.CaKeySpec("ecdsa", curve="p384"), "ecdsa-sha2-nistp384 "),
        (ssh.CaKeySpec("ecdsa", curve="p521"), "ecdsa-sha2-nistp521 "),
        (ssh.CaKeySpec("rsa", key_size=2048), "ssh-rsa "),
    ],
)
def test_generated_keys_round_trip(spec, prefix):
    key = ssh.generate_ca_key(spec)
    line = ssh.public_key_line(key.public_key())
    assert line.startswith(prefix)
    assert len(line.split()) == 2  # no comment
    again = ssh.load_ca_key(ssh.private_key_bytes(key))
    assert ssh.public_key_line(again.public_key()) == line


def test_rsa_4096():
    key = ssh.generate_ca_key(ssh.CaKeySpec("rsa", key_size=4096))
    assert isinstance(key, rsa.RSAPrivateKey)
    assert key.key_size == 4096


def test_load_ca_key_rejects_other_keys():
    der = x25519.X25519PrivateKey.generate().private_bytes(
        serialization.Encoding.DER,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    with pytest.raises(TypeError):
        ssh.load_ca_key(der)


# User public keys


@pytest.mark.parametrize(
    ("key_type", "bits", "api_type"),
    [
        ("ed25519", None, "ed25519"),
        ("ecdsa", 256, "ecdsa"),
        ("ecdsa", 384, "ecdsa"),
        ("ecdsa", 521, "ecdsa"),
        ("rsa", 2048, "rsa"),
    ],
)
def test_user_keys_made_by_ssh_keygen(tmp_path, key_type, bits, api_type):
    line = ssh_keygen(tmp_path, key_type, bits)
    parsed = ssh.parse_user_public_key(f"  {line}\n")
    assert parsed.key_type == api_type
    assert parsed.line == " ".join(line.split()[:2])  # comment dropped


def _line(algorithm: str, *fields: bytes) -> str:
    blob = b"".join(struct.pack(">I", len(f)) + f for f in (algorithm.encode(), *fields))
    return f"{algorithm} {base64.b64encode(blob).decode()}"


def test_unsupported_key_types(tmp_path):
    point = ed25519.Ed25519PrivateKey.generate().public_key().public_bytes_raw()
    sk_ed25519 = _line("sk-ssh-ed25519@openssh.com", point, b"ssh:")
    sk_ecdsa = _line("sk-ecdsa-sha2-nistp256@openssh.com", b"nistp256", b"\x04" + b"\x01" * 64)
    for line in (sk_ed25519, sk_ecdsa, ssh_keygen(tmp_path, "dsa")):
        _raises(Rule.UNSUPPORTED_SSH_KEY_TYPE, ssh.parse_user_public_key, line)
    cert = "ssh-ed25519-cert-v01@openssh.com AAAAIHNzaC1lZDI1NTE5LWNlcnQtdjAxQG9wZW5zc2guY29t"
    _raises(Rule.UNSUPPORTED_SSH_KEY_TYPE, ssh.parse_user_public_key, cert)


def _rsa_line(bits: int) -> str:
    modulus = (1 << (bits - 1)) | 1
    key = rsa.RSAPublicNumbers(65537, modulus).public_key()
    return ssh.public_key_line(key)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "ssh-ed25519",
        "ssh-ed25519 AAAA",
        "ssh-ed25519 !!!not-base64!!!",
        "ssh-foo AAAAB3NzaC1yc2E",
        'from="10.0.0.1" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA6xCuXq9lVNGraCXnCAQ',
        # The blob says ssh-ed25519, the line ssh-rsa.
        "ssh-rsa AAAAC3NzaC1lZDI1NTE5AAAAIA6xCuXq9lVNGraCXnCAQvd4gYsmvoE4JDVivaD29FXk",
        # Two keys on two lines.
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA6xCuXq9lVNGraCXnCAQvd4gYsmvoE4JDVivaD29FXk\n"
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA6xCuXq9lVNGraCXnCAQvd4gYsmvoE4JDVivaD29FXk",
        # A point that is not on the curve.
        _line("ecdsa-sha2-nistp256", b"nistp256", b"\x04" + b"\x01" * 64),
        # A compressed point (cryptography does not take them in SSH keys).
        _line("ecdsa-sha2-nistp256", b"nistp256", b"\x02" + b"\x01" * 32),
        _rsa_line(768),
        _rsa_line(16400),
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA6xCuXq9lVNGraCXnCAQvd4gYsmvoE4JDVivaD29FXké",
    ],
)
def test_invalid_user_keys(text):
    assert _raises(Rule.INVALID_SSH_PUBLIC_KEY, ssh.parse_user_public_key, text).field == (
        "public_key"
    )


# Critical options


@pytest.mark.parametrize(
    "value", ["10.0.0.0/8", "192.0.2.1", "10.0.0.0/8,2001:db8::/32,::1", "0.0.0.0/0"]
)
def test_source_addresses_accepted(value):
    assert ssh.source_addresses(value) == value


@pytest.mark.parametrize(
    "value",
    [
        "10.0.0.1/8",
        "10.0.0.0/33",
        "10.0.0.0/8, 192.0.2.1",
        "10.0.0.0/8,,192.0.2.1",
        "*.example.com",
        "fe80::1%eth0",
        "01.2.3.4",
        ",",
        "10.0.0.0/8,",
    ],
)
def test_source_addresses_rejected(value):
    error = _raises(Rule.INVALID_FIELD, ssh.source_addresses, value)
    assert error.field == "critical_options.source-address"


def test_critical_options():
    assert ssh.critical_options({}) == {}
    assert ssh.critical_options({"force-command": "", "source-address": ""}) == {}
    options = {"force-command": "/bin/true", "source-address": "192.0.2.0/24"}
    assert ssh.critical_options(options) == options
    error = _raises(Rule.INVALID_FIELD, ssh.critical_options, {"verify-required": ""})
    assert error.field == "critical_options.verify-required"


# Validity


def test_validity_defaults():
    assert ssh.validity(None, None, NOW) == (NOW, NOW + timedelta(hours=24))
    assert ssh.validity("", "", NOW) == (NOW, NOW + timedelta(hours=24))
    after = datetime(2030, 1, 1, tzinfo=UTC)
    assert ssh.validity("2030-01-01T00:00:00Z", None, NOW) == (after, after + timedelta(days=1))
    until = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
    assert ssh.validity(None, "2026-11-21T12:00:00Z", NOW) == (NOW, until)


def test_validity_normalises_offsets_and_fractions():
    after, until = ssh.validity("2026-11-21t12:11:14.999+02:00", "2026-11-22T00:00:00.5z", NOW)
    assert after == datetime(2026, 11, 21, 10, 11, 14, tzinfo=UTC)
    assert until == datetime(2026, 11, 22, tzinfo=UTC)
    assert ssh.parse_instant("1969-12-31T19:00:00-05:00", "x") == ssh.EARLIEST
    # The widest offsets there are.
    assert ssh.parse_instant("2026-01-01T00:00:00+23:59", "x") == datetime(
        2025, 12, 31, 0, 1, tzinfo=UTC
    )
    assert ssh.parse_instant("2026-01-01T00:00:00-23:59", "x") == datetime(
        2026, 1, 1, 23, 59, tzinfo=UTC
    )


def test_default_end_stops_at_the_end_of_9999():
    _, until = ssh.validity("9999-12-31T12:00:00Z", None, NOW)
    assert until == ssh.LATEST
    _raises(Rule.INVALID_VALIDITY, ssh.validity, "9999-12-31T23:59:59Z", None, NOW)


@pytest.mark.parametrize(
    ("after", "until", "field"),
    [
        ("2026-11-21T10:11:14Z", "2026-11-21T10:11:14Z", "valid_until"),
        ("2026-11-21T10:11:14Z", "2026-11-21T10:11:13Z", "valid_until"),
        (None, "2020-01-01T00:00:00Z", "valid_until"),
        ("1969-12-31T23:59:59Z", None, "valid_after"),
        ("0001-01-01T00:00:00Z", None, "valid_after"),
        ("1970-01-01T00:30:00+01:00", None, "valid_after"),
        (None, "9999-12-31T23:59:59-00:01", "valid_until"),
    ],
)
def test_invalid_validity(after, until, field):
    assert _raises(Rule.INVALID_VALIDITY, ssh.validity, after, until, NOW).field == field


@pytest.mark.parametrize(
    "text",
    [
        "2026-11-21",
        "2026-11-21T10:11:14",
        "2026-11-21 10:11:14Z",
        "2026-02-30T00:00:00Z",
        "2026-11-21T24:00:00Z",
        "2026-11-21T10:11:60Z",
        "0000-01-01T00:00:00Z",
        "2026-11-21T10:11:14Z\n",
        "٢٠٢٦-11-21T10:11:14Z",
        # Offsets are -23:59..+23:59 (RFC 3339's time-numoffset).
        "2026-01-01T00:00:00+99:99",
        "2026-01-01T00:00:00+24:00",
        "2026-01-01T00:00:00-24:00",
        "2026-01-01T00:00:00+23:60",
        "2026-01-01T00:00:00+10:99",
        "2026-01-01T00:00:00+0100",
    ],
)
def test_malformed_times(text):
    assert _raises(Rule.INVALID_FIELD, ssh.parse_instant, text, "valid_after").field == (
        "valid_after"
    )


def test_serials_are_random_64_bit():
    serials = {ssh.new_serial() for _ in range(100)}
    assert len(serials) == 100
    assert all(0 <= serial < 2**64 for serial in serials)


# Signing, read back by ssh-keygen


def _request(**overrides):  # type: ignore[no-untyped-def]
    fields = {
        "key_id": "sucrt_test",
        "serial": 2**64 - 1,
        "principals": ["alice", "deploy"],
        "critical_options": {"force-command": "/usr/bin/uptime", "source-address": "10.0.0.0/8"},
        "extensions": ssh.DEFAULT_EXTENSIONS,
        "valid_after": NOW,
        "valid_until": NOW + timedelta(hours=24),
    }
    return ssh.CertificateRequest(**{**fields, **overrides})


@pytest.mark.parametrize(
    ("spec", "signature"),
    [
        (ssh.CaKeySpec("ed25519"), "ssh-ed25519"),
        (ssh.CaKeySpec("ecdsa", curve="p384"), "ecdsa-sha2-nistp384"),
        (ssh.CaKeySpec("rsa", key_size=2048), "rsa-sha2-512"),
    ],
)
@pytest.mark.parametrize("user_type", ["ed25519", "ecdsa", "rsa"])
def test_certificates_verify_with_ssh_keygen(tmp_path, spec, signature, user_type):
    ca = ssh.generate_ca_key(spec)
    user = ssh.parse_user_public_key(ssh_keygen(tmp_path, user_type))
    cert = ssh.sign_certificate(ca, user.key, _request())
    assert cert.startswith(user.line.split()[0] + "-cert-v01@openssh.com ")
    info = ssh_certificate_listing(cert, tmp_path)
    ca_fingerprint = ssh_fingerprint(ssh.public_key_line(ca.public_key()), tmp_path)
    assert info["Type"].endswith("user certificate")
    assert info["Signing CA"].split()[1] == ca_fingerprint
    assert info["Signing CA"].endswith(f"(using {signature})")
    assert info["Public key"].split()[1] == ssh_fingerprint(user.line, tmp_path)
    assert info["Key ID"] == '"sucrt_test"'
    assert info["Serial"] == str(2**64 - 1)
    assert info["Valid"] == "from 2026-11-21T10:11:14 to 2026-11-22T10:11:14"
    assert info["Principals"] == ["alice", "deploy"]
    assert info["Critical Options"] == [
        "force-command /usr/bin/uptime",
        "source-address 10.0.0.0/8",
    ]
    assert info["Extensions"] == ["permit-pty", "permit-user-rc"]


def test_any_principal_no_options_custom_extensions(tmp_path):
    ca = ssh.generate_ca_key(ssh.CaKeySpec("ed25519"))
    user = ssh.parse_user_public_key(ssh_keygen(tmp_path, "ed25519"))
    request = _request(
        principals=[],
        critical_options={},
        extensions={"permit-port-forwarding": "", "permit-X11-forwarding": ""},
    )
    info = ssh_certificate_listing(ssh.sign_certificate(ca, user.key, request), tmp_path)
    assert info["Principals"] == []
    assert info["Critical Options"] == []
    assert info["Extensions"] == ["permit-X11-forwarding", "permit-port-forwarding"]
